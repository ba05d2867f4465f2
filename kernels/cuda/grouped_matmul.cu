#include "cuda/grouped_matmul.hpp"

#include <cstdint>

#include "cuda/alignment.hpp"
#include "cuda/device_math.cuh"
#include "cuda/launch.cuh"
#include "quantized_runs.hpp"

namespace unmask::kernels::cuda {
namespace {

constexpr int warps = 8;             // per block
constexpr int columns_per_warp = 4;  // output columns (weight rows) a warp computes
constexpr int run = 8;               // consecutive elements a lane loads at once

// The activations' type for weights of type T: T's own for the float types (rounded to it by the
// caller), fp32 for the block types (weight-only quantization: only the weights are quantized).
constexpr ElementType input_type(ElementType t) { return is_quantized(t) ? ElementType::f32 : t; }

// Eight consecutive elements as stored: one 16-byte load of two-byte types, two of fp32; for a
// block type, decoded from their block as they are loaded.
template <ElementType T, bool Quantized = is_quantized(T)>
struct Run {
    uint4 bits;
};
template <>
struct Run<ElementType::f32, false> {
    float4 low, high;
};
template <ElementType T>
struct Run<T, true> {
    float values[run];
};

// Elements start .. start + 8 of row `row` (k elements) of a weight stored in block type T.
template <ElementType T>
__device__ __forceinline__ Run<T> load_weight_run(const void* data, int64_t row, int64_t k, int64_t start) {
    Run<T> r;
    decode_quantized_run(T, static_cast<const uint8_t*>(data) + row * row_bytes(T, k), start, r.values);
    return r;
}

// Elements start .. start + 8 of `data`. Aligned: the run is whole and 16-byte aligned; else
// elements at or past `end` read as 0 (all-zero bits are 0 in every type).
template <ElementType T, bool Aligned>
__device__ __forceinline__ Run<T> load_run(const void* data, int64_t start, int64_t end) {
    Run<T> r;
    if constexpr (T == ElementType::f32) {
        const float* p = static_cast<const float*>(data) + start;
        if constexpr (Aligned) {
            r.low = reinterpret_cast<const float4*>(p)[0];
            r.high = reinterpret_cast<const float4*>(p)[1];
        } else {
            float v[run];
#pragma unroll
            for (int j = 0; j < run; ++j) v[j] = start + j < end ? p[j] : 0.0f;
            r.low = make_float4(v[0], v[1], v[2], v[3]);
            r.high = make_float4(v[4], v[5], v[6], v[7]);
        }
    } else {
        const uint16_t* p = static_cast<const uint16_t*>(data) + start;
        if constexpr (Aligned) {
            r.bits = *reinterpret_cast<const uint4*>(p);
        } else {
            uint32_t h[run];
#pragma unroll
            for (int j = 0; j < run; ++j) h[j] = start + j < end ? p[j] : 0u;
            r.bits = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
        }
    }
    return r;
}

template <ElementType T>
__device__ __forceinline__ void unpack(const Run<T>& r, float (&v)[run]) {
    if constexpr (is_quantized(T)) {
#pragma unroll
        for (int j = 0; j < run; ++j) v[j] = r.values[j];
    } else if constexpr (T == ElementType::f32) {
        v[0] = r.low.x, v[1] = r.low.y, v[2] = r.low.z, v[3] = r.low.w;
        v[4] = r.high.x, v[5] = r.high.y, v[6] = r.high.z, v[7] = r.high.w;
    } else {
        const uint32_t words[4] = {r.bits.x, r.bits.y, r.bits.z, r.bits.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // little-endian: the lower half is the earlier element
            const uint32_t lo = words[i] & 0xFFFFu, hi = words[i] >> 16;
            if constexpr (T == ElementType::bf16) {
                v[2 * i] = __uint_as_float(lo << 16);
                v[2 * i + 1] = __uint_as_float(hi << 16);
            } else {
                v[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(lo)));
                v[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(hi)));
            }
        }
    }
}

// Block (column tile, group); warp w of it computes columns tile * 32 + 4w .. + 4 for the group's
// rows, max_few_rows at a time. Lane l reads elements 8l .. 8l + 8 of every 256 along k: the
// warp's four weight runs first (each weight element is read, and a block type's decoded, once per
// pass over the rows), then each row's run of x against them; the lanes' partial sums meet in a
// warp sum at the end.
template <ElementType T, bool Aligned>
__global__ void __launch_bounds__(warps * 32, 2)
    few_row_grouped_matmul_kernel(const void* x, const void* const* weights, const int32_t* offsets, int64_t n,
                                  int64_t k, bool every_group, float* out) {
    const int64_t group = blockIdx.y;
    const int64_t group_first = offsets[group], group_rows = offsets[group + 1] - group_first;
    if (group_rows <= 0 || (!every_group && group_rows > max_few_rows)) return;  // the whole block
    const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
    const int64_t column0 = (int64_t(blockIdx.x) * warps + warp) * columns_per_warp;
    if (column0 >= n) return;  // the whole warp; nothing below synchronises the block
    const void* w = weights[group];
    int64_t weight_row[columns_per_warp];  // columns past n read the last one's weights (never stored)
#pragma unroll
    for (int c = 0; c < columns_per_warp; ++c) weight_row[c] = column0 + c < n ? column0 + c : n - 1;
    for (int64_t first = group_first; first < group_first + group_rows; first += max_few_rows) {
        const int64_t rows = min(group_first + group_rows - first, max_few_rows);
        float sums[columns_per_warp][max_few_rows] = {};
        for (int64_t at = int64_t(lane) * run; at < k; at += 32 * run) {
            Run<T> ws[columns_per_warp];
#pragma unroll
            for (int c = 0; c < columns_per_warp; ++c) {
                if constexpr (is_quantized(T)) ws[c] = load_weight_run<T>(w, weight_row[c], k, at);
                else ws[c] = load_run<T, Aligned>(w, weight_row[c] * k + at, weight_row[c] * k + k);
            }
#pragma unroll
            for (int r = 0; r < max_few_rows; ++r) {
                if (r >= rows) break;  // the whole warp
                const int64_t row = (first + r) * k;
                float xs[run];
                constexpr ElementType X = input_type(T);
                unpack<X>(load_run<X, Aligned>(x, row + at, row + k), xs);
#pragma unroll
                for (int c = 0; c < columns_per_warp; ++c) {
                    float wv[run];
                    unpack<T>(ws[c], wv);
#pragma unroll
                    for (int j = 0; j < run; ++j) sums[c][r] = fmaf(wv[j], xs[j], sums[c][r]);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < max_few_rows; ++r) {
            if (r >= rows) break;  // the whole warp
#pragma unroll
            for (int c = 0; c < columns_per_warp; ++c) {
                const float total = warp_sum(sums[c][r]);  // every lane takes part
                if (lane == 0 && column0 + c < n) out[(first + r) * n + column0 + c] = total;
            }
        }
    }
}

template <ElementType T>
cudaError_t launch(dim3 grid, bool aligned, const void* x, const void* const* weights, const int32_t* offsets,
                   int64_t n, int64_t k, bool every_group, float* out, cudaStream_t stream) {
    auto* kernel = aligned ? few_row_grouped_matmul_kernel<T, true> : few_row_grouped_matmul_kernel<T, false>;
    return launch_kernel(kernel, grid, warps * 32, 0, stream, x, weights, offsets, n, k, every_group, out);
}

}  // namespace

cudaError_t few_row_grouped_matmul(const void* x, const void* const* weights, const int32_t* offsets, int64_t groups,
                                   ElementType type, int64_t n, int64_t k, bool weights_aligned, bool every_group,
                                   float* out, cudaStream_t stream) {
    if (groups <= 0 || n <= 0) return cudaSuccess;
    if (groups > 65535 || k <= 0) return cudaErrorInvalidValue;
    const int64_t tiles = (n + warps * columns_per_warp - 1) / (warps * columns_per_warp);
    if (tiles > INT32_MAX) return cudaErrorInvalidValue;
    // A block type's rows are whole blocks.
    if (is_quantized(type) && k % block_elements(type) != 0) return cudaErrorInvalidValue;
    // Whole 16-byte runs: k a multiple of 8 and every row's start aligned (block types: x only;
    // their weights are read by the byte).
    const bool aligned = (weights_aligned || is_quantized(type)) && k % run == 0 && on_16_bytes(x);
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(groups));
    return with_element_type(type, [&](auto t) {
        return launch<decltype(t)::value>(grid, aligned, x, weights, offsets, n, k, every_group, out, stream);
    });
}

}  // namespace unmask::kernels::cuda
