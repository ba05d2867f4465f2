// Where a model handle's work runs: the CPU, or the GPU its weights were placed on when loaded.
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "handles.hpp"

namespace unmask::capi {

// Throws UNSUPPORTED unless `backend`'s device `device` can run models here (always true for
// the CPU; for CUDA: a build with CUDA and a machine with that GPU). Checked before a load reads
// any weights.
void require_device(BackendKind backend, int device);

// The total memory of `backend`'s device `device` (what a memory fraction is of); 0 for the CPU
// or an absent GPU, which the memory plan then asks about itself.
uint64_t device_memory_bytes(BackendKind backend, int device);

// Copies the weights of a model loaded for the CUDA backend to GPU `device` (their bytes are the
// reservation the load made in the model's ledger); nothing for the CPU or a metadata-only model.
void place_weights(unmask_model& model, int device);

// A backend on the model's device for one generation or engine, charging its workspace to `scratch`.
std::unique_ptr<Backend> make_model_backend(const unmask_model& model, int threads, MemoryLedger& scratch);

}  // namespace unmask::capi
