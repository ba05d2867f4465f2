// Grouped matmuls for groups of few rows: the experts of a mixture-of-experts layer in a decoding
// step, where each expert sees a handful of tokens and one cuBLASLt call per expert would spend
// more time launching than reading its weights. One launch covers every group; each warp streams
// 4 rows of a group's weight once against up to 16 of the group's rows, accumulating in fp32.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/ops.hpp"

namespace unmask::kernels::cuda {

// Rows of a group one pass over its weights serves.
inline constexpr int64_t max_few_rows = 16;

// Whether `slots` rows over `groups` groups are few enough to give every group to the kernel
// (every_group) without knowing the group sizes: one pass per group on average.
constexpr bool few_rows_on_average(int64_t slots, int64_t groups) noexcept { return slots <= max_few_rows * groups; }

// For every group g with 1..max_few_rows rows (every group with rows, in passes of max_few_rows,
// when `every_group`: the offsets need not be known on the host): rows offsets[g]..offsets[g+1] of out ([., n], fp32)
// = the same rows of x ([., k], of `type`: activations already rounded to the weights' type; fp32
// for a block type) · weights[g]ᵀ ([n, k] each, of `type`). A block type's weights are decoded in
// registers as they are read, to the CPU's bits (quantized_runs.hpp): weight-only
// quantization; its rows must be whole blocks. `weights` (groups pointers) and `offsets` (groups +
// 1) are device memory; groups up to 65535. `weights_aligned`: every weight starts on 16 bytes
// (with x aligned and k a multiple of 8, the kernel reads whole 16-byte runs).
cudaError_t few_row_grouped_matmul(const void* x, const void* const* weights, const int32_t* offsets, int64_t groups,
                                   ElementType type, int64_t n, int64_t k, bool weights_aligned, bool every_group,
                                   float* out, cudaStream_t stream);

// Whether grouped_matmul_tensor_cores takes `slots` rows in `groups` groups over weights of `type`
// with an inner dimension of k: bf16 or fp16, k a multiple of 8, and its grid's rows of tiles
// (slots / 64 + groups) at most 65535.
bool grouped_matmul_on_tensor_cores(ElementType type, int64_t slots, int64_t groups, int64_t k) noexcept;

// The same product for every group with rows, whatever their sizes, on tensor cores (WMMA, fp32
// accumulation; kernels/cuda/grouped_matmul_tensor_cores.cu): rows offsets[g]..offsets[g+1] of
// out = the same rows of x ([slots, k]) · weights[g]ᵀ, the offsets read on the device (rising,
// within the slots; others are clamped to the slots, so nothing is read or written past them,
// but groups may go uncomputed). x and every weight 16-byte aligned.
cudaError_t grouped_matmul_tensor_cores(const void* x, int64_t slots, const void* const* weights,
                                        const int32_t* offsets, int64_t groups, ElementType type, int64_t n,
                                        int64_t k, float* out, cudaStream_t stream);

}  // namespace unmask::kernels::cuda
