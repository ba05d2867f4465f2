//! Hand-written declarations of libunmask's C ABI (include/unmask.h, ABI 1.5): the constants,
//! the parameter and result structs laid out as the header's (the tests below check every size
//! and the offsets of the fields appended since ABI 1.0 against the values that
//! tests/unit/test_struct_layout.cpp freezes for the C header), and the functions.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_double, c_void};

pub type unmask_status = i32;
pub const UNMASK_OK: unmask_status = 0;
pub const UNMASK_ERR_INVALID_ARGUMENT: unmask_status = 1;
pub const UNMASK_ERR_UNSUPPORTED: unmask_status = 2;
pub const UNMASK_ERR_MODEL_FORMAT: unmask_status = 3;
pub const UNMASK_ERR_IO: unmask_status = 4;
pub const UNMASK_ERR_OUT_OF_BUDGET: unmask_status = 5;
pub const UNMASK_ERR_QUEUE_FULL: unmask_status = 6;
pub const UNMASK_ERR_TIMEOUT: unmask_status = 7;
pub const UNMASK_ERR_CANCELLED: unmask_status = 8;
pub const UNMASK_ERR_TOO_LONG: unmask_status = 9;
pub const UNMASK_ERR_SHUTTING_DOWN: unmask_status = 10;
pub const UNMASK_ERR_DEVICE: unmask_status = 11;
pub const UNMASK_ERR_INTERNAL: unmask_status = 12;

pub const UNMASK_ABI_VERSION_MAJOR: u32 = 1;
pub const UNMASK_ABI_VERSION_MINOR: u32 = 13;

pub const UNMASK_POLICY_LOW_CONFIDENCE: i32 = 0;
pub const UNMASK_POLICY_RANDOM: i32 = 1;
pub const UNMASK_POLICY_ORIGIN: i32 = 2;
pub const UNMASK_POLICY_MASKGIT_PLUS: i32 = 3;
pub const UNMASK_POLICY_TOPK_MARGIN: i32 = 4;
pub const UNMASK_POLICY_ENTROPY: i32 = 5;
pub const UNMASK_POLICY_RND1: i32 = 6;
pub const UNMASK_CACHE_NONE: i32 = 0;
pub const UNMASK_CACHE_PREFIX: i32 = 1;
pub const UNMASK_CACHE_DUAL: i32 = 2;
pub const UNMASK_PRECISION_AUTO: i32 = 0;
pub const UNMASK_PRECISION_FP32: i32 = 1;
pub const UNMASK_PRECISION_BF16: i32 = 2;
pub const UNMASK_PRECISION_FP16: i32 = 3;
pub const UNMASK_PRECISION_INT8: i32 = 4;
pub const UNMASK_PRECISION_Q4: i32 = 5;
pub const UNMASK_PRECISION_FP8: i32 = 6;
pub const UNMASK_FINISH_LENGTH: i32 = 1;
pub const UNMASK_FINISH_EOS: i32 = 2;
pub const UNMASK_FINISH_CANCELLED: i32 = 3;
pub const UNMASK_FINISH_TIMEOUT: i32 = 4;
pub const UNMASK_FINISH_ERROR: i32 = 5;
pub const UNMASK_PARAM_INTEGER: i32 = 0;
pub const UNMASK_PARAM_NUMBER: i32 = 1;
pub const UNMASK_PARAM_FLAG: i32 = 2;
pub const UNMASK_PARAM_CHOICE: i32 = 3;
pub const UNMASK_ENUM_POLICY: i32 = 0;
pub const UNMASK_ENUM_CACHE_MODE: i32 = 1;
pub const UNMASK_ENUM_PRECISION: i32 = 2;
pub const UNMASK_ENUM_FINISH_REASON: i32 = 3;
pub const UNMASK_ENUM_EOS_CONFIDENCE: i32 = 4;
pub const UNMASK_STREAM_BLOCK: i32 = 1;
pub const UNMASK_STREAM_STEP: i32 = 2;
pub const UNMASK_SHUTDOWN_DRAIN: i32 = 0;
pub const UNMASK_SHUTDOWN_IMMEDIATE: i32 = 1;

#[repr(C)]
pub struct unmask_model {
    _private: [u8; 0],
}
#[repr(C)]
pub struct unmask_engine {
    _private: [u8; 0],
}
#[repr(C)]
pub struct unmask_request {
    _private: [u8; 0],
}
#[repr(C)]
pub struct unmask_tokenizer {
    _private: [u8; 0],
}

pub type unmask_log_callback = Option<unsafe extern "C" fn(level: i32, message: *const c_char, user_data: *mut c_void)>;
pub type unmask_progress_callback =
    Option<unsafe extern "C" fn(bytes_done: u64, bytes_total: u64, user_data: *mut c_void) -> i32>;
pub type unmask_step_callback = Option<
    unsafe extern "C" fn(sequence: i64, step: i64, committed: i64, canvas: *const i32, canvas_length: i64,
                         user_data: *mut c_void) -> i32,
>;
pub type unmask_stream_callback =
    Option<unsafe extern "C" fn(event: *const unmask_stream_event, user_data: *mut c_void) -> i32>;

#[repr(C)]
pub struct unmask_model_params {
    pub struct_size: u32,
    pub precision: i32,
    pub checksum_mode: i32,
    pub backend: i32,
    pub log_callback: unmask_log_callback,
    pub log_user_data: *mut c_void,
    pub log_level: i32,
    pub metadata_only: i32,
    pub progress_callback: unmask_progress_callback,
    pub progress_user_data: *mut c_void,
    pub memory_budget_bytes: i64,
    pub memory_fraction: c_double,
    pub memory_margin: c_double,
    pub device: i32,
    pub reserved: i32,
    pub quantize_embeddings: i32,
    pub device_ids: *const i32,
    pub devices: i32,
}

#[repr(C)]
pub struct unmask_model_description {
    pub struct_size: u32,
    pub precision: i32,
    pub architecture: *const c_char,
    pub parameters_total: u64,
    pub parameters_active: u64,
    pub weight_bytes: u64,
    pub vocab_size: i64,
    pub layers: i32,
    pub hidden_size: i32,
    pub attention_heads: i32,
    pub kv_heads: i32,
    pub head_dim: i32,
    pub experts: i32,
    pub experts_per_token: i32,
    pub mask_token_id: i32,
    pub max_sequence_length: i64,
    pub tensor_count: i64,
    pub checksums_verified: i32,
    pub eos_token_id: i32,
    pub diffusion_block_size: i64,
    pub fingerprint: *const c_char,
}

#[repr(C)]
pub struct unmask_plan_params {
    pub struct_size: u32,
    pub precision: i32,
    pub backend: i32,
    pub devices: i32,
    pub threads: i32,
    pub kv_cache: i32,
    pub cfg: i32,
    pub max_concurrent: i32,
    pub memory_budget_bytes: i64,
    pub memory_fraction: c_double,
    pub memory_margin: c_double,
    pub device_memory_bytes: u64,
    pub max_sequence_length: i64,
    pub kv_cache_precision: i32,
    pub reserved: i32,
    pub quantize_embeddings: i32,
}

#[repr(C)]
pub struct unmask_memory_plan {
    pub struct_size: u32,
    pub fits: i32,
    pub devices: i32,
    pub max_concurrent: i32,
    pub max_sequence_length: i64,
    pub sequences_per_device: i64,
    pub device_memory: u64,
    pub budget: u64,
    pub margin: u64,
    pub usable: u64,
    pub weights: u64,
    pub weights_by_component: [u64; 8],
    pub sequence_state: u64,
    pub dynamic: u64,
    pub scratch: u64,
    pub required: u64,
    pub weights_total: u64,
    pub parameters_total: u64,
    pub max_concurrent_at_length: i64,
    pub max_length_at_concurrency: i64,
}

#[repr(C)]
pub struct unmask_stream_event {
    pub struct_size: u32,
    pub kind: i32,
    pub request_id: u64,
    pub step: i64,
    pub completed_blocks: i64,
    pub committed: i64,
    pub tokens: *const i32,
    pub token_count: i64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct unmask_chat_message {
    pub struct_size: u32,
    pub reserved: u32,
    pub role: *const c_char,
    pub content: *const c_char,
    pub tool_calls: *const c_char,
    pub tool_call_id: *const c_char,
    pub name: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct unmask_generate_params {
    pub struct_size: u32,
    pub policy: i32,
    pub gen_length: i64,
    pub steps: i64,
    pub block_length: i64,
    pub min_steps: i64,
    pub max_steps: i64,
    pub temperature: c_double,
    pub top_k: i64,
    pub top_p: c_double,
    pub cfg_scale: c_double,
    pub threshold: c_double,
    pub factor: c_double,
    pub alg_temp: c_double,
    pub eps: c_double,
    pub seed: u64,
    pub logits_eos_inf: i32,
    pub eos_confidence: i32,
    pub early_stop: i32,
    pub threads: i32,
    pub eos_token_id: i64,
    pub eot_token_id: i64,
    pub step_callback: unmask_step_callback,
    pub step_user_data: *mut c_void,
    pub timeout_seconds: c_double,
    pub stream_callback: unmask_stream_callback,
    pub stream_user_data: *mut c_void,
    pub stream_steps: i32,
    pub cache_mode: i32,
    pub cache_refresh_steps: i64,
    pub cache_vicinity: i64,
    pub cache_precision: i32,
    pub edit_threshold: c_double,
    pub max_post_edit_steps: i64,
}

#[repr(C)]
pub struct unmask_generation {
    pub struct_size: u32,
    pub finish_reason: i32,
    pub tokens: *mut i32,
    pub tokens_capacity: i64,
    pub token_count: i64,
    pub steps: i64,
    pub forwards: i64,
}

#[repr(C)]
pub struct unmask_engine_params {
    pub struct_size: u32,
    pub max_concurrent_requests: i32,
    pub max_queued_requests: i32,
    pub threads: i32,
    pub max_sequence_length: i64,
    pub max_tokens_per_forward: i64,
    pub request_timeout_seconds: c_double,
    pub min_steps: i64,
    pub max_steps: i64,
    pub log_callback: unmask_log_callback,
    pub log_user_data: *mut c_void,
    pub log_level: i32,
}

#[repr(C)]
pub struct unmask_parameter_info {
    pub struct_size: u32,
    pub r#type: i32,
    pub name: *const c_char,
    pub doc: *const c_char,
    pub default_value: *const c_char,
    pub choices: *const c_char,
    pub minimum: c_double,
    pub maximum: c_double,
    pub minimum_exclusive: i32,
    pub maximum_exclusive: i32,
}

#[repr(C)]
pub struct unmask_request_info {
    pub struct_size: u32,
    pub state: i32,
    pub request_id: u64,
    pub finish_reason: i32,
    pub error_status: i32,
    pub token_count: i64,
    pub steps: i64,
    pub forwards: i64,
    pub queue_seconds: c_double,
    pub compute_seconds: c_double,
    pub first_block_seconds: c_double,
    pub end_to_end_seconds: c_double,
}

#[repr(C)]
pub struct unmask_engine_stats {
    pub struct_size: u32,
    pub health: i32,
    pub requests_running: i64,
    pub requests_waiting: i64,
    pub requests_submitted: u64,
    pub requests_rejected: u64,
    pub finished: [u64; 6],
    pub steps_total: u64,
    pub forwards_total: u64,
    pub generation_tokens_total: u64,
    pub prompt_tokens_total: u64,
    pub queue_seconds_p50: c_double,
    pub queue_seconds_p95: c_double,
    pub queue_seconds_p99: c_double,
    pub first_block_seconds_p50: c_double,
    pub first_block_seconds_p95: c_double,
    pub first_block_seconds_p99: c_double,
    pub end_to_end_seconds_p50: c_double,
    pub end_to_end_seconds_p95: c_double,
    pub end_to_end_seconds_p99: c_double,
    pub memory_capacity: u64,
    pub memory_planned: u64,
    pub memory_reserved: u64,
    pub memory_in_use: u64,
    pub memory_peak_in_use: u64,
    pub max_tokens_per_forward: i64,
}

extern "C" {
    pub fn unmask_abi_version() -> u32;
    pub fn unmask_version_string() -> *const c_char;
    pub fn unmask_status_string(status: unmask_status) -> *const c_char;
    pub fn unmask_last_error() -> *const c_char;

    pub fn unmask_model_params_init(params: *mut unmask_model_params) -> unmask_status;
    pub fn unmask_model_params_init_sized(params: *mut unmask_model_params, size: usize) -> unmask_status;
    pub fn unmask_model_load(path: *const c_char, params: *const unmask_model_params,
                             out_model: *mut *mut unmask_model) -> unmask_status;
    pub fn unmask_model_free(model: *mut unmask_model);
    pub fn unmask_model_info(model: *const unmask_model, info: *mut unmask_model_description) -> unmask_status;

    pub fn unmask_plan_params_init(params: *mut unmask_plan_params) -> unmask_status;
    pub fn unmask_plan_params_init_sized(params: *mut unmask_plan_params, size: usize) -> unmask_status;
    pub fn unmask_plan(path: *const c_char, params: *const unmask_plan_params, plan: *mut unmask_memory_plan)
                       -> unmask_status;

    pub fn unmask_generate_params_init(params: *mut unmask_generate_params) -> unmask_status;
    pub fn unmask_generate_params_init_sized(params: *mut unmask_generate_params, size: usize) -> unmask_status;
    pub fn unmask_generate_param_count() -> i64;
    pub fn unmask_generate_param_info(index: i64, info: *mut unmask_parameter_info) -> unmask_status;
    pub fn unmask_generate_params_set(params: *mut unmask_generate_params, name: *const c_char, value: *const c_char)
                                      -> unmask_status;
    pub fn unmask_generate_params_get(params: *const unmask_generate_params, name: *const c_char, value: *mut c_char,
                                      capacity: i64, length: *mut i64) -> unmask_status;
    pub fn unmask_enum_name(enumeration: i32, value: i32) -> *const c_char;
    pub fn unmask_enum_value(enumeration: i32, name: *const c_char, value: *mut i32) -> unmask_status;
    pub fn unmask_generate(model: *const unmask_model, params: *const unmask_generate_params, prompt: *const i32,
                           prompt_length: i64, result: *mut unmask_generation) -> unmask_status;

    pub fn unmask_engine_params_init(params: *mut unmask_engine_params) -> unmask_status;
    pub fn unmask_engine_params_init_sized(params: *mut unmask_engine_params, size: usize) -> unmask_status;
    pub fn unmask_engine_create(model: *const unmask_model, params: *const unmask_engine_params,
                                out_engine: *mut *mut unmask_engine) -> unmask_status;
    pub fn unmask_engine_free(engine: *mut unmask_engine);
    pub fn unmask_engine_shutdown(engine: *mut unmask_engine, mode: i32, timeout_seconds: c_double) -> unmask_status;
    pub fn unmask_engine_submit(engine: *mut unmask_engine, params: *const unmask_generate_params, prompt: *const i32,
                                prompt_length: i64, wait_seconds: c_double, out_request: *mut *mut unmask_request)
                                -> unmask_status;
    pub fn unmask_engine_stats_get(engine: *const unmask_engine, stats: *mut unmask_engine_stats) -> unmask_status;

    pub fn unmask_request_wait(request: *const unmask_request, timeout_seconds: c_double) -> unmask_status;
    pub fn unmask_request_cancel(request: *mut unmask_request) -> unmask_status;
    pub fn unmask_request_stop(request: *mut unmask_request) -> unmask_status;
    pub fn unmask_request_info_get(request: *const unmask_request, info: *mut unmask_request_info) -> unmask_status;
    pub fn unmask_request_tokens(request: *const unmask_request, tokens: *mut i32, capacity: i64, count: *mut i64)
                                 -> unmask_status;
    pub fn unmask_request_text(request: *const unmask_request, text: *mut c_char, capacity: i64, length: *mut i64)
                               -> unmask_status;
    pub fn unmask_request_free(request: *mut unmask_request);

    pub fn unmask_model_tokenizer(model: *const unmask_model, out_tokenizer: *mut *const unmask_tokenizer)
                                  -> unmask_status;
    pub fn unmask_tokenize(tokenizer: *const unmask_tokenizer, text: *const c_char, text_length: i64,
                           add_special_tokens: i32, ids: *mut i32, capacity: i64, count: *mut i64) -> unmask_status;
    pub fn unmask_tokenize_chat(tokenizer: *const unmask_tokenizer, system: *const c_char, user: *const c_char,
                                ids: *mut i32, capacity: i64, count: *mut i64) -> unmask_status;
    pub fn unmask_tokenizer_vocab_size(tokenizer: *const unmask_tokenizer, size: *mut i64) -> unmask_status;
    pub fn unmask_tokenizer_has_chat_format(tokenizer: *const unmask_tokenizer, has: *mut i32) -> unmask_status;
    pub fn unmask_apply_chat_template(tokenizer: *const unmask_tokenizer, messages: *const unmask_chat_message, count: i64,
                                      tools_json: *const c_char, add_generation_prompt: i32, text: *mut c_char,
                                      capacity: i64, length: *mut i64) -> unmask_status;
    pub fn unmask_tokenize_messages(tokenizer: *const unmask_tokenizer, messages: *const unmask_chat_message, count: i64,
                                    tools_json: *const c_char, add_generation_prompt: i32, ids: *mut i32, capacity: i64,
                                    ids_count: *mut i64) -> unmask_status;
    pub fn unmask_detokenize(tokenizer: *const unmask_tokenizer, ids: *const i32, count: i64,
                             skip_special_tokens: i32, text: *mut c_char, capacity: i64, length: *mut i64)
                             -> unmask_status;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{size_of, MaybeUninit};

    // The byte offset of a field, without offset_of! (stable only since Rust 1.77).
    macro_rules! offset {
        ($type:ty, $field:ident) => {{
            let value = MaybeUninit::<$type>::uninit();
            let base = value.as_ptr();
            #[allow(unused_unsafe)]
            let field = unsafe { std::ptr::addr_of!((*base).$field) };
            field as usize - base as usize
        }};
    }

    #[test]
    fn struct_sizes_match_the_c_header() {
        // The sizes tests/unit/test_struct_layout.cpp checks for include/unmask.h.
        assert_eq!(size_of::<unmask_model_params>(), 112);
        assert_eq!(size_of::<unmask_plan_params>(), 88);
        assert_eq!(size_of::<unmask_memory_plan>(), 200);
        assert_eq!(size_of::<unmask_generate_params>(), 240);
        assert_eq!(size_of::<unmask_engine_params>(), 80);
        assert_eq!(size_of::<unmask_request_info>(), 80);
        assert_eq!(size_of::<unmask_engine_stats>(), 240);
        assert_eq!(size_of::<unmask_model_description>(), 120);
        assert_eq!(size_of::<unmask_generation>(), 48);
        assert_eq!(size_of::<unmask_stream_event>(), 56);
        assert_eq!(size_of::<unmask_parameter_info>(), 64);
        assert_eq!(size_of::<unmask_chat_message>(), 48);
    }

    #[test]
    fn field_offsets_match_the_c_header() {
        assert_eq!(offset!(unmask_chat_message, name), 40);
        assert_eq!(offset!(unmask_model_params, memory_budget_bytes), 56);
        assert_eq!(offset!(unmask_model_params, memory_margin), 72);
        assert_eq!(offset!(unmask_model_params, device), 80);
        assert_eq!(offset!(unmask_model_params, quantize_embeddings), 88);
        assert_eq!(offset!(unmask_model_params, device_ids), 96);
        assert_eq!(offset!(unmask_model_params, devices), 104);
        assert_eq!(offset!(unmask_model_description, mask_token_id), 76);
        assert_eq!(offset!(unmask_model_description, eos_token_id), 100);
        assert_eq!(offset!(unmask_model_description, diffusion_block_size), 104);
        assert_eq!(offset!(unmask_model_description, fingerprint), 112);
        assert_eq!(offset!(unmask_generate_params, seed), 112);
        assert_eq!(offset!(unmask_generate_params, step_callback), 152);
        assert_eq!(offset!(unmask_generate_params, stream_steps), 192);
        assert_eq!(offset!(unmask_generate_params, cache_mode), 196);
        assert_eq!(offset!(unmask_generate_params, cache_refresh_steps), 200);
        assert_eq!(offset!(unmask_generate_params, cache_vicinity), 208);
        assert_eq!(offset!(unmask_generate_params, cache_precision), 216);
        assert_eq!(offset!(unmask_generate_params, edit_threshold), 224);
        assert_eq!(offset!(unmask_generate_params, max_post_edit_steps), 232);
        assert_eq!(offset!(unmask_plan_params, kv_cache_precision), 72);
        assert_eq!(offset!(unmask_plan_params, quantize_embeddings), 80);
        assert_eq!(offset!(unmask_engine_stats, memory_capacity), 192);
        assert_eq!(offset!(unmask_memory_plan, weights_by_component), 72);
        assert_eq!(offset!(unmask_memory_plan, max_length_at_concurrency), 192);
        assert_eq!(offset!(unmask_plan_params, memory_budget_bytes), 32);
        assert_eq!(offset!(unmask_plan_params, memory_margin), 48);
        assert_eq!(offset!(unmask_engine_params, min_steps), 40);
        assert_eq!(offset!(unmask_engine_params, max_steps), 48);
        assert_eq!(offset!(unmask_engine_params, log_level), 72);
        assert_eq!(offset!(unmask_request_info, queue_seconds), 48);
        assert_eq!(offset!(unmask_request_info, end_to_end_seconds), 72);
        assert_eq!(offset!(unmask_stream_event, tokens), 40);
        assert_eq!(offset!(unmask_stream_event, token_count), 48);
        assert_eq!(offset!(unmask_generation, tokens), 8);
        assert_eq!(offset!(unmask_generation, forwards), 40);
    }

    #[test]
    fn the_library_has_this_abi() {
        let abi = unsafe { unmask_abi_version() };
        assert_eq!(abi >> 16, UNMASK_ABI_VERSION_MAJOR);
        assert!(abi & 0xffff >= UNMASK_ABI_VERSION_MINOR);
    }
}
