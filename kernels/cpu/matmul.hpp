// C = A · Wᵀ for activations A (fp32, row-major [m, k]) and weights W (fp32, bf16, fp16 or a quantized type,
// row-major [n, k], as stored in model files). The K dimension is summed in one fixed order
// whatever m, the column range or the thread that runs it, so results do not depend on batch
// composition or thread count. Implementations: AVX512-VNNI (int8_products only), AVX512-BF16
// (bf16_products only), AVX-512, AVX2+FMA and portable C++, chosen at run time; all but the first
// two give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "element_type.hpp"

namespace unmask::kernels::cpu {

using kernels::ElementType;

struct WeightMatrix {
    const void* data = nullptr;
    ElementType type = ElementType::f32;
    int64_t rows = 0;    // n: output features
    int64_t cols = 0;    // k: input features
    int64_t stride = 0;  // elements between consecutive rows (between consecutive k when k_major)
    bool k_major = false;  // stored [k, n] (as attention's values are) instead of [n, k]
    // The product may round its operands to bf16 (to nearest even) where the CPU has AVX512-BF16's
    // dot product (twice the multiply-adds per instruction): the activations, and the weights
    // that are wider (fp32, decoded blocks; f16 ones keep the fp32 kernel). The CPU backend sets
    // it for the model's bf16 and quantized matrices but the router, and for attention's q·kᵀ and
    // p·v in bf16 models (AttentionShape::bf16_products).
    bool bf16_products = false;
    // The product may quantize the activations to int8 in blocks of 32 (as Q8_0 is) and multiply
    // them with the weights' integer values, where the matrix is row-major Q8_0 or Q4_0 (the int8
    // and q4 precisions load as these) and the CPU has AVX512-VNNI (matmul_avx512vnni.cpp): four
    // times the multiply-adds of fp32 per instruction. Set by the CPU backend with bf16_products.
    bool int8_products = false;
    // The same matrix packed once as the AVX512-BF16 kernel reads it (pack_panels), where it was
    // loaded for the CPU; null: each call packs it from `data`.
    const uint32_t* panels = nullptr;
};

// Floats of scratch one call of matmul_columns needs for its packed weight panel: more for a
// matrix with bf16_products.
size_t matmul_scratch_floats(bool bf16_products = false);

// c[i, j] = sum_k a[i, k] * w[j, k] for i < m and n_begin <= j < n_end (single-threaded; the
// caller splits columns across threads). `scratch` holds matmul_scratch_floats() floats.
void matmul_columns(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin, int64_t n_end,
                    float* c, int64_t ldc, float* scratch);

// The AVX512-BF16 path rounds the activations to bf16 pairs for the product. A caller that runs
// several column runs on the same activations (threads, or products sharing an input) may round
// them once and give each run the rounded rows: row r's pairs (a[r, 2p], a[r, 2p + 1]) at
// rounded[r * (k / 2) + p]. The results are the same bits as matmul_columns'.
// Whether this CPU's products round activations (the AVX512-BF16 path), and whether products with
// `w` take rounded rows (bf16_products, an even k):
bool matmul_rounds_activations();
bool matmul_takes_rounded(const WeightMatrix& w);
// Rows [0, rows) of `a`, k (even) columns each, rounded into `rounded` (rows * k / 2 words).
void round_activations(const float* a, int64_t lda, int64_t rows, int64_t k, uint32_t* rounded);
// matmul_columns on rounded rows, for a `w` that matmul_takes_rounded.
void matmul_columns_rounded(const uint32_t* rounded, int64_t m, const WeightMatrix& w, int64_t n_begin, int64_t n_end,
                            float* c, int64_t ldc, float* scratch);

// The same for the int8 path: a caller may quantize the activations once (row r's k bytes, then
// its k / 32 scales, then its k / 32 sums, quantized_row_words(k) words from
// quantized[r * quantized_row_words(k)]) and give each column run the quantized rows, for the same
// bits. A `w` that matmul_takes_int8 takes them; k is a multiple of 32 (whole Q8_0 blocks).
constexpr int64_t quantized_row_words(int64_t k) { return k / 4 + 2 * (k / 32); }
void quantize_activations(const float* a, int64_t lda, int64_t rows, int64_t k, uint32_t* quantized);
void matmul_columns_quantized(const uint32_t* quantized, int64_t m, const WeightMatrix& w, int64_t n_begin,
                              int64_t n_end, float* c, int64_t ldc, float* scratch);
// Whether this CPU takes any activations prepared once (rounded or quantized): the callers that
// keep room for them. Both forms take at most k / 2 words a row.
bool matmul_prepares_activations();

// A bf16 matrix packed once in the AVX512-BF16 kernel's layout: each run of 32 rows (output
// features) as its column pairs in order, each pair the 32 rows' words (w[j, 2p], w[j, 2p + 1])
// side by side: rows * cols / 2 words, the matrix's own bytes. A matrix whose products take
// rounded rows (matmul_takes_rounded), stored bf16 and row-major in whole runs of 32 rows, can be
// packed; matmul_columns then reads each K block's panels in place and gives the same bits.
bool matmul_packs_panels(const WeightMatrix& w);
void pack_panels(const WeightMatrix& w, uint32_t* panels);

// Whether products with `w` quantize the activations to int8 on this CPU (WeightMatrix::int8_products).
bool matmul_takes_int8(const WeightMatrix& w);

// The instruction set in use: "avx512bf16", "avx512", "avx2" or "portable" (Q8_0 products take
// the int8 path besides, where matmul_takes_int8).
const char* matmul_isa();

// Column blocks the caller should split work into (a multiple of every kernel's panel width).
inline constexpr int64_t matmul_column_block = 128;

// The columns each call of matmul_columns should take when `threads` threads share the n columns
// of a product with `w`: a product that rounds its activations to bf16 (the AVX512-BF16 path)
// rounds them once per call, so it takes one run of whole column blocks per thread; the others
// take matmul_column_block at a time (their outputs stay in cache across K blocks).
int64_t matmul_task_columns(const WeightMatrix& w, int threads);

}  // namespace unmask::kernels::cpu
