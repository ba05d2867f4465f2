// The weight fields shared by unmask_model_params and unmask_plan_params: precision, the
// reserved word before quantize_embeddings, and quantize_embeddings.
#pragma once

#include <cstdint>

#include "boundary.hpp"
#include "model/load_options.hpp"

namespace unmask::capi {

struct WeightPrecision {
    Precision precision = Precision::automatic;
    bool quantize_embeddings = false;
};

inline WeightPrecision read_weight_precision(int32_t precision, int32_t reserved, int32_t quantize_embeddings) {
    WeightPrecision out;
    out.precision = static_cast<Precision>(require_one_of(
        precision, {UNMASK_PRECISION_AUTO, UNMASK_PRECISION_FP32, UNMASK_PRECISION_BF16, UNMASK_PRECISION_FP16,
                    UNMASK_PRECISION_INT8, UNMASK_PRECISION_Q4, UNMASK_PRECISION_FP8},
        "params->precision"));
    if (reserved != 0) fail(Status::invalid_argument, "params->reserved must be 0, got {}", reserved);
    out.quantize_embeddings = require_one_of(quantize_embeddings, {0, 1}, "params->quantize_embeddings") == 1;
    if (out.quantize_embeddings && !quantizes_at_load(out.precision))
        fail(Status::invalid_argument,
             "params->quantize_embeddings needs params->precision INT8, Q4 or FP8 (the precisions that quantize "
             "at load), got {}",
             unmask_enum_name(UNMASK_ENUM_PRECISION, precision));
    return out;
}

}  // namespace unmask::capi
