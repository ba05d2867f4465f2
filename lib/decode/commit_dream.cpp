// Dream's policies: the whole region one block over timesteps linspace(1, eps, steps + 1).
// origin commits each masked position independently with probability 1 - s/t; the confidence
// policies (maskgit_plus, topk_margin, entropy) commit int(masked * (1 - s/t)) of the most
// confident, or with alg_temp a Gumbel-top-k draw; the last step commits everything.
// RND1's sampler (rnd1) is one more schedule over the whole region: after step i of N, the
// floor(M (N - 1 - i) / N) highest-entropy of the region's M masks stay masked.
#include <algorithm>

#include "decode/commit_strategy.hpp"
#include "decode/transfer_schedule.hpp"

namespace unmask {
namespace {

class DreamCommit final : public RankingStrategy {
public:
    DreamCommit(const DecodeParams& params, int32_t eos, int32_t eot)
        : RankingStrategy(params, 1, eos, eot), timesteps_(dream_timesteps(params.steps, params.eps)) {}

    bool whole_region() const noexcept override { return true; }
    void start_block(int64_t, int64_t positions) override { region_masks_ = positions; }
    std::vector<int32_t> choose(const CommitStep& step) const override {
        const auto masked = static_cast<int64_t>(step.outputs.size());
        if (params_.policy == CommitPolicy::rnd1)
            return confidence_.top(step, std::max<int64_t>(0, masked - rnd1_masks_kept(region_masks_, step.step, params_.steps)));
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
    int64_t region_masks_ = 0;  // the masks the region starts with
};

}  // namespace

std::unique_ptr<CommitStrategy> make_dream_commit(const DecodeParams& params, int32_t eos, int32_t eot) {
    return std::make_unique<DreamCommit>(params, eos, eot);
}

}  // namespace unmask
