// Element types of tensors in model files (safetensors and GGUF names) and in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace unmask {

// The quantized types are block formats: ggml's (GGUF files) and F8_E4M3_B128, the blocks an fp8
// checkpoint's F8_E4M3 weights and their scales become at load (kernels/element_type.hpp).
enum class DType : int32_t { f32, f16, bf16, i64, i32, u8, f8_e4m3, q8_0, q4_0, q4_k, q5_k, q6_k, f8_e4m3_b128 };

// "F32", "BF16", "Q4_K", ...: the safetensors spelling, and llama.cpp's for the quantized types.
std::string_view dtype_name(DType dtype) noexcept;
// A safetensors dtype name (the quantized types are not safetensors types).
std::optional<DType> parse_dtype(std::string_view name) noexcept;
// Bytes of one element; 0 for a quantized type, which has no whole size (use dtype_bytes).
size_t dtype_size(DType dtype) noexcept;
// Bytes of `elements` consecutive elements (of one row, or whole rows, for a quantized type).
uint64_t dtype_bytes(DType dtype, uint64_t elements) noexcept;
bool is_quantized_dtype(DType dtype) noexcept;
// Elements per block: 1 for the plain types.
uint32_t dtype_block_elements(DType dtype) noexcept;
// Whether weights of this dtype can be used by the forward pass (after conversion if needed).
bool is_float_weight_dtype(DType dtype) noexcept;

}  // namespace unmask
