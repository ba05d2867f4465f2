// How a denoising step's candidates become commits: which of the step's masked positions take
// their candidate's token. One strategy per family of policies (docs/decoding.md),
// each in a file of its own: LLaDA's fixed schedule (commit_llada_schedule.cpp), threshold and
// factor decoding (commit_adaptive.cpp), LLaDA2.1's token editing over threshold decoding
// (commit_editing.cpp), Dream's policies (commit_dream.cpp). A new policy is one more file and one
// more case in make_commit_strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "core/philox.hpp"
#include "decode/decode_params.hpp"

namespace unmask {

// One step of one sequence, as a strategy sees it.
struct CommitStep {
    std::span<const int32_t> outputs;       // the masked positions of the decoded block, ascending
                                            // (with token editing, its committed ones too)
    std::span<const Candidate> candidates;  // one per output
    std::span<const int32_t> current;       // with token editing: the token at each output (the mask, or committed)
    int64_t step = 0;        // steps taken by the sequence before this one
    int64_t block = 0;       // which block (0 for Dream's, whose block is the whole region)
    int64_t block_step = 0;  // steps taken in this block before this one
};

class CommitStrategy {
public:
    virtual ~CommitStrategy() = default;
    // Whether the strategy decodes the generated region as one block (Dream), whatever
    // block_length says, and ends after its steps rather than when the region is full.
    virtual bool whole_region() const noexcept { return false; }
    // A block begins; its schedule shares `positions` over its steps: the block's masks (LLaDA),
    // or its whole length (block diffusion models, as LLaDA2's generate() does).
    virtual void start_block(int64_t block, int64_t positions) = 0;
    // The indices into step.outputs to commit.
    virtual std::vector<int32_t> choose(const CommitStep& step) const = 0;
};

// The strategy of `params` (validated) for a region of `blocks` blocks; `eos` and `eot` (-1: none)
// are the ids the EOS confidence rule scores; `mask` the mask token (editing tells masked outputs by
// it). `block_diffusion`: a block diffusion model in its published layout, whose threshold decoding
// is LLaDA2's (a step commits at least its schedule's count).
std::unique_ptr<CommitStrategy> make_commit_strategy(const DecodeParams& params, int64_t blocks, int32_t eos,
                                                     int32_t eot, int32_t mask, bool block_diffusion);

// What every strategy ranks by: a candidate's confidence under the policy (its probability, the
// top-1 minus top-2 margin, the negative entropy, or a uniform draw for LLaDA's random order),
// -inf for EOS/EOT predictions under the intended EOS rule.
class Confidence {
public:
    Confidence(const DecodeParams& params, int32_t eos, int32_t eot) : params_(params), eos_(eos), eot_(eot) {}
    double of(const Candidate& c, int32_t position, int64_t step) const;
    // The `count` output indices of the highest confidence (ties: the lower position first); with
    // alg_temp > 0, a Gumbel-top-k draw (sampling without replacement from softmax(conf / alg_temp)).
    std::vector<int32_t> top(const CommitStep& step, int64_t count, double alg_temp = 0) const;

private:
    const DecodeParams& params_;  // the strategy's own copy (RankingStrategy), which outlives this
    int32_t eos_, eot_;
};

// The base of the strategies: their own copy of the parameters, the region's block count, and the
// confidence ranking over them.
class RankingStrategy : public CommitStrategy {
public:
    RankingStrategy(const DecodeParams& params, int64_t blocks, int32_t eos, int32_t eot)
        : params_(params), blocks_(blocks), confidence_(params_, eos, eot) {}
    RankingStrategy(const RankingStrategy&) = delete;  // confidence_ refers to params_
    RankingStrategy& operator=(const RankingStrategy&) = delete;

protected:
    const DecodeParams params_;
    const int64_t blocks_;
    const Confidence confidence_;
};

// The uniform draw of `stream` for `position` at `step`: philox(seed; 0, position, step, stream).
double position_uniform(uint64_t seed, int32_t position, int64_t step, RandomStream stream);

}  // namespace unmask
