#include "format/dtype.hpp"

namespace unmask {
namespace {

struct DTypeFacts {
    DType dtype;
    std::string_view name;
    size_t size;
};

constexpr DTypeFacts facts[] = {
    {DType::f32, "F32", 4}, {DType::f16, "F16", 2}, {DType::bf16, "BF16", 2},      {DType::i64, "I64", 8},
    {DType::i32, "I32", 4}, {DType::u8, "U8", 1},   {DType::f8_e4m3, "F8_E4M3", 1},
};

}  // namespace

std::string_view dtype_name(DType dtype) noexcept {
    for (const auto& f : facts)
        if (f.dtype == dtype) return f.name;
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
    for (const auto& f : facts)
        if (f.name == name) return f.dtype;
    return std::nullopt;
}

size_t dtype_size(DType dtype) noexcept {
    for (const auto& f : facts)
        if (f.dtype == dtype) return f.size;
    return 0;
}

bool is_float_weight_dtype(DType dtype) noexcept {
    return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

}  // namespace unmask
