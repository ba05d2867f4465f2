#include "model/forward_rank.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

#include "core/error.hpp"

namespace unmask {

ForwardRank::ForwardRank(const Model& model, int rank, int devices, Backend& backend, Communicator* communicator,
                         const ForwardLimits& limits, int64_t id)
    : spec_(shard_spec(model.spec(), devices)),
      rank_(rank),
      backend_(backend),
      communicator_(communicator),
      limits_(limits),
      shard_(devices > 1 ? shard_weights(model, rank, devices, backend) : nullptr),
      id_(id) {
    layers_.resize(static_cast<size_t>(spec_.layers));
    for (auto& layer : layers_) {
        layer = LayerWeights{};
        layer.expert_gate.assign(static_cast<size_t>(spec_.experts), nullptr);
        layer.expert_up.assign(static_cast<size_t>(spec_.experts), nullptr);
        layer.expert_down.assign(static_cast<size_t>(spec_.experts), nullptr);
    }
    for (const Weight& w : shard_ != nullptr ? shard_->weights() : std::span<const Weight>(model.weights())) {
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

    const RunStateSizes sizes = run_state_sizes(spec_, limits, devices);
    auto allocate = [&](uint64_t bytes) { return bytes == 0 ? DeviceBuffer() : backend_.allocate(bytes); };
    state_ = RunState{allocate(sizes.token_ids), allocate(sizes.token_positions), allocate(sizes.kept_rows),
                      allocate(sizes.kept_positions), allocate(sizes.x),
                      allocate(sizes.normed), allocate(sizes.q), allocate(sizes.k), allocate(sizes.v),
                      allocate(sizes.attended), allocate(sizes.projected), allocate(sizes.gate), allocate(sizes.up),
                      allocate(sizes.router_logits), allocate(sizes.chosen_experts), allocate(sizes.expert_weights),
                      allocate(sizes.slot_rows), allocate(sizes.token_slots), allocate(sizes.token_scales),
                      allocate(sizes.expert_offsets), allocate(sizes.expert_input),
                      allocate(sizes.expert_output), allocate(sizes.output_rows), allocate(sizes.gathered),
                      allocate(sizes.logits), allocate(sizes.shard_logits), allocate(sizes.candidate_shares)};
    backend_.reserve_workspace(workspace_limits(spec_, limits));
}

void ForwardRank::sum_over_devices(float* partial, int64_t n) {
    if (communicator_ != nullptr) communicator_->all_reduce_sum(partial, size_t(n));
}

void ForwardRank::mlp(const Weight& gate, const Weight& up, const Weight& down, const float* x, int64_t rows, float* out) {
    const int64_t width = gate.shape[0];
    float* g = state_.gate.floats();
    const MatmulOutput gate_up[] = {{&gate, nullptr, g}, {&up, nullptr, state_.up.floats()}};
    backend_.matmuls(x, rows, gate_up);
    backend_.swiglu(g, state_.up.floats(), rows * width);
    backend_.matmul(g, rows, down, nullptr, out);
}

void ForwardRank::moe(const LayerWeights& layer, const float* x, int64_t rows, float* residual) {
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
        // With several devices, the other devices' experts' rows stay zero: they add nothing here.
        if (communicator_ != nullptr) backend_.zero(s.expert_output.floats(), slots * d);
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

void ForwardRank::hidden_states(const PackedBatch& batch) {
    const std::span<const PackedBatch::Run> runs = batch.runs;
    const auto tokens = static_cast<int64_t>(batch.ids.size()), kept = static_cast<int64_t>(batch.kept_rows.size());
    const int64_t d = spec_.hidden_size, heads = spec_.attention_heads, kv_heads = spec_.kv_heads,
                  hd = spec_.head_dim, kv = kv_heads * hd;
    const RunState& s = state_;
    const DeviceBuffer &x = s.x, &normed = s.normed, &q = s.q, &k = s.k, &v = s.v, &attended = s.attended,
                       &projected = s.projected;
    const RopeSpec rope{spec_.rope_theta, static_cast<int64_t>(std::lround(double(hd) * spec_.partial_rotary_factor)) / 2 * 2,
                        spec_.rope_style == RopeStyle::interleaved};
    // bf16 models round their matmuls' activations to bf16: their attention products may too.
    const bool bf16_model = layers_.front().q->dtype == DType::bf16;
    const AttentionParams attention{heads, kv_heads, hd, spec_.diffusion_block_size, bf16_model};
    backend_.embedding(*embedding_, s.token_ids.ints(), tokens, x.floats());
    std::vector<SequenceRows> sequences;
    bool normed_ready = false;  // `normed` holds this layer's attention norm of x (fused with the last add)
    for (const LayerWeights& layer : layers_) {
        const auto layer_index = static_cast<int64_t>(&layer - layers_.data());
        // The last layer's queries and all that follows them run for the kept rows alone, packed
        // densely (PackedBatch): `rows` of them.
        const bool pruned = kept > 0 && &layer == &layers_.back();
        const int64_t rows = pruned ? kept : tokens;
        if (!normed_ready)
            backend_.rmsnorm(x.floats(), tokens, d, d, *layer.attention_norm, spec_.rms_norm_eps, normed.floats(), d);
        if (pruned) {
            const MatmulOutput kv_outputs[] = {{layer.k, layer.k_bias, k.floats()}, {layer.v, layer.v_bias, v.floats()}};
            backend_.matmuls(normed.floats(), tokens, kv_outputs);
            backend_.gather_rows(normed.floats(), d, s.kept_rows.ints(), kept, projected.floats());
            backend_.matmul(projected.floats(), kept, *layer.q, layer.q_bias, q.floats());
        } else {
            const MatmulOutput qkv[] = {{layer.q, layer.q_bias, q.floats()}, {layer.k, layer.k_bias, k.floats()},
                                        {layer.v, layer.v_bias, v.floats()}};
            backend_.matmuls(normed.floats(), tokens, qkv);
        }
        if (layer.q_norm != nullptr) {  // per-head RMSNorm: rows of head_dim
            backend_.rmsnorm(q.floats(), rows * heads, hd, hd, *layer.q_norm, spec_.rms_norm_eps, q.floats(), hd);
            backend_.rmsnorm(k.floats(), tokens * kv_heads, hd, hd, *layer.k_norm, spec_.rms_norm_eps, k.floats(), hd);
        }
        backend_.rope(q.floats(), rows, heads, hd, (pruned ? s.kept_positions : s.token_positions).ints(), rope);
        backend_.rope(k.floats(), tokens, kv_heads, hd, s.token_positions.ints(), rope);
        // Runs with a cache write their fed keys and values into it and attend to all of it.
        for (const PackedBatch::Run& run : runs) {
            if (run.cache == nullptr) continue;
            const KVCache& cache = *run.cache;
            const auto type = element_type(cache.element());
            backend_.store(k.floats() + run.first_row * kv, run.rows * kv, type,
                           cache.row(cache.keys(layer_index, rank_), run.feed_begin));
            backend_.store(v.floats() + run.first_row * kv, run.rows * kv, type,
                           cache.row(cache.values(layer_index, rank_), run.feed_begin));
        }
        // The queries of rows first_row..first_row + count (from `position`) of q over the run's
        // keys: its cache's, else its rows of k and v (where the queries are, unless kept rows).
        auto view = [&](const PackedBatch::Run& run, int64_t first_row, int64_t count, int64_t position) {
            SequenceRows rows_view{first_row, count, nullptr, nullptr, 0, position, run.block_origin};
            if (run.cache != nullptr) {
                rows_view.cached_keys = run.cache->keys(layer_index, rank_);
                rows_view.cached_values = run.cache->values(layer_index, rank_);
                rows_view.cached_type = element_type(run.cache->element());
                rows_view.key_count = run.keys;
            } else if (pruned) {
                rows_view.cached_keys = k.floats() + run.first_row * kv;
                rows_view.cached_values = v.floats() + run.first_row * kv;
                rows_view.key_count = run.rows;
            }
            return rows_view;
        };
        sequences.clear();
        if (pruned)
            for (const PackedBatch::KeptSegment& segment : batch.kept)
                sequences.push_back(view(runs[size_t(segment.run)], segment.first, segment.count, segment.position));
        else
            for (const PackedBatch::Run& run : runs) sequences.push_back(view(run, run.first_row, run.rows, run.feed_begin));
        backend_.attention(q.floats(), k.floats(), v.floats(), sequences, attention, attended.floats());
        backend_.matmul(attended.floats(), rows, *layer.o, nullptr, projected.floats());
        sum_over_devices(projected.floats(), rows * d);
        // The residual stream and the MLP's input: x and normed, or, for kept rows, the other way
        // round (their residual gathered into normed, whose whole rows are no longer needed).
        float* residual = x.floats();
        float* mlp_input = normed.floats();
        if (pruned) {
            std::swap(residual, mlp_input);
            backend_.gather_rows(x.floats(), d, s.kept_rows.ints(), kept, residual);
        }
        backend_.add_rmsnorm(residual, projected.floats(), rows, d, *layer.mlp_norm, spec_.rms_norm_eps, mlp_input);
        normed_ready = false;
        if (layer.router != nullptr) {
            if (communicator_ == nullptr) {
                moe(layer, mlp_input, rows, residual);  // adds the experts into the residual itself
            } else {  // this device's experts (and share of the shared one), summed over the devices, then added
                backend_.zero(projected.floats(), rows * d);
                moe(layer, mlp_input, rows, projected.floats());
                sum_over_devices(projected.floats(), rows * d);
                backend_.add(residual, projected.floats(), rows * d);
            }
        } else {
            mlp(*layer.gate, *layer.up, *layer.down, mlp_input, rows, projected.floats());
            sum_over_devices(projected.floats(), rows * d);
            if (&layer == &layers_.back()) {
                backend_.add(residual, projected.floats(), rows * d);  // the final norm takes the output rows only
            } else {
                backend_.add_rmsnorm(residual, projected.floats(), rows, d, *(&layer + 1)->attention_norm,
                                     spec_.rms_norm_eps, mlp_input);
                normed_ready = true;
            }
        }
    }
}

void ForwardRank::lm_head(int64_t rows) {
    const RunState& s = state_;
    if (communicator_ == nullptr) {
        backend_.matmul(s.gathered.floats(), rows, *lm_head_, nullptr, s.logits.floats());
        return;
    }
    // This device's slice of every row's logits, then each row's slices side by side in rank order,
    // rows in order: the slack a row's gather writes past its logits is the next row's, which its
    // own gather then overwrites. The last device's slice is shorter where the vocabulary does not
    // divide: it sends the start of its next row (or spare room) as the tail, which lands in the slack.
    const int64_t rows_here = lm_head_->shape[0], vocab = spec_.embedding_rows;
    const auto slice = size_t(vocabulary_slice(vocab, communicator_->size()));
    backend_.matmul(s.gathered.floats(), rows, *lm_head_, nullptr, s.shard_logits.floats());
    for (int64_t r = 0; r < rows; ++r)
        communicator_->all_gather(s.shard_logits.floats() + r * rows_here, slice, s.logits.floats() + r * vocab);
}

void ForwardRank::combine_guidance(float* logits, int64_t width, const PackedBatch& batch, int64_t begin,
                                   int64_t count) {
    for (int64_t i = 0; i < count; ++i)
        if (batch.guidance_rows[size_t(begin + i)] >= 0)
            backend_.combine_guidance(logits + i * width, logits + (count + i) * width,
                                      batch.guidance_scales[size_t(begin + i)], width);
}

void ForwardRank::split_candidates(const PackedBatch& batch, int64_t begin, int64_t count, bool guided,
                                   ForwardOutput& output) {
    const RunState& s = state_;
    const int devices = communicator_->size();
    const int64_t vocab = spec_.embedding_rows, stride = lm_head_->shape[0];
    backend_.matmul(s.gathered.floats(), guided ? 2 * count : count, *lm_head_, nullptr, s.shard_logits.floats());
    if (guided) combine_guidance(s.shard_logits.floats(), stride, batch, begin, count);
    if (count > max_candidate_rows) fail(Status::internal, "{} output rows in one candidates chunk", count);
    const CandidateShareLayout layout = candidate_share_layout(devices);
    auto* base = reinterpret_cast<std::byte*>(s.candidate_shares.floats());
    auto* own_peaks = reinterpret_cast<CandidatePeaks*>(base);
    auto* all_peaks = reinterpret_cast<CandidatePeaks*>(base + layout.all_peaks);
    auto* own_sums = reinterpret_cast<CandidateSums*>(base + layout.own_sums);
    auto* all_sums = reinterpret_cast<CandidateSums*>(base + layout.all_sums);
    auto words = [](auto* p) { return reinterpret_cast<float*>(p); };  // collectives move them as raw words
    const LogitShare share{.logits = s.shard_logits.floats(), .rows = count, .stride = stride,
                           .first = rank_ * vocabulary_slice(vocab, devices), .count = stride};
    const auto params = std::span(batch.output_params).subspan(size_t(begin), size_t(count));
    backend_.candidate_peaks(share, params, own_peaks);
    communicator_->all_gather(words(own_peaks), size_t(count) * sizeof(CandidatePeaks) / sizeof(float), words(all_peaks));
    backend_.candidate_sums(share, batch.output_positions.data() + begin, params, all_peaks, devices, own_sums);
    communicator_->all_gather(words(own_sums), size_t(count) * sizeof(CandidateSums) / sizeof(float), words(all_sums));
    if (rank_ == 0)
        backend_.merge_candidates(all_peaks, all_sums, devices, count, vocab, params, output.candidates.data() + begin);
}

void ForwardRank::run(const PackedBatch& batch, bool want_logits, ForwardOutput& output) {
    const int64_t d = spec_.hidden_size, vocab = spec_.embedding_rows;
    const auto tokens = static_cast<int64_t>(batch.ids.size());
    backend_.copy_to_device(state_.token_ids, batch.ids.data(), batch.ids.size() * sizeof(int32_t));
    backend_.copy_to_device(state_.token_positions, batch.positions.data(), batch.positions.size() * sizeof(int32_t));

    // The hidden states depend on nothing but the batch's shape and device memory (the routing of
    // mixture-of-experts layers too): a backend may record their work once and replay it for every
    // forward of that shape (the denoising steps of a block with a cache), or run it as it comes
    // where it reads something on the host (CUDA: a MoE step of many slots per fp32 expert).
    std::vector<int64_t> shape = {id_, tokens};
    for (const PackedBatch::Run& run : batch.runs) {
        const auto cache = run.cache != nullptr ? reinterpret_cast<intptr_t>(run.cache->keys(0, rank_)) : 0;
        shape.insert(shape.end(), {run.first_row, run.rows, run.feed_begin, run.keys, run.block_origin, cache,
                                   run.cache != nullptr ? run.cache->length() : 0,
                                   run.cache != nullptr ? static_cast<int64_t>(run.cache->element()) : -1});
    }
    if (!batch.kept.empty()) {
        backend_.copy_to_device(state_.kept_rows, batch.kept_rows.data(), batch.kept_rows.size() * sizeof(int32_t));
        backend_.copy_to_device(state_.kept_positions, batch.kept_positions.data(),
                                batch.kept_positions.size() * sizeof(int32_t));
        shape.push_back(static_cast<int64_t>(batch.kept.size()));
        for (const PackedBatch::KeptSegment& segment : batch.kept)
            shape.insert(shape.end(), {segment.run, segment.first, segment.count, segment.position});
    }
    backend_.run_replayable(shape, [&] { hidden_states(batch); });
    const DeviceBuffer& hidden = batch.kept.empty() ? state_.x : state_.normed;

    // Final norm, LM head and candidates, a chunk of output rows at a time.
    const auto outputs = static_cast<int64_t>(batch.output_rows.size());
    // The output buffers hold 2 x min(limits.tokens, 128) rows (outputs may repeat positions).
    const int64_t chunk = std::min({outputs, output_chunk_rows, limits_.tokens});
    const auto& guidance_rows = batch.guidance_rows;
    const RunState& s = state_;
    for (int64_t begin = 0; begin < outputs; begin += chunk) {
        const int64_t count = std::min(chunk, outputs - begin);
        // Rows [0, count) are the outputs; with guidance, rows [count, 2 count) their unconditional twins.
        std::vector<int32_t> chunk_rows(batch.output_rows.begin() + begin, batch.output_rows.begin() + begin + count);
        const bool guided = std::any_of(guidance_rows.begin() + begin, guidance_rows.begin() + begin + count,
                                        [](int32_t r) { return r >= 0; });
        if (guided)
            for (int64_t i = begin; i < begin + count; ++i)
                chunk_rows.push_back(guidance_rows[size_t(i)] >= 0 ? guidance_rows[size_t(i)]
                                                                   : batch.output_rows[size_t(i)]);
        const auto total = static_cast<int64_t>(chunk_rows.size());
        DeviceBuffer& rows = state_.output_rows;
        backend_.copy_to_device(rows, chunk_rows.data(), chunk_rows.size() * sizeof(int32_t));
        backend_.gather_rows(hidden.floats(), d, rows.ints(), total, s.gathered.floats());
        backend_.rmsnorm(s.gathered.floats(), total, d, d, *final_norm_, spec_.rms_norm_eps, s.gathered.floats(), d);
        // Several devices merge their shares' candidate statistics, unless the logits themselves
        // are wanted, a filter (top-k, top-p) needs whole rows or the backend cannot split the
        // step: then they gather the rows.
        const auto filtered = [&](const CandidateParams* p) {
            return (p->top_k > 0 && p->top_k < vocab) || p->top_p < 1.0;
        };
        if (communicator_ != nullptr && !want_logits && backend_.splits_candidates() &&
            std::none_of(batch.output_params.begin() + begin, batch.output_params.begin() + begin + count, filtered)) {
            split_candidates(batch, begin, count, guided, output);
            continue;
        }
        lm_head(total);
        if (rank_ != 0) continue;  // the logits are whole on every device: the first one finishes them
        if (guided) combine_guidance(s.logits.floats(), vocab, batch, begin, count);
        if (want_logits) {
            backend_.copy_to_host(output.logits.data() + begin * vocab, s.logits, size_t(count * vocab) * sizeof(float));
        } else {
            backend_.candidates(s.logits.floats(), count, vocab, batch.output_positions.data() + begin,
                                std::span(batch.output_params).subspan(size_t(begin), size_t(count)),
                                output.candidates.data() + begin);
        }
    }
    if (rank_ != 0) backend_.synchronize();  // its work done before the batch's memory goes
}

}  // namespace unmask
