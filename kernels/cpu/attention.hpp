// Attention of one sequence, one head, one tile of queries: softmax(q kᵀ / sqrt(d) + mask) v,
// bidirectional (diffusion LMs) or block-causal (block diffusion), with grouped K/V heads.
#pragma once

#include <cstdint>
#include <vector>

#include "element_type.hpp"

namespace unmask::kernels::cpu {

struct AttentionShape {
    int64_t queries = 0;   // rows of q (and out) in this sequence
    int64_t keys = 0;      // rows of k and v
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t head_dim = 0;
    int64_t q_stride = 0;  // floats between rows of q and out
    int64_t kv_stride = 0; // elements between rows of k and v
    int64_t block_size = 0;     // 0: every query sees every key; else key j is visible to query i
                                // when block(j) <= block(i) (attention_mask.hpp)
    int64_t block_origin = 0;
    int64_t query_position = 0; // position of query 0 among the keys (for block-causal masks)
    ElementType kv_type = ElementType::f32;  // of k and v: f32, or bf16 (a cache view)
    bool bf16_products = false;  // q·kᵀ and p·v with bf16 operands (WeightMatrix::bf16_products)
};

struct AttentionScratch {
    std::vector<float> scores, panel;
};

// Writes out rows [q_begin, q_end) of `head`.
void attention_tile(const float* q, const void* k, const void* v, const AttentionShape& shape, int64_t head,
                    int64_t q_begin, int64_t q_end, float* out, AttentionScratch& scratch);

}  // namespace unmask::kernels::cpu
