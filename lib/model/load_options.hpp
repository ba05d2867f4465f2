// What a caller chooses when loading a model. Mirrors unmask_model_params in the C API.
#pragma once

#include <cstdint>

#include "core/logging.hpp"
#include "backend/types.hpp"
#include "core/memory_ledger.hpp"
#include "core/progress.hpp"

namespace unmask {

// The most devices one model is shared among (tensor and expert parallelism; UNMASK_MAX_DEVICES).
inline constexpr int max_devices = 64;

enum class Precision : int32_t { automatic = 0, fp32 = 1, bf16 = 2, fp16 = 3, int8 = 4, q4 = 5, fp8 = 6 };
// The precisions that quantize matrices while loading (and, with quantize_embeddings, the
// embedding and LM head).
constexpr bool quantizes_at_load(Precision p) noexcept {
    return p == Precision::int8 || p == Precision::q4 || p == Precision::fp8;
}

enum class ChecksumMode : int32_t { if_present = 0, require = 1, skip = 2 };

struct LoadOptions {
    Precision precision = Precision::automatic;
    // At int8, q4 and fp8, quantize the embedding and the LM head too (see loaded_dtype).
    bool quantize_embeddings = false;
    ChecksumMode checksum_mode = ChecksumMode::if_present;
    BackendKind backend = BackendKind::cpu;
    bool metadata_only = false;  // read headers and bind shapes; touch no tensor data
    Logger logger = {};
    ProgressFn progress = {};
    // The device's ledger: the weights are reserved in it before any is read (OUT_OF_BUDGET when
    // they do not fit) and held until the model is freed. Null: not tracked. Must outlive the model.
    MemoryLedger* memory = nullptr;
    // For the CPU backend on one device: pack the matrices its bf16 kernel reads packed
    // (cpu_packs_panels) once, here, into Weight::panels, in place of the file's mapped pages,
    // which are dropped (the same bytes). Matrices converted while loading keep their one copy.
    bool cpu_panels = false;
};

}  // namespace unmask
