// One request's decoding state: the canvas and where it is in its schedule; its commit strategy
// (commit_strategy.hpp) says how each step's candidates become commits, feed_window.hpp what
// each step feeds. The batching loop (generate.cpp, later the engine) asks every
// sequence what to feed, runs one forward for all of them, and hands each its candidates.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "decode/commit_strategy.hpp"
#include "decode/decode_params.hpp"
#include "memory/memory_plan.hpp"
#include "model/model_spec.hpp"

namespace unmask {

enum class FinishReason : int32_t { none = 0, length = 1, eos = 2, cancelled = 3 };

class DecodeSequence {
public:
    // `canvas` holds the prompt and the masks to fill (mask_token_id). The generated region runs
    // from the first mask to the end of the canvas; positions before it and unmasked positions in
    // it are fixed (the prompt, an infilling suffix).
    //
    // Block diffusion models (diffusion_block_size > 0) decode as their published generate() does
    // (LLaDA2, SDAR): blocks aligned to position 0, the canvas extended with masks to a block
    // boundary, decoding from the block that holds the first mask (the prompt's last partial block
    // is decoded with the first masked positions; its prompt positions never change). The extra
    // positions are decoded and dropped: output() is the request's canvas.
    DecodeSequence(const ModelSpec& spec, const DecodeParams& params, std::vector<int32_t> canvas);
    DecodeSequence(DecodeSequence&&) = default;  // moves keep sampling_'s span valid (heap buffer)
    DecodeSequence(const DecodeSequence&) = delete;
    DecodeSequence& operator=(const DecodeSequence&) = delete;

    bool finished() const noexcept { return finish_ != FinishReason::none; }
    FinishReason finish_reason() const noexcept { return finish_; }
    // The canvas the forward reads (block diffusion: extended to a block boundary).
    const std::vector<int32_t>& canvas() const noexcept { return canvas_; }
    // The request's canvas: its prompt and generated region, without the extension.
    std::span<const int32_t> output() const noexcept { return std::span(canvas_).first(size_t(output_length_)); }
    int64_t region_begin() const noexcept { return region_begin_; }
    int64_t steps() const noexcept { return steps_; }
    // Blocks whose every position is committed (Dream's policies have one block: the region).
    int64_t completed_blocks() const noexcept {
        return finish_ == FinishReason::length || finish_ == FinishReason::eos ? blocks_ : block_;
    }
    int64_t blocks() const noexcept { return blocks_; }

    // This step's forward inputs: the canvas, the positions that need candidates, the sampling
    // parameters, and (with CFG) the unconditional canvas.
    const std::vector<int32_t>& output_positions() const noexcept { return outputs_; }
    const CandidateParams& sampling() const noexcept { return sampling_; }
    const std::vector<int32_t>* unconditional() const noexcept { return params_.cfg_scale > 0 ? &unconditional_ : nullptr; }
    double cfg_scale() const noexcept { return params_.cfg_scale; }
    // The positions this step feeds: the whole canvas, or with a cache mode, between refreshes,
    // the current block (dual) or everything from it (prefix), widened by the vicinity and, when
    // the model predicts from the previous position, by one before the block. Block diffusion
    // models (exact cache) feed the block, at its first step with the finished blocks before it
    // whose K/V are not final yet.
    int64_t feed_begin() const noexcept { return feed_begin_; }
    int64_t feed_end() const noexcept { return feed_end_; }
    // What the memory plan charges this sequence for: K/V caches with a cache mode, a twin with CFG.
    SequenceOptions memory_options() const noexcept {
        return {needs_cache(), params_.cfg_scale > 0, params_.cache_precision};
    }
    // Rows this step feeds to a forward (as the plan counts them), and the most any step does.
    int64_t fed_rows() const noexcept { return forward_rows(feed_end_ - feed_begin_, memory_options()); }
    int64_t max_fed_rows() const noexcept { return forward_rows(static_cast<int64_t>(canvas_.size()), memory_options()); }

    // Whether the steps read and write K/V caches: those of the sequence's state (SequenceState,
    // made from memory_options()), which the caller owns and lends to each step.
    bool needs_cache() const noexcept { return params_.cache_mode != CacheMode::none; }

    // Commits from one candidate per output position; returns how many positions were committed.
    int64_t apply(std::span<const Candidate> candidates);
    void cancel() noexcept { finish_ = FinishReason::cancelled; }

private:
    void start_block();
    void prepare_step();
    int64_t block_begin() const noexcept;  // the positions the current step decodes
    int64_t block_end() const noexcept;
    void finish_if_done();

    const ModelSpec& spec_;
    DecodeParams params_;
    std::vector<int32_t> canvas_, unconditional_;
    std::vector<bool> fixed_;  // prompt and other given positions (masked in the CFG copy)
    int64_t output_length_ = 0;  // of the request's canvas
    int64_t region_begin_ = 0, first_block_begin_ = 0, block_length_ = 0, block_ = 0, blocks_ = 0;
    int64_t steps_ = 0, block_step_ = 0;
    int64_t post_edit_steps_ = 0;                       // token editing: steps after the block's last mask
    bool step_had_masks_ = false, step_edited_ = false;  // what the last applied step found and did
    std::unique_ptr<CommitStrategy> strategy_;  // which of a step's outputs it commits
    std::vector<int32_t> outputs_, current_;  // current_: the canvas at each output
    CandidateParams sampling_;
    int32_t eos_ = -1, eot_ = -1;
    std::vector<int32_t> banned_;  // sampling_.banned_tokens views it
    FinishReason finish_ = FinishReason::none;
    int64_t feed_begin_ = 0, feed_end_ = 0;
    int64_t cache_final_ = 0;  // block diffusion: cached K/V of [0, cache_final_) are final
    // Block diffusion's published layout (see the constructor), decided once: a block diffusion
    // model decoded block by block (Dream's policies decode the whole region instead).
    bool published_blocks_ = false;
};

}  // namespace unmask
