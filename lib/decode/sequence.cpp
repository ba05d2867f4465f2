#include "decode/sequence.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "core/philox.hpp"
#include "decode/transfer_schedule.hpp"

namespace unmask {
namespace {
constexpr double negative_infinity = -std::numeric_limits<double>::infinity();
}

DecodeSequence::DecodeSequence(const ModelSpec& spec, const DecodeParams& params, std::vector<int32_t> canvas)
    : spec_(spec), params_(params), canvas_(std::move(canvas)) {
    const auto mask = static_cast<int32_t>(spec.mask_token_id);
    const auto first_mask = std::find(canvas_.begin(), canvas_.end(), mask);
    region_begin_ = first_mask - canvas_.begin();
    const auto region = static_cast<int64_t>(canvas_.size()) - region_begin_;
    validate(params_, spec, region);
    for (int32_t token : canvas_)
        if (token < 0 || token >= spec.embedding_rows)
            fail(Status::invalid_argument, "token id {} is outside the vocabulary of {}", token, spec.embedding_rows);
    if (static_cast<int64_t>(canvas_.size()) > spec.max_sequence_length)
        fail(Status::too_long, "prompt and generation take {} positions; the model allows {}", canvas_.size(),
             spec.max_sequence_length);
    fixed_.resize(canvas_.size());
    for (size_t i = 0; i < canvas_.size(); ++i) fixed_[i] = canvas_[i] != mask;

    eos_ = static_cast<int32_t>(params_.eos_token_id >= 0 ? params_.eos_token_id : spec.eos_token_id);
    eot_ = static_cast<int32_t>(params_.eot_token_id);
    block_length_ = params_.block_length > 0            ? params_.block_length
                    : spec.diffusion_block_size > 0 ? spec.diffusion_block_size
                                                    : region;
    blocks_ = region / block_length_;

    // Sampling: LLaDA scores x0 under the raw softmax and samples with Gumbel noise at T; Dream
    // samples from softmax(filter(logits / T)) and scores under that distribution.
    if (params_.dream_policy()) {
        sampling_.distribution_temperature = params_.temperature > 0 ? params_.temperature : 1.0;
        sampling_.noise_temperature = params_.temperature > 0 ? 1.0 : 0.0;
        sampling_.top_k = params_.top_k;
        sampling_.top_p = params_.top_p;
        timesteps_ = dream_timesteps(params_.steps, params_.eps);
    } else {
        sampling_.noise_temperature = params_.temperature;
    }
    sampling_.seed = params_.seed;
    // LLaDA's confidence_eos_eot_inf as the reference runs it: after x0 is drawn, the chained
    // assignment `logits_with_noise[EOS] = logits[EOT] = -inf` only reaches the logits the
    // confidence softmax reads, so EOT drops out of that softmax (an EOT prediction scores 0, the
    // others are renormalised without it) and EOS is untouched.
    if (params_.eos_confidence == EosConfidence::reference_quirk && eot_ >= 0)
        sampling_.probability_excluded_token = eot_;
    // The mask is never a prediction: committing it would leave the position masked, so a fixed
    // schedule would end with masks and an adaptive one might never finish. (LLaDA's reference
    // does not exclude it; its models practically never predict it.)
    banned_.push_back(mask);
    if (params_.logits_eos_inf && eos_ >= 0) banned_.push_back(eos_);
    sampling_.banned_tokens = banned_;
    start_block();
    prepare_step();
}

void DecodeSequence::start_block() {
    block_step_ = 0;
    if (params_.dream_policy()) return;
    const int64_t begin = block_begin();
    const auto masked = std::count(canvas_.begin() + begin, canvas_.begin() + begin + block_length_,
                                   static_cast<int32_t>(spec_.mask_token_id));
    if (params_.adaptive()) {
        // The bounds are shared out over the blocks, the remainder to the first ones, so that
        // every block's minimum stays within its maximum and the totals are exact.
        auto share = [&](int64_t total) { return total / blocks_ + (block_ < total % blocks_ ? 1 : 0); };
        block_max_steps_ = share(params_.max_steps);
        block_min_steps_ = share(params_.min_steps);
    } else {
        transfer_counts_ = llada_transfer_counts(masked, params_.steps / blocks_);
    }
}

int64_t DecodeSequence::block_begin() const noexcept {
    return params_.dream_policy() ? region_begin_ : region_begin_ + block_ * block_length_;
}

int64_t DecodeSequence::block_end() const noexcept {
    return params_.dream_policy() ? static_cast<int64_t>(canvas_.size()) : block_begin() + block_length_;
}

void DecodeSequence::make_caches(Backend& backend, MemoryLedger* ledger) {
    if (!needs_cache() || cache_ != nullptr) return;
    const auto length = static_cast<int64_t>(canvas_.size());
    cache_ = std::make_unique<KVCache>(backend, ledger, spec_, length, params_.cache_dtype);
    if (params_.cfg_scale > 0)
        unconditional_cache_ = std::make_unique<KVCache>(backend, ledger, spec_, length, params_.cache_dtype);
}

void DecodeSequence::prepare_step() {
    outputs_.clear();
    const auto mask = static_cast<int32_t>(spec_.mask_token_id);
    const int64_t begin = block_begin(), end = block_end(), length = static_cast<int64_t>(canvas_.size());
    for (int64_t p = begin; p < end; ++p)
        if (canvas_[size_t(p)] == mask) outputs_.push_back(static_cast<int32_t>(p));
    sampling_.step = static_cast<uint32_t>(steps_);
    if (params_.cfg_scale > 0) {
        unconditional_ = canvas_;
        for (size_t i = 0; i < canvas_.size(); ++i)
            if (fixed_[i]) unconditional_[i] = mask;
    }
    feed_begin_ = 0;
    feed_end_ = length;
    if (params_.cache_mode == CacheMode::none) return;
    const bool refresh = params_.cache_refresh > 0 && block_step_ % params_.cache_refresh == 0;
    const int64_t shift = spec_.logits_shift ? 1 : 0;  // position p is predicted from p - 1
    const int64_t part_begin = std::max<int64_t>(0, begin - shift - params_.cache_vicinity);
    const int64_t part_end = params_.cache_mode == CacheMode::dual ? std::min(length, end + params_.cache_vicinity) : length;
    if (spec_.diffusion_block_size > 0) {
        // Block-causal attention: the cache is exact, and nothing after the block matters to it.
        // A block's first forward also feeds the finished blocks whose K/V are not final yet (the
        // previous one, more after blocks that needed no forward; the prompt with block 0),
        // extending the cache like a prefill.
        feed_begin_ = refresh ? 0 : part_begin;
        if (block_step_ == 0) feed_begin_ = std::min(feed_begin_, cache_final_);
        feed_end_ = end;
        if (!outputs_.empty()) cache_final_ = std::max(cache_final_, begin);  // this step's forward makes them final
    } else if (block_step_ > 0 && !refresh) {
        // Bidirectional: a block starts with the whole canvas; its other steps feed their part.
        feed_begin_ = part_begin;
        feed_end_ = part_end;
    }
}

double DecodeSequence::position_uniform(int32_t position, RandomStream stream) const {
    return uniform_open01(params_.seed, 0, static_cast<uint32_t>(position), static_cast<uint32_t>(steps_), stream);
}

double DecodeSequence::confidence(const Candidate& c, int32_t position) const {
    double value = 0;
    switch (params_.policy) {
        case CommitPolicy::low_confidence:
        case CommitPolicy::maskgit_plus: value = c.probability; break;
        case CommitPolicy::random: value = position_uniform(position, RandomStream::commit_order); break;
        case CommitPolicy::topk_margin: value = double(c.top1_probability) - double(c.top2_probability); break;
        case CommitPolicy::entropy: value = c.negative_entropy; break;
        case CommitPolicy::origin: break;
    }
    // The intended confidence_eos_eot_inf: EOS and EOT predictions are committed last.
    if (params_.eos_confidence == EosConfidence::eos_and_eot && (c.token == eot_ || c.token == eos_))
        value = negative_infinity;
    return value;
}

// The `count` output indices with the highest confidence (ties: lower position first); with
// alg_temp, a Gumbel-top-k draw, i.e. sampling without replacement from softmax(conf / alg_temp).
std::vector<int32_t> DecodeSequence::choose(std::span<const Candidate> candidates, int64_t count) const {
    std::vector<double> key(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
        key[i] = confidence(candidates[i], outputs_[i]);
        if (params_.alg_temp > 0 && params_.dream_policy()) {
            const double u = position_uniform(outputs_[i], RandomStream::commit_order);
            key[i] = key[i] / params_.alg_temp - std::log(-std::log(u));
        }
    }
    std::vector<int32_t> order(outputs_.size());
    std::iota(order.begin(), order.end(), 0);
    count = std::min<int64_t>(count, static_cast<int64_t>(order.size()));
    std::partial_sort(order.begin(), order.begin() + count, order.end(), [&](int32_t a, int32_t b) {
        return key[size_t(a)] != key[size_t(b)] ? key[size_t(a)] > key[size_t(b)] : a < b;
    });
    order.resize(size_t(count));
    return order;
}

int64_t DecodeSequence::apply(std::span<const Candidate> candidates) {
    if (finished()) fail(Status::internal, "apply() on a finished sequence");
    if (candidates.size() != outputs_.size())
        fail(Status::internal, "{} candidates for {} output positions", candidates.size(), outputs_.size());
    std::vector<int32_t> commit;  // indices into outputs_
    if (params_.policy == CommitPolicy::origin) {
        const int64_t steps = params_.steps;
        const double t = timesteps_[size_t(steps_)], s = timesteps_[size_t(steps_ + 1)];
        const double p_transfer = steps_ < steps - 1 ? 1.0 - s / t : 1.0;
        for (size_t i = 0; i < outputs_.size(); ++i)
            if (position_uniform(outputs_[i], RandomStream::position_draw) < p_transfer)
                commit.push_back(static_cast<int32_t>(i));
    } else if (params_.dream_policy()) {
        commit = choose(candidates, dream_transfer_count(static_cast<int64_t>(outputs_.size()), steps_, timesteps_));
    } else if (params_.adaptive()) {
        std::vector<float> sorted;
        int64_t wanted = 0;
        for (size_t i = 0; i < outputs_.size(); ++i) {
            const double c = confidence(candidates[i], outputs_[i]);
            sorted.push_back(static_cast<float>(c));
            if (params_.threshold > 0 && c >= params_.threshold) ++wanted;
        }
        if (params_.factor > 0) {
            std::sort(sorted.begin(), sorted.end(), std::greater<float>());
            wanted = factor_commit_count(sorted, params_.factor);
        }
        const int64_t count = bound_commit_count(wanted, static_cast<int64_t>(outputs_.size()), block_step_,
                                                 block_min_steps_, block_max_steps_);
        commit = choose(candidates, count);
    } else {
        if (block_step_ >= static_cast<int64_t>(transfer_counts_.size()))
            fail(Status::internal, "block {} still has masks after its {} scheduled steps", block_, transfer_counts_.size());
        commit = choose(candidates, transfer_counts_[size_t(block_step_)]);
    }
    for (int32_t i : commit) canvas_[size_t(outputs_[size_t(i)])] = candidates[size_t(i)].token;
    ++steps_;
    ++block_step_;
    finish_if_done();
    if (!finished()) prepare_step();
    return static_cast<int64_t>(commit.size());
}

void DecodeSequence::finish_if_done() {
    const auto mask = static_cast<int32_t>(spec_.mask_token_id);
    if (params_.dream_policy()) {
        // Dream's schedules end after their steps, not at a committed EOS (which may sit anywhere).
        if (steps_ < params_.steps) return;
        finish_ = FinishReason::length;
    } else {
        const int64_t begin = block_begin();
        const bool block_done =
            std::find(canvas_.begin() + begin, canvas_.begin() + begin + block_length_, mask) == canvas_.begin() + begin + block_length_;
        if (!block_done) return;
        // Early stop: a committed EOS in the finished blocks followed only by EOS or masks ends
        // the answer; fill the rest with EOS.
        if (params_.early_stop && eos_ >= 0) {
            int64_t answer_end = static_cast<int64_t>(canvas_.size());  // first of the trailing EOS/masks
            while (answer_end > region_begin_ && (canvas_[size_t(answer_end - 1)] == eos_ || canvas_[size_t(answer_end - 1)] == mask))
                --answer_end;
            if (answer_end < begin + block_length_ && canvas_[size_t(answer_end)] == eos_) {
                std::replace(canvas_.begin() + answer_end, canvas_.end(), mask, eos_);
                finish_ = FinishReason::eos;
                return;
            }
        }
        if (++block_ == blocks_) {
            finish_ = FinishReason::length;
        } else {
            start_block();
            return;
        }
    }
    // A generated EOS (not one among the fixed tokens of an infilling canvas) means the answer
    // ended by itself.
    for (size_t p = size_t(region_begin_); p < canvas_.size(); ++p)
        if (!fixed_[p] && canvas_[p] == eos_) finish_ = FinishReason::eos;
}

}  // namespace unmask
