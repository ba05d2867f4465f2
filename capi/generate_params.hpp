// unmask_generate_params <-> DecodeParams, shared by synchronous generation and the engine.
#pragma once

#include <cstdint>

#include "abi_sizes.hpp"
#include "decode/decode_params.hpp"
#include "unmask.h"

namespace unmask::capi {

// Every field at its parameter's default (decode/generation_parameters.hpp), struct_size sizeof.
unmask_generate_params default_generate_params();
// A K/V cache's UNMASK_PRECISION_* (FP32 or BF16) as its element type; INVALID_ARGUMENT naming
// `name` for any other value.
DType cache_element_type(int32_t precision, const char* name);
// INVALID_ARGUMENT naming the field for unknown enum values and out-of-range numbers.
DecodeParams to_decode_params(const unmask_generate_params& params);

}  // namespace unmask::capi
