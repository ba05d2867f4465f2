// Where a model's weights live for computing: in host memory for the CPU backend, or copied to
// one GPU. A placement makes the backends that compute with them, so that whoever runs a model
// (a generation, an engine) asks its placement for a backend instead of knowing the devices.
#pragma once

#include <memory>
#include <span>

#include "backend/backend.hpp"
#include "backend/types.hpp"
#include "core/memory_ledger.hpp"

namespace unmask {

class DevicePlacement {
public:
    virtual ~DevicePlacement() = default;
    virtual BackendKind kind() const noexcept = 0;
    // A backend on the placement's device with `threads` host threads (the CPU's; 1 suffices for a
    // GPU), charging its activations and workspace to `scratch`, which must outlive it.
    virtual std::unique_ptr<Backend> make_backend(int threads, MemoryLedger& scratch) const = 0;
};

struct PlacementOptions {
    BackendKind kind = BackendKind::cpu;
    int device = 0;
    // CUDA: record replayable work as CUDA graphs (CudaBackendOptions::graphs).
    bool cuda_graphs = true;
};

// The CPU placement: weights used where they are.
std::shared_ptr<const DevicePlacement> cpu_placement();

// Places `weights` (each with data, all outliving the result) as `options` asks: for the CPU,
// nothing moves; for CUDA, they are copied to the GPU (their bytes are already reserved in the
// device's ledger by the load). Throws UNSUPPORTED for a device this build or machine lacks,
// DEVICE or OUT_OF_BUDGET from the copy.
std::shared_ptr<const DevicePlacement> place_weights(std::span<const Weight> weights, const PlacementOptions& options);

}  // namespace unmask
