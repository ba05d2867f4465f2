// How a weight's elements are stored, as every backend's kernels read them (C++17, so the CUDA
// kernels share it). lib/backend's element_type() maps a model's DType onto it.
#pragma once

#include <cstdint>

#include "host_device.hpp"

namespace unmask::kernels {

enum class ElementType : int32_t { f32 = 0, bf16 = 1, f16 = 2 };

// Bytes of one element.
UNMASK_HOST_DEVICE constexpr int64_t element_bytes(ElementType type) { return type == ElementType::f32 ? 4 : 2; }

}  // namespace unmask::kernels
