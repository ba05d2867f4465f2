// Rows of ggml's block-quantized weight types (as GGUF files hold them) decoded to fp32, exactly
// as ggml's reference dequantization defines each format: every product and difference is one
// fp32 operation, never fused (this file is compiled with -ffp-contract=off), so the values are
// the same bits on every machine and equal an independent decoder's
// (tests/reference/gguf_dequantize.py).
#pragma once

#include <cstdint>

namespace unmask::kernels::cpu {

enum class BlockFormat : int32_t { q8_0, q4_0, q4_k, q5_k, q6_k };

// Elements per block and bytes per block.
int64_t block_elements(BlockFormat format) noexcept;
int64_t block_bytes(BlockFormat format) noexcept;

// out[0, elements) from the blocks that hold them; `elements` is a multiple of the block.
void dequantize_row(BlockFormat format, const uint8_t* blocks, int64_t elements, float* out) noexcept;

}  // namespace unmask::kernels::cpu
