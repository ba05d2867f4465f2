// AVX-512 microkernel: 8 rows x 32 columns, 16 zmm accumulators. Compiled with -mavx512f -mfma.
#include <immintrin.h>

#include "cpu/matmul_avx512_tile.hpp"
#include "cpu/matmul_driver.hpp"

namespace unmask::kernels::cpu {
namespace {

struct Avx512Kernel {
    static constexpr int64_t MR = detail::Avx512Tile::MR, NR = detail::Avx512Tile::NR;

    static void run(const float* a, int64_t lda, int rows, const float* b, int64_t kc, float* c, int64_t ldc, int cols,
                    bool accumulate) {
        const float* row[MR];
        for (int i = 0; i < MR; ++i) row[i] = a + std::min(i, rows - 1) * lda;  // spare rows repeat the last
        detail::Avx512Tile tile(c, ldc, rows, cols, accumulate);
        for (int64_t k = 0; k < kc; ++k) {
            const __m512 b0 = _mm512_loadu_ps(b + k * NR);
            const __m512 b1 = _mm512_loadu_ps(b + k * NR + 16);
#pragma GCC unroll 8
            for (int i = 0; i < MR; ++i) {
                const __m512 x = _mm512_set1_ps(row[i][k]);
                tile.acc[i][0] = _mm512_fmadd_ps(x, b0, tile.acc[i][0]);
                tile.acc[i][1] = _mm512_fmadd_ps(x, b1, tile.acc[i][1]);
            }
        }
        tile.store(c, ldc, rows);
    }
};

}  // namespace

void matmul_columns_avx512(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin,
                           int64_t n_end, float* c, int64_t ldc, float* scratch) {
    detail::matmul_driver<Avx512Kernel>(a, lda, m, w, n_begin, n_end, c, ldc, scratch);
}

}  // namespace unmask::kernels::cpu
