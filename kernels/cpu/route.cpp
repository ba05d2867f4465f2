#include "cpu/route.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "expert_groups.hpp"

namespace unmask::kernels::cpu {

void route(const float* logits, int64_t begin, int64_t end, const RouteParams& p, int32_t* experts, float* weights) {
    const auto n = static_cast<size_t>(p.experts);
    std::vector<double> scores(n), selection(n), group_scores(static_cast<size_t>(std::max<int64_t>(p.groups, 1)));
    std::vector<int32_t> candidates;
    candidates.reserve(n);
    const int64_t group_size = p.groups > 1 ? p.experts / p.groups : p.experts;
    for (int64_t r = begin; r < end; ++r) {
        const float* row = logits + r * p.experts;
        if (!p.sigmoid) {
            const double max = *std::max_element(row, row + p.experts);
            double total = 0;
            for (size_t e = 0; e < n; ++e) total += scores[e] = std::exp(row[e] - max);
            for (auto& s : scores) s /= total;
        } else {
            for (size_t e = 0; e < n; ++e) scores[e] = 1.0 / (1.0 + std::exp(-double(row[e])));
        }
        for (size_t e = 0; e < n; ++e) {
            const double value = scores[e] + (p.expert_bias.data != nullptr ? p.expert_bias.at(int64_t(e)) : 0.0f);
            selection[e] = std::isnan(value) ? -INFINITY : value;  // NaN: chosen last (an order for sorting)
        }
        uint64_t kept = ~uint64_t{0};
        if (p.groups > 1) {
            for (int64_t g = 0; g < p.groups; ++g) {
                double first = -INFINITY, second = -INFINITY;
                for (int64_t e = g * group_size; e < (g + 1) * group_size; ++e) keep_two_highest(first, second, selection[size_t(e)]);
                group_scores[size_t(g)] = first + second;
            }
            kept = kept_expert_groups(group_scores.data(), p.groups, p.top_groups);
        }
        candidates.clear();
        for (int32_t e = 0; e < int32_t(n); ++e)
            if (kept >> (e / group_size) & 1u) candidates.push_back(e);
        // Highest selection score first; ties go to the lower expert index.
        std::partial_sort(candidates.begin(), candidates.begin() + p.experts_per_token, candidates.end(),
                          [&](int32_t a, int32_t b) {
                              return selection[size_t(a)] != selection[size_t(b)] ? selection[size_t(a)] > selection[size_t(b)]
                                                                                  : a < b;
                          });
        double chosen_total = 0;
        for (int64_t j = 0; j < p.experts_per_token; ++j) chosen_total += scores[size_t(candidates[size_t(j)])];
        for (int64_t j = 0; j < p.experts_per_token; ++j) {
            double w = scores[size_t(candidates[size_t(j)])];
            if (p.normalize_top_k) w /= chosen_total;
            experts[r * p.experts_per_token + j] = candidates[size_t(j)];
            weights[r * p.experts_per_token + j] = static_cast<float>(w * p.scaling);
        }
    }
}

}  // namespace unmask::kernels::cpu
