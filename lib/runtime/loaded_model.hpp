// A model ready to run: the device's memory ledger, the weights (reserved in it, and placed on
// the device), and the tokenizer when the directory has one. Immutable once loaded and shared by
// every generation and engine that runs it; what the C API's unmask_model holds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "backend/placement.hpp"
#include "core/memory_ledger.hpp"
#include "decode/generate.hpp"
#include "decode/sequence.hpp"
#include "memory/memory_plan.hpp"
#include "engine/engine.hpp"
#include "model/load_options.hpp"
#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace unmask {

class LoadedModel {
public:
    // Loads `path` (a model directory or a GGUF file) for `options.backend`'s device `device`
    // within `budget`: the device is checked before any weight is read (UNSUPPORTED when absent,
    // unless metadata_only), the weights are reserved in a ledger of the budget's size
    // (OUT_OF_BUDGET), read, and placed on the device. The tokenizer is the directory's
    // tokenizer.json or the GGUF file's own. A metadata-only model has no placement and cannot
    // run. Throws what load_model, the tokenizer and place_weights throw.
    //
    // `devices` > 1 shares the model among that many host devices (docs/parallel.md): every
    // generation and engine runs on all of them, the budget holding the model once and each
    // device's copies, K/V shards and scratch. INVALID_ARGUMENT outside 1..max_devices;
    // UNSUPPORTED for GPUs (the forward does not drive NCCL yet) and for a model whose heads or
    // widths do not divide among the devices.
    static std::unique_ptr<LoadedModel> load(const std::filesystem::path& path, LoadOptions options, int device,
                                             const MemoryBudget& budget, int devices = 1);
    ~LoadedModel();

    const Model& model() const noexcept { return *model_; }
    MemoryLedger& memory() const noexcept { return *memory_; }
    BackendKind backend() const noexcept { return backend_; }
    // Host devices sharing the model (1: one device).
    int devices() const noexcept { return devices_; }
    // Null when the directory has no tokenizer.json.
    const std::shared_ptr<const Tokenizer>& tokenizer() const noexcept { return tokenizer_; }
    // Where the weights are; throws UNSUPPORTED for a metadata-only model.
    const std::shared_ptr<const DevicePlacement>& placement() const;

    // Runs `sequences` to the end within the model's budget (OUT_OF_BUDGET when they cannot fit),
    // with `threads` CPU threads (divided among the devices), calling `observer` after each step.
    std::vector<GenerationStats> generate_batch(std::span<DecodeSequence> sequences, int threads,
                                                const StepObserver& observer = {}) const;

    // An engine serving this model on its devices (options.devices is the model's); the model
    // must outlive it.
    std::unique_ptr<Engine> start_engine(EngineOptions options) const;

private:
    LoadedModel() = default;

    std::unique_ptr<MemoryLedger> memory_;  // the device's budget; outlives the model's reservation
    BackendKind backend_ = BackendKind::cpu;
    int devices_ = 1;
    std::unique_ptr<Model> model_;
    std::shared_ptr<const Tokenizer> tokenizer_;
    std::shared_ptr<const DevicePlacement> placement_;  // null for a metadata-only model
};

// The canvas of a prompt of `length` tokens followed by d.gen_length masks; prompt `index` of a
// batch. Throws INVALID_ARGUMENT for a negative length, a null prompt, a non-positive gen_length or
// a mask token in the prompt, TOO_LONG beyond the model's positions.
std::vector<int32_t> prompt_canvas(const ModelSpec& spec, const DecodeParams& d, const int32_t* prompt, int64_t length,
                                   size_t index);

}  // namespace unmask
