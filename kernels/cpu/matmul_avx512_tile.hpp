// What the AVX-512 microkernels share (matmul_avx512.cpp, matmul_avx512bf16.cpp,
// matmul_avx512vnni.cpp): the 8 x 32 fp32 tile of C they accumulate in registers, started from C
// when a K block adds to the blocks before it, from zero otherwise, and stored back leaving the
// rows past `rows` and the columns past `cols` untouched; and the word transpose their panel
// packers use. Included only by files compiled for AVX-512.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace unmask::kernels::cpu::detail {

// The lanes of two 16-float vectors that hold the first `n` of 32 consecutive floats.
struct ColumnMasks {
    __mmask16 low, high;

    explicit ColumnMasks(int64_t n)
        : low(n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1)),
          high(n >= 32 ? __mmask16(0xFFFF) : n <= 16 ? __mmask16(0) : __mmask16((1u << (n - 16)) - 1)) {}
};

// r[i] = column i of the 16 x 16 matrix of 32-bit words whose rows r held: unpacking words, then
// 64-bit halves, within each 128-bit lane, then moving lanes. (The zero-masked forms with every
// lane kept are the same instructions; the plain intrinsics pass GCC an undefined vector, which
// it reports as used uninitialized at -O1.)
inline void transpose_16x16(__m512i (&r)[16]) {
    constexpr __mmask16 words = 0xFFFF;
    constexpr __mmask8 halves = 0xFF;
    __m512i t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_maskz_unpacklo_epi32(words, r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_maskz_unpackhi_epi32(words, r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {  // r[4i + c], lane L: column 4L + c of rows 4i..4i + 3
        r[4 * i] = _mm512_maskz_unpacklo_epi64(halves, t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_maskz_unpackhi_epi64(halves, t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_maskz_unpacklo_epi64(halves, t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_maskz_unpackhi_epi64(halves, t[4 * i + 1], t[4 * i + 3]);
    }
    for (int c = 0; c < 4; ++c) {
        const __m512i ab_low = _mm512_maskz_shuffle_i32x4(words, r[c], r[4 + c], 0x44);
        const __m512i ab_high = _mm512_maskz_shuffle_i32x4(words, r[c], r[4 + c], 0xEE);
        const __m512i de_low = _mm512_maskz_shuffle_i32x4(words, r[8 + c], r[12 + c], 0x44);
        const __m512i de_high = _mm512_maskz_shuffle_i32x4(words, r[8 + c], r[12 + c], 0xEE);
        t[c] = _mm512_maskz_shuffle_i32x4(words, ab_low, de_low, 0x88);
        t[4 + c] = _mm512_maskz_shuffle_i32x4(words, ab_low, de_low, 0xDD);
        t[8 + c] = _mm512_maskz_shuffle_i32x4(words, ab_high, de_high, 0x88);
        t[12 + c] = _mm512_maskz_shuffle_i32x4(words, ab_high, de_high, 0xDD);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}

struct Avx512Tile {
    static constexpr int MR = 8, NR = 32;
    __m512 acc[MR][2];
    ColumnMasks mask;

    Avx512Tile(const float* c, int64_t ldc, int rows, int cols, bool accumulate) : mask(cols) {
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            if (accumulate && i < rows) {
                acc[i][0] = _mm512_maskz_loadu_ps(mask.low, c + i * ldc);
                acc[i][1] = _mm512_maskz_loadu_ps(mask.high, c + i * ldc + 16);
            } else {
                acc[i][0] = _mm512_setzero_ps();
                acc[i][1] = _mm512_setzero_ps();
            }
        }
    }

    void store(float* c, int64_t ldc, int rows) const {
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            if (i >= rows) break;
            _mm512_mask_storeu_ps(c + i * ldc, mask.low, acc[i][0]);
            _mm512_mask_storeu_ps(c + i * ldc + 16, mask.high, acc[i][1]);
        }
    }
};

}  // namespace unmask::kernels::cpu::detail
