// The mixture-of-experts router on the CPU: per token, the experts_per_token best experts and
// their weights, scores in float64. The CUDA router (cuda/moe.hpp) makes the same choices.
#pragma once

#include <cstdint>

#include "cpu/ops.hpp"

namespace unmask::kernels::cpu {

struct RouteParams {
    int64_t experts = 0, experts_per_token = 0;
    bool sigmoid = false;          // scores: softmax over the experts, or a sigmoid each
    bool normalize_top_k = false;  // the chosen weights divided by their sum
    double scaling = 1.0;          // then multiplied by this
    WeightVector expert_bias;      // data null: none; added to the scores for the choice only
    int64_t groups = 1;            // > 1: group-limited choice (expert_groups.hpp) among top_groups groups
    int64_t top_groups = 1;
};

// For rows [begin, end) of `logits` ([rows, experts]): the chosen experts, best first (ties to the
// lower index, a NaN score last), and their weights, into row r's experts_per_token slots.
void route(const float* logits, int64_t begin, int64_t end, const RouteParams& params, int32_t* experts,
           float* weights);

}  // namespace unmask::kernels::cpu
