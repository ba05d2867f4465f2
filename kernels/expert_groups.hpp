// Group-limited routing (DeepSeek-V3's and LLaDA2's `n_group` / `topk_group`): the experts form
// `groups` contiguous groups, each scored by the sum of its two highest selection scores, and only
// the `top_groups` best groups compete for the token's experts. Shared by the CPU and CUDA routers.
#pragma once

#include <cstdint>

#include "host_device.hpp"

namespace unmask::kernels {

inline constexpr int64_t max_expert_groups = 64;  // one bit each in a kept-groups mask

// The kept groups as a bit mask (bit g: group g), the `top_groups` highest of `scores[0, groups)`,
// ties to the lower group (torch.topk's order for the values that differ); a NaN score ranks last.
UNMASK_HOST_DEVICE inline uint64_t kept_expert_groups(const double* scores, int64_t groups, int64_t top_groups) {
    uint64_t kept = 0;
    for (int64_t round = 0; round < top_groups; ++round) {
        int64_t best = -1;
        for (int64_t g = 0; g < groups; ++g) {
            if (kept >> g & 1u) continue;
            const bool nan = scores[g] != scores[g];
            if (best < 0 || (!nan && (scores[best] != scores[best] || scores[g] > scores[best]))) best = g;
        }
        kept |= uint64_t{1} << best;
    }
    return kept;
}

// The pair (highest, second highest) updated with `value`.
UNMASK_HOST_DEVICE inline void keep_two_highest(double& first, double& second, double value) {
    if (value > first) {
        second = first;
        first = value;
    } else if (value > second) {
        second = value;
    }
}

}  // namespace unmask::kernels
