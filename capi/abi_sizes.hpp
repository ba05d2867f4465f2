// The sizes of the C ABI's structs as the published 1.x versions defined them, in one table: the
// least struct_size a call accepts (a caller built against that header passes it) and what the
// unsized initialisers write. Literals, so appending a field to a struct never changes them; each
// struct of the header is at least as large as every size it ever had.
#pragma once

#include <cstddef>

#include "unmask.h"

namespace unmask::capi {

// The first size of every struct: ABI 1.0's for the model, tensor and generation structs, 1.1's
// for those 1.1 added (memory usage, plans, engines, requests, service configurations).
inline constexpr size_t model_params_v1_size = 56, model_description_v1_size = 104, tensor_description_v1_size = 104,
                        memory_usage_v1_size = 48, generate_params_v1_size = 168, generation_v1_size = 48,
                        plan_params_v1_size = 72, memory_plan_v1_size = 200, engine_params_v1_size = 80,
                        request_info_v1_size = 80, engine_stats_v1_size = 240, service_config_v1_size = 4168;
// ABI 1.1's unmask_generate_params was 200 bytes; 1.2 appended the cache fields, the first of them
// (cache_mode, at 196) inside 1.1's tail padding: a 1.1 caller's struct_size covers it, but not
// its value.
inline constexpr size_t generate_params_v1_1_size = 200, generate_params_v1_2_size = 216;
// ABI 1.3: the sizes the unsized initialisers keep writing (for programs built against headers
// before 1.4, when they were functions).
inline constexpr size_t model_params_v1_3_size = 80, plan_params_v1_3_size = 72, generate_params_v1_3_size = 216,
                        engine_params_v1_3_size = 80;

// ABI 1.6's unmask_parameter_info; 1.8's unmask_chat_message.
inline constexpr size_t parameter_info_v1_size = 64, chat_message_v1_size = 48;
static_assert(sizeof(unmask_chat_message) >= chat_message_v1_size);

static_assert(sizeof(unmask_model_params) >= model_params_v1_3_size && model_params_v1_3_size >= model_params_v1_size);
static_assert(sizeof(unmask_model_description) >= model_description_v1_size);
static_assert(sizeof(unmask_tensor_description) >= tensor_description_v1_size);
static_assert(sizeof(unmask_memory_usage) >= memory_usage_v1_size);
static_assert(sizeof(unmask_generate_params) >= generate_params_v1_3_size &&
              generate_params_v1_3_size >= generate_params_v1_2_size &&
              generate_params_v1_2_size > generate_params_v1_1_size &&
              generate_params_v1_1_size > generate_params_v1_size);
static_assert(sizeof(unmask_generation) >= generation_v1_size);
static_assert(sizeof(unmask_plan_params) >= plan_params_v1_3_size && plan_params_v1_3_size >= plan_params_v1_size);
static_assert(sizeof(unmask_memory_plan) >= memory_plan_v1_size);
static_assert(sizeof(unmask_engine_params) >= engine_params_v1_3_size && engine_params_v1_3_size >= engine_params_v1_size);
static_assert(sizeof(unmask_request_info) >= request_info_v1_size);
static_assert(sizeof(unmask_engine_stats) >= engine_stats_v1_size);
static_assert(sizeof(unmask_service_config) >= service_config_v1_size);
static_assert(sizeof(unmask_parameter_info) >= parameter_info_v1_size);

}  // namespace unmask::capi
