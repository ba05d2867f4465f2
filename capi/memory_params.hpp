// The memory budget fields shared by unmask_model_params and unmask_plan_params.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/error.hpp"
#include "memory/memory_plan.hpp"

namespace unmask::capi {

// A byte budget alone is taken as given; the fraction applies below 1 or when no bytes are given.
inline MemoryBudget read_budget(int64_t bytes, double fraction, double margin, const char* owner) {
    if (bytes < 0) fail(Status::invalid_argument, "{}->memory_budget_bytes must not be negative, got {}", owner, bytes);
    if (!(fraction > 0.0 && fraction <= 1.0))
        fail(Status::invalid_argument, "{}->memory_fraction must be in (0, 1], got {}", owner, fraction);
    if (!(margin >= 0.0 && margin < 1.0))
        fail(Status::invalid_argument, "{}->memory_margin must be in [0, 1), got {}", owner, margin);
    MemoryBudget budget;
    if (bytes > 0) budget.bytes = static_cast<uint64_t>(bytes);
    if (fraction < 1.0 || bytes == 0) budget.fraction = fraction;
    budget.margin = margin;
    return budget;
}

}  // namespace unmask::capi
