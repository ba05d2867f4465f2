#include "cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention_mask.hpp"
#include "cpu/matmul.hpp"
#include "cpu/vector_math.hpp"

namespace unmask::kernels::cpu {
namespace {

// row[0, visible) = softmax(row * scale); row[visible, n) = 0. The maximum and the sum run in 16
// lanes (element j in lane j % 16, then the lanes in order, then the rest of the row), which the
// compiler vectorises on every instruction set with the same bits: a sum in row order would stay
// scalar, and one in the vector width would differ between AVX2 and AVX-512.
UNMASK_VECTOR_CLONES void scaled_softmax(float* row, int64_t visible, int64_t n, float scale) {
    constexpr int64_t lanes = 16;
    const int64_t whole = visible / lanes * lanes;
    float lane_max[lanes], lane_total[lanes];
    for (int64_t l = 0; l < lanes; ++l) {
        lane_max[l] = -std::numeric_limits<float>::infinity();
        lane_total[l] = 0.0f;
    }
    for (int64_t j = 0; j < whole; j += lanes)
        for (int64_t l = 0; l < lanes; ++l) {
            row[j + l] *= scale;
            lane_max[l] = row[j + l] > lane_max[l] ? row[j + l] : lane_max[l];
        }
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t l = 0; l < lanes; ++l) max = lane_max[l] > max ? lane_max[l] : max;
    for (int64_t j = whole; j < visible; ++j) {
        row[j] *= scale;
        max = row[j] > max ? row[j] : max;
    }
    for (int64_t j = 0; j < whole; j += lanes)
        for (int64_t l = 0; l < lanes; ++l) {
            row[j + l] = fast_exp(row[j + l] - max);
            lane_total[l] += row[j + l];
        }
    float total = 0;
    for (int64_t l = 0; l < lanes; ++l) total += lane_total[l];
    for (int64_t j = whole; j < visible; ++j) {
        row[j] = fast_exp(row[j] - max);
        total += row[j];
    }
    const float inverse = 1.0f / total;
    for (int64_t j = 0; j < visible; ++j) row[j] *= inverse;
    for (int64_t j = visible; j < n; ++j) row[j] = 0.0f;
}

}  // namespace

void attention_tile(const float* q, const void* k, const void* v, const AttentionShape& shape, int64_t head,
                    int64_t q_begin, int64_t q_end, float* out, AttentionScratch& scratch) {
    const int64_t rows = q_end - q_begin, keys = shape.keys, d = shape.head_dim;
    const int64_t kv_head = head / (shape.heads / shape.kv_heads);
    const int64_t head_offset = kv_head * d * element_bytes(shape.kv_type);  // bytes
    scratch.scores.resize(static_cast<size_t>(rows * keys));
    scratch.panel.resize(std::max(scratch.panel.size(), matmul_scratch_floats(shape.bf16_products)));
    float* scores = scratch.scores.data();

    // scores = q_h k_hᵀ: the keys of this head are the "weight rows".
    const WeightMatrix keys_matrix{static_cast<const char*>(k) + head_offset, shape.kv_type, keys, d, shape.kv_stride,
                                   false, shape.bf16_products};
    matmul_columns(q + q_begin * shape.q_stride + head * d, shape.q_stride, rows, keys_matrix, 0, keys, scores, keys,
                   scratch.panel.data());

    const float scale = static_cast<float>(1.0 / std::sqrt(double(d)));
    for (int64_t i = 0; i < rows; ++i) {
        int64_t visible = keys;
        if (shape.block_size > 0)
            visible = std::min(keys, block_end(shape.query_position + q_begin + i, shape.block_size, shape.block_origin));
        scaled_softmax(scores + i * keys, visible, keys, scale);
    }

    // out = p v_h: v_h is stored [keys, d], i.e. k-major.
    const WeightMatrix values_matrix{static_cast<const char*>(v) + head_offset, shape.kv_type, d, keys, shape.kv_stride,
                                     true, shape.bf16_products};
    matmul_columns(scores, keys, rows, values_matrix, 0, d, out + q_begin * shape.q_stride + head * d, shape.q_stride,
                   scratch.panel.data());
}

}  // namespace unmask::kernels::cpu
