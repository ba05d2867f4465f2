// The 8 x 32 fp32 tile of C that both AVX-512 microkernels accumulate in registers
// (matmul_avx512.cpp, matmul_avx512bf16.cpp): started from C when a K block adds to the blocks
// before it, from zero otherwise; stored back leaving the rows past `rows` and the columns past
// `cols` untouched. Included only by files compiled for AVX-512.
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
