// int8 products for Q8_0 and Q4_0 weights (the int8 and q4 precisions load as these): the activations
// are quantized on the fly in blocks of 32 along k, as Q8_0 itself is (d = max|x| / 127,
// q = x · (127 / max|x|) rounded to nearest even), and VPDPBUSD multiplies four int8 pairs per
// 32-bit lane and adds them in int32: 64 multiply-adds per instruction, against AVX512-BF16's 32,
// with a quarter of the fp32 panel's bytes. Each block's integer dot product is then exact, and
//     c[i, j] += float(dot_ij) · (d_w[j] · d_a[i])      (one fused multiply-add)
// block by block in ascending k, so every output element is summed in one order whatever m, the
// column range or the thread. VPDPBUSD takes one operand unsigned: the weights go in as q + 128
// and each block's integer sum starts from -128 · Σq_a, which cancels the bias exactly. Only matrices with WeightMatrix::int8_products take this path (matmul.cpp).
// Compiled with -mavx512f -mavx512bw -mavx512vnni.
#include <immintrin.h>

#include <cstring>

#include "cpu/matmul_avx512_tile.hpp"
#include "cpu/matmul_driver.hpp"

// GCC 12's reduction and conversion intrinsics pass an undefined vector as the unused merge
// source of their mask (all ones), which its flow analysis reports as maybe uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace unmask::kernels::cpu {

namespace {

using Word = uint32_t __attribute__((may_alias));  // four int8, in scratch that is float storage
// A quantized row's scales and sums, in scratch that is float storage or in the caller's words.
using Scale = float __attribute__((may_alias));
using Sum = int32_t __attribute__((may_alias));

constexpr int64_t MR = detail::Avx512Tile::MR, NR = detail::Avx512Tile::NR;
constexpr int64_t q8_block = 32, k_block = detail::k_block, blocks_per_k_block = detail::int8_blocks_per_k_block;
constexpr int64_t words_per_block = q8_block / 4;
using detail::int8_column_chunk;
using detail::int8_row_group;
static_assert(int8_column_chunk % NR == 0 && k_block % q8_block == 0);

// Rows of activations quantized in blocks of 32: row r's values at q + r * q_stride, its blocks'
// scales at d + r * block_stride and their -128 · Σq at bias + r * block_stride.
struct QuantizedRows {
    int8_t* q;
    Scale* d;
    Sum* bias;
    int64_t q_stride, block_stride;

    QuantizedRows from(int64_t row, int64_t k0) const {  // the same rows from `row` and column k0
        return {q + row * q_stride + k0, d + row * block_stride + k0 / q8_block,
                bias + row * block_stride + k0 / q8_block, q_stride, block_stride};
    }
};

// Rows [0, rows) of `a` over [k0, k0 + kc) (kc a multiple of 32) quantized into `out`, from its k0.
void quantize_rows(const float* a, int64_t lda, int64_t rows, int64_t k0, int64_t kc, const QuantizedRows& out) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* x = a + r * lda + k0;
        for (int64_t b = 0; b < kc / q8_block; ++b) {
            const __m512 low = _mm512_loadu_ps(x + b * q8_block), high = _mm512_loadu_ps(x + b * q8_block + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(low), _mm512_abs_ps(high)));
            const float scale = amax / 127.0f, inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
            const __m512 by = _mm512_set1_ps(inverse);
            const __m512i q_low = _mm512_cvtps_epi32(_mm512_mul_ps(low, by));  // to nearest even
            const __m512i q_high = _mm512_cvtps_epi32(_mm512_mul_ps(high, by));
            int8_t* q = out.q + r * out.q_stride + b * q8_block;
            _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(q_low));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtsepi32_epi8(q_high));
            out.d[r * out.block_stride + b] = scale;
            out.bias[r * out.block_stride + b] = -128 * _mm512_reduce_add_epi32(_mm512_add_epi32(q_low, q_high));
        }
    }
}

// The layout of matmul.hpp's quantize_activations for rows of k values: each row's k bytes, then
// its k / 32 scales, then its k / 32 sums, in quantized_row_words(k) words.
QuantizedRows shared_rows(const uint32_t* quantized, int64_t k) {
    auto* base = const_cast<uint32_t*>(quantized);
    const int64_t words = quantized_row_words(k);
    return {reinterpret_cast<int8_t*>(base), reinterpret_cast<Scale*>(base + k / 4),
            reinterpret_cast<Sum*>(base + k / 4 + k / q8_block), 4 * words, words};
}

// The 4 weights of group g (k = 4g .. 4g + 3) of a block, each + 128, as the bytes of one word:
// Q8_0's int8 values with their sign bit flipped; Q4_0's nibbles (low ones hold elements 0-15,
// high ones 16-31, each value nibble - 8), + 120.
uint32_t group_word(ElementType type, const uint8_t* values, int64_t g) {
    uint32_t word;
    if (type == ElementType::q8_0) {
        std::memcpy(&word, values + 4 * g, sizeof word);
        return word ^ 0x80808080u;
    }
    std::memcpy(&word, values + 4 * (g % 4), sizeof word);
    return ((g < 4 ? word : word >> 4) & 0x0F0F0F0Fu) + 0x78787878u;
}

// A block's 8 group words (group_word) in one vector.
__m256i block_words(ElementType type, const uint8_t* values) {
    if (type == ElementType::q8_0)
        return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(values)), _mm256_set1_epi8(-128));
    const __m128i nibbles = _mm_loadu_si128(reinterpret_cast<const __m128i*>(values)), low = _mm_set1_epi8(0x0F);
    const __m256i both = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(nibbles, 4), low), _mm_and_si128(nibbles, low));
    return _mm256_add_epi8(both, _mm256_set1_epi8(120));
}

// The panel of weight rows n0.. (cols of them, the rest zero) over [k0, k0 + kc): for block b and
// group g of 4, word (b * 8 + g) * NR + j holds w[n0 + j, k0 + 32b + 4g ..][0..3] + 128 as bytes;
// scales[b * NR + j] is the block's d (zero past cols, so the spare columns add nothing). Pairs
// of blocks of 16 whole columns are transposed in registers (a column's 16 words per register),
// the rest written a word at a time.
void pack_panel(const WeightMatrix& w, int64_t n0, int64_t cols, int64_t k0, int64_t kc, Word* panel, float* scales) {
    const int64_t blocks = kc / q8_block, paired = blocks / 2 * 2, bytes = block_bytes(w.type);
    auto row = [&](int64_t j) {
        return static_cast<const uint8_t*>(w.data) + row_bytes(w.type, (n0 + j) * w.stride + k0);
    };
    for (int64_t j0 = 0; j0 < NR; j0 += 16) {
        const bool full = j0 + 16 <= cols;
        for (int64_t b = 0; full && b < paired; b += 2) {
            __m512i r[16];
            for (int j = 0; j < 16; ++j) {
                const uint8_t* block = row(j0 + j) + b * bytes;  // an fp16 d, then the values
                r[j] = _mm512_inserti64x4(_mm512_castsi256_si512(block_words(w.type, block + 2)),
                                          block_words(w.type, block + bytes + 2), 1);
            }
            detail::transpose_16x16(r);
            for (int p = 0; p < 16; ++p) _mm512_storeu_si512(panel + (b * words_per_block + p) * NR + j0, r[p]);
        }
        for (int64_t j = j0; j < j0 + 16; ++j)
            for (int64_t b = full ? paired : 0; b < blocks; ++b)
                for (int64_t g = 0; g < words_per_block; ++g)
                    panel[(b * words_per_block + g) * NR + j] =
                        j < cols ? group_word(w.type, row(j) + b * bytes + 2, g) : 0x80808080u;
    }
    for (int64_t j = 0; j < NR; ++j)
        for (int64_t b = 0; b < blocks; ++b) {
            uint16_t half = 0;
            if (j < cols) std::memcpy(&half, row(j) + b * bytes, sizeof half);
            scales[b * NR + j] = _cvtsh_ss(half);
        }
}

// c[0..rows, 0..cols] (+)= the quantized rows · the panel over `blocks` blocks: 8 rows x 32
// columns, each block's sums in 16 int32 registers, then added into 16 fp32 ones.
void run(const QuantizedRows& a, int rows, const Word* panel, const float* scales, int64_t blocks, float* c,
         int64_t ldc, int cols, bool accumulate) {
    int row[MR];
    for (int i = 0; i < MR; ++i) row[i] = std::min(i, rows - 1);  // spare rows repeat the last
    detail::Avx512Tile tile(c, ldc, rows, cols, accumulate);
    for (int64_t b = 0; b < blocks; ++b) {
        const Word* words = panel + b * words_per_block * NR;
        const Word* x[MR];
        __m512i sum[MR][2];
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            x[i] = reinterpret_cast<const Word*>(a.q + row[i] * a.q_stride + b * q8_block);
            sum[i][0] = sum[i][1] = _mm512_set1_epi32(a.bias[row[i] * a.block_stride + b]);
        }
#pragma GCC unroll 8
        for (int64_t g = 0; g < words_per_block; ++g) {
            const __m512i w0 = _mm512_loadu_si512(words + g * NR), w1 = _mm512_loadu_si512(words + g * NR + 16);
#pragma GCC unroll 8
            for (int i = 0; i < MR; ++i) {
                const __m512i four = _mm512_set1_epi32(static_cast<int>(x[i][g]));
                sum[i][0] = _mm512_dpbusd_epi32(sum[i][0], w0, four);
                sum[i][1] = _mm512_dpbusd_epi32(sum[i][1], w1, four);
            }
        }
        const __m512 d_low = _mm512_loadu_ps(scales + b * NR), d_high = _mm512_loadu_ps(scales + b * NR + 16);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            const __m512 d_a = _mm512_set1_ps(a.d[row[i] * a.block_stride + b]);
            tile.acc[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i][0]), _mm512_mul_ps(d_low, d_a), tile.acc[i][0]);
            tile.acc[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i][1]), _mm512_mul_ps(d_high, d_a), tile.acc[i][1]);
        }
    }
    tile.store(c, ldc, rows);
}

// Per chunk of int8_column_chunk columns and K block: its panels packed once, then the rows of A
// run against every panel int8_row_group at a time: A quantized here, one group at a time, or,
// given `shared` (A quantized once for every column run, quantize_activations), read from there.
void int8_columns(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin, int64_t n_end,
                  float* c, int64_t ldc, float* scratch, const uint32_t* shared) {
    Word* panels = reinterpret_cast<Word*>(scratch);  // the layout of int8_scratch_floats
    float* scales = scratch + detail::int8_panel_floats;
    float* group_rows = scales + detail::int8_panel_scale_floats;
    const QuantizedRows own{reinterpret_cast<int8_t*>(group_rows), group_rows + int8_row_group * k_block / 4,
                            reinterpret_cast<Sum*>(group_rows + int8_row_group * (k_block / 4 + blocks_per_k_block)),
                            k_block, blocks_per_k_block};
    for (int64_t chunk = n_begin; chunk < n_end; chunk += int8_column_chunk) {
        const int64_t chunk_end = std::min(n_end, chunk + int8_column_chunk);
        for (int64_t k0 = 0; k0 < w.cols; k0 += k_block) {
            const int64_t kc = std::min(k_block, w.cols - k0), blocks = kc / q8_block;
            for (int64_t n0 = chunk; n0 < chunk_end; n0 += NR)
                pack_panel(w, n0, std::min(NR, chunk_end - n0), k0, kc, panels + (n0 - chunk) * (k_block / 4),
                           scales + (n0 - chunk) * blocks_per_k_block);
            for (int64_t g0 = 0; g0 < m; g0 += int8_row_group) {
                const int64_t group = std::min(int8_row_group, m - g0);
                QuantizedRows rows = own;
                if (shared != nullptr)
                    rows = shared_rows(shared, w.cols).from(g0, k0);
                else
                    quantize_rows(a + g0 * lda, lda, group, k0, kc, own);
                for (int64_t n0 = chunk; n0 < chunk_end; n0 += NR)
                    for (int64_t m0 = 0; m0 < group; m0 += MR)
                        run(rows.from(m0, 0), static_cast<int>(std::min(MR, group - m0)),
                            panels + (n0 - chunk) * (k_block / 4), scales + (n0 - chunk) * blocks_per_k_block, blocks,
                            c + (g0 + m0) * ldc + n0, ldc, static_cast<int>(std::min(NR, chunk_end - n0)), k0 > 0);
            }
        }
    }
}

}  // namespace

void matmul_columns_avx512vnni(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin,
                               int64_t n_end, float* c, int64_t ldc, float* scratch) {
    int8_columns(a, lda, m, w, n_begin, n_end, c, ldc, scratch, nullptr);
}

void matmul_columns_avx512vnni_quantized(const uint32_t* quantized, int64_t m, const WeightMatrix& w, int64_t n_begin,
                                         int64_t n_end, float* c, int64_t ldc, float* scratch) {
    int8_columns(nullptr, 0, m, w, n_begin, n_end, c, ldc, scratch, quantized);
}

void quantize_activations_avx512vnni(const float* a, int64_t lda, int64_t rows, int64_t k, uint32_t* quantized) {
    quantize_rows(a, lda, rows, 0, k, shared_rows(quantized, k));
}

}  // namespace unmask::kernels::cpu
