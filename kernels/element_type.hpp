// How a weight's elements are stored, as every backend's kernels read them (C++17, so the CUDA
// kernels share it). lib/backend's element_type() maps a model's DType onto it.
//
// The quantized types are block formats: a row is a sequence of blocks, each `block_elements`
// consecutive elements of the row in `block_bytes` bytes (kernels/cpu/dequantize.cpp describes each
// layout). Q8_0 to Q6_K are ggml's, as GGUF files hold them; F8_E4M3_B128 is unmask's own form of
// an fp8 checkpoint's weights: each run of 128 FP8 E4M3 values of a row with the fp32 scale it is
// multiplied by, so per-tensor and 128x128 block scales (or fp8 made at load) read alike.
#pragma once

#include <cstdint>
#include <type_traits>

#include "host_device.hpp"

namespace unmask::kernels {

enum class ElementType : int32_t { f32 = 0, bf16 = 1, f16 = 2, q8_0 = 3, q4_0 = 4, q4_k = 5, q5_k = 6, q6_k = 7, f8_e4m3_b128 = 8 };

// Elements per block and bytes per block (1 and the element's size for the float types).
UNMASK_HOST_DEVICE constexpr int64_t block_elements(ElementType type) {
    return type == ElementType::q8_0 || type == ElementType::q4_0 ? 32
           : type == ElementType::q4_k || type == ElementType::q5_k || type == ElementType::q6_k ? 256
           : type == ElementType::f8_e4m3_b128                                                  ? 128
                                                                                                : 1;
}
UNMASK_HOST_DEVICE constexpr int64_t block_bytes(ElementType type) {
    switch (type) {
        case ElementType::f32: return 4;
        case ElementType::bf16: return 2;
        case ElementType::f16: return 2;
        case ElementType::q8_0: return 34;   // fp16 scale, 32 int8
        case ElementType::q4_0: return 18;   // fp16 scale, 32 nibbles
        case ElementType::q4_k: return 144;  // fp16 d and dmin, 12 bytes of scales, 256 nibbles
        case ElementType::q5_k: return 176;  // as Q4_K with 32 bytes of fifth bits
        case ElementType::q6_k: return 210;  // 128 + 64 bytes of quants, 16 scales, fp16 d
        case ElementType::f8_e4m3_b128: return 132;  // fp32 scale, 128 fp8
    }
    return 0;
}
UNMASK_HOST_DEVICE constexpr bool is_quantized(ElementType type) { return block_elements(type) > 1; }

// Bytes of one element of a float type (a quantized type has no whole size: use row_bytes).
UNMASK_HOST_DEVICE constexpr int64_t element_bytes(ElementType type) { return type == ElementType::f32 ? 4 : 2; }

// Bytes of `elements` consecutive elements of a row (a whole number of blocks).
UNMASK_HOST_DEVICE constexpr int64_t row_bytes(ElementType type, int64_t elements) {
    return elements / block_elements(type) * block_bytes(type);
}

// f(std::integral_constant<ElementType, type>{}): a function templated on the element type, called
// for a type known at run time.
template <typename F>
decltype(auto) with_element_type(ElementType type, F&& f) {
    using E = ElementType;
    switch (type) {
        case E::bf16: return f(std::integral_constant<E, E::bf16>{});
        case E::f16: return f(std::integral_constant<E, E::f16>{});
        case E::q8_0: return f(std::integral_constant<E, E::q8_0>{});
        case E::q4_0: return f(std::integral_constant<E, E::q4_0>{});
        case E::q4_k: return f(std::integral_constant<E, E::q4_k>{});
        case E::q5_k: return f(std::integral_constant<E, E::q5_k>{});
        case E::q6_k: return f(std::integral_constant<E, E::q6_k>{});
        case E::f8_e4m3_b128: return f(std::integral_constant<E, E::f8_e4m3_b128>{});
        case E::f32: break;
    }
    return f(std::integral_constant<E, E::f32>{});
}

}  // namespace unmask::kernels
