// How many positions each step commits, and Dream's timesteps.
#pragma once

#include <cstdint>
#include <vector>

namespace unmask {

// LLaDA: `masked` positions over `steps` steps: base = masked / steps, the first masked % steps
// steps take one more.
std::vector<int64_t> llada_transfer_counts(int64_t masked, int64_t steps);

// Dream: t_i = linspace(1, eps, steps + 1); step i goes from t_i to s = t_{i+1}.
std::vector<double> dream_timesteps(int64_t steps, double eps);

// Dream's confidence policies: int(masked * (1 - s / t)), everything at the last step.
int64_t dream_transfer_count(int64_t masked, int64_t step, const std::vector<double>& timesteps);

// RND1: of the region's `total` masks, those still masked after step `step` (0-based) of `steps`:
// floor(total * (steps - 1 - step) / steps) in float32, as torch computes it; 0 after the last.
int64_t rnd1_masks_kept(int64_t total, int64_t step, int64_t steps);

// Fast-dLLM's factor rule on confidences sorted in descending order: the largest n such that
// c(i) >= 1 - factor / (i + 1) for every 1-based i <= n; at least 1.
int64_t factor_commit_count(const std::vector<float>& sorted_confidence, double factor);

// Bounds an adaptive step's commit count so the block finishes within `max_steps` and takes at
// least `min_steps` (0: unbounded), given `step` steps already taken in the block.
int64_t bound_commit_count(int64_t wanted, int64_t masked, int64_t step, int64_t min_steps, int64_t max_steps);

}  // namespace unmask
