// unmask_plan: the memory planner behind the C API.
#include <algorithm>
#include <cstring>
#include <thread>

#include "boundary.hpp"
#include "generate_params.hpp"
#include "memory/memory_plan.hpp"
#include "memory_params.hpp"
#include "weight_params.hpp"

using namespace unmask;
using namespace unmask::capi;

namespace {

unmask_plan_params default_plan_params() {
    unmask_plan_params p{};
    p.struct_size = sizeof p;
    p.precision = UNMASK_PRECISION_AUTO;
    p.backend = UNMASK_BACKEND_CPU;
    p.devices = 1;
    p.max_concurrent = 1;
    p.memory_fraction = 1.0;
    p.memory_margin = 0.10;
    p.kv_cache_precision = UNMASK_PRECISION_FP32;
    return p;
}

PlanRequest to_plan_request(const unmask_plan_params& p) {
    PlanRequest r;
    const WeightPrecision weights = read_weight_precision(p.precision, p.reserved, p.quantize_embeddings);
    r.precision = weights.precision;
    r.quantize_embeddings = weights.quantize_embeddings;
    r.backend = static_cast<BackendKind>(
        require_one_of(p.backend, {UNMASK_BACKEND_CPU, UNMASK_BACKEND_CUDA}, "params->backend"));
    r.sequence.kv_cache = require_one_of(p.kv_cache, {0, 1}, "params->kv_cache") == 1;
    r.sequence.cfg = require_one_of(p.cfg, {0, 1}, "params->cfg") == 1;
    r.sequence.cache_precision = cache_element_type(p.kv_cache_precision, "params->kv_cache_precision");
    if (!r.sequence.kv_cache && r.sequence.cache_precision != DType::f32)
        fail(Status::invalid_argument, "params->kv_cache_precision BF16 needs params->kv_cache = 1");
    if (p.threads < 0) fail(Status::invalid_argument, "params->threads must not be negative, got {}", p.threads);
    r.threads = p.threads > 0 ? p.threads : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 1024u));
    r.devices = p.devices;
    r.max_concurrent = p.max_concurrent;
    if (p.max_sequence_length < 0)
        fail(Status::invalid_argument, "params->max_sequence_length must not be negative, got {}", p.max_sequence_length);
    r.max_sequence_length = p.max_sequence_length;
    const MemoryBudget budget = read_budget(p.memory_budget_bytes, p.memory_fraction, p.memory_margin, "params");
    r.budget_bytes = budget.bytes;
    r.memory_fraction = budget.fraction;
    r.margin = budget.margin;
    r.device_memory_bytes = p.device_memory_bytes;
    return r;
}

}  // namespace

// Parenthesised: the header makes the name a macro for the sized form.
extern "C" unmask_status(unmask_plan_params_init)(unmask_plan_params* params) {
    return guarded(__func__, [&] { write_defaults(params, plan_params_v1_3_size, default_plan_params(), plan_params_v1_size); });
}

extern "C" unmask_status unmask_plan_params_init_sized(unmask_plan_params* params, size_t size) {
    return guarded(__func__, [&] { write_defaults(params, size, default_plan_params(), plan_params_v1_size); });
}

extern "C" unmask_status unmask_plan(const char* path, const unmask_plan_params* params, unmask_memory_plan* plan) {
    return guarded(__func__, [&] {
        require_not_null(path, "path");
        const size_t size = writable_size(plan, "plan", memory_plan_v1_size);
        const auto request = to_plan_request(read_params(params, "params", default_plan_params(), plan_params_v1_size));
        const MemoryPlan m = plan_memory(path, request);
        unmask_memory_plan out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.fits = m.fits ? 1 : 0;
        out.devices = static_cast<int32_t>(m.devices);
        out.max_concurrent = static_cast<int32_t>(m.max_concurrent);
        out.max_sequence_length = m.max_sequence_length;
        out.sequences_per_device = m.sequences_per_device;
        out.device_memory = m.device_memory;
        out.budget = m.budget;
        out.margin = m.margin;
        out.usable = m.usable;
        out.weights = m.weights;
        std::copy(m.weights_by_component.begin(), m.weights_by_component.end(), out.weights_by_component);
        out.sequence_state = m.sequence_state;
        out.dynamic = m.dynamic;
        out.scratch = m.scratch;
        out.required = m.required;
        out.weights_total = m.weights_total;
        out.parameters_total = m.parameters_total;
        out.max_concurrent_at_length = m.max_concurrent_at_length;
        out.max_length_at_concurrency = m.max_length_at_concurrency;
        std::memcpy(plan, &out, size);
    });
}
