// unmask_generate_params <-> DecodeParams, shared by synchronous generation and the engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "decode/decode_params.hpp"
#include "unmask.h"

namespace unmask::capi {

// The size of the first published version (ABI 1.0): literal, so appending fields never raises
// the minimum a caller must pass.
inline constexpr size_t generate_params_v1_size = 168;
static_assert(sizeof(unmask_generate_params) >= generate_params_v1_size);
// ABI 1.1's struct was 200 bytes; 1.2 appended the cache fields, the first of them (cache_mode,
// at 196) inside 1.1's tail padding: a 1.1 caller's struct_size covers it, but not its value.
inline constexpr size_t generate_params_v1_1_size = 200;
inline constexpr size_t generate_params_v1_2_size = 216;

unmask_generate_params default_generate_params();
// A K/V cache's UNMASK_PRECISION_* (FP32 or BF16) as its element type; INVALID_ARGUMENT naming
// `name` for any other value.
DType cache_dtype(int32_t precision, const char* name);
// INVALID_ARGUMENT naming the field for unknown enum values and out-of-range numbers.
DecodeParams to_decode_params(const unmask_generate_params& params);
// The canvas of prompt `index`: its ids followed by gen_length masks. INVALID_ARGUMENT for a
// NULL or negative prompt or one holding the mask; TOO_LONG beyond the model's positions.
std::vector<int32_t> prompt_canvas(const ModelSpec& spec, const DecodeParams& params, const int32_t* prompt,
                                   int64_t length, size_t index);

}  // namespace unmask::capi
