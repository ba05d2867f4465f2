#include "decode/transfer_schedule.hpp"

#include <algorithm>

namespace unmask {

std::vector<int64_t> llada_transfer_counts(int64_t masked, int64_t steps) {
    std::vector<int64_t> counts(static_cast<size_t>(steps), masked / steps);
    for (int64_t i = 0; i < masked % steps; ++i) ++counts[static_cast<size_t>(i)];
    return counts;
}

std::vector<double> dream_timesteps(int64_t steps, double eps) {
    std::vector<double> t(static_cast<size_t>(steps + 1));
    for (int64_t i = 0; i <= steps; ++i) t[static_cast<size_t>(i)] = 1.0 + (eps - 1.0) * double(i) / double(steps);
    return t;
}

int64_t dream_transfer_count(int64_t masked, int64_t step, const std::vector<double>& timesteps) {
    const auto steps = static_cast<int64_t>(timesteps.size()) - 1;
    if (step >= steps - 1) return masked;
    const double t = timesteps[static_cast<size_t>(step)], s = timesteps[static_cast<size_t>(step + 1)];
    return static_cast<int64_t>(double(masked) * (1.0 - s / t));
}

int64_t rnd1_masks_kept(int64_t total, int64_t step, int64_t steps) {
    if (step >= steps - 1) return 0;
    // RND1's (total_masked * rate).long(): a long tensor times a Python float is float32.
    const auto rate = static_cast<float>(double(steps - 1 - step) / double(steps));
    return std::max<int64_t>(0, static_cast<int64_t>(static_cast<float>(total) * rate));
}

int64_t factor_commit_count(const std::vector<float>& sorted_confidence, double factor) {
    int64_t n = 0;
    while (n < static_cast<int64_t>(sorted_confidence.size()) &&
           sorted_confidence[static_cast<size_t>(n)] >= 1.0 - factor / double(n + 2))
        ++n;
    return std::max<int64_t>(n, 1);
}

int64_t bound_commit_count(int64_t wanted, int64_t masked, int64_t step, int64_t min_steps, int64_t max_steps) {
    if (masked <= 0) return 0;
    int64_t count = std::clamp<int64_t>(wanted, 1, masked);
    if (max_steps > 0) {  // finish within the budget: ceil(masked / steps left)
        const int64_t left = std::max<int64_t>(1, max_steps - step);
        count = std::max(count, (masked + left - 1) / left);
    }
    if (min_steps > 0) {  // leave one position for each further step min_steps still requires
        const int64_t still_required = min_steps - step - 1;
        if (still_required > 0) count = std::min(count, std::max<int64_t>(1, masked - still_required));
    }
    return std::clamp<int64_t>(count, 1, masked);
}

}  // namespace unmask
