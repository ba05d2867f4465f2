// Attention on the device: softmax(q kᵀ / sqrt(d) + mask) v for every query row and head of a
// packed batch, bidirectional or block-causal, with grouped K/V heads and cache views; the same
// contract as kernels/cpu/attention.hpp. Tiled with an online softmax (flash-attention style):
// a block takes a tile of one sequence's queries for one head, streams that sequence's keys and
// values through shared memory a tile at a time, and never forms the score matrix.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "element_type.hpp"

namespace unmask::kernels::cuda {

// One sequence of the batch (device-visible copy). keys == nullptr: its own rows of k and v.
struct AttentionSequence {
    int64_t first_row = 0;
    int64_t rows = 0;
    const void* keys = nullptr;  // a cache view: rows of kv_heads x head_dim elements of kv_type
    const void* values = nullptr;
    int64_t key_count = 0;       // with a cache view
    int64_t query_position = 0;  // position of the first query (block-causal masks)
    int64_t block_origin = 0;
    int32_t first_tile = 0;  // its first query tile among the batch's (number_query_tiles; launches
                             // take at most INT32_MAX tiles)
    ElementType kv_type = ElementType::f32;  // of a cache view: f32 or bf16
};

struct AttentionDims {
    int64_t heads = 0, kv_heads = 0, head_dim = 0;
    int64_t block_size = 0;  // 0: bidirectional
};

// The largest head_dim the kernel takes (each lane of a warp holds up to head_dim / 32 outputs).
inline constexpr int64_t max_attention_head_dim = 256;
// Query rows per block.
inline constexpr int64_t attention_query_tile = 32;
// Key splits (query_tiles.hpp's key_splits): at most this many per sequence, of at least this many
// keys each.
inline constexpr int64_t attention_max_splits = 4;
inline constexpr int64_t attention_split_keys = 128;

// The floats of `partials` a batch of `rows` query rows may need (when any sequence splits its keys).
constexpr int64_t attention_partial_floats(int64_t rows, int64_t heads, int64_t head_dim) {
    return rows * heads * attention_max_splits * (head_dim + 2);
}

// `sequences` (device memory, numbered by number_query_tiles in query_tiles.hpp, tile_count tiles
// in all). Rows no sequence owns are left alone. `partials` (device memory, attention_partial_floats
// of the batch's rows) holds the split sequences' partial softmaxes, which a second kernel then
// combines into `out`: required when any sequence splits (key_splits > 1), else may be null.
cudaError_t attention(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                      int64_t sequence_count, int64_t tile_count, const AttentionDims& dims, float* out,
                      float* partials, cudaStream_t stream);

// Whether attention_tensor_cores takes heads of `head_dim` dimensions (64 or 128).
bool attention_on_tensor_cores(int64_t head_dim) noexcept;
// The same as attention with q·kᵀ and p·v on tensor cores: q (scaled), k, v and the softmax
// weights rounded to bf16, fp32 accumulation, so within bf16 rounding of attention's results.
// q, k, v and every cache view 16-byte aligned (rows of head_dim elements).
cudaError_t attention_tensor_cores(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                                   int64_t sequence_count, int64_t tile_count, const AttentionDims& dims, float* out,
                                   float* partials, cudaStream_t stream);

// The split sequences' partial softmaxes (attention's `partials`) combined into `out`: both
// kernels end with it.
cudaError_t combine_attention_splits(const AttentionSequence* sequences, int64_t sequence_count, int64_t tile_count,
                                     const AttentionDims& dims, const float* partials, float* out, cudaStream_t stream);

}  // namespace unmask::kernels::cuda
