// Element type conversions on the device, used when weights are loaded at another precision
// than the file's.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace unmask::kernels::cuda {

// Widens n bfloat16 values (raw bits) to float32 on `stream`. Returns the launch status.
cudaError_t bf16_to_fp32(const uint16_t* source, float* destination, size_t n, cudaStream_t stream);

}  // namespace unmask::kernels::cuda
