// A GPU this process can no longer use. After a kernel faults (an illegal address, a trap, an
// uncorrectable ECC error) the CUDA context of the process is corrupt: every later call on that
// device returns the same error, so retrying only repeats it. The first such error marks the
// device lost; from then on every CUDA backend on it throws DeviceLost at once, without calling
// CUDA, and an engine that meets it fails (Health::failed) instead of scheduling more steps.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>
#include <string>

namespace unmask::cuda {

// Whether `error` leaves the process's context on its device unusable (CUDA's "sticky" errors).
bool corrupts_context(cudaError_t error) noexcept;

// Records that `device` was lost, with the first error's description (later ones are dropped).
void mark_device_lost(int device, const std::string& reason);
// The first error that lost `device`, if it was lost.
std::optional<std::string> device_lost(int device);

}  // namespace unmask::cuda
