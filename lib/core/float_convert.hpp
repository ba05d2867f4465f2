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

}  // namespace unmask
