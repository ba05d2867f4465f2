// Threshold and factor decoding (Fast-dLLM): a step commits every masked position of the block
// whose confidence reaches the threshold, or the factor rule's count, at least one, within the
// block's share of min_steps and max_steps.
#include <algorithm>
#include <functional>

#include "decode/commit_strategy.hpp"
#include "decode/transfer_schedule.hpp"

namespace unmask {
namespace {

class AdaptiveCommit final : public RankingStrategy {
public:
    using RankingStrategy::RankingStrategy;

    // The bounds are shared out over the blocks, the remainder to the first ones, so that every
    // block's minimum stays within its maximum and the totals are exact.
    void start_block(int64_t block, int64_t) override {
        auto share = [&](int64_t total) { return total / blocks_ + (block < total % blocks_ ? 1 : 0); };
        block_max_steps_ = share(params_.max_steps);
        block_min_steps_ = share(params_.min_steps);
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
        const int64_t count = bound_commit_count(wanted, static_cast<int64_t>(step.outputs.size()), step.block_step,
                                                 block_min_steps_, block_max_steps_);
        return confidence_.top(step, count);
    }

private:
    int64_t block_min_steps_ = 0, block_max_steps_ = 0;  // this block's share of the bounds
};

}  // namespace

std::unique_ptr<CommitStrategy> make_adaptive_commit(const DecodeParams& params, int64_t blocks, int32_t eos,
                                                     int32_t eot) {
    return std::make_unique<AdaptiveCommit>(params, blocks, eos, eot);
}

}  // namespace unmask
