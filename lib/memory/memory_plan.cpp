#include "memory/memory_plan.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "backend/backend.hpp"
#include "backend/device.hpp"
#include "core/error.hpp"
#include "format/dtype.hpp"
#include "model/kv_cache.hpp"
#include "model/load_options.hpp"
#include "model/model.hpp"
#include "model/tensor_parallel.hpp"

namespace unmask {
namespace {

constexpr int64_t max_planned_concurrency = int64_t(1) << 30;
constexpr uint64_t max_device_memory = uint64_t(1) << 60;  // 1 EiB: beyond any device, and no size overflows

}  // namespace

int64_t forward_rows(int64_t length, const SequenceOptions& options) noexcept {
    return length * (options.cfg ? 2 : 1);
}

uint64_t decode_state_bytes(int64_t length, const SequenceOptions& options) {
    const auto positions = static_cast<uint64_t>(length);
    // Canvas and output positions (int32 each), the fixed-position flags, one candidate per position.
    uint64_t bytes = positions * (2 * sizeof(int32_t) + 1 + sizeof(Candidate));
    if (options.cfg) bytes += positions * sizeof(int32_t);  // the unconditional canvas
    return bytes;
}

// The same on every backend (the element type is the sequence's choice).
uint64_t kv_cache_bytes(const ModelSpec& spec, int64_t length, const SequenceOptions& options, BackendKind,
                        int devices) {
    if (!options.kv_cache) return 0;
    const uint64_t one = allocation_bytes(KVCache::bytes(spec, length, options.cache_precision, devices));
    return one * (options.cfg ? 2 : 1);
}

uint64_t sequence_state_bytes(const ModelSpec& spec, int64_t length, const SequenceOptions& options,
                              BackendKind backend, int devices) {
    return decode_state_bytes(length, options) + kv_cache_bytes(spec, length, options, backend, devices);
}

uint64_t shared_ledger_state_bytes(const ModelSpec& spec, int64_t length, const SequenceOptions& options,
                                   BackendKind backend, int devices) {
    return decode_state_bytes(length, options) + uint64_t(devices) * kv_cache_bytes(spec, length, options, backend, devices);
}

uint64_t scratch_bytes(const ModelSpec& spec, const ForwardLimits& limits, BackendKind backend, int threads,
                       int devices) {
    const ModelSpec shard = shard_spec(spec, devices);
    const WorkspaceLimits workspace_for = workspace_limits(shard, limits);
    const uint64_t workspace = backend == BackendKind::cpu ? cpu_workspace_bytes(threads, workspace_for)
                                                           : cuda_workspace_bytes(workspace_for);
    return run_state_sizes(shard, limits, devices).total() + workspace;
}

uint64_t shared_ledger_scratch_bytes(const ModelSpec& spec, const ForwardLimits& limits, BackendKind backend,
                                     int all_threads, const LedgerDevices& devices) {
    return uint64_t(devices.count) *
           (scratch_bytes(spec, limits, backend, devices.threads_each(all_threads), devices.count) + devices.weight_copies);
}

LedgerDevices ledger_devices(const Model& model, int devices) {
    return {devices, devices > 1 ? shard_copy_bytes(model, devices) : 0};
}

WeightBytes weight_bytes(const ModelSpec& spec, std::span<const Weight> weights, int64_t devices) {
    if (devices < 1 || devices > max_devices)
        fail(Status::invalid_argument, "the device count {} is outside 1..{}", devices, max_devices);
    WeightBytes bytes;
    bytes.devices = devices;
    for (const Weight& w : weights) {
        const auto c = size_t(w.component);
        bytes.total[c] += dtype_bytes(w.dtype, w.elements);
        const Share share = share_of(spec, w, 0, int(devices));
        const uint64_t share_bytes = dtype_bytes(w.dtype, share.elements(w.shape));
        bytes.per_device[c] += share_bytes;
        if (share.split == Split::columns) bytes.copies[c] += share_bytes;
        bytes.parameters += w.elements;
    }
    return bytes;
}

int64_t longest_fitting_sequence(const ModelSpec& spec, uint64_t available, const SequenceOptions& options,
                                 BackendKind backend, int threads, int64_t count, const LedgerDevices& devices) {
    return largest_fitting(1, spec.max_sequence_length, [&](int64_t length) {
        const ForwardLimits limits{forward_rows(length, options), length};
        return uint64_t(count) * shared_ledger_state_bytes(spec, length, options, backend, devices.count) +
                   shared_ledger_scratch_bytes(spec, limits, backend, threads, devices) <=
               available;
    });
}

DeviceBudget device_budget(BackendKind backend, std::optional<uint64_t> budget_bytes,
                           std::optional<double> memory_fraction, uint64_t device_memory_bytes, double margin) {
    if (budget_bytes && *budget_bytes == 0) fail(Status::invalid_argument, "the memory budget must be positive, got 0 bytes");
    if (memory_fraction && !(*memory_fraction > 0.0 && *memory_fraction <= 1.0))
        fail(Status::invalid_argument, "the memory fraction must be in (0, 1], got {}", *memory_fraction);
    if (!(margin >= 0.0 && margin < 1.0))
        fail(Status::invalid_argument, "the memory margin must be in [0, 1), got {}", margin);
    if (device_memory_bytes > max_device_memory || (budget_bytes && *budget_bytes > max_device_memory))
        fail(Status::invalid_argument, "memory sizes above {} bytes are not plausible, got {}", max_device_memory,
             std::max(device_memory_bytes, budget_bytes.value_or(0)));
    DeviceBudget b;
    // The device's size matters only for a fraction, or when no budget caps it.
    if (memory_fraction || !budget_bytes)
        b.device_memory = device_memory_bytes != 0 ? device_memory_bytes : unmask::device_memory_bytes(backend, 0);
    else
        b.device_memory = device_memory_bytes;
    b.budget = budget_bytes.value_or(UINT64_MAX);
    if (memory_fraction || !budget_bytes)
        b.budget = std::min(b.budget, static_cast<uint64_t>(std::floor(double(b.device_memory) * memory_fraction.value_or(1.0))));
    b.margin = static_cast<uint64_t>(std::ceil(double(b.budget) * margin));
    b.usable = b.budget - std::min(b.budget, b.margin);
    return b;
}

MemoryPlan plan_memory(const ModelSpec& spec, const WeightBytes& weights, const PlanRequest& request) {
    if (request.devices < 1 || request.devices > max_devices)
        fail(Status::invalid_argument, "the device count {} is outside 1..{}", request.devices, max_devices);
    if (weights.devices != request.devices)
        fail(Status::invalid_argument, "weights counted for {} devices, planned for {}", weights.devices, request.devices);
    const int devices = static_cast<int>(request.devices);
    if (request.threads < 1 || request.threads > 1024)
        fail(Status::invalid_argument, "the thread count {} is outside 1..1024", request.threads);
    const int64_t length = request.max_sequence_length == 0 ? spec.max_sequence_length : request.max_sequence_length;
    if (length < 1 || length > spec.max_sequence_length)
        fail(Status::invalid_argument, "max_sequence_length {} is outside 1..{} (the model's maximum)", length,
             spec.max_sequence_length);
    if (request.max_concurrent < 1 || request.max_concurrent > max_planned_concurrency)
        fail(Status::invalid_argument, "max_concurrent {} is outside 1..{}", request.max_concurrent,
             max_planned_concurrency);
    // A sequence is charged the positions it occupies while decoded (whole blocks for block
    // diffusion models), as the engine sizes it.
    auto decoded = [&](int64_t sequence_length) {
        return std::min(spec.max_sequence_length, spec.decoded_positions(sequence_length));
    };
    const int64_t sequences_per_device = request.max_concurrent;  // every device runs every sequence
    if (sequences_per_device > max_forward_rows / forward_rows(decoded(length), request.sequence))
        fail(Status::invalid_argument, "{} sequences of {} positions per device exceed one forward's {} rows",
             sequences_per_device, length, max_forward_rows);

    MemoryPlan plan;
    const DeviceBudget budget = device_budget(request.backend, request.budget_bytes, request.memory_fraction,
                                              request.device_memory_bytes, request.margin);
    plan.device_memory = budget.device_memory;
    plan.budget = budget.budget;
    plan.margin = budget.margin;
    plan.usable = budget.usable;
    plan.devices = request.devices;
    plan.max_sequence_length = length;
    plan.max_concurrent = request.max_concurrent;
    plan.parameters_total = weights.parameters;
    // Host devices (the CPU backend) share the machine's memory: the plan is the machine's, with
    // the model once, every device's copies of its column shares, a K/V shard per device in each
    // sequence's state and every device's scratch, the threads divided among them (as an engine
    // on host devices reserves them).
    const bool one_memory = request.backend == BackendKind::cpu && devices > 1;
    auto state_bytes = [&](int64_t sequence_length) {
        return one_memory ? shared_ledger_state_bytes(spec, sequence_length, request.sequence, request.backend, devices)
                          : sequence_state_bytes(spec, sequence_length, request.sequence, request.backend, devices);
    };
    for (size_t c = 0; c < size_t(component_count); ++c) {
        plan.weights_total += weights.total[c];
        plan.weights_by_component[c] =
            one_memory ? weights.total[c] + uint64_t(devices) * weights.copies[c] : weights.per_device[c];
        plan.weights += plan.weights_by_component[c];
    }

    // Every device runs every sequence, in one forward per step, with its share of the heads.
    auto required = [&](int64_t concurrent, int64_t requested_length, uint64_t* dynamic, uint64_t* scratch) {
        const int64_t sequence_length = decoded(requested_length);
        if (concurrent > max_forward_rows / forward_rows(sequence_length, request.sequence)) return UINT64_MAX;
        const ForwardLimits limits{concurrent * forward_rows(sequence_length, request.sequence), sequence_length};
        *dynamic = uint64_t(concurrent) * state_bytes(sequence_length);
        *scratch = one_memory ? shared_ledger_scratch_bytes(spec, limits, request.backend, request.threads, {devices, 0})
                              : scratch_bytes(spec, limits, request.backend, request.threads, devices);
        return plan.weights + *dynamic + *scratch;
    };
    auto fits = [&](int64_t concurrent, int64_t sequence_length) {
        uint64_t dynamic = 0, scratch = 0;
        return required(concurrent, sequence_length, &dynamic, &scratch) <= plan.usable;
    };
    plan.sequences_per_device = sequences_per_device;
    plan.sequence_state = state_bytes(decoded(length));
    plan.required = required(request.max_concurrent, length, &plan.dynamic, &plan.scratch);
    plan.fits = plan.required <= plan.usable;
    plan.max_concurrent_at_length =
        largest_fitting(1, max_planned_concurrency, [&](int64_t concurrent) { return fits(concurrent, length); });
    plan.max_length_at_concurrency = largest_fitting(
        1, spec.max_sequence_length, [&](int64_t sequence_length) { return fits(request.max_concurrent, sequence_length); });
    return plan;
}

MemoryPlan plan_memory(const std::filesystem::path& model_path, const PlanRequest& request) {
    std::error_code ec;
    const bool has_weights = std::filesystem::is_regular_file(model_path, ec) ||
                             std::filesystem::exists(model_path / "model.safetensors", ec) ||
                             std::filesystem::exists(model_path / "model.safetensors.index.json", ec);
    const bool float_precision = request.precision == Precision::fp32 || request.precision == Precision::bf16 ||
                                 request.precision == Precision::fp16;
    if (request.precision == Precision::automatic || (has_weights && !float_precision)) {
        // The weights as loading would hold them: the headers bound at the precision, no tensor read.
        const auto model = load_model(model_path, {.precision = request.precision,
                                                   .quantize_embeddings = request.quantize_embeddings,
                                                   .checksum_mode = ChecksumMode::skip, .metadata_only = true});
        return plan_memory(model->spec(), weight_bytes(model->spec(), model->weights(), request.devices), request);
    }
    // From config.json alone (a float precision, or a published shape without its weights, whose
    // tensors are taken to be BF16, as published checkpoints are): the weights binding would make.
    const ModelSpec spec = read_model_config(model_path);
    std::vector<Weight> weights;
    auto add = [&](Role role, int32_t expert, std::vector<int64_t> shape) {
        Weight w;
        w.role = role;
        w.expert = expert;
        w.component = component_of(role);
        w.shape = std::move(shape);
        w.elements = 1;
        for (int64_t extent : w.shape) w.elements *= static_cast<uint64_t>(extent);
        w.dtype = loaded_dtype(request.precision, DType::bf16, role, w.shape, request.quantize_embeddings);
        weights.push_back(std::move(w));
    };
    for (const ExpectedTensor& tensor : expected_tensors(spec)) {
        if (tensor.parts.empty()) add(tensor.role, tensor.expert, tensor.shape);
        for (const TensorPart& part : tensor.parts) {  // rows of a fused tensor
            std::vector<int64_t> shape = tensor.shape;
            shape[0] = part.rows;
            add(part.role, tensor.expert, shape);
        }
    }
    return plan_memory(spec, weight_bytes(spec, weights, request.devices), request);
}

}  // namespace unmask
