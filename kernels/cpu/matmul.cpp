#include "cpu/matmul.hpp"

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "cpu/matmul_driver.hpp"
#include "cpu/matmul_isa.hpp"

namespace unmask::kernels::cpu {

void matmul_columns_avx512bf16(const float*, int64_t, int64_t, const WeightMatrix&, int64_t, int64_t, float*, int64_t,
                               float*);
void matmul_columns_avx512bf16_rounded(const uint32_t*, int64_t, const WeightMatrix&, int64_t, int64_t, float*, int64_t,
                                       float*);
void round_activations_avx512bf16(const float*, int64_t, int64_t, int64_t, uint32_t*);
void pack_panels_avx512bf16(const WeightMatrix&, uint32_t*);
void matmul_columns_avx512vnni(const float*, int64_t, int64_t, const WeightMatrix&, int64_t, int64_t, float*, int64_t,
                               float*);
void matmul_columns_avx512vnni_quantized(const uint32_t*, int64_t, const WeightMatrix&, int64_t, int64_t, float*,
                                         int64_t, float*);
void quantize_activations_avx512vnni(const float*, int64_t, int64_t, int64_t, uint32_t*);
void matmul_columns_avx512(const float*, int64_t, int64_t, const WeightMatrix&, int64_t, int64_t, float*, int64_t, float*);
void matmul_columns_avx2(const float*, int64_t, int64_t, const WeightMatrix&, int64_t, int64_t, float*, int64_t, float*);

namespace {

// The portable kernel: plain loops the compiler may vectorise; same summation order per element.
struct PortableKernel {
    static constexpr int64_t MR = 4, NR = 16;

    static void run(const float* a, int64_t lda, int rows, const float* b, int64_t kc, float* c, int64_t ldc, int cols,
                    bool accumulate) {
        float acc[MR][NR];
        for (int i = 0; i < MR; ++i)
            for (int j = 0; j < NR; ++j) acc[i][j] = accumulate && i < rows && j < cols ? c[i * ldc + j] : 0.0f;
        for (int64_t k = 0; k < kc; ++k)
            for (int i = 0; i < MR; ++i) {
                const float x = a[std::min(i, rows - 1) * lda + k];
                for (int j = 0; j < NR; ++j) acc[i][j] = std::fma(x, b[k * NR + j], acc[i][j]);
            }
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j) c[i * ldc + j] = acc[i][j];
    }
};

void matmul_columns_portable(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin,
                             int64_t n_end, float* c, int64_t ldc, float* scratch) {
    detail::matmul_driver<PortableKernel>(a, lda, m, w, n_begin, n_end, c, ldc, scratch);
}

const MatmulIsa* all_isas() {
    __builtin_cpu_init();
    static const MatmulIsa isas[] = {
        // All but the portable one are compiled with F16C too, which every AVX2 and AVX-512 CPU
        // has (clang's builtin cannot ask for it).
        {"avx512bf16", matmul_columns_avx512bf16,
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")},
        {"avx512", matmul_columns_avx512, __builtin_cpu_supports("avx512f") != 0},
        {"avx2", matmul_columns_avx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
        {"portable", matmul_columns_portable, true},
    };
    return isas;
}

constexpr size_t isa_count = 4;

// UNMASK_CPU_ISA, where set and not "avx512vnni" (which names the default, the fastest of all):
// avx512bf16|avx512|avx2|portable asks for that kernel, or a lower one where the CPU lacks it, for
// every type (to compare paths in benchmarks; avx512 keeps bf16 weights' products in fp32, and
// only the default multiplies Q8_0 in int8).
const char* forced_isa() {
    const char* forced = std::getenv("UNMASK_CPU_ISA");
    return forced != nullptr && std::string_view(forced) != "avx512vnni" ? forced : nullptr;
}

const MatmulIsa& dispatch() {
    static const MatmulIsa& chosen = [] () -> const MatmulIsa& {
        const char* forced = forced_isa();
        const MatmulIsa* isas = all_isas();
        for (size_t i = 0; i < isa_count; ++i)
            if (isas[i].supported && (forced == nullptr || std::string_view(forced) == isas[i].name)) return isas[i];
        return isas[isa_count - 1];
    }();
    return chosen;
}

// Whether products with `w` take the int8 path: an int8_products matrix, on a CPU with
// AVX512-VNNI, with no lower kernel asked for.
bool has_int8_path() {
    static const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
                             forced_isa() == nullptr;
    return vnni;
}
bool int8_path(const WeightMatrix& w) { return has_int8_path() && detail::takes_int8_products(w); }

}  // namespace

const MatmulIsa* matmul_isas(size_t& count) {
    count = isa_count;
    return all_isas();
}

// The fp32 kernels' panel (a K block of 32 columns); with bf16 products, the largest of that, the
// AVX512-BF16 path's panels (a K block of a column chunk, as bf16 pairs) with its rounded rows,
// and the int8 path's (a K block of its column chunk as bytes, a scale per block and column) with
// its quantized rows (bytes, a scale and a sum per block).
size_t matmul_scratch_floats(bool bf16_products) {
    const int64_t fp32 = detail::k_block * 32;
    const int64_t bf16 = (detail::bf16_column_chunk + detail::bf16_row_group) * detail::bf16_max_pairs;
    return static_cast<size_t>(bf16_products ? std::max({fp32, bf16, detail::int8_scratch_floats}) : fp32);
}

void matmul_columns(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin, int64_t n_end,
                    float* c, int64_t ldc, float* scratch) {
    if (m <= 0 || n_end <= n_begin) return;
    if (int8_path(w)) {
        matmul_columns_avx512vnni(a, lda, m, w, n_begin, n_end, c, ldc, scratch);
        return;
    }
    dispatch().fn(a, lda, m, w, n_begin, n_end, c, ldc, scratch);
}

bool matmul_rounds_activations() { return dispatch().fn == matmul_columns_avx512bf16; }

bool matmul_takes_rounded(const WeightMatrix& w) {
    return matmul_rounds_activations() && detail::takes_bf16_products(w) && w.cols % 2 == 0 && !int8_path(w);
}

void round_activations(const float* a, int64_t lda, int64_t rows, int64_t k, uint32_t* rounded) {
    round_activations_avx512bf16(a, lda, rows, k, rounded);
}

void matmul_columns_rounded(const uint32_t* rounded, int64_t m, const WeightMatrix& w, int64_t n_begin, int64_t n_end,
                            float* c, int64_t ldc, float* scratch) {
    if (m <= 0 || n_end <= n_begin) return;
    matmul_columns_avx512bf16_rounded(rounded, m, w, n_begin, n_end, c, ldc, scratch);
}

void quantize_activations(const float* a, int64_t lda, int64_t rows, int64_t k, uint32_t* quantized) {
    quantize_activations_avx512vnni(a, lda, rows, k, quantized);
}

void matmul_columns_quantized(const uint32_t* quantized, int64_t m, const WeightMatrix& w, int64_t n_begin,
                              int64_t n_end, float* c, int64_t ldc, float* scratch) {
    if (m <= 0 || n_end <= n_begin) return;
    matmul_columns_avx512vnni_quantized(quantized, m, w, n_begin, n_end, c, ldc, scratch);
}

bool matmul_prepares_activations() { return matmul_rounds_activations() || has_int8_path(); }

bool matmul_packs_panels(const WeightMatrix& w) {
    return matmul_takes_rounded(w) && w.type == ElementType::bf16 && !w.k_major && w.stride == w.cols &&
           w.rows % detail::bf16_panel_rows == 0;
}

void pack_panels(const WeightMatrix& w, uint32_t* panels) { pack_panels_avx512bf16(w, panels); }

bool matmul_takes_int8(const WeightMatrix& w) { return int8_path(w); }

const char* matmul_isa() { return dispatch().name; }

int64_t matmul_task_columns(const WeightMatrix& w, int threads) {
    // The int8 path quantizes its activations (where not given them) once per call and column
    // chunk, as the bf16 one rounds them.
    const bool once_per_call = int8_path(w) || (dispatch().fn == matmul_columns_avx512bf16 && detail::takes_bf16_products(w));
    if (!once_per_call) return matmul_column_block;
    const int64_t blocks = (w.rows + matmul_column_block - 1) / matmul_column_block, tasks = std::max(threads, 1);
    return std::max<int64_t>(1, (blocks + tasks - 1) / tasks) * matmul_column_block;
}

}  // namespace unmask::kernels::cpu
