// What the CUDA runtime and NCCL of this build report. Works on machines without a GPU or driver:
// a missing driver is zero devices, not an error.
#pragma once

#include <cstdint>
#include <string>

namespace unmask::cuda {

struct DeviceMemory {
    uint64_t free_bytes = 0;
    uint64_t total_bytes = 0;
};

// Number of usable CUDA devices; 0 when there is no driver or no device.
int device_count() noexcept;

// Free and total memory of a device; throws Error(DEVICE) naming the device and the CUDA error.
DeviceMemory device_memory(int device);

// The NCCL version as "major.minor.patch", or "" when this build has no NCCL.
std::string nccl_version();

}  // namespace unmask::cuda
