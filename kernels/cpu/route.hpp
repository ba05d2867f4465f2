// The mixture-of-experts router on the CPU: per token, the experts_per_token best experts and
// their weights, scores in float64. The CUDA router (cuda/moe.hpp) makes the same choices.
#pragma once

#include <cstdint>

#include "cpu/ops.hpp"
#include "route_params.hpp"

namespace unmask::kernels::cpu {

using RouteParams = kernels::RouteParams<WeightVector>;

// For rows [begin, end) of `logits` ([rows, experts]): the chosen experts, best first (ties to the
// lower index, a NaN score last), and their weights, into row r's experts_per_token slots.
void route(const float* logits, int64_t begin, int64_t end, const RouteParams& params, int32_t* experts,
           float* weights);

}  // namespace unmask::kernels::cpu
