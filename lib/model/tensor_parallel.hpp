// Tensor and expert parallelism: how a model divides among the devices of one engine. Attention
// and the dense SwiGLUs (the dense MLP, the shared expert) follow Megatron-LM's layout (Shoeybi et
// al. 2019): each device computes its share of the heads and of the SwiGLU's width, q, k, v, gate
// and up split by rows (column-parallel), o and down by columns (row-parallel, their partial
// outputs summed by one all-reduce after attention and one after the MLP). K/V heads split with
// the query heads that read them, and are replicated where there are fewer K/V heads than devices.
// Routed experts are divided whole (expert parallelism): device r holds experts r x E/N ..
// (r+1) x E/N - 1 and runs every token routed to them, the devices' partial outputs summed by the
// layer's all-reduce (tokens replicated, as dInfer does at small batches). The LM head splits by
// vocabulary, its slices of logits gathered before the candidates step. Norms, the embedding and
// the routers are replicated.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "backend/types.hpp"
#include "model/model.hpp"
#include "model/model_spec.hpp"

namespace unmask {

// The spec one of `devices` computes with: its query heads, K/V heads and dense SwiGLU widths (the
// vocabulary, the experts and their widths stay the model's: a device routes over all experts and
// holds some of them whole). Throws Error(UNSUPPORTED) naming what does not divide evenly among the
// devices.
ModelSpec shard_spec(const ModelSpec& spec, int devices);

// Each device's slice of a vocabulary of `rows` (the LM head's rows): ceil(rows / devices) rows,
// the last device's fewer where they do not divide. Gathered side by side in rank order, the
// slices are the logits in order, followed by gathered_vocabulary_slack floats that hold nothing.
int64_t vocabulary_slice(int64_t rows, int devices) noexcept;
int64_t gathered_vocabulary_slack(int64_t rows, int devices) noexcept;

// The first of the model's K/V heads that `rank`'s shard holds.
int64_t first_kv_head(const ModelSpec& spec, int rank, int devices) noexcept;

// How `devices` share a weight of `role` (of routed expert `expert`) and `shape`: whole on each
// (replicated), rank's range first..first + count of its rows (vectors: elements) or of its
// columns, or not on rank at all (another device's expert). The LM head's share of a
// tied embedding is share_of(spec, Role::lm_head, the embedding's shape, ...): a view of its rows.
enum class Split { replicated, rows, columns, absent };
struct Share {
    Split split = Split::replicated;
    int64_t first = 0, count = 0;
    // The share's elements (of a weight of `shape`).
    uint64_t elements(const std::vector<int64_t>& shape) const noexcept;
};
Share share_of(const ModelSpec& spec, Role role, int32_t expert, const std::vector<int64_t>& shape, int rank,
               int devices);
// The same for `weight`, and throws UNSUPPORTED when its share is a range of columns that is not
// whole blocks of its quantized type (the planner refuses what loading would).
Share share_of(const ModelSpec& spec, const Weight& weight, int rank, int devices);

// One device's share of a model's weights: views of the model's memory where the share is whole or
// a range of whole rows, copies on the device (its buffers, charged to its ledger) where it is a
// range of columns. Every weight of the model but the other devices' experts has one here, with
// its role, layer and expert; the LM head is its own (a view of the embedding's rows when tied). The model must outlive it.
// Views need the device to read host memory: the CPU backend's.
class WeightShard {
public:
    std::span<const Weight> weights() const noexcept { return weights_; }

private:
    friend std::unique_ptr<WeightShard> shard_weights(const Model& model, int rank, int devices, Backend& device);
    std::vector<Weight> weights_;
    std::vector<DeviceBuffer> copies_;
};

// The bytes (allocation granules included) of the copies shard_weights makes on one device: the
// column shares, the same on every rank.
uint64_t shard_copy_bytes(const Model& model, int devices);

// `rank`'s share of `model` among `devices` (shard_spec's layout), its copies on `device`. Throws
// UNSUPPORTED as shard_spec does, and for a quantized weight whose column share does not hold
// whole blocks; OUT_OF_BUDGET when the device's ledger cannot take the copies.
std::unique_ptr<WeightShard> shard_weights(const Model& model, int rank, int devices, Backend& device);

}  // namespace unmask
