// AVX512-BF16 products: the activations are rounded to bf16 (to nearest even) and VDPBF16PS
// multiplies them pairwise with the weights, accumulating in fp32: 32 multiply-adds per
// instruction against the fp32 kernel's 16, and half the bytes of weight panel. bf16 weights are
// packed as they are; quantized blocks are decoded into the bf16 panel (the bits of loading them
// at BF16), and fp32 ones (attention's keys and values) rounded into it, row-major or k-major.
// Only matrices that allow the rounding take this path (WeightMatrix::bf16_products); every other
// call is the AVX-512 fp32 kernel's. Compiled with -mavx512f -mavx512bw -mavx512bf16.
//
// Each output element is summed in one order whatever m, the column range or the thread: K
// blocks of k_block ascending, and within a block the pairs (k, k + 1) ascending, one
// instruction per pair. An odd K ends with a pair whose second half is zero.
#include <immintrin.h>

#include "cpu/matmul_avx512_tile.hpp"
#include "cpu/matmul_driver.hpp"

// GCC 12's unpack intrinsics pass an undefined vector as the unused merge source of their mask
// (all ones), which its flow analysis reports as maybe uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace unmask::kernels::cpu {

void matmul_columns_avx512(const float*, int64_t, int64_t, const WeightMatrix&, int64_t, int64_t, float*, int64_t,
                           float*);

namespace {

using detail::bf16_column_chunk;
using detail::bf16_max_pairs;
using detail::bf16_row_group;
using Word = uint32_t __attribute__((may_alias));  // two bf16 (k, k + 1), in scratch that is float storage

constexpr int64_t MR = detail::Avx512Tile::MR, NR = detail::Avx512Tile::NR;
static_assert(bf16_column_chunk % NR == 0 && NR == detail::bf16_panel_rows);

// Column j of a panel past the matrix's columns: zero pairs, so the microkernel needs no mask.
void zero_column(Word* panel, int64_t pairs, int64_t j) {
    for (int64_t p = 0; p < pairs; ++p) panel[p * NR + j] = 0;
}

// panel[p * NR + j] = (w[n0 + j, k0 + 2p], w[n0 + j, k0 + 2p + 1]), zero for j >= cols: the bf16
// pair is the little-endian word at w[n0 + j, k0 + 2p]. Whole 16 x 16 blocks of words are
// transposed in registers, the rest copied one word at a time.
void pack_panel(const WeightMatrix& w, int64_t n0, int64_t cols, int64_t k0, int64_t kc, Word* panel) {
    const int64_t pairs = (kc + 1) / 2, whole = kc / 2, blocked = whole / 16 * 16;
    auto source = [&](int64_t j) { return static_cast<const uint16_t*>(w.data) + (n0 + j) * w.stride + k0; };
    for (int64_t j0 = 0; j0 < NR; j0 += 16) {
        const bool full = j0 + 16 <= cols;
        for (int64_t p0 = 0; full && p0 < blocked; p0 += 16) {
            __m512i r[16];
            for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_si512(source(j0 + j) + 2 * p0);
            detail::transpose_16x16(r);
            for (int p = 0; p < 16; ++p) _mm512_storeu_si512(panel + (p0 + p) * NR + j0, r[p]);
        }
        for (int64_t j = j0; j < j0 + 16; ++j) {
            if (j >= cols) {
                zero_column(panel, pairs, j);
                continue;
            }
            const uint16_t* src = source(j);
            for (int64_t p = full ? blocked : 0; p < whole; ++p) {
                uint32_t pair;
                std::memcpy(&pair, src + 2 * p, sizeof pair);
                panel[p * NR + j] = pair;
            }
            if (kc % 2 != 0) panel[(pairs - 1) * NR + j] = src[kc - 1];
        }
    }
}

// words[p] = (x[2p], x[2p + 1]) rounded to bf16 (to nearest even) for p < (n + 1) / 2, the pair
// past an odd n's end zero; nothing beyond is written (rows of shared rounded activations abut).
void round_pairs(const float* x, int64_t n, Word* words) {
    for (int64_t k = 0; k < n; k += 32) {
        const detail::ColumnMasks left(n - k);
        const __m512bh pairs = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(left.high, x + k + 16),
                                                   _mm512_maskz_loadu_ps(left.low, x + k));
        const __m512i vector = reinterpret_cast<const __m512i&>(pairs);
        if (n - k >= 32)
            _mm512_storeu_si512(words + k / 2, vector);
        else  // (masked stores are slow on some CPUs: only the last vector's)
            _mm512_mask_storeu_epi32(words + k / 2, __mmask16((1u << ((n - k + 1) / 2)) - 1), vector);
    }
}

// pack_panel for fp32 rows, rounded to bf16, and for block-quantized ones: each row's blocks over
// [k0, k0 + kc) (whole blocks: a K block holds whole blocks, and so does a quantized row) decoded
// to fp32 as the fp32 kernels decode them, then rounded (as loading at BF16 rounds them).
void pack_rounded_panel(const WeightMatrix& w, int64_t n0, int64_t cols, int64_t k0, int64_t kc, Word* panel) {
    const int64_t pairs = (kc + 1) / 2;
    alignas(64) float decoded[detail::k_block];
    alignas(64) Word words[bf16_max_pairs];
    for (int64_t j = 0; j < NR; ++j) {
        if (j >= cols) {
            zero_column(panel, pairs, j);
            continue;
        }
        const float* row = decoded;
        if (w.type == ElementType::f32)
            row = static_cast<const float*>(w.data) + (n0 + j) * w.stride + k0;
        else
            dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + row_bytes(w.type, (n0 + j) * w.stride + k0),
                           kc, decoded);
        round_pairs(row, kc, words);
        for (int64_t p = 0; p < pairs; ++p) panel[p * NR + j] = words[p];
    }
}

// pack_panel for k-major fp32 or bf16 (attention's values, [k, n]): the pair of rows k0 + 2p and
// k0 + 2p + 1 interleaved column by column, fp32 rounded to bf16; zero past kc and past cols.
void pack_k_major_panel(const WeightMatrix& w, int64_t n0, int64_t cols, int64_t k0, int64_t kc, Word* panel) {
    // Row x's columns n0 + c .. n0 + c + 15 as bf16 in the low halves of 32-bit lanes.
    auto halves = [&](int64_t x, int64_t c) {
        const int64_t left = cols - c;
        const auto mask = left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
        const int64_t first = x * w.stride + n0 + c;
        if (w.type == ElementType::f32) {
            const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, static_cast<const float*>(w.data) + first));
            return _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(h));
        }
        const __m512i h = _mm512_maskz_loadu_epi16(__mmask32(mask), static_cast<const uint16_t*>(w.data) + first);
        return _mm512_cvtepu16_epi32(_mm512_castsi512_si256(h));
    };
    for (int64_t p = 0; p < (kc + 1) / 2; ++p)
        for (int64_t c = 0; c < NR; c += 16) {
            __m512i pair = halves(k0 + 2 * p, c);
            if (2 * p + 1 < kc) pair = _mm512_or_si512(pair, _mm512_slli_epi32(halves(k0 + 2 * p + 1, c), 16));
            _mm512_storeu_si512(panel + p * NR + c, pair);
        }
}

// Asks for rows [n0, n1) of the weights over [k0, k0 + kc) to be brought into L2: a row's run in a
// K block is 8 cache lines, too short for the hardware's stream prefetchers to catch.
void prefetch_rows(const WeightMatrix& w, int64_t n0, int64_t n1, int64_t k0, int64_t kc) {
    for (int64_t j = n0; j < n1; ++j) {
        const char* row = static_cast<const char*>(w.data) + row_bytes(w.type, j * w.stride + k0);
        for (int64_t byte = 0; byte < row_bytes(w.type, kc); byte += 64) _mm_prefetch(row + byte, _MM_HINT_T1);
    }
}

// out[r * bf16_max_pairs + p] = (a[r, k0 + 2p], a[r, k0 + 2p + 1]) rounded to bf16 (zero past kc).
void round_rows(const float* a, int64_t lda, int64_t rows, int64_t k0, int64_t kc, Word* out) {
    for (int64_t r = 0; r < rows; ++r) round_pairs(a + r * lda + k0, kc, out + r * bf16_max_pairs);
}

// c[0..rows, 0..cols] (+)= rows of `a` (bf16 pairs, `a_stride` words apart) · panel: 8 rows x 32
// columns, 16 accumulators. `ahead` (or null): a panel to ask for as this one is read, a pair's
// two lines per pair, so that it streams in at the pace it will be used.
void run(const Word* a, int64_t a_stride, int rows, const Word* panel, int64_t pairs, float* c, int64_t ldc, int cols,
         bool accumulate, const Word* ahead) {
    const Word* row[MR];
    for (int i = 0; i < MR; ++i) row[i] = a + std::min(i, rows - 1) * a_stride;  // spare rows repeat the last
    detail::Avx512Tile tile(c, ldc, rows, cols, accumulate);
    for (int64_t p = 0; p < pairs; ++p) {
        const __m512i w0 = _mm512_loadu_si512(panel + p * NR), w1 = _mm512_loadu_si512(panel + p * NR + 16);
        const __m512bh b0 = reinterpret_cast<const __m512bh&>(w0), b1 = reinterpret_cast<const __m512bh&>(w1);
        if (ahead != nullptr) {
            _mm_prefetch(reinterpret_cast<const char*>(ahead + p * NR), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(ahead + p * NR + 16), _MM_HINT_T0);
        }
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            const __m512i x = _mm512_set1_epi32(static_cast<int>(row[i][p]));
            tile.acc[i][0] = _mm512_dpbf16_ps(tile.acc[i][0], reinterpret_cast<const __m512bh&>(x), b0);
            tile.acc[i][1] = _mm512_dpbf16_ps(tile.acc[i][1], reinterpret_cast<const __m512bh&>(x), b1);
        }
    }
    tile.store(c, ldc, rows);
}

// Per chunk of bf16_column_chunk columns and K block: its panels packed once, then the rows of A
// run against every panel bf16_row_group at a time. The rows are A rounded here, one group at a
// time, or, given `shared` (A rounded once for every column run: row r's pairs at r * k / 2),
// read from there.
void bf16_columns(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin, int64_t n_end,
                  float* c, int64_t ldc, float* scratch, const Word* shared) {
    const auto pack = w.k_major ? pack_k_major_panel : w.type == ElementType::bf16 ? pack_panel : pack_rounded_panel;
    Word* panels = reinterpret_cast<Word*>(scratch);
    Word* rounded = panels + bf16_column_chunk * bf16_max_pairs;
    // Panels packed once (pack_panels): rows n0.. of K block k0 at n0 * (k / 2) + (k0 / 2) * NR (a
    // range that does not start on a panel packs its own).
    const Word* packed = w.panels != nullptr && n_begin % NR == 0 ? reinterpret_cast<const Word*>(w.panels) : nullptr;
    const int64_t row_pairs = w.cols / 2;  // of shared rounded rows, and of packed panels per row
    for (int64_t chunk = n_begin; chunk < n_end; chunk += bf16_column_chunk) {
        const int64_t chunk_end = std::min(n_end, chunk + bf16_column_chunk);
        for (int64_t k0 = 0; k0 < w.cols; k0 += detail::k_block) {
            const int64_t kc = std::min(detail::k_block, w.cols - k0), pairs = (kc + 1) / 2;
            const Word* chunk_panels = packed != nullptr ? packed + chunk * row_pairs + k0 / 2 * NR : panels;
            const int64_t panel_stride = packed != nullptr ? row_pairs : bf16_max_pairs;
            if (packed == nullptr)
                for (int64_t n0 = chunk; n0 < chunk_end; n0 += NR)
                    pack(w, n0, std::min(NR, chunk_end - n0), k0, kc, panels + (n0 - chunk) * bf16_max_pairs);
            // The weights packed next arrive while these are multiplied (k-major matrices are
            // attention's values, already in cache); packed panels are asked for below.
            const int64_t next_k0 = k0 + detail::k_block;
            if (!w.k_major && packed == nullptr && next_k0 < w.cols)
                prefetch_rows(w, chunk, chunk_end, next_k0, std::min(detail::k_block, w.cols - next_k0));
            else if (!w.k_major && packed == nullptr && chunk_end < n_end)
                prefetch_rows(w, chunk_end, std::min(n_end, chunk_end + bf16_column_chunk), 0,
                              std::min(detail::k_block, w.cols));
            for (int64_t g0 = 0; g0 < m; g0 += bf16_row_group) {
                const int64_t group = std::min(bf16_row_group, m - g0), next_end = std::min(m, g0 + 2 * group);
                const Word* rows = rounded;
                int64_t stride = bf16_max_pairs;
                if (shared != nullptr) {
                    rows = shared + g0 * row_pairs + k0 / 2;
                    stride = row_pairs;
                    for (int64_t r = g0 + group; r < next_end; ++r)  // the next group's
                        for (int64_t p = 0; p < pairs; p += 16)
                            _mm_prefetch(reinterpret_cast<const char*>(shared + r * stride + k0 / 2 + p), _MM_HINT_T0);
                } else {
                    round_rows(a + g0 * lda, lda, group, k0, kc, rounded);
                    for (int64_t r = g0 + group; r < next_end; ++r)  // the next group's
                        for (int64_t k = 0; k < kc; k += 16)
                            _mm_prefetch(reinterpret_cast<const char*>(a + r * lda + k0 + k), _MM_HINT_T0);
                }
                for (int64_t n0 = chunk; n0 < chunk_end; n0 += NR) {
                    // Packed panels are first read by the first row group: each asks for the one
                    // read after it (this K block's next, else the next K block's or chunk's first).
                    const Word* ahead = nullptr;
                    if (packed != nullptr && g0 == 0)
                        ahead = n0 + NR < chunk_end     ? chunk_panels + (n0 + NR - chunk) * panel_stride
                                : next_k0 < w.cols      ? packed + chunk * row_pairs + next_k0 / 2 * NR
                                : chunk_end < n_end     ? packed + chunk_end * row_pairs
                                                        : nullptr;
                    for (int64_t m0 = 0; m0 < group; m0 += MR)
                        run(rows + m0 * stride, stride, static_cast<int>(std::min(MR, group - m0)),
                            chunk_panels + (n0 - chunk) * panel_stride, pairs, c + (g0 + m0) * ldc + n0, ldc,
                            static_cast<int>(std::min(NR, chunk_end - n0)), k0 > 0, m0 == 0 ? ahead : nullptr);
                }
            }
        }
    }
}

}  // namespace

void matmul_columns_avx512bf16(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin,
                               int64_t n_end, float* c, int64_t ldc, float* scratch) {
    if (!detail::takes_bf16_products(w)) {
        matmul_columns_avx512(a, lda, m, w, n_begin, n_end, c, ldc, scratch);
        return;
    }
    bf16_columns(a, lda, m, w, n_begin, n_end, c, ldc, scratch, nullptr);
}

void matmul_columns_avx512bf16_rounded(const uint32_t* rounded, int64_t m, const WeightMatrix& w, int64_t n_begin,
                                       int64_t n_end, float* c, int64_t ldc, float* scratch) {
    bf16_columns(nullptr, 0, m, w, n_begin, n_end, c, ldc, scratch, reinterpret_cast<const Word*>(rounded));
}

void pack_panels_avx512bf16(const WeightMatrix& w, uint32_t* panels) {
    Word* out = reinterpret_cast<Word*>(panels);
    for (int64_t n0 = 0; n0 < w.rows; n0 += NR)
        for (int64_t k0 = 0; k0 < w.cols; k0 += detail::k_block)
            pack_panel(w, n0, NR, k0, std::min(detail::k_block, w.cols - k0), out + n0 * (w.cols / 2) + k0 / 2 * NR);
}

void round_activations_avx512bf16(const float* a, int64_t lda, int64_t rows, int64_t k, uint32_t* rounded) {
    for (int64_t r = 0; r < rows; ++r) round_pairs(a + r * lda, k, reinterpret_cast<Word*>(rounded) + r * (k / 2));
}

}  // namespace unmask::kernels::cpu
