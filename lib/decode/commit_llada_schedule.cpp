// LLaDA's fixed schedule: each block's masks shared out evenly over its steps (the first steps
// take one more), the most confident committed first (or in random order).
#include "core/error.hpp"
#include "decode/commit_strategy.hpp"
#include "decode/transfer_schedule.hpp"

namespace unmask {
namespace {

class LladaSchedule final : public RankingStrategy {
public:
    using RankingStrategy::RankingStrategy;

    void start_block(int64_t, int64_t positions) override {
        transfer_counts_ = llada_transfer_counts(positions, params_.steps / blocks_);
    }
    std::vector<int32_t> choose(const CommitStep& step) const override {
        if (step.block_step >= static_cast<int64_t>(transfer_counts_.size()))
            fail(Status::internal, "block {} still has masks after its {} scheduled steps", step.block,
                 transfer_counts_.size());
        return confidence_.top(step, transfer_counts_[size_t(step.block_step)]);
    }

private:
    std::vector<int64_t> transfer_counts_;  // per step of the current block
};

}  // namespace

std::unique_ptr<CommitStrategy> make_llada_schedule(const DecodeParams& params, int64_t blocks, int32_t eos,
                                                    int32_t eot) {
    return std::make_unique<LladaSchedule>(params, blocks, eos, eot);
}

}  // namespace unmask
