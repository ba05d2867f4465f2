#include "cuda/grouped_matmul.hpp"

#include <cstdint>

#include "cuda/device_math.cuh"

namespace unmask::kernels::cuda {
namespace {

constexpr int warps = 8;            // per block
constexpr int columns_per_warp = 8;  // output columns (weight rows) a warp computes
constexpr int rows_per_pass = 4;     // a group's rows a warp takes at a time
constexpr int run = 8;               // consecutive elements a lane loads at once

// Elements start .. start + 8 of `data` as floats, those at or past `end` as 0. When `aligned`
// (every row starts 16 bytes aligned, a multiple of 8 elements in), a full run is one 16-byte load
// for two-byte types (two for fp32).
__device__ __forceinline__ void load_run(const void* data, ElementType type, int64_t start, int64_t end, bool aligned,
                                         float (&v)[run]) {
    if (aligned && start + run <= end) {
        if (type == ElementType::f32) {
            const auto* p = reinterpret_cast<const float4*>(static_cast<const float*>(data) + start);
            const float4 a = p[0], b = p[1];
            v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
            return;
        }
        const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(data) + start);
        const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // little-endian: the lower half is the earlier element
            const auto lo = static_cast<uint16_t>(words[i] & 0xFFFFu), hi = static_cast<uint16_t>(words[i] >> 16);
            if (type == ElementType::bf16) {
                v[2 * i] = __uint_as_float(uint32_t(lo) << 16);
                v[2 * i + 1] = __uint_as_float(uint32_t(hi) << 16);
            } else {
                v[2 * i] = __half2float(__ushort_as_half(lo));
                v[2 * i + 1] = __half2float(__ushort_as_half(hi));
            }
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < run; ++j) v[j] = start + j < end ? load(data, type, start + j) : 0.0f;
}

// Block (column tile, group); warp w of it computes columns tile * 64 + 8w .. + 8 of the group's
// rows. Lane l reads elements 8l .. 8l + 8 of every 256 along k; the lanes' partial sums meet in a
// warp sum at the end.
__global__ void few_row_grouped_matmul_kernel(const void* x, const void* const* weights, const int32_t* offsets,
                                              ElementType type, int64_t n, int64_t k, bool aligned, float* out) {
    const int64_t group = blockIdx.y;
    const int64_t first = offsets[group], rows = offsets[group + 1] - first;
    if (rows <= 0 || rows > max_few_rows) return;  // the whole block
    const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
    const int64_t column0 = (int64_t(blockIdx.x) * warps + warp) * columns_per_warp;
    if (column0 >= n) return;  // the whole warp; nothing below synchronises the block
    const void* w = weights[group];
    for (int64_t row0 = 0; row0 < rows; row0 += rows_per_pass) {
        const int64_t pass_rows = rows - row0 < rows_per_pass ? rows - row0 : rows_per_pass;
        float sums[columns_per_warp][rows_per_pass] = {};
        for (int64_t at = int64_t(lane) * run; at < k; at += 32 * run) {
            float xs[rows_per_pass][run];
#pragma unroll
            for (int r = 0; r < rows_per_pass; ++r) {
                const int64_t row = first + row0 + r;
                if (r < pass_rows) {
                    load_run(x, type, row * k + at, row * k + k, aligned, xs[r]);
                } else {
#pragma unroll
                    for (int j = 0; j < run; ++j) xs[r][j] = 0.0f;
                }
            }
#pragma unroll
            for (int c = 0; c < columns_per_warp; ++c) {
                const int64_t column = column0 + c;
                if (column >= n) break;
                float ws[run];
                load_run(w, type, column * k + at, column * k + k, aligned, ws);
#pragma unroll
                for (int r = 0; r < rows_per_pass; ++r)
#pragma unroll
                    for (int j = 0; j < run; ++j) sums[c][r] = fmaf(ws[j], xs[r][j], sums[c][r]);
            }
        }
#pragma unroll
        for (int c = 0; c < columns_per_warp; ++c)
#pragma unroll
            for (int r = 0; r < rows_per_pass; ++r) {
                const float total = warp_sum(sums[c][r]);  // every lane takes part
                if (lane == 0 && r < pass_rows && column0 + c < n) out[(first + row0 + r) * n + column0 + c] = total;
            }
    }
}

}  // namespace

cudaError_t few_row_grouped_matmul(const void* x, const void* const* weights, const int32_t* offsets, int64_t groups,
                                   ElementType type, int64_t n, int64_t k, float* out, cudaStream_t stream) {
    if (groups <= 0 || n <= 0) return cudaSuccess;
    if (groups > 65535 || k <= 0) return cudaErrorInvalidValue;
    const int64_t tiles = (n + warps * columns_per_warp - 1) / (warps * columns_per_warp);
    if (tiles > INT32_MAX) return cudaErrorInvalidValue;
    // Vector loads need every row to start on 16 bytes: k a multiple of 8 and x aligned (the
    // weights come from cudaMalloc).
    const bool aligned = k % run == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(groups));
    few_row_grouped_matmul_kernel<<<grid, warps * 32, 0, stream>>>(x, weights, offsets, type, n, k, aligned, out);
    return cudaGetLastError();
}

}  // namespace unmask::kernels::cuda
