#include "cpu/dequantize.hpp"

#include <array>
#include <cstring>

#include "core/float_convert.hpp"
#include "quantized_runs.hpp"

// Block layouts (ggml's block_q8_0, block_q4_0, block_q4_K, block_q5_K, block_q6_K; GGUF stores
// them little-endian and packed):
//   Q8_0: fp16 d, int8 q[32]                  x = q * d
//   Q4_0: fp16 d, u8 q[16]                    x[j] = ((q[j] & 15) - 8) * d, x[j + 16] = ((q[j] >> 4) - 8) * d
//   Q4_K: fp16 d, fp16 dmin, u8 scales[12], u8 q[128]: 8 sub-blocks of 32 with 6-bit scale and
//         min; x = (d * scale) * q - (dmin * min)
//   Q5_K: as Q4_K with u8 qh[32] (a fifth bit per element) before q[128]
//   Q6_K: u8 ql[128], u8 qh[64], int8 scales[16], fp16 d: 16 sub-blocks of 16;
//         x = (d * scale) * (q - 32) with q of 6 bits
// and unmask's own:
//   F8_E4M3_B128: fp32 s, u8 q[128]           x = e4m3(q) * s
namespace unmask::kernels::cpu {
namespace {

// The fp16 reads and Q4_K's and Q5_K's packed scales, shared with the CUDA decoder.
using quantized::half_at;
using quantized::scale_and_min;

void q8_0(const uint8_t* b, float* y) noexcept {
    const float d = half_at(b);
    for (int j = 0; j < 32; ++j) y[j] = float(int8_t(b[2 + j])) * d;
}

void q4_0(const uint8_t* b, float* y) noexcept {
    const float d = half_at(b);
    for (int j = 0; j < 16; ++j) {
        y[j] = float((b[2 + j] & 15) - 8) * d;
        y[j + 16] = float((b[2 + j] >> 4) - 8) * d;
    }
}

// Q4_K and Q5_K: high bits (Q5_K) add 16 to an element's four low bits.
void q4_5_k(const uint8_t* b, float* y, bool five_bits) noexcept {
    const float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* high = b + 16;
    const uint8_t* q = five_bits ? b + 48 : b + 16;
    for (int chunk = 0; chunk < 4; ++chunk) {  // 64 elements: sub-blocks 2 chunk and 2 chunk + 1
        int scale = 0, min = 0;
        scale_and_min(2 * chunk, scales, scale, min);
        const float d1 = d * float(scale), m1 = dmin * float(min);
        scale_and_min(2 * chunk + 1, scales, scale, min);
        const float d2 = d * float(scale), m2 = dmin * float(min);
        const int low_bit = 2 * chunk, high_bit = 2 * chunk + 1;
        for (int l = 0; l < 32; ++l) {
            const int extra = five_bits && (high[l] >> low_bit & 1) ? 16 : 0;
            const float product = d1 * float((q[l] & 15) + extra);
            y[l] = product - m1;
        }
        for (int l = 0; l < 32; ++l) {
            const int extra = five_bits && (high[l] >> high_bit & 1) ? 16 : 0;
            const float product = d2 * float((q[l] >> 4) + extra);
            y[32 + l] = product - m2;
        }
        q += 32;
        y += 64;
    }
}

void f8_e4m3_b128(const uint8_t* b, float* y) noexcept {
    static const auto values = [] {
        std::array<float, 256> table{};
        for (int i = 0; i < 256; ++i) table[size_t(i)] = fp8_e4m3_to_float(uint8_t(i));
        return table;
    }();
    float scale;
    std::memcpy(&scale, b, 4);
    for (int j = 0; j < 128; ++j) y[j] = values[b[4 + j]] * scale;
}

void q6_k(const uint8_t* b, float* y) noexcept {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
    const float d = half_at(b + 208);
    for (int half = 0; half < 2; ++half) {  // 128 elements each
        for (int l = 0; l < 32; ++l) {
            const int s = l / 16;
            const int q1 = ((ql[l] & 15) | ((qh[l] >> 0 & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 15) | ((qh[l] >> 2 & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
            y[l] = d * float(scales[s]) * float(q1);
            y[l + 32] = d * float(scales[s + 2]) * float(q2);
            y[l + 64] = d * float(scales[s + 4]) * float(q3);
            y[l + 96] = d * float(scales[s + 6]) * float(q4);
        }
        y += 128;
        ql += 64;
        qh += 32;
        scales += 8;
    }
}

}  // namespace

void dequantize_row(ElementType type, const uint8_t* blocks, int64_t elements, float* out) noexcept {
    const int64_t step = block_elements(type), bytes = block_bytes(type);
    for (int64_t i = 0; i < elements / step; ++i, blocks += bytes, out += step) {
        switch (type) {
            case ElementType::q8_0: q8_0(blocks, out); break;
            case ElementType::q4_0: q4_0(blocks, out); break;
            case ElementType::q4_k: q4_5_k(blocks, out, false); break;
            case ElementType::q5_k: q4_5_k(blocks, out, true); break;
            case ElementType::q6_k: q6_k(blocks, out); break;
            case ElementType::f8_e4m3_b128: f8_e4m3_b128(blocks, out); break;
            case ElementType::f32:
            case ElementType::bf16:
            case ElementType::f16: return;  // not block types: nothing to decode
        }
    }
}

}  // namespace unmask::kernels::cpu
