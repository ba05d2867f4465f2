// The one forward pass, for every architecture: ModelSpec says what to do, the backend does it.
// A batch holds sequences of different lengths; each asks for outputs at some of its positions
// (the masked ones, during decoding) as candidates (decoding) or full logits (tests). A sequence
// with a K/V cache feeds only part of its canvas; the other positions' keys and values come from
// the cache, and the fed positions' are written to it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "backend/communicator.hpp"
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

class ForwardRank;
struct PackedBatch;

class Forward {
public:
    // Allocates the run state for forwards up to `limits` (and the backend's workspace) on the
    // backend, charged to its ledger: OUT_OF_BUDGET when it does not fit.
    Forward(const Model& model, Backend& backend, const ForwardLimits& limits);
    // Tensor parallelism (model/tensor_parallel.hpp) over `devices`, one backend each, which must
    // outlive the forward: each holds its share of the weights and its run state, and the batch
    // runs on all of them at once (a thread per device beyond the first, collectives between
    // them). Host devices (CPU backends) only: UNSUPPORTED for others, as for a model whose heads
    // or widths do not divide among the devices. A device that fails mid-forward ends the
    // forward on every device: run() throws its error, and the next run() starts afresh.
    Forward(const Model& model, std::span<Backend* const> devices, const ForwardLimits& limits);
    ~Forward();

    // Throws INVALID_ARGUMENT for token ids or positions out of range, an empty batch or sequence,
    // a feed range the sequence's cache cannot serve; TOO_LONG for a batch beyond the limits.
    ForwardOutput run(std::span<const ForwardSequence> batch, bool want_logits);

    const ForwardLimits& limits() const noexcept { return limits_; }
    // The devices the forward runs on, in rank order: K/V caches for its sequences hold a shard
    // on each (KVCache's constructor for several devices).
    std::span<Backend* const> devices() const noexcept { return devices_; }

private:
    // Checks `batch` and lays it out for the devices.
    PackedBatch pack(std::span<const ForwardSequence> batch, bool want_logits) const;
    // The last layer's kept rows (PackedBatch), from the outputs.
    void keep_output_rows(PackedBatch& packed) const;

    const ModelSpec& spec_;
    ForwardLimits limits_;
    std::vector<Backend*> devices_;
    std::vector<std::unique_ptr<Communicator>> communicators_;
    std::vector<std::unique_ptr<ForwardRank>> ranks_;
};

}  // namespace unmask
