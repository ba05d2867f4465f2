// How the mixture-of-experts router chooses and weighs a token's experts: one description for the
// backend interface, the CPU router and the CUDA router. `Bias` is how each refers to the expert
// bias: a model weight, a host vector, a device view (a null one: none). C++17, for nvcc.
#pragma once

#include <cstdint>

namespace unmask::kernels {

template <class Bias>
struct RouteParams {
    int64_t experts = 0, experts_per_token = 0;
    bool sigmoid = false;          // scores: softmax over the experts, or a sigmoid each
    bool normalize_top_k = false;  // the chosen weights divided by their sum
    double scaling = 1.0;          // then multiplied by this
    Bias expert_bias{};            // added to the scores for the choice only
    int64_t groups = 1;            // > 1: group-limited choice (expert_groups.hpp) among top_groups groups
    int64_t top_groups = 1;

    // The same rule with the bias as another layer refers to it.
    template <class Other>
    RouteParams<Other> with_bias(Other bias) const {
        return {experts, experts_per_token, sigmoid, normalize_top_k, scaling, bias, groups, top_groups};
    }
};

}  // namespace unmask::kernels
