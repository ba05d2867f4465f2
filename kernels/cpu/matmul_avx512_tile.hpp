// The 8 x 32 fp32 tile of C that both AVX-512 microkernels accumulate in registers
// (matmul_avx512.cpp, matmul_avx512bf16.cpp): started from C when a K block adds to the blocks
// before it, from zero otherwise; stored back leaving the rows past `rows` and the columns past
// `cols` untouched. Included only by files compiled for AVX-512.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace unmask::kernels::cpu::detail {

struct Avx512Tile {
    static constexpr int MR = 8, NR = 32;
    __m512 acc[MR][2];
    __mmask16 mask0, mask1;

    Avx512Tile(const float* c, int64_t ldc, int rows, int cols, bool accumulate) {
        mask0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
        mask1 = cols >= 32 ? __mmask16(0xFFFF) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            if (accumulate && i < rows) {
                acc[i][0] = _mm512_maskz_loadu_ps(mask0, c + i * ldc);
                acc[i][1] = _mm512_maskz_loadu_ps(mask1, c + i * ldc + 16);
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
            _mm512_mask_storeu_ps(c + i * ldc, mask0, acc[i][0]);
            _mm512_mask_storeu_ps(c + i * ldc + 16, mask1, acc[i][1]);
        }
    }
};

}  // namespace unmask::kernels::cpu::detail
