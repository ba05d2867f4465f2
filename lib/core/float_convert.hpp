// Conversions between fp32, bf16 and fp16 bit patterns (round to nearest even; NaN stays NaN,
// infinities stay infinite, fp16 subnormals are exact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace unmask {

inline float bits_to_float(uint32_t bits) noexcept {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint32_t float_to_bits(float f) noexcept {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
}

inline float bf16_to_float(uint16_t h) noexcept { return bits_to_float(uint32_t(h) << 16); }

inline uint16_t float_to_bf16(float f) noexcept {
    const uint32_t bits = float_to_bits(f);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
    const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
    return uint16_t((bits + rounding) >> 16);
}

float fp16_to_float(uint16_t h) noexcept;
uint16_t float_to_fp16(float f) noexcept;

// FP8 E4M3 ("e4m3fn", the OCP 8-bit floating point format that fp8 checkpoints store): a sign, 4
// exponent bits of bias 7, 3 mantissa bits; no infinities, S.1111.111 is NaN, the largest finite
// value is 448. Every value is exact in fp32.
float fp8_e4m3_to_float(uint8_t bits) noexcept;
// Round to nearest even; finite values beyond 448 saturate to +-448, NaN stays NaN.
uint8_t float_to_fp8_e4m3(float f) noexcept;

}  // namespace unmask
