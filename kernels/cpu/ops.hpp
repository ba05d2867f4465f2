// Row-wise transformer operations on fp32 activations, with weights in their stored type.
#pragma once

#include <cstdint>

#include "cpu/matmul.hpp"

namespace unmask::kernels::cpu {

// A weight vector (norm scales, biases) in its stored type.
struct WeightVector {
    const void* data = nullptr;
    ElementType type = ElementType::f32;
    int64_t size = 0;
    float at(int64_t i) const noexcept;
};

// out[r] = table[ids[r]] widened (or, quantized, decoded) to fp32.
void embedding_rows(const WeightMatrix& table, const int32_t* ids, int64_t rows, float* out);

// out = x / sqrt(mean(x^2) + eps) * weight, per row of `dim` (in place allowed).
void rmsnorm(const float* x, int64_t rows, int64_t dim, const WeightVector& weight, double eps, float* out,
             int64_t x_stride, int64_t out_stride);

// x[r, i] += bias[i]
void add_bias(float* x, int64_t rows, int64_t dim, int64_t stride, const WeightVector& bias);

// gate = silu(gate) * up, elementwise over n values.
void swiglu(float* gate, const float* up, int64_t n);

struct RopeParams {
    double theta = 10000.0;
    int64_t rotary_dims = 0;     // leading dims of each head that rotate (even)
    bool interleaved = false;    // pairs (2i, 2i+1) instead of (i, i + rotary_dims/2)
};

// RoPE's rotations at `tokens` positions: table[t * rotary_dims + 2i] = cos and [.. + 2i + 1] =
// sin of positions[t] * theta^(-2i / rotary_dims), the angle in double as the references have it.
void rope_table(const int32_t* positions, int64_t tokens, const RopeParams& params, float* table);

// Rotates each head of x[t, heads * head_dim] by row t of a rope_table.
void rope_rotate(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* table,
                 const RopeParams& params);

// rope_table then rope_rotate, for one call: x[t] rotated at positions[t].
void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const int32_t* positions,
          const RopeParams& params);

}  // namespace unmask::kernels::cpu
