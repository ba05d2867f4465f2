// Runs of 8 consecutive weights of a row stored in a block type (element_type.hpp), decoded to
// fp32 one run at a time, as a CUDA lane reads them (C++17, host and device): the arithmetic of
// the CPU's dequantize_row (cpu/dequantize.cpp, which decodes whole blocks, states each layout and
// shares scale_and_min), operation for operation and never fused, so a weight decodes to the same
// bits on both (the on-host kernel tests check every type against it).
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/float_convert.hpp"
#include "element_type.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

namespace unmask::kernels {

inline constexpr int64_t quantized_run = 8;

namespace quantized {

// a * b and a - b, each rounded once (nvcc would otherwise fuse a product into a later difference).
UNMASK_HOST_DEVICE inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
UNMASK_HOST_DEVICE inline float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

// The fp16 at p (little-endian, any alignment).
UNMASK_HOST_DEVICE inline float half_at(const uint8_t* p) {
    const auto bits = static_cast<uint16_t>(p[0] | (p[1] << 8));
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(bits));
#else
    return fp16_to_float(bits);
#endif
}

// The fp32 at p (little-endian, any alignment).
UNMASK_HOST_DEVICE inline float float_at(const uint8_t* p) {
    const uint32_t bits = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    return bits_to_float(bits);
#endif
}

UNMASK_HOST_DEVICE inline float fp8_value(uint8_t code) {
#if defined(__CUDA_ARCH__)
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E4M3)));
#else
    return fp8_e4m3_to_float(code);
#endif
}

// v in e4m3, rounded to nearest even and saturated to ±448 (NaN stays NaN): float_to_fp8_e4m3.
UNMASK_HOST_DEVICE inline uint8_t fp8_code(float v) {
#if defined(__CUDA_ARCH__)
    return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
#else
    return float_to_fp8_e4m3(v);
#endif
}

// An element of an F8_E4M3_B128 group whose scale is the group's largest finite |x| / 448: NaN's code
// for a value that is not finite, 0 when the scale is 0, else e4m3(x / scale). Weights quantized at
// load (cpu quantize_row) and activations quantized on the device (cuda quantize_fp8_groups) take
// their bits from here.
UNMASK_HOST_DEVICE inline uint8_t fp8_group_code(float x, float scale) {
    if (!(fabsf(x) <= FLT_MAX)) return 0x7F;
    return scale != 0.0f ? fp8_code(x / scale) : uint8_t(0);
}

// Q4_K's and Q5_K's 6-bit scale and min of sub-block j from their 12 packed bytes.
UNMASK_HOST_DEVICE inline void scale_and_min(int j, const uint8_t* packed, int& scale, int& min) {
    if (j < 4) {
        scale = packed[j] & 63;
        min = packed[j + 4] & 63;
    } else {
        scale = (packed[j + 4] & 15) | ((packed[j - 4] >> 6) << 4);
        min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
    }
}

}  // namespace quantized

// out[0, 8) = elements at .. at + 8 of the row whose blocks start at `row` (at a multiple of 8).
UNMASK_HOST_DEVICE inline void decode_quantized_run(ElementType type, const uint8_t* row, int64_t at, float (&out)[8]) {
    using namespace quantized;
    const int64_t size = block_elements(type);
    const uint8_t* b = row + at / size * block_bytes(type);
    const int o = static_cast<int>(at % size);  // the run's first element within its block
    switch (type) {
        case ElementType::q8_0: {
            const float d = half_at(b);
            for (int j = 0; j < 8; ++j) out[j] = mul(float(static_cast<int8_t>(b[2 + o + j])), d);
            return;
        }
        case ElementType::q4_0: {
            const float d = half_at(b);
            for (int j = 0; j < 8; ++j)
                out[j] = mul(float((o < 16 ? b[2 + o + j] & 15 : b[2 + o - 16 + j] >> 4) - 8), d);
            return;
        }
        case ElementType::q4_k:
        case ElementType::q5_k: {
            const bool five = type == ElementType::q5_k;
            const int chunk = o / 64, upper = o % 64 >= 32, l = o % 32, sub_block = 2 * chunk + upper;
            int scale = 0, min = 0;
            scale_and_min(sub_block, b + 4, scale, min);
            const float d = mul(half_at(b), float(scale)), m = mul(half_at(b + 2), float(min));
            const uint8_t* q = b + (five ? 48 : 16) + 32 * chunk;
            for (int j = 0; j < 8; ++j) {
                const int extra = five && (b[16 + l + j] >> sub_block & 1) ? 16 : 0;
                out[j] = sub(mul(d, float((upper ? q[l + j] >> 4 : q[l + j] & 15) + extra)), m);
            }
            return;
        }
        case ElementType::q6_k: {
            const int half = o / 128, quarter = o % 128 / 32, l = o % 32;
            const uint8_t* ql = b + 64 * half + (quarter & 1) * 32;
            const uint8_t* qh = b + 128 + 32 * half;
            const auto scale = static_cast<int8_t>(b[192 + 8 * half + l / 16 + 2 * quarter]);
            const float ds = mul(half_at(b + 208), float(scale));
            for (int j = 0; j < 8; ++j) {
                const int low = quarter < 2 ? ql[l + j] & 15 : ql[l + j] >> 4;
                out[j] = mul(ds, float((low | ((qh[l + j] >> (2 * quarter) & 3) << 4)) - 32));
            }
            return;
        }
        case ElementType::f8_e4m3_b128: {
            const float s = float_at(b);
            for (int j = 0; j < 8; ++j) out[j] = mul(fp8_value(b[4 + o + j]), s);
            return;
        }
        case ElementType::f32:
        case ElementType::bf16:
        case ElementType::f16: break;  // not block types
    }
    for (int j = 0; j < 8; ++j) out[j] = 0.0f;
}

}  // namespace unmask::kernels
