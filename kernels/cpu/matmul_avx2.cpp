// AVX2 + FMA microkernel: 6 rows x 16 columns, 12 ymm accumulators. Compiled with -mavx2 -mfma.
#include <immintrin.h>

#include "cpu/matmul_driver.hpp"

namespace unmask::kernels::cpu {
namespace {

inline __m256i column_mask(int valid) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), lanes);
}

struct Avx2Kernel {
    static constexpr int64_t MR = 6, NR = 16;

    static void run(const float* a, int64_t lda, int rows, const float* b, int64_t kc, float* c, int64_t ldc, int cols,
                    bool accumulate) {
        const float* row[MR];
        for (int i = 0; i < MR; ++i) row[i] = a + std::min(i, rows - 1) * lda;
        const __m256i mask0 = column_mask(cols);
        const __m256i mask1 = column_mask(cols - 8);
        __m256 acc[MR][2];
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
            if (accumulate && i < rows) {
                acc[i][0] = _mm256_maskload_ps(c + i * ldc, mask0);
                acc[i][1] = _mm256_maskload_ps(c + i * ldc + 8, mask1);
            } else {
                acc[i][0] = _mm256_setzero_ps();
                acc[i][1] = _mm256_setzero_ps();
            }
        }
        for (int64_t k = 0; k < kc; ++k) {
            const __m256 b0 = _mm256_loadu_ps(b + k * NR);
            const __m256 b1 = _mm256_loadu_ps(b + k * NR + 8);
#pragma GCC unroll 6
            for (int i = 0; i < MR; ++i) {
                const __m256 x = _mm256_broadcast_ss(row[i] + k);
                acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
            }
        }
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
            if (i >= rows) break;
            _mm256_maskstore_ps(c + i * ldc, mask0, acc[i][0]);
            _mm256_maskstore_ps(c + i * ldc + 8, mask1, acc[i][1]);
        }
    }
};

}  // namespace

void matmul_columns_avx2(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin, int64_t n_end,
                         float* c, int64_t ldc, float* scratch) {
    detail::matmul_driver<Avx2Kernel>(a, lda, m, w, n_begin, n_end, c, ldc, scratch);
}

}  // namespace unmask::kernels::cpu
