#include "format/dtype.hpp"

namespace unmask {
namespace {

struct DTypeFacts {
    DType dtype;
    std::string_view name;
    uint32_t block_elements;  // 1 for the plain types
    uint32_t block_bytes;     // the element's size for the plain types
    bool safetensors;
};

// The block layouts are ggml's (format/gguf.cpp's table, which the tests check this against).
constexpr DTypeFacts facts[] = {
    {DType::f32, "F32", 1, 4, true},         {DType::f16, "F16", 1, 2, true},      {DType::bf16, "BF16", 1, 2, true},
    {DType::i64, "I64", 1, 8, true},         {DType::i32, "I32", 1, 4, true},      {DType::u8, "U8", 1, 1, true},
    {DType::f8_e4m3, "F8_E4M3", 1, 1, true}, {DType::q8_0, "Q8_0", 32, 34, false}, {DType::q4_0, "Q4_0", 32, 18, false},
    {DType::q4_k, "Q4_K", 256, 144, false},  {DType::q5_k, "Q5_K", 256, 176, false}, {DType::q6_k, "Q6_K", 256, 210, false},
    {DType::f8_e4m3_b128, "F8_E4M3_B128", 128, 132, false},
};

const DTypeFacts* facts_of(DType dtype) noexcept {
    for (const auto& f : facts)
        if (f.dtype == dtype) return &f;
    return nullptr;
}

}  // namespace

std::string_view dtype_name(DType dtype) noexcept {
    const DTypeFacts* f = facts_of(dtype);
    return f ? f->name : "?";
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
    for (const auto& f : facts)
        if (f.safetensors && f.name == name) return f.dtype;
    return std::nullopt;
}

size_t dtype_size(DType dtype) noexcept {
    const DTypeFacts* f = facts_of(dtype);
    return f && f->block_elements == 1 ? f->block_bytes : 0;
}

uint64_t dtype_bytes(DType dtype, uint64_t elements) noexcept {
    const DTypeFacts* f = facts_of(dtype);
    return f ? elements / f->block_elements * f->block_bytes : 0;
}

bool is_quantized_dtype(DType dtype) noexcept { return dtype_block_elements(dtype) > 1; }

uint32_t dtype_block_elements(DType dtype) noexcept {
    const DTypeFacts* f = facts_of(dtype);
    return f ? f->block_elements : 1;
}

bool is_float_weight_dtype(DType dtype) noexcept {
    return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

}  // namespace unmask
