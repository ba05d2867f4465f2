// The devices backends compute on, as this build and this machine have them: asked by the
// memory planner (what a memory fraction is of) and by the runtime (where a model may load).
#pragma once

#include <cstdint>

#include "backend/types.hpp"

namespace unmask {

// Whether `kind`'s device `device` can run models here: always for the CPU; for CUDA, a build
// with CUDA and a machine with that GPU.
bool has_device(BackendKind kind, int device);

// Throws UNSUPPORTED, saying why, unless has_device(kind, device).
void require_device(BackendKind kind, int device);

// The total memory of `kind`'s device `device` (system memory for the CPU). Throws UNSUPPORTED
// when there is no such device.
uint64_t device_memory_bytes(BackendKind kind, int device);

}  // namespace unmask
