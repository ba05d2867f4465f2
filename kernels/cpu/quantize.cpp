#include "cpu/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/float_convert.hpp"
#include "quantized_runs.hpp"

namespace unmask::kernels::cpu {
namespace {

void store_half(uint8_t* p, float value) noexcept {
    const uint16_t bits = float_to_fp16(value);
    std::memcpy(p, &bits, 2);
}

// (int)v for v in [lo, hi] (ggml's casts); NaN and values beyond (a non-finite weight) clamp, so a
// bad weight gives a defined block rather than undefined behaviour.
int clamped(float v, int lo, int hi) noexcept {
    if (!(v >= float(lo))) return lo;
    if (v > float(hi)) return hi;
    return static_cast<int>(v);
}

void q8_0(const float* x, uint8_t* block) noexcept {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_half(block, d);
    for (int j = 0; j < 32; ++j) block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(clamped(std::round(x[j] * id), -127, 127)));
}

void q4_0(const float* x, uint8_t* block) noexcept {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_half(block, d);
    for (int j = 0; j < 16; ++j) {
        const auto low = static_cast<uint8_t>(std::min(15, clamped(x[j] * id + 8.5f, 0, 127)));
        const auto high = static_cast<uint8_t>(std::min(15, clamped(x[j + 16] * id + 8.5f, 0, 127)));
        block[2 + j] = uint8_t(low | (high << 4));
    }
}

void f8_e4m3_b128(const float* x, uint8_t* block) noexcept {
    float amax = 0.0f;
    for (int j = 0; j < 128; ++j)
        if (std::isfinite(x[j])) amax = std::max(amax, std::fabs(x[j]));
    const float scale = amax / 448.0f;
    std::memcpy(block, &scale, 4);
    for (int j = 0; j < 128; ++j)
        block[4 + j] = quantized::fp8_group_code(x[j], scale);
}

}  // namespace

void quantize_row(ElementType type, const float* x, int64_t elements, uint8_t* out) noexcept {
    const int64_t step = block_elements(type), bytes = block_bytes(type);
    for (int64_t i = 0; i < elements / step; ++i, x += step, out += bytes) {
        if (type == ElementType::q8_0) q8_0(x, out);
        else if (type == ElementType::q4_0) q4_0(x, out);
        else if (type == ElementType::f8_e4m3_b128) f8_e4m3_b128(x, out);
        else std::memset(out, 0, size_t(bytes));  // not a type made at load: defined bytes all the same
    }
}

}  // namespace unmask::kernels::cpu
