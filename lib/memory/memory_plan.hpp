// The memory planner: from config.json or GGUF metadata (and the tensor headers where the types
// matter) to the bytes a deployment needs per device, before anything is allocated. Three buckets:
// static (weights by component: each device's tensor-parallel share, model/tensor_parallel.hpp),
// dynamic per sequence (canvas and decode state, K/V cache when a cache mode is on, doubled with
// CFG; each device holds its K/V heads), scratch (the forward's run state for the largest forward
// plus the backend's workspace, for the device's share of the heads and widths). Every device runs
// every sequence.
// The same functions size the real allocations, so the plan is what the engine reserves.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

#include "format/dtype.hpp"
#include "model/architecture.hpp"
#include "model/load_options.hpp"
#include "model/model_spec.hpp"
#include "model/run_state.hpp"

namespace unmask {

class Model;

// The largest n in [low, high] with fits(n), for a predicate that holds up to some n and not
// after; low - 1 when fits(low) does not hold. A binary search: every size here grows with n.
template <typename Fits>
int64_t largest_fitting(int64_t low, int64_t high, const Fits& fits) {
    if (high < low || !fits(low)) return low - 1;
    while (low < high) {  // fits(low) holds
        const int64_t middle = low + (high - low + 1) / 2;
        if (fits(middle)) low = middle;
        else high = middle - 1;
    }
    return low;
}

// What one sequence keeps between steps.
struct SequenceOptions {
    bool kv_cache = false;  // a cache mode keeps K/V of the canvas
    bool cfg = false;       // classifier-free guidance runs an unconditional twin
    DType cache_precision = DType::f32;  // f32 or bf16
};

// Bytes of one sequence's state at `length` positions: the decode state (canvas, per-position
// state and candidates, the CFG twin's canvas) and the K/V caches (the twin's too with CFG).
// With `devices`, one device's: its shard of the K/V caches.
uint64_t decode_state_bytes(int64_t length, const SequenceOptions& options);
uint64_t kv_cache_bytes(const ModelSpec& spec, int64_t length, const SequenceOptions& options, BackendKind backend,
                        int devices = 1);
uint64_t sequence_state_bytes(const ModelSpec& spec, int64_t length, const SequenceOptions& options,
                              BackendKind backend, int devices = 1);

// A sequence's state when its `devices` share one ledger (host devices): its decode state and
// every device's shard of its K/V caches.
uint64_t shared_ledger_state_bytes(const ModelSpec& spec, int64_t length, const SequenceOptions& options,
                                   BackendKind backend, int devices);

// Bytes of scratch for forwards up to `limits`: the run state and the backend's workspace (one
// device's among `devices`).
uint64_t scratch_bytes(const ModelSpec& spec, const ForwardLimits& limits, BackendKind backend, int threads,
                       int devices = 1);

// The devices of one ledger that share a model: host devices of one process (model/
// tensor_parallel.hpp), or a device alone. Each runs every forward with its share of the threads
// and holds `weight_copies` bytes of copied weight shares (shard_copy_bytes).
struct LedgerDevices {
    int count = 1;
    uint64_t weight_copies = 0;

    // Each device's share of `threads`.
    int threads_each(int threads) const noexcept { return std::max(1, threads / count); }
};

// `devices` host devices sharing `model` in one ledger, with each one's copies of its column shares.
LedgerDevices ledger_devices(const Model& model, int devices);

// The scratch of forwards up to `limits` on every device of a ledger, `all_threads` divided among
// them (threads_each): each device's scratch_bytes and weight copies.
uint64_t shared_ledger_scratch_bytes(const ModelSpec& spec, const ForwardLimits& limits, BackendKind backend,
                                     int all_threads, const LedgerDevices& devices);

// A model's weight bytes by component: the whole model, and one device's share among `devices`
// (the shares the forward binds; a tied LM head is a view of the embedding, no bytes of its own).
// Throws UNSUPPORTED where the model does not divide among the devices.
struct WeightBytes {
    int64_t devices = 1;
    std::array<uint64_t, component_count> total{}, per_device{};
    std::array<uint64_t, component_count> copies{};  // of per_device: the column shares a device copies
    uint64_t parameters = 0;
};
WeightBytes weight_bytes(const ModelSpec& spec, std::span<const Weight> weights, int64_t devices);

// Rows a sequence of `length` positions feeds to each forward.
int64_t forward_rows(int64_t length, const SequenceOptions& options) noexcept;

// The longest length (at most the model's maximum) at which `count` sequences fit in `available`
// bytes on `devices`: their states, and scratch for forwards of one at a time; 0 when none does.
int64_t longest_fitting_sequence(const ModelSpec& spec, uint64_t available, const SequenceOptions& options,
                                 BackendKind backend, int threads, int64_t count = 1,
                                 const LedgerDevices& devices = {});

// The forward indexes its rows with int32: no forward is planned beyond this many.
inline constexpr int64_t max_forward_rows = INT32_MAX;

struct PlanRequest {
    Precision precision = Precision::automatic;  // automatic: each tensor's file dtype
    bool quantize_embeddings = false;            // as LoadOptions::quantize_embeddings
    BackendKind backend = BackendKind::cpu;
    int threads = 1;  // the CPU backend's workspace is per thread
    int64_t devices = 1;                     // sharing the model (tensor parallelism)
    std::optional<uint64_t> budget_bytes;    // per device
    std::optional<double> memory_fraction;   // of each device's memory; with budget_bytes the smaller wins
    uint64_t device_memory_bytes = 0;        // 0: ask the device (system RAM for the CPU backend)
    double margin = 0.10;                    // kept free: a fraction of the budget
    int64_t max_sequence_length = 0;         // prompt + generation; 0: the model's maximum
    int64_t max_concurrent = 1;
    SequenceOptions sequence;
};

struct MemoryPlan {
    int64_t devices = 1;
    int64_t max_sequence_length = 0;
    int64_t max_concurrent = 0;
    int64_t sequences_per_device = 0;  // every device runs every sequence: max_concurrent
    // Per device.
    uint64_t device_memory = 0, budget = 0, margin = 0, usable = 0;
    std::array<uint64_t, component_count> weights_by_component{};
    uint64_t weights = 0;
    uint64_t sequence_state = 0;  // one sequence at max_sequence_length
    uint64_t dynamic = 0;         // sequences_per_device of them
    uint64_t scratch = 0;
    uint64_t required = 0;        // weights + dynamic + scratch
    bool fits = false;            // required <= usable
    // The whole model, every device together (each weight counted once).
    uint64_t weights_total = 0;
    uint64_t parameters_total = 0;
    // What fits instead (0: nothing does): the most sequences of max_sequence_length, the longest
    // sequence at max_concurrent.
    int64_t max_concurrent_at_length = 0;
    int64_t max_length_at_concurrency = 0;
};

// Throws INVALID_ARGUMENT for a bad request (a zero or negative budget, a fraction outside
// (0, 1], a margin outside [0, 1), lengths or counts out of range, a device's sequences beyond
// one forward's max_forward_rows, weights counted for another number of devices); UNSUPPORTED
// where the model does not divide among the devices.
MemoryPlan plan_memory(const ModelSpec& spec, const WeightBytes& weights, const PlanRequest& request);

// Reads config.json or a GGUF file's metadata; and the tensor headers, bound as loading binds them,
// at automatic precision, and at int8 and q4 when the weights are present (no tensor data).
MemoryPlan plan_memory(const std::filesystem::path& model_path, const PlanRequest& request);

// What of a device's memory a model and its work may use: min(bytes, fraction x the device's
// memory) less a margin (device_budget).
struct MemoryBudget {
    std::optional<uint64_t> bytes;
    std::optional<double> fraction;
    double margin = 0.10;
};

// The usable bytes of one device for a budget request: min(budget, fraction x device memory)
// less the margin. Throws INVALID_ARGUMENT for bad values.
struct DeviceBudget {
    uint64_t device_memory = 0, budget = 0, margin = 0, usable = 0;
};
DeviceBudget device_budget(BackendKind backend, std::optional<uint64_t> budget_bytes,
                           std::optional<double> memory_fraction, uint64_t device_memory_bytes, double margin);

}  // namespace unmask
