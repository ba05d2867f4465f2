// One device's part of the forward pass (model/forward.hpp): its share of the weights
// (model/tensor_parallel.hpp; all of them alone), its run state, and its collectives with the
// other devices of a tensor-parallel forward. Forward packs a batch on the host once and every
// rank runs it on its device.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "backend/communicator.hpp"
#include "model/forward.hpp"
#include "model/kv_cache.hpp"
#include "model/model.hpp"
#include "model/run_state.hpp"
#include "model/tensor_parallel.hpp"

namespace unmask {

// A batch as every device runs it: the fed token ids and their positions, each run's rows (a
// sequence's canvas or its CFG twin) and cache, and the rows that need outputs.
//
// No output reads the last layer's other rows, so that layer computes keys and values for every
// row, which the cache and the other rows' attention need, but queries, attention, output
// projection and MLP only for the output rows, made up to a multiple of kept_row_granule rows
// with the run's first others. A backend that records work per shape (Backend::run_replayable)
// then sees a run's shape change once per granule of outputs rather than at every step, and a
// cached step's block of up to one granule is kept whole. When any row is left out, the last
// layer packs the kept rows densely: kept_rows lists them in order (kept_positions their
// positions), `kept` cuts them into query segments (a run's rows, of consecutive positions under
// block-causal masks), and output_rows and guidance_rows index that dense packing. Otherwise the
// three are empty and the outputs index the packed rows.
inline constexpr int64_t kept_row_granule = 32;

struct PackedBatch {
    // One canvas in the packed batch: its rows, the position of the first, the keys they attend
    // to, where the first block starts, and its cache (if any).
    struct Run {
        int64_t first_row, rows, feed_begin, keys, block_origin;
        KVCache* cache;
    };
    // Kept rows first..first + count of the dense packing, rows of runs[run]: under block-causal
    // masks of consecutive positions from `position`, else any of the run's (`position` 0).
    struct KeptSegment {
        int64_t run, first, count, position;
    };
    std::vector<Run> runs;
    std::vector<int32_t> ids, positions, output_rows, guidance_rows;  // guidance_rows: -1 without CFG
    std::vector<KeptSegment> kept;
    std::vector<int32_t> kept_rows, kept_positions;
    std::vector<double> guidance_scales;
    std::vector<uint32_t> output_positions;
    std::vector<const CandidateParams*> output_params;
};

class ForwardRank {
public:
    // Rank `rank` of `devices` (communicator null alone) on `backend`: binds its share of the
    // weights and allocates its run state and the backend's workspace for `limits`.
    ForwardRank(const Model& model, int rank, int devices, Backend& backend, Communicator* communicator,
                const ForwardLimits& limits, int64_t id);

    const ModelSpec& spec() const noexcept { return spec_; }  // this device's share
    Backend& backend() noexcept { return backend_; }
    Communicator* communicator() noexcept { return communicator_; }
    // A new group's communicator, after the old group was aborted.
    void rejoin(Communicator& communicator) noexcept { communicator_ = &communicator; }

    // Runs `batch`; rank 0 writes the outputs into `output` (sized by the caller), the others
    // compute their shares and join the collectives.
    void run(const PackedBatch& batch, bool want_logits, ForwardOutput& output);

private:
    struct LayerWeights {
        const Weight *attention_norm, *mlp_norm, *q, *k, *v, *o, *q_bias, *k_bias, *v_bias, *q_norm, *k_norm;
        const Weight *gate, *up, *down;                       // dense MLP (null in MoE layers)
        const Weight *router, *router_bias;                   // MoE
        std::vector<const Weight*> expert_gate, expert_up, expert_down;
        const Weight *shared_gate, *shared_up, *shared_down;  // optional shared expert
    };

    struct RunState {
        DeviceBuffer token_ids, token_positions, kept_rows, kept_positions;
        DeviceBuffer x, normed, q, k, v, attended, projected, gate, up;
        DeviceBuffer router_logits, chosen_experts, expert_weights, slot_rows, token_slots, token_scales,
            expert_offsets, expert_input, expert_output;
        DeviceBuffer output_rows, gathered, logits, shard_logits, candidate_shares;
    };

    // The embedding of the uploaded token ids and the layer stack: x holds the last layer's output
    // for the batch's rows or, when some are left out (PackedBatch), normed holds it for its kept
    // rows (uploaded).
    void hidden_states(const PackedBatch& batch);
    void mlp(const Weight& gate, const Weight& up, const Weight& down, const float* x, int64_t rows, float* out);
    void moe(const LayerWeights& layer, const float* x, int64_t rows, float* residual);
    // Sums a row-parallel output over the devices (nothing alone).
    void sum_over_devices(float* partial, int64_t n);
    // The LM head's logits of `rows` gathered rows into state_.logits, the vocabulary whole.
    void lm_head(int64_t rows);
    // Classifier-free guidance: each guided row of output rows begin..begin + count combined with
    // its unconditional twin `count` rows below it, both `width` logits wide.
    void combine_guidance(float* logits, int64_t width, const PackedBatch& batch, int64_t begin, int64_t count);
    // With several devices, the candidates of output rows begin..begin + count (their `guided` CFG
    // twins after them in state_.gathered) from each device's share of the vocabulary: rank 0 writes
    // them into `output`.
    void split_candidates(const PackedBatch& batch, int64_t begin, int64_t count, bool guided, ForwardOutput& output);

    const ModelSpec spec_;
    const int rank_;
    Backend& backend_;
    Communicator* communicator_;
    const ForwardLimits limits_;
    std::unique_ptr<WeightShard> shard_;
    RunState state_;
    const Weight* embedding_ = nullptr;
    const Weight* final_norm_ = nullptr;
    const Weight* lm_head_ = nullptr;
    std::vector<LayerWeights> layers_;
    int64_t id_;
};

}  // namespace unmask
