// Element-wise and row-wise kernels of the CUDA backend. Every function launches on `stream` and
// returns the launch status; pointers are device memory. Each mirrors the CPU kernel of the same
// name in kernels/cpu (same arithmetic where it decides results: float64 sums in rmsnorm, float64
// angles in rope).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "element_type.hpp"

namespace unmask::kernels::cuda {

using kernels::ElementType;

// A weight in its stored element type (device memory).
struct WeightView {
    const void* data = nullptr;
    ElementType type = ElementType::f32;
};

// Where a kernel also writes its output rounded to nearest even (bf16 or f16), as round_to would:
// the input of the matmul after it, at its weights' precision, without a pass of its own. None
// when data is null.
struct Rounded {
    void* data = nullptr;
    ElementType type = ElementType::bf16;
};

// out[r, :] = table[ids[r], :] (rows of `cols` elements; a block type's decoded as the CPU decodes
// them, its rows whole blocks)
cudaError_t embedding(WeightView table, int64_t cols, const int32_t* ids, int64_t rows, float* out,
                      cudaStream_t stream);
// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, rows of `dim` at the given strides (in place
// allowed); `rounded`: also rounded into contiguous rows of `dim`
cudaError_t rmsnorm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, WeightView w, double eps, float* out,
                    int64_t out_stride, cudaStream_t stream, Rounded rounded = {});
// x += y, then out = rmsnorm(x) * w, for contiguous rows of `dim` (the residual add fused with the norm)
cudaError_t add_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, WeightView w, double eps, float* out,
                        cudaStream_t stream, Rounded rounded = {});
// x[r, :] += bias
cudaError_t add_bias(float* x, int64_t rows, int64_t dim, WeightView bias, cudaStream_t stream);
// Rotates the first rotary_dims of every head (half-split pairs (i, i + half), or interleaved
// (2i, 2i + 1)) by position * theta^(-2i / rotary_dims).
cudaError_t rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions, double theta,
                 int64_t rotary_dims, bool interleaved, cudaStream_t stream);
// gate = silu(gate) * up
cudaError_t swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream, Rounded rounded = {});
// x += y
cudaError_t add(float* x, const float* y, int64_t n, cudaStream_t stream);
// out[i, :] = x[rows[i], :]
cudaError_t gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out,
                        cudaStream_t stream);
// cond = uncond + factor * (cond - uncond)
cudaError_t combine_guidance(float* cond, const float* uncond, float factor, int64_t n, cudaStream_t stream);
// out = x rounded to nearest-even in `type` (bf16 or f16), for matmuls at the weights' precision
cudaError_t round_to(const float* x, int64_t n, ElementType type, void* out, cudaStream_t stream);
// Rows of x [rows, k] (k a multiple of 128) quantized for a block-scaled fp8 product
// (fp8_tiles.hpp): per 128 of a row s = max|x| / 448 over its finite x, q = e4m3(x / s) (0 where s
// is 0, NaN for a non-finite x), the bits kernels::cpu::quantize_row gives F8_E4M3_B128 blocks;
// the codes into values [rows, k], s into scales[row + (col / 128) * rows].
cudaError_t quantize_fp8_groups(const float* x, int64_t rows, int64_t k, uint8_t* values, float* scales,
                                cudaStream_t stream);
// out[r, o] = sum over the 128-groups g of w_tile_scales[o / 128 * fp8_tile_stride(k) + g] *
// x_scales[r + g * rows] * sum_j e4m3(w[o, 128g + j]) * e4m3(x[r, 128g + j]), for the last rows
// of a block-scaled fp8 product (cuBLASLt's takes whole multiples of 4): up to 3 rows, one warp
// per output, sums in fp32 (each lane's share of a group scaled, then the lanes summed).
cudaError_t matmul_fp8_rows(const uint8_t* x, const float* x_scales, int64_t rows, const uint8_t* w,
                            const float* w_tile_scales, int64_t n, int64_t k, float* out, cudaStream_t stream);

}  // namespace unmask::kernels::cuda
