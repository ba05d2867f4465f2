// The blocking shared by every matmul kernel, instantiated once per instruction set in
// matmul_<isa>.cpp (each compiled with its own target flags). Loop order: K blocks outermost, so
// every output element is summed over k in ascending order through C; then panels of NR weight
// columns, packed (converted or, for the quantized types, decoded to fp32) once per K block; then
// MR rows of A at a time. A quantized weight is therefore never widened whole: its blocks are
// decoded into the panel as the panel is packed.
#pragma once

#include <algorithm>
#include <cstring>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include "cpu/dequantize.hpp"
#include "cpu/matmul.hpp"
#include "core/float_convert.hpp"

namespace unmask::kernels::cpu::detail {

inline constexpr int64_t k_block = 256;
// The AVX512-BF16 path (matmul_avx512bf16.cpp): a K block as bf16 pairs, the columns whose
// panels it packs at a time, and the rows of A it rounds to bf16 at a time. Each row of A is
// rounded once per chunk and K block, so the wider the chunk the less rounding; 256 columns of
// panels are 128 KiB, which stay in a core's L2 while every row group runs against them.
inline constexpr int64_t bf16_max_pairs = k_block / 2;
inline constexpr int64_t bf16_column_chunk = 2 * matmul_column_block;
inline constexpr int64_t bf16_row_group = 32;
// The weights' rows (columns of C) in one panel: the microkernel's width.
inline constexpr int64_t bf16_panel_rows = 32;

// The int8 path (matmul_avx512vnni.cpp): the columns whose panels it packs at a time (a quarter
// of the bf16 panel's bytes per column, so twice bf16_column_chunk's columns in 128 KiB plus their
// scales), and the rows of A it quantizes at a time.
inline constexpr int64_t int8_column_chunk = 2 * bf16_column_chunk;
inline constexpr int64_t int8_row_group = 32;
// Its scratch, in floats: a K block of the chunk's panels (bytes), their scales (one per block of
// 32 and column), then a row group's quantized rows (bytes, and a scale and a sum per block).
inline constexpr int64_t int8_blocks_per_k_block = k_block / 32;
inline constexpr int64_t int8_panel_floats = int8_column_chunk * k_block / 4;
inline constexpr int64_t int8_panel_scale_floats = int8_column_chunk * int8_blocks_per_k_block;
inline constexpr int64_t int8_scratch_floats =
    int8_panel_floats + int8_panel_scale_floats + int8_row_group * (k_block / 4 + 2 * int8_blocks_per_k_block);

// fp16 -> fp32 as fp16_to_float, inline: F16C's conversion where the instruction set this is
// compiled for has it (the AVX2 and AVX-512 kernels), the portable one elsewhere.
inline float widen_fp16(uint16_t h) noexcept {
#ifdef __F16C__
    return _cvtsh_ss(h);
#else
    return fp16_to_float(h);
#endif
}
// Whether the AVX512-BF16 kernel multiplies `w` with bf16 activations (else it runs the fp32 one):
// bf16 and fp32 matrices, and row-major block-quantized ones.
inline bool takes_bf16_products(const WeightMatrix& w) {
    const bool bf16_or_f32 = w.type == ElementType::bf16 || w.type == ElementType::f32;
    return w.bf16_products && w.cols > 0 && (bf16_or_f32 || (is_quantized(w.type) && !w.k_major));
}

// Whether `w` may take int8 products where the CPU has AVX512-VNNI: row-major Q8_0 or Q4_0 blocks
// (one fp16 scale per 32 signed values, which VPDPBUSD can multiply as they are).
inline bool takes_int8_products(const WeightMatrix& w) {
    return w.int8_products && (w.type == ElementType::q8_0 || w.type == ElementType::q4_0) && !w.k_major && w.cols > 0;
}

static_assert(k_block % block_elements(ElementType::q4_k) == 0 && k_block % block_elements(ElementType::q8_0) == 0,
              "a K block must hold whole quantized blocks");

// panel[k * NR + j] = w[n0 + j, k0 + k] as fp32, zero for j >= cols.
template <int64_t NR>
inline void pack_panel(const WeightMatrix& w, int64_t n0, int64_t cols, int64_t k0, int64_t kc, float* panel) {
    if (w.k_major) {  // attention's values (a K/V cache's elements): each k is a contiguous run of n
        for (int64_t k = 0; k < kc; ++k) {
            const int64_t first = (k0 + k) * w.stride + n0;
            float* row = panel + k * NR;
            const uint16_t* half = static_cast<const uint16_t*>(w.data) + first;
            if (w.type == ElementType::f32)
                std::memcpy(row, static_cast<const float*>(w.data) + first, size_t(cols) * sizeof(float));
            else if (w.type == ElementType::bf16)
                for (int64_t j = 0; j < cols; ++j) row[j] = bf16_to_float(half[j]);
            else
                for (int64_t j = 0; j < cols; ++j) row[j] = widen_fp16(half[j]);
            std::fill(panel + k * NR + cols, panel + (k + 1) * NR, 0.0f);
        }
        return;
    }
    for (int64_t j = 0; j < NR; ++j) {
        if (j >= cols) {
            for (int64_t k = 0; k < kc; ++k) panel[k * NR + j] = 0.0f;
            continue;
        }
        const int64_t row = (n0 + j) * w.stride + k0;
        if (is_quantized(w.type)) {  // the row's blocks over [k0, k0 + kc): k_block is a whole number of blocks
            float decoded[k_block];
            dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + row_bytes(w.type, row), kc, decoded);
            for (int64_t k = 0; k < kc; ++k) panel[k * NR + j] = decoded[k];
            continue;
        }
        switch (w.type) {
            case ElementType::f32: {
                const float* src = static_cast<const float*>(w.data) + row;
                for (int64_t k = 0; k < kc; ++k) panel[k * NR + j] = src[k];
                break;
            }
            case ElementType::bf16: {
                const uint16_t* src = static_cast<const uint16_t*>(w.data) + row;
                for (int64_t k = 0; k < kc; ++k) panel[k * NR + j] = bf16_to_float(src[k]);
                break;
            }
            case ElementType::f16: {
                const uint16_t* src = static_cast<const uint16_t*>(w.data) + row;
                for (int64_t k = 0; k < kc; ++k) panel[k * NR + j] = widen_fp16(src[k]);
                break;
            }
            default: break;  // the quantized types, decoded above
        }
    }
}

template <typename Kernel>
void matmul_driver(const float* a, int64_t lda, int64_t m, const WeightMatrix& w, int64_t n_begin, int64_t n_end,
                   float* c, int64_t ldc, float* panel) {
    constexpr int64_t MR = Kernel::MR, NR = Kernel::NR;
    const int64_t k_total = w.cols;
    if (k_total == 0) {
        for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc + n_begin, c + i * ldc + n_end, 0.0f);
        return;
    }
    for (int64_t k0 = 0; k0 < k_total; k0 += k_block) {
        const int64_t kc = std::min(k_block, k_total - k0);
        for (int64_t n0 = n_begin; n0 < n_end; n0 += NR) {
            const int64_t cols = std::min(NR, n_end - n0);
            pack_panel<NR>(w, n0, cols, k0, kc, panel);
            for (int64_t m0 = 0; m0 < m; m0 += MR) {
                const int rows = static_cast<int>(std::min(MR, m - m0));
                Kernel::run(a + m0 * lda + k0, lda, rows, panel, kc, c + m0 * ldc + n0, ldc, static_cast<int>(cols),
                            k0 > 0);
            }
        }
    }
}

}  // namespace unmask::kernels::cpu::detail
