// The one forward pass, for every architecture: ModelSpec says what to do, the backend does it.
// A batch holds sequences of different lengths; each asks for outputs at some of its positions
// (the masked ones, during decoding) as candidates (decoding) or full logits (tests). A sequence
// with a K/V cache feeds only part of its canvas; the other positions' keys and values come from
// the cache, and the fed positions' are written to it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "model/kv_cache.hpp"
#include "model/model.hpp"
#include "model/run_state.hpp"

namespace unmask {

struct ForwardSequence {
    std::span<const int32_t> tokens;
    std::span<const int32_t> output_positions;  // empty: every position
    const CandidateParams* sampling = nullptr;  // required for candidates
    // Classifier-free guidance: the unconditional canvas (same length) runs in the same batch and
    // the logits become uncond + (cfg_scale + 1) * (cond - uncond) before candidates.
    std::span<const int32_t> unconditional_tokens;
    double cfg_scale = 0.0;
    // Without a cache the whole canvas is fed. With one (and the twin's with CFG), positions
    // [feed_begin, feed_end) are: outputs must come from them, and every other position the fed
    // ones attend to must have been written to the cache by an earlier forward.
    KVCache* cache = nullptr;
    KVCache* unconditional_cache = nullptr;
    int64_t feed_begin = 0;
    int64_t feed_end = -1;  // -1: the end of the canvas
    // Block diffusion models (ModelSpec::diffusion_block_size): where the first block starts; the
    // positions before it form one block. Decoding uses 0, the published layout.
    int64_t block_origin = 0;
};

struct ForwardOutput {
    // One entry per requested position, sequences in order.
    std::vector<Candidate> candidates;
    std::vector<float> logits;  // [positions, embedding_rows] when requested
};

class Forward {
public:
    // Allocates the run state for forwards up to `limits` (and the backend's workspace) on the
    // backend, charged to its ledger: OUT_OF_BUDGET when it does not fit.
    Forward(const Model& model, Backend& backend, const ForwardLimits& limits);

    // Throws INVALID_ARGUMENT for token ids or positions out of range, an empty batch or sequence,
    // a feed range the sequence's cache cannot serve; TOO_LONG for a batch beyond the limits.
    ForwardOutput run(std::span<const ForwardSequence> batch, bool want_logits);

    const ForwardLimits& limits() const noexcept { return limits_; }

private:
    struct LayerWeights {
        const Weight *attention_norm, *mlp_norm, *q, *k, *v, *o, *q_bias, *k_bias, *v_bias, *q_norm, *k_norm;
        const Weight *gate, *up, *down;                       // dense MLP (null in MoE layers)
        const Weight *router, *router_bias;                   // MoE
        std::vector<const Weight*> expert_gate, expert_up, expert_down;
        const Weight *shared_gate, *shared_up, *shared_down;  // optional shared expert
    };

    struct RunState {
        DeviceBuffer token_ids, token_positions, x, normed, q, k, v, attended, projected, gate, up;
        DeviceBuffer router_logits, chosen_experts, expert_weights, slot_rows, token_slots, token_scales,
            expert_offsets, expert_input, expert_output;
        DeviceBuffer output_rows, gathered, logits;
    };

    // One canvas in the packed batch (a sequence's, or its CFG twin's): its rows, the position of
    // the first, the keys they attend to, where the first block starts, and its cache (if any).
    struct Run {
        int64_t first_row, rows, feed_begin, keys, block_origin;
        KVCache* cache;
    };

    // The embedding of the uploaded token ids and the layer stack: x holds the last layer's output
    // for the `tokens` rows of `runs`.
    void hidden_states(std::span<const Run> runs, int64_t tokens);
    void mlp(const Weight& gate, const Weight& up, const Weight& down, const float* x, int64_t rows, float* out);
    void moe(const LayerWeights& layer, const float* x, int64_t rows, float* residual);

    const ModelSpec& spec_;
    Backend& backend_;
    ForwardLimits limits_;
    RunState state_;
    const Weight* embedding_ = nullptr;
    const Weight* final_norm_ = nullptr;
    const Weight* lm_head_ = nullptr;
    std::vector<LayerWeights> layers_;
    int64_t id_;  // distinct among the process's forwards: part of every replay key
};

}  // namespace unmask
