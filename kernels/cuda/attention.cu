#include "cuda/attention.hpp"

#include <atomic>

#include "cuda/query_tiles.hpp"
#include "cuda/shared_memory.cuh"
#include "cuda/device_math.cuh"
#include "cuda/launch.cuh"

namespace unmask::kernels::cuda {
namespace {

// A block of `warps` warps takes `query_tile` query rows of one head, rows_per_warp per warp.
// Per tile of key_tile keys (one per lane): each lane scores its key against the warp's rows
// (q and k from shared memory, 4 floats at a time), the warp updates each row's running maximum
// and sum, then every lane accumulates its head dimensions (lane, lane + 32, ...) of each row
// from the tile's values, the weights passed across the warp by shuffles.
constexpr int warps = 4;
constexpr int query_tile = static_cast<int>(attention_query_tile);
constexpr int rows_per_warp = query_tile / warps;
constexpr int key_tile = 32;
static_assert(64 % key_tile == 0, "a key split (keys_per_split) is whole key tiles");
static_assert(rows_per_warp * warps == query_tile);
static_assert(key_tile == 32, "one key per lane: the weights are passed across the warp by lane");

// Shared-memory row stride in floats: the head padded to 4 floats, plus 4 so that a quarter-warp's
// 16-byte loads of consecutive rows fall in different banks.
__host__ __device__ constexpr int64_t row_stride(int64_t head_dim) { return (head_dim + 3) / 4 * 4 + 4; }

__host__ __device__ constexpr size_t shared_bytes(int64_t head_dim) {
    return size_t(query_tile + 2 * key_tile) * size_t(row_stride(head_dim)) * sizeof(float);
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
    return v;
}

// A tile's keys and values into shared memory (zero past the tile's keys and the head's
// dimensions, up to the padded width). Each thread issues the loads of `chunk` elements of k and of
// v before it stores any, so that 2 x chunk loads are in flight (compile-time trip counts:
// unrolled, the elements in registers); a warp's lanes read neighbouring columns.
template <int PerLane>
__device__ __forceinline__ void stage_keys(const QueryTile& t, int64_t key0, int64_t d, int64_t padded,
                                           int64_t stride, float* k_tile, float* v_tile) {
    constexpr int columns = 32 * PerLane, per_thread = key_tile * columns / (warps * 32), chunk = 8;
    static_assert(per_thread % chunk == 0);
    for (int first = 0; first < per_thread; first += chunk) {
        float keys[chunk], values[chunk];
        for (int u = 0; u < chunk; ++u) {
            const int index = int(threadIdx.x) + (first + u) * warps * 32;
            const int64_t j = index / columns, c = index % columns, key = key0 + j;
            const bool inside = key < t.key_end && c < d;
            keys[u] = inside ? load(t.keys, t.kv_type, key * t.kv_stride + c) : 0.0f;
            values[u] = inside ? load(t.values, t.kv_type, key * t.kv_stride + c) : 0.0f;
        }
        for (int u = 0; u < chunk; ++u) {
            const int index = int(threadIdx.x) + (first + u) * warps * 32;
            const int64_t j = index / columns, c = index % columns;
            if (c >= padded) continue;
            k_tile[j * stride + c] = keys[u];
            v_tile[j * stride + c] = values[u];
        }
    }
}

template <int PerLane>  // head_dim <= 32 * PerLane
__global__ void __launch_bounds__(warps * 32)
    attention_kernel(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                     int64_t sequence_count, AttentionDims dims, float* out, float* partials) {
    UNMASK_DYNAMIC_SHARED(float4, shared_memory);
    const QueryTile t = query_tile_of(k, v, sequences, sequence_count, dims, blockIdx.x, blockIdx.y);
    if (t.queries == 0) return;  // not a tile of this batch: the whole block leaves, before any barrier
    const int64_t d = dims.head_dim, padded = (d + 3) / 4 * 4, stride = row_stride(d);

    float* q_tile = reinterpret_cast<float*>(shared_memory);  // [query_tile][stride], scaled, zero padded
    float* k_tile = q_tile + query_tile * stride;              // [key_tile][stride]
    float* v_tile = k_tile + key_tile * stride;                // [key_tile][stride]
    const float scale = static_cast<float>(1.0 / sqrt(double(d)));
    for (int64_t i = threadIdx.x; i < query_tile * padded; i += blockDim.x) {
        const int64_t r = i / padded, c = i % padded;
        q_tile[r * stride + c] = r < t.queries && c < d ? q[t.query_offset + r * t.q_stride + c] * scale : 0.0f;
    }

    const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
    const int first_row = warp * rows_per_warp;
    int64_t visible[rows_per_warp];
    float running_max[rows_per_warp], total[rows_per_warp], weight[rows_per_warp], acc[rows_per_warp][PerLane];
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r) {
        visible[r] = first_row + r < t.queries
                         ? visible_keys(t.seq, t.first_query + first_row + r, dims.block_size, t.key_count)
                         : 0;
        running_max[r] = -INFINITY;
        total[r] = 0.0f;
#pragma unroll
        for (int j = 0; j < PerLane; ++j) acc[r][j] = 0.0f;
    }

    for (int64_t key0 = t.key_begin; key0 < t.key_end; key0 += key_tile) {
        __syncthreads();  // the previous tile is read (and, the first time, the queries written)
        stage_keys<PerLane>(t, key0, d, padded, stride, k_tile, v_tile);
        __syncthreads();

        // Scores of this lane's key against the warp's rows.
#pragma unroll
        for (int r = 0; r < rows_per_warp; ++r) weight[r] = 0.0f;
        const auto* key_row = reinterpret_cast<const float4*>(k_tile + lane * stride);
        for (int64_t c4 = 0; c4 < padded / 4; ++c4) {
            const float4 kk = key_row[c4];
#pragma unroll
            for (int r = 0; r < rows_per_warp; ++r) {
                const float4 qq = reinterpret_cast<const float4*>(q_tile + (first_row + r) * stride)[c4];
                weight[r] = fmaf(qq.x, kk.x, fmaf(qq.y, kk.y, fmaf(qq.z, kk.z, fmaf(qq.w, kk.w, weight[r]))));
            }
        }
        // The online softmax: rescale what came before to the new maximum (warp-uniform branches).
        const int64_t key = key0 + lane;
#pragma unroll
        for (int r = 0; r < rows_per_warp; ++r) {
            const float score = key < visible[r] ? weight[r] : -INFINITY;
            const float next_max = fmaxf(running_max[r], warp_max(score));
            if (next_max == -INFINITY) {  // no key visible to this row yet
                weight[r] = 0.0f;
                continue;
            }
            const float correction = expf(running_max[r] - next_max);  // 0 before the first visible key
            weight[r] = expf(score - next_max);                        // 0 for masked keys
            total[r] = total[r] * correction + warp_sum(weight[r]);
            running_max[r] = next_max;
#pragma unroll
            for (int j = 0; j < PerLane; ++j) acc[r][j] *= correction;
        }
        for (int j = 0; j < key_tile; ++j) {
            float value[PerLane];
#pragma unroll
            for (int c = 0; c < PerLane; ++c) {
                const int64_t column = lane + 32 * c;
                value[c] = column < d ? v_tile[j * stride + column] : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < rows_per_warp; ++r) {
                const float p = __shfl_sync(0xFFFFFFFFu, weight[r], j);
#pragma unroll
                for (int c = 0; c < PerLane; ++c) acc[r][c] = fmaf(p, value[c], acc[r][c]);
            }
        }
    }

    if (t.splits > 1) {  // the partial softmax of this split, for combine_kernel
#pragma unroll
        for (int r = 0; r < rows_per_warp; ++r) {
            if (first_row + r >= t.queries) break;
            float* partial = partial_of(partials, t, first_row + r, blockIdx.y, t.split, dims);
#pragma unroll
            for (int c = 0; c < PerLane; ++c) {
                const int64_t column = lane + 32 * c;
                if (column < d) partial[column] = acc[r][c];
            }
            if (lane == 0) {
                partial[d] = running_max[r];
                partial[d + 1] = total[r];
            }
        }
        return;
    }
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r) {
        if (first_row + r >= t.queries) break;
        float* out_row = out + t.query_offset + (first_row + r) * t.q_stride;
        const float inverse = total[r] > 0.0f ? 1.0f / total[r] : 0.0f;
#pragma unroll
        for (int c = 0; c < PerLane; ++c) {
            const int64_t column = lane + 32 * c;
            if (column < d) out_row[column] = acc[r][c] * inverse;
        }
    }
}

// One block per (tile, head); only the first split's block of a split sequence's tile works: per
// row and column, the splits' outputs and totals rescaled to their common maximum and summed (a
// row that sees no key gets 0, as in the kernels).
__global__ void __launch_bounds__(warps * 32)
    combine_kernel(const AttentionSequence* sequences, int64_t sequence_count, AttentionDims dims,
                   const float* partials, float* out) {
    const AttentionSequence seq = sequence_of_tile(sequences, sequence_count, blockIdx.x);
    if (key_splits(seq) == 1 || (int64_t(blockIdx.x) - seq.first_tile) % key_splits(seq) != 0) return;
    // key_splits > 1 only over a cache view, so query_tile_of does not touch k or v.
    const QueryTile t = query_tile_of(nullptr, nullptr, sequences, sequence_count, dims, blockIdx.x, blockIdx.y);
    const int64_t d = dims.head_dim;
    for (int64_t i = threadIdx.x; i < t.queries * d; i += blockDim.x) {
        const int64_t r = i / d, c = i % d;
        float maximum = -INFINITY;
        for (int64_t s = 0; s < t.splits; ++s)
            maximum = fmaxf(maximum, partial_of(partials, t, r, blockIdx.y, s, dims)[d]);
        float value = 0.0f;
        if (maximum != -INFINITY) {
            float sum = 0.0f, total = 0.0f;
            for (int64_t s = 0; s < t.splits; ++s) {
                const float* partial = partial_of(partials, t, r, blockIdx.y, s, dims);
                const float scale = expf(partial[d] - maximum);  // 0 for a split that saw no key
                sum = fmaf(scale, partial[c], sum);
                total = fmaf(scale, partial[d + 1], total);
            }
            value = total > 0.0f ? sum / total : 0.0f;
        }
        out[t.query_offset + r * t.q_stride + c] = value;
    }
}

template <int PerLane>
cudaError_t launch(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                   int64_t sequence_count, int64_t tile_count, const AttentionDims& dims, float* out,
                   float* partials, cudaStream_t stream) {
    static std::atomic<uint64_t> devices_done{0};  // its largest shared memory allowed, per device
    if (const cudaError_t e = allow_shared_memory(attention_kernel<PerLane>, shared_bytes(32 * PerLane), devices_done);
        e != cudaSuccess)
        return e;
    const dim3 grid(static_cast<unsigned>(tile_count), static_cast<unsigned>(dims.heads));
    if (const cudaError_t e = launch_kernel(attention_kernel<PerLane>, grid, warps * 32, shared_bytes(dims.head_dim),
                                            stream, q, k, v, sequences, sequence_count, dims, out, partials);
        e != cudaSuccess || partials == nullptr)
        return e;
    return combine_attention_splits(sequences, sequence_count, tile_count, dims, partials, out, stream);
}

}  // namespace

cudaError_t combine_attention_splits(const AttentionSequence* sequences, int64_t sequence_count, int64_t tile_count,
                                     const AttentionDims& dims, const float* partials, float* out, cudaStream_t stream) {
    if (tile_count == 0 || sequence_count == 0 || dims.heads == 0) return cudaSuccess;
    const dim3 grid(static_cast<unsigned>(tile_count), static_cast<unsigned>(dims.heads));
    return launch_kernel(combine_kernel, grid, warps * 32, 0, stream, sequences, sequence_count, dims, partials, out);
}

cudaError_t attention(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                      int64_t sequence_count, int64_t tile_count, const AttentionDims& dims, float* out,
                      float* partials, cudaStream_t stream) {
    if (tile_count == 0 || sequence_count == 0 || dims.heads == 0) return cudaSuccess;
    if (dims.head_dim <= 0 || dims.head_dim > max_attention_head_dim || dims.kv_heads <= 0 ||
        dims.heads % dims.kv_heads != 0 || dims.heads > 65535 || sequence_count < 0 || tile_count < 0 ||
        tile_count > INT32_MAX)
        return cudaErrorInvalidValue;
    const int64_t per_lane = (dims.head_dim + 31) / 32;
    if (per_lane <= 1) return launch<1>(q, k, v, sequences, sequence_count, tile_count, dims, out, partials, stream);
    if (per_lane <= 2) return launch<2>(q, k, v, sequences, sequence_count, tile_count, dims, out, partials, stream);
    if (per_lane <= 4) return launch<4>(q, k, v, sequences, sequence_count, tile_count, dims, out, partials, stream);
    return launch<8>(q, k, v, sequences, sequence_count, tile_count, dims, out, partials, stream);
}

}  // namespace unmask::kernels::cuda
