// How a weight's elements are stored, as every backend's kernels read them (C++17, so the CUDA
// kernels share it). lib/backend's element_type() maps a model's DType onto it.
#pragma once

#include <cstdint>

namespace unmask::kernels {

enum class ElementType : int32_t { f32 = 0, bf16 = 1, f16 = 2 };

}  // namespace unmask::kernels
