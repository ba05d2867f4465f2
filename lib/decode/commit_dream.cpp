// Dream's policies: the whole region one block over timesteps linspace(1, eps, steps + 1).
// origin commits each masked position independently with probability 1 - s/t; the confidence
// policies (maskgit_plus, topk_margin, entropy) commit int(masked * (1 - s/t)) of the most
// confident, or with alg_temp a Gumbel-top-k draw; the last step commits everything.
#include "decode/commit_strategy.hpp"
#include "decode/transfer_schedule.hpp"

namespace unmask {
namespace {

class DreamCommit final : public RankingStrategy {
public:
    DreamCommit(const DecodeParams& params, int32_t eos, int32_t eot)
        : RankingStrategy(params, 1, eos, eot), timesteps_(dream_timesteps(params.steps, params.eps)) {}

    bool whole_region() const noexcept override { return true; }
    void start_block(int64_t, int64_t) override {}
    std::vector<int32_t> choose(const CommitStep& step) const override {
        const auto masked = static_cast<int64_t>(step.outputs.size());
        if (params_.policy != CommitPolicy::origin)
            return confidence_.top(step, dream_transfer_count(masked, step.step, timesteps_), params_.alg_temp);
        const double t = timesteps_[size_t(step.step)], s = timesteps_[size_t(step.step + 1)];
        const double p_transfer = step.step < params_.steps - 1 ? 1.0 - s / t : 1.0;
        std::vector<int32_t> commit;
        for (size_t i = 0; i < step.outputs.size(); ++i)
            if (position_uniform(params_.seed, step.outputs[i], step.step, RandomStream::position_draw) < p_transfer)
                commit.push_back(static_cast<int32_t>(i));
        return commit;
    }

private:
    std::vector<double> timesteps_;
};

}  // namespace

std::unique_ptr<CommitStrategy> make_dream_commit(const DecodeParams& params, int32_t eos, int32_t eot) {
    return std::make_unique<DreamCommit>(params, eos, eot);
}

}  // namespace unmask
