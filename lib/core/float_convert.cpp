#include "core/float_convert.hpp"

namespace unmask {

float fp16_to_float(uint16_t h) noexcept {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1Fu;
    const uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0x1F) return bits_to_float(sign | 0x7F800000u | (mantissa << 13));  // inf, NaN
    if (exponent != 0) return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
    if (mantissa == 0) return bits_to_float(sign);
    // Subnormal: value = mantissa * 2^-24, exact in fp32.
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
}

uint16_t float_to_fp16(float f) noexcept {
    const uint32_t bits = float_to_bits(f);
    const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return uint16_t(sign | 0x7E00u);  // NaN
    if (magnitude >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to infinity (>= 65520)
    if (magnitude >= 0x38800000u) {                                   // normal fp16 (>= 2^-14)
        const uint32_t rounded = magnitude + 0xFFFu + ((magnitude >> 13) & 1u);
        return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
    }
    // Subnormal or zero: scale so the fp16 subnormal step (2^-24) becomes 1, round to nearest even.
    const float scaled = bits_to_float(magnitude) * 16777216.0f;
    const auto whole = static_cast<uint32_t>(scaled);
    const float fraction = scaled - static_cast<float>(whole);
    uint32_t result = whole;
    if (fraction > 0.5f || (fraction == 0.5f && (whole & 1u))) ++result;
    return uint16_t(sign | result);
}

}  // namespace unmask
