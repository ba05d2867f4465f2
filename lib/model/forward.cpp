#include "model/forward.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/error.hpp"
#include "attention_mask.hpp"

namespace unmask {

namespace {
std::atomic<int64_t> next_forward_id{0};
}  // namespace

Forward::Forward(const Model& model, Backend& backend, const ForwardLimits& limits)
    : spec_(model.spec()), backend_(backend), limits_(limits), id_(next_forward_id.fetch_add(1)) {
    if (!model.has_data()) fail(Status::invalid_argument, "the model was loaded for metadata only and cannot run");
    if (limits.tokens < 1 || limits.tokens > INT32_MAX || limits.sequence_length < 1 ||
        limits.sequence_length > spec_.max_sequence_length)
        fail(Status::invalid_argument, "forward limits of {} tokens and sequences of {} are outside 1..{}",
             limits.tokens, limits.sequence_length, spec_.max_sequence_length);
    layers_.resize(static_cast<size_t>(spec_.layers));
    for (auto& layer : layers_) {
        layer = LayerWeights{};
        layer.expert_gate.assign(static_cast<size_t>(spec_.experts), nullptr);
        layer.expert_up.assign(static_cast<size_t>(spec_.experts), nullptr);
        layer.expert_down.assign(static_cast<size_t>(spec_.experts), nullptr);
    }
    for (const Weight& w : model.weights()) {
        if (w.layer < 0) {
            if (w.role == Role::embedding) embedding_ = &w;
            if (w.role == Role::final_norm) final_norm_ = &w;
            if (w.role == Role::lm_head) lm_head_ = &w;
            continue;
        }
        LayerWeights& l = layers_.at(static_cast<size_t>(w.layer));
        const auto e = static_cast<size_t>(std::max(0, w.expert));
        switch (w.role) {
            case Role::attention_norm: l.attention_norm = &w; break;
            case Role::mlp_norm: l.mlp_norm = &w; break;
            case Role::q_proj: l.q = &w; break;
            case Role::k_proj: l.k = &w; break;
            case Role::v_proj: l.v = &w; break;
            case Role::o_proj: l.o = &w; break;
            case Role::q_bias: l.q_bias = &w; break;
            case Role::k_bias: l.k_bias = &w; break;
            case Role::v_bias: l.v_bias = &w; break;
            case Role::q_norm: l.q_norm = &w; break;
            case Role::k_norm: l.k_norm = &w; break;
            case Role::mlp_gate: l.gate = &w; break;
            case Role::mlp_up: l.up = &w; break;
            case Role::mlp_down: l.down = &w; break;
            case Role::router: l.router = &w; break;
            case Role::router_bias: l.router_bias = &w; break;
            case Role::expert_gate: l.expert_gate.at(e) = &w; break;
            case Role::expert_up: l.expert_up.at(e) = &w; break;
            case Role::expert_down: l.expert_down.at(e) = &w; break;
            case Role::shared_gate: l.shared_gate = &w; break;
            case Role::shared_up: l.shared_up = &w; break;
            case Role::shared_down: l.shared_down = &w; break;
            default: break;
        }
    }
    if (lm_head_ == nullptr) lm_head_ = embedding_;  // tied embeddings
    if (embedding_ == nullptr || final_norm_ == nullptr) fail(Status::internal, "model binding lacks embedding or final norm");

    const RunStateSizes sizes = run_state_sizes(spec_, limits);
    auto allocate = [&](uint64_t bytes) { return bytes == 0 ? DeviceBuffer() : backend_.allocate(bytes); };
    state_ = RunState{allocate(sizes.token_ids), allocate(sizes.token_positions), allocate(sizes.x),
                      allocate(sizes.normed), allocate(sizes.q), allocate(sizes.k), allocate(sizes.v),
                      allocate(sizes.attended), allocate(sizes.projected), allocate(sizes.gate), allocate(sizes.up),
                      allocate(sizes.router_logits), allocate(sizes.chosen_experts), allocate(sizes.expert_weights),
                      allocate(sizes.slot_rows), allocate(sizes.token_slots), allocate(sizes.token_scales),
                      allocate(sizes.expert_offsets), allocate(sizes.expert_input),
                      allocate(sizes.expert_output), allocate(sizes.output_rows), allocate(sizes.gathered),
                      allocate(sizes.logits)};
    backend_.reserve_workspace(workspace_limits(spec_, limits));
}

void Forward::mlp(const Weight& gate, const Weight& up, const Weight& down, const float* x, int64_t rows, float* out) {
    const int64_t width = gate.shape[0];
    float* g = state_.gate.floats();
    const MatmulOutput gate_up[] = {{&gate, nullptr, g}, {&up, nullptr, state_.up.floats()}};
    backend_.matmuls(x, rows, gate_up);
    backend_.swiglu(g, state_.up.floats(), rows * width);
    backend_.matmul(g, rows, down, nullptr, out);
}

void Forward::moe(const LayerWeights& layer, const float* x, int64_t rows, float* residual) {
    const int64_t d = spec_.hidden_size, k = spec_.experts_per_token, experts = spec_.experts;
    const RunState& s = state_;
    backend_.matmul(x, rows, *layer.router, nullptr, s.router_logits.floats());
    const RouterParams params{experts,
                              k,
                              spec_.router_score == RouterScore::sigmoid,
                              spec_.norm_topk_prob,
                              spec_.routed_scaling_factor,
                              layer.router_bias,
                              spec_.router_groups,
                              spec_.router_top_groups};
    backend_.route(s.router_logits.floats(), rows, params, s.chosen_experts.ints(), s.expert_weights.floats());

    // A chunk of tokens at a time, their (token, expert) pairs grouped by expert: one gather, every
    // expert's SwiGLU over its rows, then each token's weighted sum of its experts' outputs.
    int32_t* offsets = s.expert_offsets.ints();  // on the device
    for (int64_t begin = 0; begin < rows; begin += moe_chunk_tokens) {
        const int64_t count = std::min(moe_chunk_tokens, rows - begin), slots = count * k;
        backend_.group_by_expert(s.chosen_experts.ints() + begin * k, s.expert_weights.floats() + begin * k, count, k,
                                 experts, s.slot_rows.ints(), s.token_slots.ints(), s.token_scales.floats(), offsets);
        backend_.gather_rows(x + begin * d, d, s.slot_rows.ints(), slots, s.expert_input.floats());
        const GroupedMatmulOutput gate_up[] = {{layer.expert_gate, s.gate.floats()}, {layer.expert_up, s.up.floats()}};
        backend_.grouped_matmuls(s.expert_input.floats(), slots, offsets, gate_up);
        backend_.swiglu(s.gate.floats(), s.up.floats(), slots * spec_.expert_intermediate_size);
        const GroupedMatmulOutput down[] = {{layer.expert_down, s.expert_output.floats()}};
        backend_.grouped_matmuls(s.gate.floats(), slots, offsets, down);
        backend_.unpermute_add(residual + begin * d, count, d, k, s.token_slots.ints(), s.token_scales.floats(),
                               s.expert_output.floats());
    }
    if (layer.shared_gate != nullptr) {
        float* shared = s.expert_output.floats();
        mlp(*layer.shared_gate, *layer.shared_up, *layer.shared_down, x, rows, shared);
        backend_.add(residual, shared, rows * d);
    }
}

void Forward::hidden_states(std::span<const Run> runs, int64_t tokens) {
    const int64_t d = spec_.hidden_size, heads = spec_.attention_heads, kv_heads = spec_.kv_heads,
                  hd = spec_.head_dim;
    const RunState& s = state_;
    const DeviceBuffer &x = s.x, &normed = s.normed, &q = s.q, &k = s.k, &v = s.v, &attended = s.attended,
                       &projected = s.projected;
    const RopeSpec rope{spec_.rope_theta, static_cast<int64_t>(std::lround(double(hd) * spec_.partial_rotary_factor)) / 2 * 2,
                        spec_.rope_style == RopeStyle::interleaved};
    // bf16 models round their matmuls' activations to bf16: their attention products may too.
    const bool bf16_model = layers_.front().q->dtype == DType::bf16;
    const AttentionParams attention{heads, kv_heads, hd, spec_.diffusion_block_size, bf16_model};
    backend_.embedding(*embedding_, s.token_ids.ints(), tokens, x.floats());
    std::vector<SequenceRows> sequences(runs.size());
    bool normed_ready = false;  // `normed` holds this layer's attention norm of x (fused with the last add)
    for (const LayerWeights& layer : layers_) {
        if (!normed_ready)
            backend_.rmsnorm(x.floats(), tokens, d, d, *layer.attention_norm, spec_.rms_norm_eps, normed.floats(), d);
        const MatmulOutput qkv[] = {{layer.q, layer.q_bias, q.floats()}, {layer.k, layer.k_bias, k.floats()},
                                    {layer.v, layer.v_bias, v.floats()}};
        backend_.matmuls(normed.floats(), tokens, qkv);
        if (layer.q_norm != nullptr) {  // per-head RMSNorm: rows of head_dim
            backend_.rmsnorm(q.floats(), tokens * heads, hd, hd, *layer.q_norm, spec_.rms_norm_eps, q.floats(), hd);
            backend_.rmsnorm(k.floats(), tokens * kv_heads, hd, hd, *layer.k_norm, spec_.rms_norm_eps, k.floats(), hd);
        }
        backend_.rope(q.floats(), tokens, heads, hd, s.token_positions.ints(), rope);
        backend_.rope(k.floats(), tokens, kv_heads, hd, s.token_positions.ints(), rope);
        // Runs with a cache write their fed keys and values into it and attend to all of it.
        const auto layer_index = static_cast<int64_t>(&layer - layers_.data());
        for (size_t r = 0; r < runs.size(); ++r) {
            const Run& run = runs[r];
            SequenceRows& view = sequences[r];
            view = {run.first_row, run.rows, nullptr, nullptr, 0, run.feed_begin, run.block_origin};
            if (run.cache == nullptr) continue;
            const KVCache& cache = *run.cache;
            const int64_t kv = kv_heads * hd;
            view.cached_keys = cache.keys(layer_index);
            view.cached_values = cache.values(layer_index);
            view.cached_type = element_type(cache.element());
            view.key_count = run.keys;
            backend_.store(k.floats() + run.first_row * kv, run.rows * kv, view.cached_type,
                           cache.row(cache.keys(layer_index), run.feed_begin));
            backend_.store(v.floats() + run.first_row * kv, run.rows * kv, view.cached_type,
                           cache.row(cache.values(layer_index), run.feed_begin));
        }
        backend_.attention(q.floats(), k.floats(), v.floats(), sequences, attention, attended.floats());
        backend_.matmul(attended.floats(), tokens, *layer.o, nullptr, projected.floats());
        backend_.add_rmsnorm(x.floats(), projected.floats(), tokens, d, *layer.mlp_norm, spec_.rms_norm_eps,
                             normed.floats());
        normed_ready = false;
        if (layer.router != nullptr) {
            moe(layer, normed.floats(), tokens, x.floats());  // adds the experts into x itself
        } else {
            mlp(*layer.gate, *layer.up, *layer.down, normed.floats(), tokens, projected.floats());
            if (&layer == &layers_.back()) {
                backend_.add(x.floats(), projected.floats(), tokens * d);  // the final norm takes the output rows only
            } else {
                backend_.add_rmsnorm(x.floats(), projected.floats(), tokens, d, *(&layer + 1)->attention_norm,
                                     spec_.rms_norm_eps, normed.floats());
                normed_ready = true;
            }
        }
    }
}

ForwardOutput Forward::run(std::span<const ForwardSequence> batch, bool want_logits) {
    if (batch.empty()) fail(Status::invalid_argument, "the batch is empty");
    const int64_t d = spec_.hidden_size, kv_heads = spec_.kv_heads, hd = spec_.head_dim, vocab = spec_.embedding_rows;

    // Pack the batch: the fed token ids and their positions, each run's rows (a sequence's canvas
    // or its CFG twin) and cache, and the rows that need outputs.
    const int64_t block_size = spec_.diffusion_block_size;
    std::vector<Run> runs;
    std::vector<int32_t> ids, positions, output_rows, guidance_rows;  // guidance_rows: -1 without CFG
    std::vector<double> guidance_scales;
    std::vector<uint32_t> output_positions;
    std::vector<const CandidateParams*> output_params;
    auto append_run = [&](std::span<const int32_t> tokens, KVCache* cache, int64_t feed_begin, int64_t feed_end,
                          int64_t block_origin, size_t s) {
        const auto length = static_cast<int64_t>(tokens.size());
        // Bidirectional attention reads every position; block-causal, up to the last fed block's end.
        const int64_t keys =
            block_size > 0 ? std::min(length, kernels::block_end(feed_end - 1, block_size, block_origin)) : length;
        if (cache != nullptr) {
            if (cache->length() < length || cache->row_elements() != kv_heads * hd)
                fail(Status::invalid_argument, "sequence {}: its K/V cache holds {} positions of {} elements, not {} of {}",
                     s, cache->length(), cache->row_elements(), length, kv_heads * hd);
            if (feed_begin > cache->written() || std::max(feed_end, cache->written()) < keys)
                fail(Status::invalid_argument, "sequence {} feeds positions {}..{} and attends to 0..{}, but its K/V "
                     "cache holds only 0..{}", s, feed_begin, feed_end, keys, cache->written());
        }
        const auto first_row = static_cast<int64_t>(ids.size());
        runs.push_back({first_row, feed_end - feed_begin, feed_begin, keys, block_origin, cache});
        for (int64_t p = 0; p < length; ++p) {
            const int32_t token = tokens[size_t(p)];
            if (token < 0 || token >= vocab)
                fail(Status::invalid_argument, "token id {} at position {} of sequence {} is outside the vocabulary of {}",
                     token, p, s, vocab);
        }
        for (int64_t p = feed_begin; p < feed_end; ++p) {
            ids.push_back(tokens[size_t(p)]);
            positions.push_back(static_cast<int32_t>(p));
        }
        return first_row;
    };
    for (size_t s = 0; s < batch.size(); ++s) {
        const ForwardSequence& seq = batch[s];
        const auto length = static_cast<int64_t>(seq.tokens.size());
        if (length == 0) fail(Status::invalid_argument, "sequence {} of the batch is empty", s);
        if (length > limits_.sequence_length)
            fail(Status::too_long, "sequence {} has {} tokens; this forward was sized for {}", s, length,
                 limits_.sequence_length);
        if (!want_logits && seq.sampling == nullptr)
            fail(Status::invalid_argument, "sequence {} asks for candidates without sampling parameters", s);
        const bool guided = seq.cfg_scale > 0;
        if (guided && seq.unconditional_tokens.size() != seq.tokens.size())
            fail(Status::invalid_argument, "sequence {}: the unconditional canvas has {} tokens, the canvas {}", s,
                 seq.unconditional_tokens.size(), seq.tokens.size());
        const int64_t feed_begin = seq.feed_begin, feed_end = seq.feed_end < 0 ? length : seq.feed_end;
        if (feed_begin < 0 || feed_begin >= feed_end || feed_end > length)
            fail(Status::invalid_argument, "sequence {}: the fed positions {}..{} are not a range within its {}", s,
                 feed_begin, feed_end, length);
        if (seq.block_origin < 0 || seq.block_origin > length)
            fail(Status::invalid_argument, "sequence {}: block_origin {} is outside its {} positions", s,
                 seq.block_origin, length);
        if ((seq.cache == nullptr && (feed_begin > 0 || feed_end < length)) ||
            (guided && (seq.cache == nullptr) != (seq.unconditional_cache == nullptr)))
            fail(Status::invalid_argument, "sequence {} feeds part of its canvas without a K/V cache for {}", s,
                 seq.cache == nullptr ? "it" : "its unconditional twin");
        const int64_t first_row = append_run(seq.tokens, seq.cache, feed_begin, feed_end, seq.block_origin, s);
        const int64_t unconditional_row =
            guided ? append_run(seq.unconditional_tokens, seq.unconditional_cache, feed_begin, feed_end, seq.block_origin, s)
                   : -1;
        auto add_output = [&](int64_t p) {
            if (p < 0 || p >= length)
                fail(Status::invalid_argument, "output position {} is outside sequence {} of length {}", p, s, length);
            // Dream predicts position p from the hidden state of p - 1 (position 0 keeps its own).
            const int64_t source = spec_.logits_shift && p > 0 ? p - 1 : p;
            if (source < feed_begin || source >= feed_end)
                fail(Status::invalid_argument, "output position {} of sequence {} needs position {}, which is not fed "
                     "({}..{})", p, s, source, feed_begin, feed_end);
            output_rows.push_back(static_cast<int32_t>(first_row + source - feed_begin));
            guidance_rows.push_back(guided ? static_cast<int32_t>(unconditional_row + source - feed_begin) : -1);
            guidance_scales.push_back(seq.cfg_scale);
            output_positions.push_back(static_cast<uint32_t>(p));
            output_params.push_back(seq.sampling);
        };
        if (seq.output_positions.empty())
            for (int64_t p = 0; p < length; ++p) add_output(p);
        else
            for (int32_t p : seq.output_positions) add_output(p);
    }
    const auto tokens = static_cast<int64_t>(ids.size());
    if (tokens > limits_.tokens)
        fail(Status::too_long, "the batch has {} tokens; this forward was sized for {}", tokens, limits_.tokens);

    backend_.copy_to_device(state_.token_ids, ids.data(), ids.size() * sizeof(int32_t));
    backend_.copy_to_device(state_.token_positions, positions.data(), positions.size() * sizeof(int32_t));

    const DeviceBuffer& x = state_.x;
    // The hidden states depend on nothing but the batch's shape and device memory (the routing of
    // mixture-of-experts layers too): a backend may record their work once and replay it for every
    // forward of that shape (the denoising steps of a block with a cache), or run it as it comes
    // where it reads something on the host (CUDA: a MoE step of many slots per fp32 expert).
    std::vector<int64_t> shape = {id_, tokens};
    for (const Run& run : runs) {
        const auto cache = run.cache != nullptr ? reinterpret_cast<intptr_t>(run.cache->keys(0)) : 0;
        shape.insert(shape.end(), {run.first_row, run.rows, run.feed_begin, run.keys, run.block_origin, cache,
                                   run.cache != nullptr ? run.cache->length() : 0,
                                   run.cache != nullptr ? static_cast<int64_t>(run.cache->element()) : -1});
    }
    backend_.run_replayable(shape, [&] { hidden_states(runs, tokens); });

    for (const Run& run : runs)
        if (run.cache != nullptr) run.cache->extend_written(run.feed_begin + run.rows);

    // Final norm, LM head and candidates, a chunk of output rows at a time.
    ForwardOutput output;
    const auto outputs = static_cast<int64_t>(output_rows.size());
    if (want_logits) output.logits.resize(size_t(outputs * vocab));
    else output.candidates.resize(size_t(outputs));
    // The output buffers hold 2 x min(limits.tokens, 128) rows (outputs may repeat positions).
    const int64_t chunk = std::min({outputs, output_chunk_rows, limits_.tokens});
    DeviceBuffer& rows = state_.output_rows;
    const DeviceBuffer &gathered = state_.gathered, &logits = state_.logits;
    for (int64_t begin = 0; begin < outputs; begin += chunk) {
        const int64_t count = std::min(chunk, outputs - begin);
        // Rows [0, count) are the outputs; with guidance, rows [count, 2 count) their unconditional twins.
        std::vector<int32_t> chunk_rows(output_rows.begin() + begin, output_rows.begin() + begin + count);
        const bool guided = std::any_of(guidance_rows.begin() + begin, guidance_rows.begin() + begin + count,
                                        [](int32_t r) { return r >= 0; });
        if (guided)
            for (int64_t i = begin; i < begin + count; ++i)
                chunk_rows.push_back(guidance_rows[size_t(i)] >= 0 ? guidance_rows[size_t(i)] : output_rows[size_t(i)]);
        const auto total = static_cast<int64_t>(chunk_rows.size());
        backend_.copy_to_device(rows, chunk_rows.data(), chunk_rows.size() * sizeof(int32_t));
        backend_.gather_rows(x.floats(), d, rows.ints(), total, gathered.floats());
        backend_.rmsnorm(gathered.floats(), total, d, d, *final_norm_, spec_.rms_norm_eps, gathered.floats(), d);
        backend_.matmul(gathered.floats(), total, *lm_head_, nullptr, logits.floats());
        if (guided)
            for (int64_t i = 0; i < count; ++i)
                if (guidance_rows[size_t(begin + i)] >= 0)
                    backend_.combine_guidance(logits.floats() + i * vocab, logits.floats() + (count + i) * vocab,
                                              guidance_scales[size_t(begin + i)], vocab);
        if (want_logits) {
            backend_.copy_to_host(output.logits.data() + begin * vocab, logits, size_t(count * vocab) * sizeof(float));
        } else {
            backend_.candidates(logits.floats(), count, vocab, output_positions.data() + begin,
                                std::span(output_params).subspan(size_t(begin), size_t(count)),
                                output.candidates.data() + begin);
        }
    }
    return output;
}

}  // namespace unmask
