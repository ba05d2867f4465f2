#include "model/run_state.hpp"

#include <algorithm>

#include "backend/backend.hpp"

namespace unmask {

uint64_t RunStateSizes::total() const noexcept {
    return token_ids + token_positions + x + normed + q + k + v + attended + projected + gate + up + router_logits +
           chosen_experts + expert_weights + expert_rows + expert_scales + expert_input + expert_output + output_rows +
           gathered + logits;
}

namespace {

// The widest SwiGLU of any layer: dense, routed expert or shared expert.
int64_t widest_mlp(const ModelSpec& spec) noexcept {
    int64_t width = spec.shared_expert_intermediate_size;
    for (int64_t layer = 0; layer < spec.layers; ++layer) {
        const bool moe = spec.is_moe() && spec.moe_layer[size_t(layer)];
        width = std::max(width, moe ? spec.expert_intermediate_size : spec.intermediate_size);
    }
    return width;
}

}  // namespace

int64_t widest_matmul_input(const ModelSpec& spec) noexcept {
    return std::max({spec.hidden_size, spec.attention_heads * spec.head_dim, widest_mlp(spec)});
}

WorkspaceLimits workspace_limits(const ModelSpec& spec, const ForwardLimits& limits) noexcept {
    return {limits.sequence_length, spec.embedding_rows, limits.tokens, widest_matmul_input(spec)};
}

RunStateSizes run_state_sizes(const ModelSpec& spec, const ForwardLimits& limits) {
    const auto t = static_cast<uint64_t>(limits.tokens);
    const auto d = static_cast<uint64_t>(spec.hidden_size);
    const auto q_width = static_cast<uint64_t>(spec.attention_heads * spec.head_dim);
    const auto kv_width = static_cast<uint64_t>(spec.kv_heads * spec.head_dim);
    const int64_t mlp_width = widest_mlp(spec);
    bool any_moe = false;
    for (int64_t layer = 0; layer < spec.layers; ++layer) any_moe = any_moe || (spec.is_moe() && spec.moe_layer[size_t(layer)]);
    const uint64_t f = sizeof(float), i = sizeof(int32_t);
    const uint64_t outputs = 2 * std::min<uint64_t>(t, output_chunk_rows);
    RunStateSizes s;
    s.token_ids = allocation_bytes(t * i);
    s.token_positions = allocation_bytes(t * i);
    s.x = s.normed = s.projected = allocation_bytes(t * d * f);
    s.q = s.attended = allocation_bytes(t * q_width * f);
    s.k = s.v = allocation_bytes(t * kv_width * f);
    s.gate = s.up = allocation_bytes(t * uint64_t(mlp_width) * f);
    if (any_moe) {
        const auto routed = t * static_cast<uint64_t>(spec.experts_per_token);
        s.router_logits = allocation_bytes(t * static_cast<uint64_t>(spec.experts) * f);
        s.chosen_experts = allocation_bytes(routed * i);
        s.expert_weights = allocation_bytes(routed * f);
        // One expert sees each token at most once: at most t rows.
        s.expert_rows = allocation_bytes(t * i);
        s.expert_scales = allocation_bytes(t * f);
        s.expert_input = s.expert_output = allocation_bytes(t * d * f);
    }
    s.output_rows = allocation_bytes(outputs * i);
    s.gathered = allocation_bytes(outputs * d * f);
    s.logits = allocation_bytes(outputs * static_cast<uint64_t>(spec.embedding_rows) * f);
    return s;
}

}  // namespace unmask
