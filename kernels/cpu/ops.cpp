#include "cpu/ops.hpp"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/float_convert.hpp"
#include "cpu/dequantize.hpp"
#include "cpu/vector_math.hpp"

namespace unmask::kernels::cpu {

float WeightVector::at(int64_t i) const noexcept {
    switch (type) {
        case ElementType::f32: return static_cast<const float*>(data)[i];
        case ElementType::bf16: return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
        case ElementType::f16: return fp16_to_float(static_cast<const uint16_t*>(data)[i]);
        default: break;  // vectors (norms, biases) are never quantized: the loader keeps them float
    }
    return 0.0f;
}

void embedding_rows(const WeightMatrix& table, const int32_t* ids, int64_t rows, float* out) {
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* bytes = static_cast<const uint8_t*>(table.data) + row_bytes(table.type, ids[r] * table.stride);
        float* dst = out + r * table.cols;
        if (is_quantized(table.type)) {
            dequantize_row(table.type, bytes, table.cols, dst);
            continue;
        }
        const WeightVector row{bytes, table.type, table.cols};
        for (int64_t i = 0; i < table.cols; ++i) dst[i] = row.at(i);
    }
}

// The sum of squares runs in 16 lanes of doubles (element i in lane i % 16, then the lanes in
// order, then the rest), which vectorises with the same bits on every instruction set; the weight's
// type is chosen once per row, not per element.
UNMASK_VECTOR_CLONES void rmsnorm(const float* x, int64_t rows, int64_t dim, const WeightVector& weight, double eps,
                                  float* out, int64_t x_stride, int64_t out_stride) {
    constexpr int64_t lanes = 16;
    const int64_t whole = dim / lanes * lanes;
    for (int64_t r = 0; r < rows; ++r) {
        const float* in = x + r * x_stride;
        float* dst = out + r * out_stride;
        double lane_sum[lanes] = {};
        for (int64_t i = 0; i < whole; i += lanes)
            for (int64_t l = 0; l < lanes; ++l) lane_sum[l] += double(in[i + l]) * in[i + l];
        double sum = 0;
        for (int64_t l = 0; l < lanes; ++l) sum += lane_sum[l];
        for (int64_t i = whole; i < dim; ++i) sum += double(in[i]) * in[i];
        const float scale = static_cast<float>(1.0 / std::sqrt(sum / double(dim) + eps));
        const uint16_t* half = static_cast<const uint16_t*>(weight.data);
        switch (weight.type) {
            case ElementType::f32: {
                const float* w = static_cast<const float*>(weight.data);
                for (int64_t i = 0; i < dim; ++i) dst[i] = in[i] * scale * w[i];
                break;
            }
            case ElementType::bf16:
                for (int64_t i = 0; i < dim; ++i) dst[i] = in[i] * scale * bf16_to_float(half[i]);
                break;
            default:
                for (int64_t i = 0; i < dim; ++i) dst[i] = in[i] * scale * weight.at(i);
                break;
        }
    }
}

void add_bias(float* x, int64_t rows, int64_t dim, int64_t stride, const WeightVector& bias) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) x[r * stride + i] += bias.at(i);
}

UNMASK_VECTOR_CLONES void swiglu(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        gate[i] = g / (1.0f + fast_exp(-g)) * up[i];
    }
}

void rope_table(const int32_t* positions, int64_t tokens, const RopeParams& params, float* table) {
    const int64_t half = params.rotary_dims / 2;
    for (int64_t i = 0; i < half; ++i) {
        // inv_freq_i = theta^(-2i / rotary_dims), as the reference implementations define it.
        const double inverse_frequency = std::pow(params.theta, -2.0 * double(i) / double(params.rotary_dims));
        for (int64_t t = 0; t < tokens; ++t) {
            const double angle = positions[t] * inverse_frequency;
            table[t * params.rotary_dims + 2 * i] = static_cast<float>(std::cos(angle));
            table[t * params.rotary_dims + 2 * i + 1] = static_cast<float>(std::sin(angle));
        }
    }
}

void rope_rotate(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* table,
                 const RopeParams& params) {
    const int64_t half = params.rotary_dims / 2;
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
            float* head = x + t * stride + h * head_dim;
            for (int64_t i = 0; i < half; ++i) {
                const float c = table[t * params.rotary_dims + 2 * i], s = table[t * params.rotary_dims + 2 * i + 1];
                const int64_t a = params.interleaved ? 2 * i : i;
                const int64_t b = params.interleaved ? 2 * i + 1 : i + half;
                const float x1 = head[a], x2 = head[b];
                head[a] = x1 * c - x2 * s;
                head[b] = x2 * c + x1 * s;
            }
        }
    }
}

void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const int32_t* positions,
          const RopeParams& params) {
    std::vector<float> table(size_t(tokens * params.rotary_dims));
    rope_table(positions, tokens, params, table.data());
    rope_rotate(x, tokens, heads, head_dim, stride, table.data(), params);
}

}  // namespace unmask::kernels::cpu
