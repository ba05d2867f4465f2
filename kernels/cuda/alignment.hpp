// The alignment the kernels' vector loads need (float4, or 8 bf16/fp16 elements): one test for
// the kernels' entries and the backend's dispatch.
#pragma once

#include <cstdint>

namespace unmask::kernels::cuda {

// Whether `p` starts on 16 bytes (nullptr does).
inline bool on_16_bytes(const void* p) noexcept { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace unmask::kernels::cuda
