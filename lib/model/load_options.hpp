// What a caller chooses when loading a model. Mirrors unmask_model_params in the C API.
#pragma once

#include <cstdint>
#include <functional>

#include "core/logging.hpp"
#include "memory/memory_ledger.hpp"

namespace unmask {

enum class Precision : int32_t { automatic = 0, fp32 = 1, bf16 = 2, fp16 = 3 };
enum class ChecksumMode : int32_t { if_present = 0, require = 1, skip = 2 };
enum class BackendKind : int32_t { cpu = 0, cuda = 1 };

// Called with bytes done and total; returns false to cancel the operation.
using ProgressFn = std::function<bool(uint64_t done, uint64_t total)>;

struct LoadOptions {
    Precision precision = Precision::automatic;
    ChecksumMode checksum_mode = ChecksumMode::if_present;
    BackendKind backend = BackendKind::cpu;
    bool metadata_only = false;  // read headers and bind shapes; touch no tensor data
    Logger logger;
    ProgressFn progress;
    // The device's ledger: the weights are reserved in it before any is read (OUT_OF_BUDGET when
    // they do not fit) and held until the model is freed. Null: not tracked. Must outlive the model.
    MemoryLedger* memory = nullptr;
};

}  // namespace unmask
