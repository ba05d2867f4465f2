// Threshold and factor decoding (Fast-dLLM): a step commits every masked position of the block
// whose confidence reaches the threshold, or the factor rule's count, at least one, within the
// block's share of min_steps and max_steps. Block diffusion models' threshold decoding is
// LLaDA2's: at least the count of the block's fixed schedule.
#include <algorithm>
#include <functional>

#include "decode/commit_strategy.hpp"
#include "decode/transfer_schedule.hpp"

namespace unmask {
namespace {

class AdaptiveCommit final : public RankingStrategy {
public:
    AdaptiveCommit(const DecodeParams& params, int64_t blocks, int32_t eos, int32_t eot, bool scheduled_floor)
        : RankingStrategy(params, blocks, eos, eot), scheduled_floor_(scheduled_floor) {}

    // The bounds are shared out over the blocks, the remainder to the first ones, so that every
    // block's minimum stays within its maximum and the totals are exact.
    void start_block(int64_t block, int64_t positions) override {
        auto share = [&](int64_t total) { return total / blocks_ + (block < total % blocks_ ? 1 : 0); };
        block_max_steps_ = share(params_.max_steps);
        block_min_steps_ = share(params_.min_steps);
        // LLaDA2: the block's length (`positions`) shared over its steps, as the fixed schedule.
        if (scheduled_floor_) floor_ = llada_transfer_counts(positions, std::max<int64_t>(1, params_.steps / blocks_));
    }
    std::vector<int32_t> choose(const CommitStep& step) const override {
        std::vector<float> sorted;
        int64_t wanted = 0;
        for (size_t i = 0; i < step.outputs.size(); ++i) {
            const double c = confidence_.of(step.candidates[i], step.outputs[i], step.step);
            sorted.push_back(static_cast<float>(c));
            if (params_.threshold > 0 && c >= params_.threshold) ++wanted;
        }
        if (params_.factor > 0) {
            std::sort(sorted.begin(), sorted.end(), std::greater<float>());
            wanted = factor_commit_count(sorted, params_.factor);
        }
        const auto masked = static_cast<int64_t>(step.outputs.size());
        int64_t count = bound_commit_count(wanted, masked, step.block_step, block_min_steps_, block_max_steps_);
        // LLaDA2's rule: every position above the threshold when they are at least the step's
        // scheduled count, else that count of the most confident.
        if (step.block_step < static_cast<int64_t>(floor_.size()))
            count = std::max(count, std::min(floor_[size_t(step.block_step)], masked));
        return confidence_.top(step, count);
    }

private:
    const bool scheduled_floor_;
    int64_t block_min_steps_ = 0, block_max_steps_ = 0;  // this block's share of the bounds
    std::vector<int64_t> floor_;                         // LLaDA2: the least count of each step of the block
};

}  // namespace

std::unique_ptr<CommitStrategy> make_adaptive_commit(const DecodeParams& params, int64_t blocks, int32_t eos,
                                                     int32_t eot, bool scheduled_floor) {
    return std::make_unique<AdaptiveCommit>(params, blocks, eos, eot, scheduled_floor);
}

}  // namespace unmask
