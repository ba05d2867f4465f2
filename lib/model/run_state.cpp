#include "model/run_state.hpp"

#include <algorithm>

#include "backend/backend.hpp"
#include "model/tensor_parallel.hpp"

namespace unmask {

uint64_t RunStateSizes::total() const noexcept {
    return token_ids + token_positions + kept_rows + kept_positions + x + normed + q + k + v + attended + projected +
           gate + up + router_logits + chosen_experts + expert_weights + slot_rows + token_slots + token_scales +
           expert_offsets + expert_input + expert_output + output_rows + gathered + logits + shard_logits +
           candidate_shares;
}

namespace {

// The widest SwiGLU that runs over every token: the dense MLP (if any layer has one) or the
// shared expert.
int64_t widest_dense_mlp(const ModelSpec& spec) noexcept {
    int64_t width = spec.shared_expert_intermediate_size;
    for (int64_t layer = 0; layer < spec.layers; ++layer)
        if (!spec.routed(layer)) width = std::max(width, spec.intermediate_size);
    return width;
}

// The (token, expert) slots of one chunk of routed tokens.
uint64_t moe_slots(const ModelSpec& spec, uint64_t tokens) noexcept {
    return std::min<uint64_t>(tokens, moe_chunk_tokens) * static_cast<uint64_t>(spec.experts_per_token);
}

}  // namespace

CandidateShareLayout candidate_share_layout(int devices) noexcept {
    const auto rows = uint64_t(max_candidate_rows), all = uint64_t(devices) * rows;
    CandidateShareLayout layout;
    layout.all_peaks = rows * sizeof(CandidatePeaks);
    layout.own_sums = layout.all_peaks + all * sizeof(CandidatePeaks);
    layout.all_sums = layout.own_sums + rows * sizeof(CandidateSums);
    layout.bytes = layout.all_sums + all * sizeof(CandidateSums);
    return layout;
}

int64_t largest_matmul_input(const ModelSpec& spec, const ForwardLimits& limits) noexcept {
    // The LM head's rows: the output chunk and its CFG twins (outputs may repeat positions).
    const int64_t rows = std::max(limits.tokens, 2 * std::min(limits.tokens, output_chunk_rows));
    int64_t floats = rows * std::max({spec.hidden_size, spec.attention_heads * spec.head_dim, widest_dense_mlp(spec)});
    if (spec.any_routed_layer())
        floats = std::max(floats, static_cast<int64_t>(moe_slots(spec, uint64_t(limits.tokens))) *
                                      std::max(spec.hidden_size, spec.expert_intermediate_size));
    return floats;
}

WorkspaceLimits workspace_limits(const ModelSpec& spec, const ForwardLimits& limits) noexcept {
    int64_t routed_layers = 0;
    for (int64_t layer = 0; layer < spec.layers; ++layer) routed_layers += spec.routed(layer);
    WorkspaceLimits w;
    w.sequence_length = limits.sequence_length;
    w.vocab = spec.embedding_rows;
    w.tokens = limits.tokens;
    w.matmul_input = largest_matmul_input(spec, limits);
    w.experts = routed_layers > 0 ? spec.experts : 0;
    w.expert_weight_lists = 3 * routed_layers;  // Forward::moe's gate, up and down of each
    w.attention_heads = spec.attention_heads;
    w.head_dim = spec.head_dim;
    return w;
}

RunStateSizes run_state_sizes(const ModelSpec& spec, const ForwardLimits& limits, int devices) {
    const auto t = static_cast<uint64_t>(limits.tokens);
    const auto d = static_cast<uint64_t>(spec.hidden_size);
    const auto q_width = static_cast<uint64_t>(spec.attention_heads * spec.head_dim);
    const auto kv_width = static_cast<uint64_t>(spec.kv_heads * spec.head_dim);
    const uint64_t f = sizeof(float), i = sizeof(int32_t);
    const uint64_t outputs = 2 * std::min<uint64_t>(t, output_chunk_rows);
    RunStateSizes s;
    s.token_ids = allocation_bytes(t * i);
    s.token_positions = allocation_bytes(t * i);
    s.kept_rows = s.kept_positions = allocation_bytes(t * i);
    s.x = s.normed = s.projected = allocation_bytes(t * d * f);
    s.q = s.attended = allocation_bytes(t * q_width * f);
    s.k = s.v = allocation_bytes(t * kv_width * f);
    uint64_t swiglu_floats = t * static_cast<uint64_t>(widest_dense_mlp(spec));
    if (spec.any_routed_layer()) {
        const auto k = static_cast<uint64_t>(spec.experts_per_token);
        s.router_logits = allocation_bytes(t * static_cast<uint64_t>(spec.experts) * f);
        s.chosen_experts = allocation_bytes(t * k * i);
        s.expert_weights = allocation_bytes(t * k * f);
        // A chunk's (token, expert) slots, grouped by expert; the shared expert's output (t rows)
        // goes to expert_output too.
        const uint64_t slots = moe_slots(spec, t);
        s.slot_rows = s.token_slots = allocation_bytes(slots * i);
        s.token_scales = allocation_bytes(slots * f);
        s.expert_offsets = allocation_bytes(static_cast<uint64_t>(spec.experts + 1) * i);
        s.expert_input = allocation_bytes(slots * d * f);
        s.expert_output = allocation_bytes(std::max(slots, t) * d * f);
        swiglu_floats = std::max(swiglu_floats, slots * static_cast<uint64_t>(spec.expert_intermediate_size));
    }
    s.gate = s.up = allocation_bytes(swiglu_floats * f);
    s.output_rows = allocation_bytes(outputs * i);
    s.gathered = allocation_bytes(outputs * d * f);
    // With several devices the last output row's gathered slices run past its logits by the slack.
    const uint64_t vocab = static_cast<uint64_t>(spec.embedding_rows);
    s.logits = allocation_bytes((outputs * vocab + uint64_t(gathered_vocabulary_slack(spec.embedding_rows, devices))) * f);
    if (devices > 1) {
        s.shard_logits = allocation_bytes(outputs * uint64_t(vocabulary_slice(spec.embedding_rows, devices)) * f);
        s.candidate_shares = allocation_bytes(candidate_share_layout(devices).bytes);
    }
    return s;
}

}  // namespace unmask
