#include "runtime/loaded_model.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <system_error>
#include <utility>

#include "backend/device.hpp"
#include "core/error.hpp"
#include "memory/batch_memory.hpp"
#include "memory/memory_plan.hpp"

namespace unmask {
namespace {

// UNMASK_CUDA_GRAPHS=0 runs every forward as it comes (to compare, or to rule graphs out).
bool cuda_graphs_wanted() {
    const char* graphs = std::getenv("UNMASK_CUDA_GRAPHS");
    return graphs == nullptr || std::string_view(graphs) != "0";
}

}  // namespace

std::unique_ptr<LoadedModel> LoadedModel::load(const std::filesystem::path& path, LoadOptions options, int device,
                                               const MemoryBudget& budget, int devices) {
    if (devices < 1 || devices > max_devices)
        fail(Status::invalid_argument, "devices {} is outside 1..{}", devices, max_devices);
    if (devices > 1 && options.backend != BackendKind::cpu)
        fail(Status::unsupported, "a model on {} GPUs needs the forward to drive NCCL, which it does not yet; "
             "several host (CPU) devices work (docs/parallel.md)", devices);
    if (!options.metadata_only) require_device(options.backend, device);
    // The CPU's size is the planner's to ask; a GPU's is asked here, of the device named.
    const uint64_t device_memory = options.backend != BackendKind::cpu && has_device(options.backend, device)
                                       ? device_memory_bytes(options.backend, device)
                                       : 0;
    const DeviceBudget usable = device_budget(options.backend, budget.bytes, budget.fraction, device_memory, budget.margin);
    auto loaded = std::unique_ptr<LoadedModel>(new LoadedModel());
    loaded->memory_ = std::make_unique<MemoryLedger>(
        options.backend == BackendKind::cpu ? "the CPU memory budget" : "the CUDA memory budget", usable.usable);
    loaded->backend_ = options.backend;
    loaded->devices_ = devices;
    options.memory = loaded->memory_.get();
    options.cpu_panels = options.backend == BackendKind::cpu && devices == 1;
    loaded->model_ = load_model(path, options);
    // Every weight's share (the block alignment of quantized column shares too), before placing.
    if (devices > 1) weight_bytes(loaded->model_->spec(), loaded->model_->weights(), devices);
    std::error_code ec;
    if (const GgufFile* gguf = loaded->model_->gguf(); gguf != nullptr) {
        // A vocabulary this version cannot tokenize with leaves a model that runs on token ids.
        if (gguf->header().find("tokenizer.ggml.model") != nullptr) {
            try {
                loaded->tokenizer_ = Tokenizer::from_gguf(gguf->header());
            } catch (const Error& e) {
                if (e.status() != Status::unsupported) throw;
                options.logger.warn("{}; the model runs on token ids only", e.what());
            }
        }
    } else if (std::filesystem::exists(path / "tokenizer.json", ec)) {
        loaded->tokenizer_ = Tokenizer::load(path / "tokenizer.json");
    }
    if (loaded->model_->has_data())
        loaded->placement_ = place_weights(loaded->model_->weights(),
                                           {.kind = options.backend, .device = device, .cuda_graphs = cuda_graphs_wanted()});
    return loaded;
}

// The placement (a GPU's copy of the weights) goes before the model, and the model's reservation
// before the ledger: the members' reverse order.
LoadedModel::~LoadedModel() = default;

const std::shared_ptr<const DevicePlacement>& LoadedModel::placement() const {
    if (!placement_) fail(Status::unsupported, "the model was loaded with metadata_only and cannot generate");
    return placement_;
}

std::vector<GenerationStats> LoadedModel::generate_batch(std::span<DecodeSequence> sequences, int threads,
                                                         const StepObserver& observer) const {
    const DevicePlacement& device = *placement();
    std::vector<SequenceShape> shapes;
    for (const DecodeSequence& s : sequences)
        shapes.push_back({static_cast<int64_t>(s.canvas().size()), s.memory_options()});
    const LedgerDevices shared = ledger_devices(*model_, devices_);
    BatchMemory memory = reserve_batch(*memory_, model_->spec(), shapes, backend_, threads, shared);
    std::vector<std::unique_ptr<Backend>> backends;
    std::vector<Backend*> devices;
    for (int d = 0; d < devices_; ++d) {
        backends.push_back(device.make_backend(shared.threads_each(threads), *memory.scratch));
        devices.push_back(backends.back().get());
    }
    return generate(*model_, devices, sequences, memory.states, memory.limits, observer);
}

std::unique_ptr<Engine> LoadedModel::start_engine(EngineOptions options) const {
    if (options.devices != 1 && options.devices != devices_)
        fail(Status::invalid_argument, "an engine on {} devices of a model loaded for {}: the model's devices are its "
             "engines'", options.devices, devices_);
    options.placement = placement();
    options.devices = devices_;
    return std::make_unique<Engine>(*model_, *memory_, std::move(options));
}

std::vector<int32_t> prompt_canvas(const ModelSpec& spec, const DecodeParams& d, const int32_t* prompt, int64_t length,
                                   size_t index) {
    if (length < 0) fail(Status::invalid_argument, "prompt {} has the negative length {}", index, length);
    if (length > spec.max_sequence_length)
        fail(Status::too_long, "prompt {} has {} tokens; the model allows {} positions", index, length,
             spec.max_sequence_length);
    if (length > 0 && prompt == nullptr) fail(Status::invalid_argument, "prompt {} is NULL", index);
    if (d.gen_length <= 0) fail(Status::invalid_argument, "gen_length must be positive, got {}", d.gen_length);
    const auto mask = static_cast<int32_t>(spec.mask_token_id);
    if (std::find(prompt, prompt + length, mask) != prompt + length)
        fail(Status::invalid_argument, "prompt {} contains the mask token {}; use unmask_infill to fill masks", index, mask);
    if (d.gen_length > spec.max_sequence_length - length)  // no overflow: both are below the maximum
        fail(Status::too_long, "prompt {} ({} tokens) plus gen_length {} exceeds the model's {} positions", index, length,
             d.gen_length, spec.max_sequence_length);
    std::vector<int32_t> canvas(prompt, prompt + length);
    canvas.resize(size_t(length + d.gen_length), mask);
    return canvas;
}

}  // namespace unmask
