// The public structs are part of the ABI: their sizes and field offsets are frozen (LP64 values;
// these are what the Rust and Python bindings hard-code). A failing assert here means the ABI
// changed: append fields instead, and bump UNMASK_ABI_VERSION_MINOR.
#include <doctest/doctest.h>

#include <cstddef>

#include "unmask.h"

static_assert(sizeof(void*) == 8, "the layout table below is for LP64 targets");

static_assert(offsetof(unmask_model_params, struct_size) == 0);
static_assert(offsetof(unmask_model_params, precision) == 4);
static_assert(offsetof(unmask_model_params, checksum_mode) == 8);
static_assert(offsetof(unmask_model_params, backend) == 12);
static_assert(offsetof(unmask_model_params, log_callback) == 16);
static_assert(offsetof(unmask_model_params, log_user_data) == 24);
static_assert(offsetof(unmask_model_params, log_level) == 32);
static_assert(offsetof(unmask_model_params, metadata_only) == 36);
static_assert(offsetof(unmask_model_params, progress_callback) == 40);
static_assert(offsetof(unmask_model_params, progress_user_data) == 48);
static_assert(offsetof(unmask_model_params, memory_budget_bytes) == 56);  // ABI 1.1
static_assert(offsetof(unmask_model_params, memory_fraction) == 64);
static_assert(offsetof(unmask_model_params, memory_margin) == 72);
static_assert(offsetof(unmask_model_params, device) == 80);  // ABI 1.4
static_assert(offsetof(unmask_model_params, quantize_embeddings) == 88);  // ABI 1.11
static_assert(offsetof(unmask_model_params, device_ids) == 96);  // ABI 1.13
static_assert(offsetof(unmask_model_params, devices) == 104);
static_assert(sizeof(unmask_model_params) == 112);

static_assert(offsetof(unmask_model_description, struct_size) == 0);
static_assert(offsetof(unmask_model_description, precision) == 4);
static_assert(offsetof(unmask_model_description, architecture) == 8);
static_assert(offsetof(unmask_model_description, parameters_total) == 16);
static_assert(offsetof(unmask_model_description, parameters_active) == 24);
static_assert(offsetof(unmask_model_description, weight_bytes) == 32);
static_assert(offsetof(unmask_model_description, vocab_size) == 40);
static_assert(offsetof(unmask_model_description, layers) == 48);
static_assert(offsetof(unmask_model_description, hidden_size) == 52);
static_assert(offsetof(unmask_model_description, attention_heads) == 56);
static_assert(offsetof(unmask_model_description, kv_heads) == 60);
static_assert(offsetof(unmask_model_description, head_dim) == 64);
static_assert(offsetof(unmask_model_description, experts) == 68);
static_assert(offsetof(unmask_model_description, experts_per_token) == 72);
static_assert(offsetof(unmask_model_description, mask_token_id) == 76);
static_assert(offsetof(unmask_model_description, max_sequence_length) == 80);
static_assert(offsetof(unmask_model_description, tensor_count) == 88);
static_assert(offsetof(unmask_model_description, checksums_verified) == 96);
static_assert(offsetof(unmask_model_description, eos_token_id) == 100);
static_assert(offsetof(unmask_model_description, diffusion_block_size) == 104);
static_assert(offsetof(unmask_model_description, fingerprint) == 112);  // ABI 1.12
static_assert(sizeof(unmask_model_description) == 120);

static_assert(offsetof(unmask_tensor_description, struct_size) == 0);
static_assert(offsetof(unmask_tensor_description, dtype) == 4);
static_assert(offsetof(unmask_tensor_description, name) == 8);
static_assert(offsetof(unmask_tensor_description, component) == 16);
static_assert(offsetof(unmask_tensor_description, file_dtype) == 24);
static_assert(offsetof(unmask_tensor_description, dims) == 28);
static_assert(offsetof(unmask_tensor_description, shape) == 32);
static_assert(offsetof(unmask_tensor_description, bytes) == 96);
static_assert(sizeof(unmask_tensor_description) == 104);

static_assert(offsetof(unmask_memory_usage, struct_size) == 0);
static_assert(offsetof(unmask_memory_usage, backend) == 4);
static_assert(offsetof(unmask_memory_usage, capacity) == 8);
static_assert(offsetof(unmask_memory_usage, reserved) == 16);
static_assert(offsetof(unmask_memory_usage, in_use) == 24);
static_assert(offsetof(unmask_memory_usage, peak_reserved) == 32);
static_assert(offsetof(unmask_memory_usage, peak_in_use) == 40);
static_assert(sizeof(unmask_memory_usage) == 48);

static_assert(offsetof(unmask_plan_params, struct_size) == 0);
static_assert(offsetof(unmask_plan_params, precision) == 4);
static_assert(offsetof(unmask_plan_params, backend) == 8);
static_assert(offsetof(unmask_plan_params, devices) == 12);
static_assert(offsetof(unmask_plan_params, threads) == 16);
static_assert(offsetof(unmask_plan_params, kv_cache) == 20);
static_assert(offsetof(unmask_plan_params, cfg) == 24);
static_assert(offsetof(unmask_plan_params, max_concurrent) == 28);
static_assert(offsetof(unmask_plan_params, memory_budget_bytes) == 32);
static_assert(offsetof(unmask_plan_params, memory_fraction) == 40);
static_assert(offsetof(unmask_plan_params, memory_margin) == 48);
static_assert(offsetof(unmask_plan_params, device_memory_bytes) == 56);
static_assert(offsetof(unmask_plan_params, max_sequence_length) == 64);
static_assert(offsetof(unmask_plan_params, kv_cache_precision) == 72);  // ABI 1.5
static_assert(offsetof(unmask_plan_params, quantize_embeddings) == 80);  // ABI 1.11
static_assert(sizeof(unmask_plan_params) == 88);

static_assert(offsetof(unmask_memory_plan, struct_size) == 0);
static_assert(offsetof(unmask_memory_plan, fits) == 4);
static_assert(offsetof(unmask_memory_plan, devices) == 8);
static_assert(offsetof(unmask_memory_plan, max_concurrent) == 12);
static_assert(offsetof(unmask_memory_plan, max_sequence_length) == 16);
static_assert(offsetof(unmask_memory_plan, sequences_per_device) == 24);
static_assert(offsetof(unmask_memory_plan, device_memory) == 32);
static_assert(offsetof(unmask_memory_plan, budget) == 40);
static_assert(offsetof(unmask_memory_plan, margin) == 48);
static_assert(offsetof(unmask_memory_plan, usable) == 56);
static_assert(offsetof(unmask_memory_plan, weights) == 64);
static_assert(offsetof(unmask_memory_plan, weights_by_component) == 72);
static_assert(offsetof(unmask_memory_plan, sequence_state) == 136);
static_assert(offsetof(unmask_memory_plan, dynamic) == 144);
static_assert(offsetof(unmask_memory_plan, scratch) == 152);
static_assert(offsetof(unmask_memory_plan, required) == 160);
static_assert(offsetof(unmask_memory_plan, weights_total) == 168);
static_assert(offsetof(unmask_memory_plan, parameters_total) == 176);
static_assert(offsetof(unmask_memory_plan, max_concurrent_at_length) == 184);
static_assert(offsetof(unmask_memory_plan, max_length_at_concurrency) == 192);
static_assert(sizeof(unmask_memory_plan) == 200);

static_assert(offsetof(unmask_generate_params, step_user_data) == 160);
static_assert(offsetof(unmask_generate_params, timeout_seconds) == 168);  // ABI 1.1
static_assert(offsetof(unmask_generate_params, stream_callback) == 176);
static_assert(offsetof(unmask_generate_params, stream_user_data) == 184);
static_assert(offsetof(unmask_generate_params, stream_steps) == 192);
static_assert(offsetof(unmask_generate_params, cache_mode) == 196);
static_assert(offsetof(unmask_generate_params, cache_refresh_steps) == 200);
static_assert(offsetof(unmask_generate_params, cache_vicinity) == 208);
static_assert(offsetof(unmask_generate_params, cache_precision) == 216);  // ABI 1.5
static_assert(offsetof(unmask_generate_params, edit_threshold) == 224);   // ABI 1.9
static_assert(offsetof(unmask_generate_params, max_post_edit_steps) == 232);
static_assert(sizeof(unmask_generate_params) == 240);

static_assert(offsetof(unmask_stream_event, kind) == 4);
static_assert(offsetof(unmask_stream_event, request_id) == 8);
static_assert(offsetof(unmask_stream_event, step) == 16);
static_assert(offsetof(unmask_stream_event, completed_blocks) == 24);
static_assert(offsetof(unmask_stream_event, committed) == 32);
static_assert(offsetof(unmask_stream_event, tokens) == 40);
static_assert(offsetof(unmask_stream_event, token_count) == 48);
static_assert(sizeof(unmask_stream_event) == 56);

// ABI 1.6
static_assert(offsetof(unmask_parameter_info, type) == 4);
static_assert(offsetof(unmask_parameter_info, name) == 8);
static_assert(offsetof(unmask_parameter_info, doc) == 16);
static_assert(offsetof(unmask_parameter_info, default_value) == 24);
static_assert(offsetof(unmask_parameter_info, choices) == 32);
static_assert(offsetof(unmask_parameter_info, minimum) == 40);
static_assert(offsetof(unmask_parameter_info, maximum) == 48);
static_assert(offsetof(unmask_parameter_info, minimum_exclusive) == 56);
static_assert(offsetof(unmask_parameter_info, maximum_exclusive) == 60);
static_assert(sizeof(unmask_parameter_info) == 64);

// ABI 1.8
static_assert(offsetof(unmask_chat_message, reserved) == 4);
static_assert(offsetof(unmask_chat_message, role) == 8);
static_assert(offsetof(unmask_chat_message, content) == 16);
static_assert(offsetof(unmask_chat_message, tool_calls) == 24);
static_assert(offsetof(unmask_chat_message, tool_call_id) == 32);
static_assert(offsetof(unmask_chat_message, name) == 40);
static_assert(sizeof(unmask_chat_message) == 48);

static_assert(offsetof(unmask_engine_params, max_concurrent_requests) == 4);
static_assert(offsetof(unmask_engine_params, max_queued_requests) == 8);
static_assert(offsetof(unmask_engine_params, threads) == 12);
static_assert(offsetof(unmask_engine_params, max_sequence_length) == 16);
static_assert(offsetof(unmask_engine_params, max_tokens_per_forward) == 24);
static_assert(offsetof(unmask_engine_params, request_timeout_seconds) == 32);
static_assert(offsetof(unmask_engine_params, min_steps) == 40);
static_assert(offsetof(unmask_engine_params, max_steps) == 48);
static_assert(offsetof(unmask_engine_params, log_callback) == 56);
static_assert(offsetof(unmask_engine_params, log_user_data) == 64);
static_assert(offsetof(unmask_engine_params, log_level) == 72);
static_assert(sizeof(unmask_engine_params) == 80);

static_assert(offsetof(unmask_request_info, state) == 4);
static_assert(offsetof(unmask_request_info, request_id) == 8);
static_assert(offsetof(unmask_request_info, finish_reason) == 16);
static_assert(offsetof(unmask_request_info, error_status) == 20);
static_assert(offsetof(unmask_request_info, token_count) == 24);
static_assert(offsetof(unmask_request_info, steps) == 32);
static_assert(offsetof(unmask_request_info, forwards) == 40);
static_assert(offsetof(unmask_request_info, queue_seconds) == 48);
static_assert(offsetof(unmask_request_info, compute_seconds) == 56);
static_assert(offsetof(unmask_request_info, first_block_seconds) == 64);
static_assert(offsetof(unmask_request_info, end_to_end_seconds) == 72);
static_assert(sizeof(unmask_request_info) == 80);

static_assert(offsetof(unmask_engine_stats, health) == 4);
static_assert(offsetof(unmask_engine_stats, requests_running) == 8);
static_assert(offsetof(unmask_engine_stats, requests_waiting) == 16);
static_assert(offsetof(unmask_engine_stats, requests_submitted) == 24);
static_assert(offsetof(unmask_engine_stats, requests_rejected) == 32);
static_assert(offsetof(unmask_engine_stats, finished) == 40);
static_assert(offsetof(unmask_engine_stats, steps_total) == 88);
static_assert(offsetof(unmask_engine_stats, forwards_total) == 96);
static_assert(offsetof(unmask_engine_stats, generation_tokens_total) == 104);
static_assert(offsetof(unmask_engine_stats, prompt_tokens_total) == 112);
static_assert(offsetof(unmask_engine_stats, queue_seconds_p50) == 120);
static_assert(offsetof(unmask_engine_stats, end_to_end_seconds_p99) == 184);
static_assert(offsetof(unmask_engine_stats, memory_capacity) == 192);
static_assert(offsetof(unmask_engine_stats, memory_peak_in_use) == 224);
static_assert(offsetof(unmask_engine_stats, max_tokens_per_forward) == 232);
static_assert(sizeof(unmask_engine_stats) == 240);

static_assert(offsetof(unmask_service_config, request_timeout_seconds) == 16);
static_assert(offsetof(unmask_service_config, weights_path) == 24);
static_assert(offsetof(unmask_service_config, precision) == 4120);
static_assert(offsetof(unmask_service_config, max_sequence_length) == 4128);
static_assert(offsetof(unmask_service_config, memory_fraction) == 4152);
static_assert(offsetof(unmask_service_config, log_rotation_size_mb) == 4164);
static_assert(offsetof(unmask_service_config, bind_address) == 4168);  // ABI 1.3: the server section
static_assert(offsetof(unmask_service_config, api_key_file) == 4680);
static_assert(offsetof(unmask_service_config, rate_limit_per_second) == 8776);
static_assert(offsetof(unmask_service_config, max_body_bytes) == 8792);
static_assert(offsetof(unmask_service_config, tls_private_key) == 12896);
static_assert(offsetof(unmask_service_config, drain_timeout_seconds) == 16992);
static_assert(offsetof(unmask_service_config, log_file) == 17000);
static_assert(offsetof(unmask_service_config, log_prompts) == 21096);
static_assert(offsetof(unmask_service_config, gpu_device) == 21100);  // ABI 1.4
static_assert(offsetof(unmask_service_config, quantize_embeddings) == 21104);  // ABI 1.11
static_assert(offsetof(unmask_service_config, cpu_devices) == 21108);  // ABI 1.13
static_assert(offsetof(unmask_service_config, gpu_devices) == 21112);
static_assert(sizeof(unmask_service_config) == 21368);

static_assert(UNMASK_OK == 0 && UNMASK_ERR_INVALID_ARGUMENT == 1 && UNMASK_ERR_UNSUPPORTED == 2 &&
              UNMASK_ERR_MODEL_FORMAT == 3 && UNMASK_ERR_IO == 4 && UNMASK_ERR_OUT_OF_BUDGET == 5 &&
              UNMASK_ERR_QUEUE_FULL == 6 && UNMASK_ERR_TIMEOUT == 7 && UNMASK_ERR_CANCELLED == 8 &&
              UNMASK_ERR_TOO_LONG == 9 && UNMASK_ERR_SHUTTING_DOWN == 10 && UNMASK_ERR_DEVICE == 11 &&
              UNMASK_ERR_INTERNAL == 12,
              "status codes are frozen");

TEST_CASE("public struct layouts are frozen (checked at compile time)") {
    CHECK(sizeof(unmask_model_params) == 112);
    CHECK(sizeof(unmask_memory_usage) == 48);
    CHECK(sizeof(unmask_plan_params) == 88);
    CHECK(sizeof(unmask_memory_plan) == 200);
    CHECK(sizeof(unmask_generate_params) == 240);
    CHECK(sizeof(unmask_engine_params) == 80);
    CHECK(sizeof(unmask_request_info) == 80);
    CHECK(sizeof(unmask_engine_stats) == 240);
    CHECK(sizeof(unmask_model_description) == 120);
    CHECK(sizeof(unmask_tensor_description) == 104);
}
