// Rows of fp32 weights quantized into blocks at load time: ggml's Q8_0 and Q4_0 (`precision` int8
// and q4), as ggml's reference quantizers define them (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref), so that dequantize_row reads them back and a file written from them is
// what llama.cpp would have written; and F8_E4M3_B128 (`precision` fp8). Compiled with
// -ffp-contract=off: the same bits everywhere.
#pragma once

#include <cstdint>

#include "element_type.hpp"

namespace unmask::kernels::cpu {

// out <- the blocks of x[0, elements) in `type` (Q8_0, Q4_0 or F8_E4M3_B128); `elements` is a
// whole number of blocks.
//   Q8_0: d = max|x| / 127, q = round(x / d) (half away from zero), d stored as fp16.
//   Q4_0: d = m / -8 with m the element of largest magnitude (its sign kept),
//         q = min(15, trunc(x / d + 8.5)), two per byte (element j low, j + 16 high), d as fp16.
//   F8_E4M3_B128: s = max|x| / 448 over the finite x (0 when all are 0), q = e4m3(x / s) rounded
//         to nearest even (0 when s is 0; a non-finite x gives NaN), s stored as fp32.
void quantize_row(ElementType type, const float* x, int64_t elements, uint8_t* out) noexcept;

}  // namespace unmask::kernels::cpu
