#include "core/float_convert.hpp"

#include <algorithm>

namespace unmask {
namespace {

// A magnitude below a format's smallest normal in its subnormal steps (`steps_per_unit` of them to
// 1.0, a power of two, so the scaling is exact), rounded to nearest even.
uint32_t subnormal_steps(uint32_t magnitude, float steps_per_unit) noexcept {
    const float scaled = bits_to_float(magnitude) * steps_per_unit;
    const auto whole = static_cast<uint32_t>(scaled);
    const float fraction = scaled - static_cast<float>(whole);
    return whole + (fraction > 0.5f || (fraction == 0.5f && (whole & 1u)) ? 1u : 0u);
}

}  // namespace

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
    // Subnormal or zero: in steps of 2^-24 (1024 of them is the smallest normal, 2^-14).
    return uint16_t(sign | subnormal_steps(magnitude, 16777216.0f));
}

float fp8_e4m3_to_float(uint8_t bits) noexcept {
    const uint32_t sign = uint32_t(bits & 0x80u) << 24;
    const uint32_t exponent = (bits >> 3) & 0xFu, mantissa = bits & 0x7u;
    if (exponent == 0xF && mantissa == 0x7) return bits_to_float(sign | 0x7FC00000u);  // NaN
    if (exponent != 0) return bits_to_float(sign | ((exponent + 120) << 23) | (mantissa << 20));
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 512.0f);  // subnormal: mantissa * 2^-9
    return sign ? -magnitude : magnitude;
}

uint8_t float_to_fp8_e4m3(float f) noexcept {
    const uint32_t bits = float_to_bits(f);
    const auto sign = uint8_t((bits >> 24) & 0x80u);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return uint8_t(sign | 0x7Fu);   // NaN
    if (magnitude >= 0x43E00000u) return uint8_t(sign | 0x7Eu);  // >= 448: saturate
    if (magnitude >= 0x3C800000u) {                              // normal e4m3 (>= 2^-6)
        const uint32_t rounded = magnitude + 0x7FFFFu + ((magnitude >> 20) & 1u);
        return uint8_t(sign | std::min<uint32_t>((rounded >> 20) - (120u << 3), 0x7Eu));
    }
    // Subnormal or zero: in steps of 2^-9 (8 of them is the smallest normal, 2^-6).
    return uint8_t(sign | subnormal_steps(magnitude, 512.0f));
}

}  // namespace unmask
