// Attention with q·kᵀ and p·v on tensor cores (WMMA, bf16 inputs, fp32 accumulation): the same
// tiles, masks, cache views and online softmax as attention.cu, for heads of 64 or 128 dimensions.
// A block of two warps takes the tile's 32 query rows, 16 per warp (one WMMA tile high); each pass
// brings 64 keys and values into shared memory as bf16; a warp's scores go through shared memory
// for the softmax (two lanes per row), its weights back as bf16, and its output rows stay in
// shared memory in fp32, rescaled there by the lanes before each pass's p·v accumulates onto them.
#include "cuda/attention.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <cuda_bf16.h>
#include <mma.h>

#include "cuda/alignment.hpp"
#include "cuda/launch.cuh"
#include "cuda/query_tiles.hpp"
#include "cuda/shared_memory.cuh"

namespace unmask::kernels::cuda {
namespace {

namespace wmma = nvcuda::wmma;
using bf16 = __nv_bfloat16;

constexpr int warps = 2;
constexpr int warp_rows = 16;  // one WMMA tile of query rows per warp
constexpr int key_tile = 64;
static_assert(64 % key_tile == 0, "a key split (keys_per_split) is whole key tiles");
constexpr int query_tile = static_cast<int>(attention_query_tile);
static_assert(warps * warp_rows == query_tile);

// Shared memory: row strides (in elements) padded off the bank pattern, multiples of 8 (bf16) or
// 4 (fp32) elements as WMMA's loads require, so that every 16 x 16 fragment starts on 32 bytes.
template <int D>
struct Layout {
    static constexpr int input_stride = D + 8;          // q, k, v rows (bf16)
    static constexpr int score_stride = key_tile + 4;   // scores (fp32)
    static constexpr int weight_stride = key_tile + 8;  // softmax weights (bf16)
    static constexpr int output_stride = D + 4;         // output rows (fp32)
    static constexpr size_t q_bytes = size_t(query_tile) * input_stride * sizeof(bf16);
    static constexpr size_t kv_bytes = size_t(key_tile) * input_stride * sizeof(bf16);  // each of k and v
    static constexpr size_t score_bytes = size_t(query_tile) * score_stride * sizeof(float);
    static constexpr size_t weight_bytes = size_t(query_tile) * weight_stride * sizeof(bf16);
    static constexpr size_t output_bytes = size_t(query_tile) * output_stride * sizeof(float);
    static constexpr size_t total = q_bytes + 2 * kv_bytes + score_bytes + weight_bytes + output_bytes;
    static_assert(q_bytes % 32 == 0 && kv_bytes % 32 == 0 && score_bytes % 32 == 0 && weight_bytes % 32 == 0);
};

// Four floats into `destination` (8-byte aligned) as bf16, in one store.
__device__ __forceinline__ void store_bf16x4(bf16* destination, float4 v) {
    const __nv_bfloat162 low = __floats2bfloat162_rn(v.x, v.y), high = __floats2bfloat162_rn(v.z, v.w);
    uint2 bits;
    memcpy(&bits.x, &low, sizeof(bits.x));  // the pairs' bits, without breaking aliasing rules
    memcpy(&bits.y, &high, sizeof(bits.y));
    *reinterpret_cast<uint2*>(destination) = bits;
}

// Four elements as they are read: 16 bytes of f32, or 8 of bf16 (already what the tile holds).
template <bool Bf16>
using Quad = std::conditional_t<Bf16, uint2, float4>;

template <bool Bf16>
__device__ __forceinline__ Quad<Bf16> load_quad(const void* data, int64_t i) {
    if constexpr (Bf16) return *reinterpret_cast<const uint2*>(static_cast<const bf16*>(data) + i);
    else return *reinterpret_cast<const float4*>(static_cast<const float*>(data) + i);
}

template <bool Bf16>
__device__ __forceinline__ void store_quad(bf16* destination, const Quad<Bf16>& q) {
    if constexpr (Bf16) *reinterpret_cast<uint2*>(destination) = q;
    else store_bf16x4(destination, q);
}

// A pass's keys and values into shared memory as bf16 (keys past the tile's: 0). Each thread
// issues the loads of `chunk` quads of k and of v before it stores any, so that 2 x chunk loads
// are in flight (compile-time trip counts: unrolled, the quads in registers).
template <int D, bool Bf16>
__device__ __forceinline__ void stage_keys(const QueryTile& t, int64_t key0, bf16* k_tile, bf16* v_tile) {
    using L = Layout<D>;
    constexpr int quads_per_row = D / 4, per_thread = key_tile * quads_per_row / (warps * 32), chunk = 4;
    static_assert(per_thread % chunk == 0);
    for (int first = 0; first < per_thread; first += chunk) {
        Quad<Bf16> keys[chunk], values[chunk];
        bool inside[chunk];
        for (int u = 0; u < chunk; ++u) {
            const int index = int(threadIdx.x) + (first + u) * warps * 32;
            const int j = index / quads_per_row, c = index % quads_per_row * 4;
            const int64_t key = key0 + j;
            inside[u] = key < t.key_end;
            if (inside[u]) {
                keys[u] = load_quad<Bf16>(t.keys, key * t.kv_stride + c);
                values[u] = load_quad<Bf16>(t.values, key * t.kv_stride + c);
            }
        }
        for (int u = 0; u < chunk; ++u) {
            const int index = int(threadIdx.x) + (first + u) * warps * 32;
            const int j = index / quads_per_row, c = index % quads_per_row * 4;
            bf16* k_row = k_tile + j * L::input_stride + c;
            bf16* v_row = v_tile + j * L::input_stride + c;
            if (inside[u]) {
                store_quad<Bf16>(k_row, keys[u]);
                store_quad<Bf16>(v_row, values[u]);
            } else {
                store_bf16x4(k_row, make_float4(0.0f, 0.0f, 0.0f, 0.0f));
                store_bf16x4(v_row, make_float4(0.0f, 0.0f, 0.0f, 0.0f));
            }
        }
    }
}

template <int D>
__global__ void __launch_bounds__(warps * 32)
    attention_tensor_cores_kernel(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                                  int64_t sequence_count, AttentionDims dims, float* out, float* partials) {
    using L = Layout<D>;
    UNMASK_DYNAMIC_SHARED(unsigned char, shared);
    auto* q_tile = reinterpret_cast<bf16*>(shared);
    auto* k_tile = reinterpret_cast<bf16*>(shared + L::q_bytes);
    auto* v_tile = reinterpret_cast<bf16*>(shared + L::q_bytes + L::kv_bytes);
    auto* scores = reinterpret_cast<float*>(shared + L::q_bytes + 2 * L::kv_bytes);
    auto* weights = reinterpret_cast<bf16*>(shared + L::q_bytes + 2 * L::kv_bytes + L::score_bytes);
    auto* outputs = reinterpret_cast<float*>(shared + L::q_bytes + 2 * L::kv_bytes + L::score_bytes + L::weight_bytes);

    const QueryTile t = query_tile_of(k, v, sequences, sequence_count, dims, blockIdx.x, blockIdx.y);
    if (t.queries == 0) return;  // not a tile of this batch: the whole block leaves, before any barrier

    // The queries, scaled and rounded (rows past the tile's: 0), and the outputs at 0.
    const float scale = static_cast<float>(1.0 / sqrt(double(D)));
    for (int i = threadIdx.x; i < query_tile * D / 4; i += blockDim.x) {
        const int r = i / (D / 4), c = i % (D / 4) * 4;
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r < t.queries) x = *reinterpret_cast<const float4*>(q + t.query_offset + r * t.q_stride + c);
        store_bf16x4(q_tile + r * L::input_stride + c, make_float4(x.x * scale, x.y * scale, x.z * scale, x.w * scale));
    }
    for (int i = threadIdx.x; i < query_tile * L::output_stride; i += blockDim.x) outputs[i] = 0.0f;
    __syncthreads();  // each warp's rows were partly written by the other warp

    const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
    const int row = lane >> 1, half = lane & 1;  // lanes 2r and 2r + 1 keep row r's softmax
    const int tile_row = warp * warp_rows + row;
    const int64_t visible =
        tile_row < t.queries ? visible_keys(t.seq, t.first_query + tile_row, dims.block_size, t.key_count) : 0;
    const bf16* warp_q = q_tile + warp * warp_rows * L::input_stride;
    float* warp_scores = scores + warp * warp_rows * L::score_stride;
    bf16* warp_weights = weights + warp * warp_rows * L::weight_stride;
    float* warp_outputs = outputs + warp * warp_rows * L::output_stride;
    float running_max = -INFINITY, total = 0.0f;
    // The warp's queries, loaded once for every pass.
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> queries_of_warp[D / 16];
#pragma unroll
    for (int kd = 0; kd < D / 16; ++kd) wmma::load_matrix_sync(queries_of_warp[kd], warp_q + kd * 16, L::input_stride);

    for (int64_t key0 = t.key_begin; key0 < t.key_end; key0 += key_tile) {
        __syncthreads();  // the previous pass's keys and values are read
        if (t.kv_type == ElementType::bf16) stage_keys<D, true>(t, key0, k_tile, v_tile);
        else stage_keys<D, false>(t, key0, k_tile, v_tile);
        __syncthreads();

        // Scores: the warp's 16 rows against the pass's keys, 16 keys at a time.
        for (int n = 0; n < key_tile / 16; ++n) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> s;
            wmma::fill_fragment(s, 0.0f);
#pragma unroll
            for (int kd = 0; kd < D / 16; ++kd) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b;  // kᵀ: k's rows as columns
                wmma::load_matrix_sync(b, k_tile + n * 16 * L::input_stride + kd * 16, L::input_stride);
                wmma::mma_sync(s, queries_of_warp[kd], b, s);
            }
            wmma::store_matrix_sync(warp_scores + n * 16, s, L::score_stride, wmma::mem_row_major);
        }
        __syncwarp();

        // The online softmax of row `row` over the pass's keys 2c + half (c < 32: the two lanes
        // interleaved; rows r and r + 8 share banks, a 2-way conflict); masked keys weigh 0, and a
        // row that sees no key yet keeps its maximum at -inf and its weights at 0.
        const float* my_scores = warp_scores + row * L::score_stride + half;
        float pass_max = -INFINITY;
        for (int c = 0; c < 32; ++c)
            if (key0 + 2 * c + half < visible) pass_max = fmaxf(pass_max, my_scores[2 * c]);
        pass_max = fmaxf(pass_max, __shfl_xor_sync(0xFFFFFFFFu, pass_max, 1));
        const float next_max = fmaxf(running_max, pass_max);
        const bool any = next_max != -INFINITY;
        const float correction = any ? expf(running_max - next_max) : 1.0f;  // 0 before the first visible key
        bf16* my_weights = warp_weights + row * L::weight_stride + half;
        float sum = 0.0f;
        for (int c = 0; c < 32; ++c) {
            const bool seen = any && key0 + 2 * c + half < visible;
            const bf16 p = __float2bfloat16(seen ? expf(my_scores[2 * c] - next_max) : 0.0f);
            my_weights[2 * c] = p;
            sum += __bfloat162float(p);  // the weights as p·v takes them
        }
        sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
        total = total * correction + sum;
        running_max = next_max;
        // Each row's outputs rescaled by the whole warp, a column per lane (no bank conflicts).
        for (int r = 0; r < warp_rows; ++r) {
            const float factor = __shfl_sync(0xFFFFFFFFu, correction, 2 * r);
#pragma unroll
            for (int c = lane; c < D; c += 32) warp_outputs[r * L::output_stride + c] *= factor;
        }
        __syncwarp();

        // outputs += weights · values, 16 output columns at a time.
        for (int n = 0; n < D / 16; ++n) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
            wmma::load_matrix_sync(o, warp_outputs + n * 16, L::output_stride, wmma::mem_row_major);
#pragma unroll
            for (int kk = 0; kk < key_tile / 16; ++kk) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b;
                wmma::load_matrix_sync(a, warp_weights + kk * 16, L::weight_stride);
                wmma::load_matrix_sync(b, v_tile + kk * 16 * L::input_stride + n * 16, L::input_stride);
                wmma::mma_sync(o, a, b, o);
            }
            wmma::store_matrix_sync(warp_outputs + n * 16, o, L::output_stride, wmma::mem_row_major);
        }
        __syncwarp();
    }

    __syncwarp();
    if (t.splits > 1) {  // the partial softmax of this split, for attention.cu's combine kernel
        for (int r = 0; r < warp_rows; ++r) {
            const float row_max = __shfl_sync(0xFFFFFFFFu, running_max, 2 * r);
            const float row_total = __shfl_sync(0xFFFFFFFFu, total, 2 * r);
            if (warp * warp_rows + r >= t.queries) break;  // the whole warp
            float* partial = partial_of(partials, t, warp * warp_rows + r, blockIdx.y, t.split, dims);
#pragma unroll
            for (int c = lane; c < D; c += 32) partial[c] = warp_outputs[r * L::output_stride + c];
            if (lane == 0) {
                partial[D] = row_max;
                partial[D + 1] = row_total;
            }
        }
        return;
    }
    // Each row written by the whole warp, a column per lane (coalesced).
    const float inverse = total > 0.0f ? 1.0f / total : 0.0f;
    for (int r = 0; r < warp_rows; ++r) {
        const float factor = __shfl_sync(0xFFFFFFFFu, inverse, 2 * r);
        if (warp * warp_rows + r >= t.queries) break;  // the whole warp
        float* out_row = out + t.query_offset + (warp * warp_rows + r) * t.q_stride;
#pragma unroll
        for (int c = lane; c < D; c += 32) out_row[c] = warp_outputs[r * L::output_stride + c] * factor;
    }
}

template <int D>
cudaError_t launch(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                   int64_t sequence_count, int64_t tile_count, const AttentionDims& dims, float* out,
                   float* partials, cudaStream_t stream) {
    static std::atomic<uint64_t> devices_done{0};
    if (const cudaError_t e = allow_shared_memory(attention_tensor_cores_kernel<D>, Layout<D>::total, devices_done);
        e != cudaSuccess)
        return e;
    const dim3 grid(static_cast<unsigned>(tile_count), static_cast<unsigned>(dims.heads));
    if (const cudaError_t e = launch_kernel(attention_tensor_cores_kernel<D>, grid, warps * 32, Layout<D>::total,
                                            stream, q, k, v, sequences, sequence_count, dims, out, partials);
        e != cudaSuccess || partials == nullptr)
        return e;
    return combine_attention_splits(sequences, sequence_count, tile_count, dims, partials, out, stream);
}

}  // namespace

bool attention_on_tensor_cores(int64_t head_dim) noexcept { return head_dim == 64 || head_dim == 128; }

cudaError_t attention_tensor_cores(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                                   int64_t sequence_count, int64_t tile_count, const AttentionDims& dims, float* out,
                                   float* partials, cudaStream_t stream) {
    if (tile_count == 0 || sequence_count == 0 || dims.heads == 0) return cudaSuccess;
    if (!attention_on_tensor_cores(dims.head_dim) || dims.kv_heads <= 0 || dims.heads % dims.kv_heads != 0 ||
        dims.heads > 65535 || sequence_count < 0 || tile_count < 0 || tile_count > INT32_MAX || !on_16_bytes(q) ||
        !on_16_bytes(k) || !on_16_bytes(v))
        return cudaErrorInvalidValue;
    if (dims.head_dim == 64) return launch<64>(q, k, v, sequences, sequence_count, tile_count, dims, out, partials, stream);
    return launch<128>(q, k, v, sequences, sequence_count, tile_count, dims, out, partials, stream);
}

}  // namespace unmask::kernels::cuda
