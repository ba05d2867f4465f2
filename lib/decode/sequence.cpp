#include "decode/sequence.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "decode/feed_window.hpp"

namespace unmask {
DecodeSequence::DecodeSequence(const ModelSpec& spec, const DecodeParams& params, std::vector<int32_t> canvas)
    : spec_(spec), params_(params), canvas_(std::move(canvas)) {
    const auto mask = static_cast<int32_t>(spec.mask_token_id);
    const auto first_mask = std::find(canvas_.begin(), canvas_.end(), mask);
    region_begin_ = first_mask - canvas_.begin();
    output_length_ = static_cast<int64_t>(canvas_.size());
    const int64_t region = output_length_ - region_begin_;
    validate(params_, spec, region);
    // RND1's sampler keeps the canvas's last position for the pad token (one slot reserved for
    // the end); an infilling canvas, which ends with its suffix, keeps its own end.
    if (params_.policy == CommitPolicy::rnd1 && spec.pad_token_id >= 0 && canvas_.back() == mask) {
        if (region < 2)
            fail(Status::invalid_argument, "the rnd1 policy keeps the last position for the pad token {}: gen_length "
                 "must be at least 2, got {}", spec.pad_token_id, region);
        canvas_.back() = static_cast<int32_t>(spec.pad_token_id);
    }
    for (int32_t token : canvas_)
        if (token < 0 || token >= spec.embedding_rows)
            fail(Status::invalid_argument, "token id {} is outside the vocabulary of {}", token, spec.embedding_rows);

    eos_ = static_cast<int32_t>(params_.eos_token_id >= 0 ? params_.eos_token_id : spec.eos_token_id);
    eot_ = static_cast<int32_t>(params_.eot_token_id);
    block_length_ = params_.block_length > 0            ? params_.block_length
                    : spec.diffusion_block_size > 0 ? spec.diffusion_block_size
                                                    : region;
    published_blocks_ = spec.diffusion_block_size > 0;  // (validate refuses whole-canvas policies for them)
    // The strategy shares steps over the region's blocks.
    strategy_ = make_commit_strategy(params_, region_blocks(region, block_length_), eos_, eot_, mask, published_blocks_);
    first_block_begin_ = region_begin_;
    blocks_ = region_blocks(region, block_length_);
    if (published_blocks_) {
        first_block_begin_ = region_begin_ / block_length_ * block_length_;
        canvas_.resize(size_t(spec.decoded_positions(output_length_)), mask);
        blocks_ = (static_cast<int64_t>(canvas_.size()) - first_block_begin_) / block_length_;
    }
    if (static_cast<int64_t>(canvas_.size()) > spec.max_sequence_length)
        fail(Status::too_long, "prompt and generation take {} positions{}; the model allows {}", canvas_.size(),
             output_length_ < static_cast<int64_t>(canvas_.size()) ? " (up to the end of their last block)" : "",
             spec.max_sequence_length);
    fixed_.resize(canvas_.size());
    for (size_t i = 0; i < canvas_.size(); ++i) fixed_[i] = canvas_[i] != mask;

    // Sampling: LLaDA scores x0 under the raw softmax and samples with Gumbel noise at T; Dream
    // samples from softmax(filter(logits / T)) and scores under that distribution.
    if (params_.whole_region_policy()) {
        sampling_.distribution_temperature = params_.temperature > 0 ? params_.temperature : 1.0;
        sampling_.noise_temperature = params_.temperature > 0 ? 1.0 : 0.0;
        sampling_.top_k = params_.top_k;
        sampling_.top_p = params_.top_p;
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
    post_edit_steps_ = 0;
    const int64_t begin = block_begin(), end = block_end();
    // LLaDA shares a block's masks out over its steps; LLaDA2 and SDAR share the block's length
    // (a partial first block commits up to the same counts and finishes early).
    strategy_->start_block(block_, published_blocks_ ? block_length_
                                                     : std::count(canvas_.begin() + begin, canvas_.begin() + end,
                                                                  static_cast<int32_t>(spec_.mask_token_id)));
}

int64_t DecodeSequence::block_begin() const noexcept {
    return strategy_->whole_region() ? region_begin_ : first_block_begin_ + block_ * block_length_;
}

int64_t DecodeSequence::block_end() const noexcept {
    return strategy_->whole_region() ? static_cast<int64_t>(canvas_.size()) : block_begin() + block_length_;
}

void DecodeSequence::prepare_step() {
    outputs_.clear();
    const auto mask = static_cast<int32_t>(spec_.mask_token_id);
    const int64_t begin = block_begin(), end = block_end(), length = static_cast<int64_t>(canvas_.size());
    // The masks; with token editing, the block's committed positions too.
    current_.clear();
    for (int64_t p = begin; p < end; ++p)
        if (canvas_[size_t(p)] == mask || (params_.editing() && !fixed_[size_t(p)])) {
            outputs_.push_back(static_cast<int32_t>(p));
            current_.push_back(canvas_[size_t(p)]);
        }
    sampling_.step = static_cast<uint32_t>(steps_);
    if (params_.cfg_scale > 0) {
        unconditional_ = canvas_;
        for (size_t i = 0; i < canvas_.size(); ++i)
            if (fixed_[i]) unconditional_[i] = mask;
    }
    const FeedWindow window = feed_window({params_.cache_mode, params_.cache_refresh_steps, params_.cache_vicinity,
                                           spec_.logits_shift, spec_.diffusion_block_size > 0, begin, end,
                                           block_step_, length, cache_final_});
    feed_begin_ = window.begin;
    feed_end_ = window.end;
    // Block diffusion: this step's forward makes the K/V before the block final.
    if (params_.cache_mode != CacheMode::none && spec_.diffusion_block_size > 0 && !outputs_.empty())
        cache_final_ = std::max(cache_final_, begin);
}

int64_t DecodeSequence::apply(std::span<const Candidate> candidates) {
    if (finished()) fail(Status::internal, "apply() on a finished sequence");
    if (candidates.size() != outputs_.size())
        fail(Status::internal, "{} candidates for {} output positions", candidates.size(), outputs_.size());
    const std::vector<int32_t> commit = strategy_->choose({outputs_, candidates, current_, steps_, block_, block_step_});
    const auto mask = static_cast<int32_t>(spec_.mask_token_id);
    step_had_masks_ = std::find(current_.begin(), current_.end(), mask) != current_.end();
    step_edited_ = false;
    for (int32_t i : commit) {
        step_edited_ = step_edited_ || current_[size_t(i)] != mask;
        canvas_[size_t(outputs_[size_t(i)])] = candidates[size_t(i)].token;
    }
    ++steps_;
    ++block_step_;
    finish_if_done();
    if (!finished()) prepare_step();
    return static_cast<int64_t>(commit.size());
}

void DecodeSequence::finish_if_done() {
    const auto mask = static_cast<int32_t>(spec_.mask_token_id);
    if (strategy_->whole_region()) {
        // Dream's schedules end after their steps, not at a committed EOS (which may sit anywhere).
        if (steps_ < params_.steps) return;
        finish_ = FinishReason::length;
    } else {
        const int64_t begin = block_begin();
        const bool block_done =
            std::find(canvas_.begin() + begin, canvas_.begin() + begin + block_length_, mask) == canvas_.begin() + begin + block_length_;
        if (!block_done) return;
        // Token editing: after the step that filled the block's last mask, steps of edits alone,
        // until one edits nothing or max_post_edit_steps have run (SGLang's JointThreshold stops
        // at the next step without applying it; that forward is skipped here).
        if (params_.editing()) {
            if (!step_had_masks_) ++post_edit_steps_;
            const bool edits_left = step_had_masks_ ? params_.max_post_edit_steps > 0
                                                    : step_edited_ && post_edit_steps_ < params_.max_post_edit_steps;
            if (edits_left) return;
        }
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
        // Block diffusion stops after a block that leaves an EOS in the answer (the published
        // generate(); block-causal attention: later blocks could not change it).
        const auto generated_eos = [&](int64_t end) {
            for (int64_t p = region_begin_; p < std::min(end, output_length_); ++p)
                if (!fixed_[size_t(p)] && canvas_[size_t(p)] == eos_) return true;
            return false;
        };
        if (published_blocks_ && eos_ >= 0 && generated_eos(begin + block_length_)) {
            std::replace(canvas_.begin() + begin + block_length_, canvas_.end(), mask, eos_);
            finish_ = FinishReason::eos;
            return;
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
    for (int64_t p = region_begin_; p < output_length_; ++p)
        if (!fixed_[size_t(p)] && canvas_[size_t(p)] == eos_) finish_ = FinishReason::eos;
}

}  // namespace unmask
