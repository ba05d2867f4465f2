// Element types of tensors in model files (safetensors names) and in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace unmask {

enum class DType : int32_t { f32, f16, bf16, i64, i32, u8, f8_e4m3 };

// "F32", "BF16", ...: the safetensors spelling.
std::string_view dtype_name(DType dtype) noexcept;
std::optional<DType> parse_dtype(std::string_view name) noexcept;
size_t dtype_size(DType dtype) noexcept;
// Whether weights of this dtype can be used by the forward pass (after conversion if needed).
bool is_float_weight_dtype(DType dtype) noexcept;

}  // namespace unmask
