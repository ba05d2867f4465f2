#include "cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/matmul.hpp"

namespace unmask::kernels::cpu {

void attention_tile(const float* q, const float* k, const float* v, const AttentionShape& shape, int64_t head,
                    int64_t q_begin, int64_t q_end, float* out, AttentionScratch& scratch) {
    const int64_t rows = q_end - q_begin, keys = shape.keys, d = shape.head_dim;
    const int64_t kv_head = head / (shape.heads / shape.kv_heads);
    scratch.scores.resize(static_cast<size_t>(rows * keys));
    scratch.values_transposed.resize(static_cast<size_t>(d * keys));
    scratch.panel.resize(matmul_scratch_floats());
    float* scores = scratch.scores.data();

    // scores = q_h k_hᵀ: the keys of this head are the "weight rows".
    const WeightMatrix keys_matrix{k + kv_head * d, ElementType::f32, keys, d, shape.kv_stride};
    matmul_columns(q + q_begin * shape.q_stride + head * d, shape.q_stride, rows, keys_matrix, 0, keys, scores, keys,
                   scratch.panel.data());

    const float scale = static_cast<float>(1.0 / std::sqrt(double(d)));
    for (int64_t i = 0; i < rows; ++i) {
        float* row = scores + i * keys;
        int64_t visible = keys;
        if (shape.block_size > 0) {
            const int64_t block = (shape.query_position + q_begin + i) / shape.block_size;
            visible = std::min(keys, (block + 1) * shape.block_size);
        }
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < visible; ++j) {
            row[j] *= scale;
            max = std::max(max, row[j]);
        }
        double total = 0;
        for (int64_t j = 0; j < visible; ++j) {
            row[j] = std::exp(row[j] - max);
            total += row[j];
        }
        const float inverse = static_cast<float>(1.0 / total);
        for (int64_t j = 0; j < visible; ++j) row[j] *= inverse;
        std::fill(row + visible, row + keys, 0.0f);
    }

    // out = p v_h, with v_hᵀ as the weight rows.
    float* vt = scratch.values_transposed.data();
    for (int64_t j = 0; j < keys; ++j)
        for (int64_t c = 0; c < d; ++c) vt[c * keys + j] = v[j * shape.kv_stride + kv_head * d + c];
    const WeightMatrix values_matrix{vt, ElementType::f32, d, keys, keys};
    matmul_columns(scores, keys, rows, values_matrix, 0, d, out + q_begin * shape.q_stride + head * d, shape.q_stride,
                   scratch.panel.data());
}

}  // namespace unmask::kernels::cpu
