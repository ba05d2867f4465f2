// Rows of ggml's block-quantized weight types (as GGUF files hold them) decoded to fp32, exactly
// as ggml's reference dequantization defines each format: every product and difference is one
// fp32 operation, never fused (this file is compiled with -ffp-contract=off), so the values are
// the same bits on every machine and equal an independent decoder's
// (tests/reference/gguf_dequantize.py).
#pragma once

#include <cstdint>

#include "element_type.hpp"

namespace unmask::kernels::cpu {

// out[0, elements) from the blocks of a quantized `type` that hold them; `elements` is a whole
// number of blocks.
void dequantize_row(ElementType type, const uint8_t* blocks, int64_t elements, float* out) noexcept;

}  // namespace unmask::kernels::cpu
