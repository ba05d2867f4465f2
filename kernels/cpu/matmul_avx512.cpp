// AVX-512 microkernel: 8 rows x 32 columns, 16 zmm accumulators. Compiled with -mavx512f -mfma.
#include <immintrin.h>

#include "cpu/matmul_driver.hpp"

namespace unmask::kernels::cpu {
namespace {

struct Avx512Kernel {
    static constexpr int64_t MR = 8, NR = 32;

    static void run(const float* a, int64_t lda, int rows, const float* b, int64_t kc, float* c, int64_t ldc, int cols,
                    bool accumulate) {
        const float* row[MR];
        for (int i = 0; i < MR; ++i) row[i] = a + std::min(i, rows - 1) * lda;  // spare rows repeat the last
        const __mmask16 mask0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
        const __mmask16 mask1 = cols >= 32 ? __mmask16(0xFFFF) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
        __m512 acc[MR][2];
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
        for (int64_t k = 0; k < kc; ++k) {
            const __m512 b0 = _mm512_loadu_ps(b + k * NR);
            const __m512 b1 = _mm512_loadu_ps(b + k * NR + 16);
#pragma GCC unroll 8
            for (int i = 0; i < MR; ++i) {
                const __m512 x = _mm512_set1_ps(row[i][k]);
                acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
                acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
            }
        }
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            if (i >= rows) break;
            _mm512_mask_storeu_ps(c + i * ldc, mask0, acc[i][0]);
            _mm512_mask_storeu_ps(c + i * ldc + 16, mask1, acc[i][1]);
        }
    }
};

}  // namespace

void matmul_columns_avx512(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin,
                           int64_t n_end, float* c, int64_t ldc, float* scratch) {
    detail::matmul_driver<Avx512Kernel>(a, lda, m, w, n_begin, n_end, c, ldc, scratch);
}

}  // namespace unmask::kernels::cpu
