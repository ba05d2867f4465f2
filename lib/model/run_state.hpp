// The run state of the forward pass: every activation buffer, sized once for the largest forward
// a generation will run and allocated up front (as llama2.c's RunState). The planner sums the same
// sizes, so what it predicts is what the forward allocates.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"
#include "model/model_spec.hpp"

namespace unmask {

// The largest forward: `tokens` rows in one batch (every sequence's canvas, CFG twins included),
// no sequence longer than `sequence_length`.
struct ForwardLimits {
    int64_t tokens = 0;
    int64_t sequence_length = 0;
};

// Output rows go through the final norm, the LM head and the candidates step this many at a time
// (twice as many rows with CFG), so the [rows, vocab] logits never exist whole: as many as one
// candidates call takes.
inline constexpr int64_t output_chunk_rows = max_candidate_rows;

// Routed experts take a forward's tokens this many at a time: the buffers of their (token, expert)
// slots hold experts_per_token x this many rows at most, while each expert still sees enough rows
// per matmul to use a GPU's tensor cores well.
inline constexpr int64_t moe_chunk_tokens = 2048;

// Bytes of each buffer (allocation granules included); zero for buffers the model does not use.
struct RunStateSizes {
    uint64_t token_ids = 0, token_positions = 0;
    uint64_t kept_rows = 0, kept_positions = 0;  // the last layer's kept rows (model/forward_rank.hpp)
    uint64_t x = 0, normed = 0, q = 0, k = 0, v = 0, attended = 0, projected = 0;
    uint64_t gate = 0, up = 0;  // SwiGLU: dense MLP, shared expert or a chunk's routed experts, the widest
    uint64_t router_logits = 0, chosen_experts = 0, expert_weights = 0;
    uint64_t slot_rows = 0, token_slots = 0, token_scales = 0, expert_offsets = 0, expert_input = 0, expert_output = 0;
    uint64_t output_rows = 0, gathered = 0, logits = 0;
    uint64_t shard_logits = 0;  // tensor parallelism: this device's slice of the vocabulary
    // Tensor parallelism: the candidates step's peaks and sums of an output chunk, this device's and
    // every device's (kernels/candidate_shares.hpp).
    uint64_t candidate_shares = 0;

    uint64_t total() const noexcept;
};

// `spec` is the device's (model/tensor_parallel.hpp's shard_spec) when `devices` share the forward.
RunStateSizes run_state_sizes(const ModelSpec& spec, const ForwardLimits& limits, int devices = 1);

// Where RunStateSizes::candidate_shares keeps, for `devices`, the peaks and the sums of
// max_candidate_rows rows: this device's peaks at 0, then every device's, this device's sums and
// every device's (byte offsets); `bytes` in all.
struct CandidateShareLayout {
    uint64_t all_peaks = 0, own_sums = 0, all_sums = 0, bytes = 0;
};
CandidateShareLayout candidate_share_layout(int devices) noexcept;

// The most floats one matmul of a forward up to `limits` reads: all tokens (or the LM head's
// output chunk with its CFG twins) at the widest input (hidden state, attention output, dense or
// shared-expert SwiGLU), or one chunk's routed (token, expert) slots.
int64_t largest_matmul_input(const ModelSpec& spec, const ForwardLimits& limits) noexcept;

// What the backend's workspace must serve for forwards up to `limits`.
WorkspaceLimits workspace_limits(const ModelSpec& spec, const ForwardLimits& limits) noexcept;

}  // namespace unmask
