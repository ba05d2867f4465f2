// The attention kernels' query tiles: how a batch's sequences are cut into tiles of
// attention_query_tile rows, and what a block taking one tile for one head reads (its sequence,
// rows and keys, and how many keys its queries see under the mask). Host-device, so that the
// tiling is tested on the host.
#pragma once

#include <cstdint>

#include "attention_mask.hpp"
#include "cuda/attention.hpp"
#include "host_device.hpp"

namespace unmask::kernels::cuda {

// The key splits of a sequence (flash-decoding). A sequence of one query tile over a view of
// keys (a decoding step's block over a K/V cache, or the last layer's kept rows of a long canvas:
// 32 heads make only 32 blocks, too few for a GPU) has its keys cut into up to
// attention_max_splits ranges of at least attention_split_keys keys, one block each, whose
// partial softmaxes are combined after; any other sequence, one. A function of the sequence alone,
// so that its result never depends on its batch.
UNMASK_HOST_DEVICE inline int64_t key_splits(const AttentionSequence& s) {
    if (s.rows > attention_query_tile || s.keys == nullptr) return 1;
    const int64_t splits = s.key_count / attention_split_keys;
    return splits < 1 ? 1 : splits > attention_max_splits ? attention_max_splits : splits;
}

// The keys of each split of `s`: whole passes of 64 keys (a multiple of both kernels' key tiles).
UNMASK_HOST_DEVICE inline int64_t keys_per_split(const AttentionSequence& s) {
    const int64_t splits = key_splits(s), keys = s.keys != nullptr ? s.key_count : s.rows;
    return ((keys + splits - 1) / splits + 63) / 64 * 64;
}

// Sets first_tile of `count` sequences (host memory) in order, each holding ceil(rows / tile)
// query tiles times its key splits, and returns the batch's number of tiles.
inline int64_t number_query_tiles(AttentionSequence* sequences, int64_t count) noexcept {
    int64_t tiles = 0;
    for (int64_t s = 0; s < count; ++s) {
        sequences[s].first_tile = static_cast<int32_t>(tiles);  // a batch of more tiles is not launched
        tiles += (sequences[s].rows + attention_query_tile - 1) / attention_query_tile * key_splits(sequences[s]);
    }
    return tiles;
}

// The sequence holding query tile `tile`: the last starting at or before it.
UNMASK_HOST_DEVICE inline AttentionSequence sequence_of_tile(const AttentionSequence* sequences, int64_t count,
                                                             int64_t tile) {
    int64_t lo = 0, hi = count - 1;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (sequences[mid].first_tile <= tile) lo = mid;
        else hi = mid - 1;
    }
    return sequences[lo];
}

// How many of the keys the query at `index` within `seq` sees (block-causal masks: up to the end
// of its block).
UNMASK_HOST_DEVICE inline int64_t visible_keys(const AttentionSequence& seq, int64_t index, int64_t block_size,
                                               int64_t key_count) {
    if (block_size <= 0) return key_count;
    const int64_t end = block_end(seq.query_position + index, block_size, seq.block_origin);
    return end < key_count ? end : key_count;
}

// The tile of query rows a block takes, for one head: the rows of its sequence it covers and where
// that head's keys and values are (its own rows of k and v, or the sequence's cache view).
struct QueryTile {
    AttentionSequence seq;
    int64_t first_query = 0;   // within the sequence
    int queries = 0;           // rows of the tile (0: the tile is past its sequence's rows)
    int64_t q_stride = 0;      // floats between query (and output) rows
    int64_t query_offset = 0;  // of the tile's first query's head in q (and its output in out)
    int64_t kv_stride = 0;     // elements between key (and value) rows
    const void* keys = nullptr;    // the head's first key
    const void* values = nullptr;  // the head's first value
    ElementType kv_type = ElementType::f32;  // of keys and values: f32, or bf16 in a cache view
    int64_t key_count = 0;          // keys of the sequence
    int64_t tile_keys = 0;          // keys the tile's last query sees: every query sees a prefix of them
    int64_t split = 0, splits = 1;  // which of the sequence's key splits the block takes
    int64_t key_begin = 0, key_end = 0;  // its keys (a multiple of 64 from the first; empty past tile_keys)
};

UNMASK_HOST_DEVICE inline QueryTile query_tile_of(const float* k, const float* v, const AttentionSequence* sequences,
                                                  int64_t sequence_count, const AttentionDims& dims, int64_t tile,
                                                  int64_t head) {
    QueryTile t;
    t.seq = sequence_of_tile(sequences, sequence_count, tile);
    t.splits = key_splits(t.seq);
    t.split = (tile - t.seq.first_tile) % t.splits;
    t.first_query = (tile - t.seq.first_tile) / t.splits * attention_query_tile;
    const int64_t remaining = t.seq.rows - t.first_query;
    if (remaining <= 0) return t;
    t.queries = static_cast<int>(remaining < attention_query_tile ? remaining : attention_query_tile);
    const int64_t d = dims.head_dim;
    t.q_stride = dims.heads * d;
    t.kv_stride = dims.kv_heads * d;
    t.query_offset = (t.seq.first_row + t.first_query) * t.q_stride + head * d;
    const int64_t kv_head = head / (dims.heads / dims.kv_heads);
    const bool cached = t.seq.keys != nullptr;
    t.kv_type = cached ? t.seq.kv_type : ElementType::f32;
    const int64_t head_offset = kv_head * d * element_bytes(t.kv_type);
    const void* keys = cached ? t.seq.keys : k + t.seq.first_row * t.kv_stride;
    const void* values = cached ? t.seq.values : v + t.seq.first_row * t.kv_stride;
    t.keys = static_cast<const char*>(keys) + head_offset;
    t.values = static_cast<const char*>(values) + head_offset;
    t.key_count = cached ? t.seq.key_count : t.seq.rows;
    // Visibility grows with the position, so the tile's last query sees the most keys.
    t.tile_keys = visible_keys(t.seq, t.first_query + t.queries - 1, dims.block_size, t.key_count);
    const int64_t chunk = keys_per_split(t.seq);
    t.key_begin = t.split * chunk < t.tile_keys ? t.split * chunk : t.tile_keys;
    t.key_end = t.key_begin + chunk < t.tile_keys ? t.key_begin + chunk : t.tile_keys;
    return t;
}

// Where a split block keeps its query rows' partial softmax: per (row, head, split) the unscaled
// output (head_dim floats), then the running maximum and total.
template <typename Float>  // float or const float
UNMASK_HOST_DEVICE inline Float* partial_of(Float* partials, const QueryTile& t, int64_t row, int64_t head,
                                            int64_t split, const AttentionDims& dims) {
    const int64_t global_row = t.seq.first_row + t.first_query + row;
    return partials + ((global_row * dims.heads + head) * attention_max_splits + split) * (dims.head_dim + 2);
}

}  // namespace unmask::kernels::cuda
