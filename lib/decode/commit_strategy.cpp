#include "decode/commit_strategy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.hpp"

namespace unmask {

// Defined in the strategies' files.
std::unique_ptr<CommitStrategy> make_llada_schedule(const DecodeParams& params, int64_t blocks, int32_t eos,
                                                    int32_t eot);
std::unique_ptr<CommitStrategy> make_adaptive_commit(const DecodeParams& params, int64_t blocks, int32_t eos,
                                                     int32_t eot, bool scheduled_floor);
std::unique_ptr<CommitStrategy> make_dream_commit(const DecodeParams& params, int32_t eos, int32_t eot);
std::unique_ptr<CommitStrategy> make_editing_commit(std::unique_ptr<CommitStrategy> masks, double edit_threshold,
                                                    int32_t mask);

std::unique_ptr<CommitStrategy> make_commit_strategy(const DecodeParams& params, int64_t blocks, int32_t eos,
                                                     int32_t eot, int32_t mask, bool block_diffusion) {
    if (params.whole_region_policy()) return make_dream_commit(params, eos, eot);
    // Token editing commits masks as SGLang's JointThreshold does: above the threshold, at least one.
    if (params.editing())
        return make_editing_commit(make_adaptive_commit(params, blocks, eos, eot, false), params.edit_threshold, mask);
    if (params.adaptive()) return make_adaptive_commit(params, blocks, eos, eot, block_diffusion && params.threshold > 0);
    return make_llada_schedule(params, blocks, eos, eot);
}

double position_uniform(uint64_t seed, int32_t position, int64_t step, RandomStream stream) {
    return uniform_open01(seed, 0, static_cast<uint32_t>(position), static_cast<uint32_t>(step), stream);
}

double Confidence::of(const Candidate& c, int32_t position, int64_t step) const {
    double value = 0;
    switch (params_.policy) {
        case CommitPolicy::low_confidence:
        case CommitPolicy::maskgit_plus: value = c.probability; break;
        case CommitPolicy::random: value = position_uniform(params_.seed, position, step, RandomStream::commit_order); break;
        case CommitPolicy::topk_margin: value = double(c.top1_probability) - double(c.top2_probability); break;
        case CommitPolicy::entropy:
        case CommitPolicy::rnd1: value = c.negative_entropy; break;
        case CommitPolicy::origin: break;
    }
    // The intended confidence_eos_eot_inf: EOS and EOT predictions are committed last.
    if (params_.eos_confidence == EosConfidence::eos_and_eot && (c.token == eot_ || c.token == eos_))
        value = -std::numeric_limits<double>::infinity();
    return value;
}

std::vector<int32_t> Confidence::top(const CommitStep& step, int64_t count, double alg_temp) const {
    const size_t n = step.outputs.size();
    std::vector<double> key(n);
    for (size_t i = 0; i < n; ++i) {
        key[i] = of(step.candidates[i], step.outputs[i], step.step);
        if (alg_temp > 0) {
            const double u = position_uniform(params_.seed, step.outputs[i], step.step, RandomStream::commit_order);
            key[i] = key[i] / alg_temp - std::log(-std::log(u));
        }
    }
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    count = std::min<int64_t>(count, static_cast<int64_t>(n));
    std::partial_sort(order.begin(), order.begin() + count, order.end(), [&](int32_t a, int32_t b) {
        return key[size_t(a)] != key[size_t(b)] ? key[size_t(a)] > key[size_t(b)] : a < b;
    });
    order.resize(size_t(count));
    return order;
}

}  // namespace unmask
