// LLaDA2.1's token editing (SGLang's JointThreshold, python/sglang/srt/dllm/algorithm/
// joint_threshold.py; the LLaDA2.1 report's M2T + T2T, section 2): a step commits masks by the
// threshold rule (at least one) and also replaces every committed token of the block (never a
// fixed one) whose prediction differs and has probability above the editing threshold. The
// sequence runs the block's steps of edits alone after its last mask (sequence.cpp).
#include "decode/commit_strategy.hpp"

namespace unmask {
namespace {

class EditingCommit final : public CommitStrategy {
public:
    EditingCommit(std::unique_ptr<CommitStrategy> masks, double edit_threshold, int32_t mask)
        : masks_(std::move(masks)), edit_threshold_(edit_threshold), mask_(mask) {}

    void start_block(int64_t block, int64_t positions) override { masks_->start_block(block, positions); }

    std::vector<int32_t> choose(const CommitStep& step) const override {
        // Mask to token: the masked outputs, as threshold decoding commits them.
        std::vector<int32_t> masked, masked_outputs, commits;
        std::vector<Candidate> masked_candidates;
        for (size_t i = 0; i < step.outputs.size(); ++i) {
            if (step.current[i] != mask_) continue;
            masked.push_back(static_cast<int32_t>(i));
            masked_outputs.push_back(step.outputs[i]);
            masked_candidates.push_back(step.candidates[i]);
        }
        if (!masked.empty()) {
            CommitStep sub = step;
            sub.outputs = masked_outputs;
            sub.candidates = masked_candidates;
            for (int32_t j : masks_->choose(sub)) commits.push_back(masked[size_t(j)]);
        }
        // Token to token: committed outputs whose prediction differs, above the editing threshold.
        for (size_t i = 0; i < step.outputs.size(); ++i)
            if (step.current[i] != mask_ && step.candidates[i].token != step.current[i] &&
                step.candidates[i].probability > edit_threshold_)
                commits.push_back(static_cast<int32_t>(i));
        return commits;
    }

private:
    std::unique_ptr<CommitStrategy> masks_;
    double edit_threshold_;
    int32_t mask_;
};

}  // namespace

std::unique_ptr<CommitStrategy> make_editing_commit(std::unique_ptr<CommitStrategy> masks, double edit_threshold,
                                                    int32_t mask) {
    return std::make_unique<EditingCommit>(std::move(masks), edit_threshold, mask);
}

}  // namespace unmask
