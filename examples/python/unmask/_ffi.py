"""The C ABI of include/unmask.h in ctypes: constants, structs (laid out exactly as the header's;
tests/test_unmask.py checks their sizes against the frozen C layouts) and function prototypes.
The library is found through UNMASK_LIBRARY_PATH, next to this package, or the system's paths."""
import ctypes
import ctypes.util
import os
from ctypes import POINTER, c_char, c_char_p, c_double, c_int32, c_int64, c_uint32, c_uint64, c_void_p

# Status codes (frozen).
STATUS_NAMES = {0: "OK", 1: "INVALID_ARGUMENT", 2: "UNSUPPORTED", 3: "MODEL_FORMAT", 4: "IO", 5: "OUT_OF_BUDGET",
                6: "QUEUE_FULL", 7: "TIMEOUT", 8: "CANCELLED", 9: "TOO_LONG", 10: "SHUTTING_DOWN", 11: "DEVICE",
                12: "INTERNAL"}
OK, ERR_TIMEOUT = 0, 7

# The names of enumerated values come from the library (unmask_enum_name / unmask_enum_value).
ENUM_POLICY, ENUM_CACHE_MODE, ENUM_PRECISION, ENUM_FINISH_REASON, ENUM_EOS_CONFIDENCE = 0, 1, 2, 3, 4
PRECISION_FP32 = 1
STREAM_BLOCK, STREAM_STEP = 1, 2
SHUTDOWN_DRAIN, SHUTDOWN_IMMEDIATE = 0, 1

LOG_CALLBACK = ctypes.CFUNCTYPE(None, c_int32, c_char_p, c_void_p)
PROGRESS_CALLBACK = ctypes.CFUNCTYPE(c_int32, c_uint64, c_uint64, c_void_p)
STEP_CALLBACK = ctypes.CFUNCTYPE(c_int32, c_int64, c_int64, c_int64, POINTER(c_int32), c_int64, c_void_p)


class ParameterInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("type", c_int32), ("name", c_char_p), ("doc", c_char_p),
                ("default_value", c_char_p), ("choices", c_char_p), ("minimum", c_double), ("maximum", c_double),
                ("minimum_exclusive", c_int32), ("maximum_exclusive", c_int32)]


class StreamEvent(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("request_id", c_uint64), ("step", c_int64),
                ("completed_blocks", c_int64), ("committed", c_int64), ("tokens", POINTER(c_int32)),
                ("token_count", c_int64)]


STREAM_CALLBACK = ctypes.CFUNCTYPE(c_int32, POINTER(StreamEvent), c_void_p)


class ChatMessage(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32), ("role", c_char_p), ("content", c_char_p),
                ("tool_calls", c_char_p), ("tool_call_id", c_char_p), ("name", c_char_p)]


class ModelParams(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("precision", c_int32), ("checksum_mode", c_int32), ("backend", c_int32),
                ("log_callback", LOG_CALLBACK), ("log_user_data", c_void_p), ("log_level", c_int32),
                ("metadata_only", c_int32), ("progress_callback", PROGRESS_CALLBACK), ("progress_user_data", c_void_p),
                ("memory_budget_bytes", c_int64), ("memory_fraction", c_double), ("memory_margin", c_double),
                ("device", c_int32), ("reserved", c_int32), ("quantize_embeddings", c_int32),
                ("device_ids", ctypes.POINTER(c_int32)), ("devices", c_int32)]


class ModelDescription(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("precision", c_int32), ("architecture", c_char_p),
                ("parameters_total", c_uint64), ("parameters_active", c_uint64), ("weight_bytes", c_uint64),
                ("vocab_size", c_int64), ("layers", c_int32), ("hidden_size", c_int32), ("attention_heads", c_int32),
                ("kv_heads", c_int32), ("head_dim", c_int32), ("experts", c_int32), ("experts_per_token", c_int32),
                ("mask_token_id", c_int32), ("max_sequence_length", c_int64), ("tensor_count", c_int64),
                ("checksums_verified", c_int32), ("eos_token_id", c_int32), ("diffusion_block_size", c_int64),
                ("fingerprint", c_char_p)]


class PlanParams(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("precision", c_int32), ("backend", c_int32), ("devices", c_int32),
                ("threads", c_int32), ("kv_cache", c_int32), ("cfg", c_int32), ("max_concurrent", c_int32),
                ("memory_budget_bytes", c_int64), ("memory_fraction", c_double), ("memory_margin", c_double),
                ("device_memory_bytes", c_uint64), ("max_sequence_length", c_int64), ("kv_cache_precision", c_int32),
                ("reserved", c_int32), ("quantize_embeddings", c_int32)]


class MemoryPlan(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("fits", c_int32), ("devices", c_int32), ("max_concurrent", c_int32),
                ("max_sequence_length", c_int64), ("sequences_per_device", c_int64), ("device_memory", c_uint64),
                ("budget", c_uint64), ("margin", c_uint64), ("usable", c_uint64), ("weights", c_uint64),
                ("weights_by_component", c_uint64 * 8), ("sequence_state", c_uint64), ("dynamic", c_uint64),
                ("scratch", c_uint64), ("required", c_uint64), ("weights_total", c_uint64),
                ("parameters_total", c_uint64), ("max_concurrent_at_length", c_int64),
                ("max_length_at_concurrency", c_int64)]


class GenerateParams(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("policy", c_int32), ("gen_length", c_int64), ("steps", c_int64),
                ("block_length", c_int64), ("min_steps", c_int64), ("max_steps", c_int64), ("temperature", c_double),
                ("top_k", c_int64), ("top_p", c_double), ("cfg_scale", c_double), ("threshold", c_double),
                ("factor", c_double), ("alg_temp", c_double), ("eps", c_double), ("seed", c_uint64),
                ("logits_eos_inf", c_int32), ("eos_confidence", c_int32), ("early_stop", c_int32),
                ("threads", c_int32), ("eos_token_id", c_int64), ("eot_token_id", c_int64),
                ("step_callback", STEP_CALLBACK), ("step_user_data", c_void_p), ("timeout_seconds", c_double),
                ("stream_callback", STREAM_CALLBACK), ("stream_user_data", c_void_p), ("stream_steps", c_int32),
                ("cache_mode", c_int32), ("cache_refresh_steps", c_int64), ("cache_vicinity", c_int64),
                ("cache_precision", c_int32), ("edit_threshold", c_double), ("max_post_edit_steps", c_int64)]


class Generation(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("finish_reason", c_int32), ("tokens", POINTER(c_int32)),
                ("tokens_capacity", c_int64), ("token_count", c_int64), ("steps", c_int64), ("forwards", c_int64)]


class EngineParams(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("max_concurrent_requests", c_int32), ("max_queued_requests", c_int32),
                ("threads", c_int32), ("max_sequence_length", c_int64), ("max_tokens_per_forward", c_int64),
                ("request_timeout_seconds", c_double), ("min_steps", c_int64), ("max_steps", c_int64),
                ("log_callback", LOG_CALLBACK), ("log_user_data", c_void_p), ("log_level", c_int32)]


class RequestInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("state", c_int32), ("request_id", c_uint64), ("finish_reason", c_int32),
                ("error_status", c_int32), ("token_count", c_int64), ("steps", c_int64), ("forwards", c_int64),
                ("queue_seconds", c_double), ("compute_seconds", c_double), ("first_block_seconds", c_double),
                ("end_to_end_seconds", c_double)]


class EngineStats(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("health", c_int32), ("requests_running", c_int64),
                ("requests_waiting", c_int64), ("requests_submitted", c_uint64), ("requests_rejected", c_uint64),
                ("finished", c_uint64 * 6), ("steps_total", c_uint64), ("forwards_total", c_uint64),
                ("generation_tokens_total", c_uint64), ("prompt_tokens_total", c_uint64),
                ("queue_seconds_p50", c_double), ("queue_seconds_p95", c_double), ("queue_seconds_p99", c_double),
                ("first_block_seconds_p50", c_double), ("first_block_seconds_p95", c_double),
                ("first_block_seconds_p99", c_double), ("end_to_end_seconds_p50", c_double),
                ("end_to_end_seconds_p95", c_double), ("end_to_end_seconds_p99", c_double),
                ("memory_capacity", c_uint64), ("memory_planned", c_uint64), ("memory_reserved", c_uint64),
                ("memory_in_use", c_uint64), ("memory_peak_in_use", c_uint64), ("max_tokens_per_forward", c_int64)]


def _find_library():
    """UNMASK_LIBRARY_PATH (a file or a directory), next to the package, then the system's paths."""
    candidates = []
    given = os.environ.get("UNMASK_LIBRARY_PATH")
    if given:
        candidates.append(os.path.join(given, "libunmask.so") if os.path.isdir(given) else given)
    here = os.path.dirname(os.path.abspath(__file__))
    candidates += [os.path.join(here, "libunmask.so"), os.path.join(here, "libunmask.so.1")]
    for path in candidates:
        if os.path.exists(path):
            return path
    system = ctypes.util.find_library("unmask")
    if system:
        return system
    raise OSError("libunmask not found: set UNMASK_LIBRARY_PATH to the library (or its directory), put it next to "
                  "the unmask package, or install it where the system finds it (tried %s)" % ", ".join(candidates))


def _declare(lib):
    s = c_int32  # unmask_status
    handle = c_void_p
    prototypes = {
        "unmask_abi_version": (c_uint32, []),
        "unmask_version_string": (c_char_p, []),
        "unmask_status_string": (c_char_p, [s]),
        "unmask_last_error": (c_char_p, []),
        "unmask_model_params_init_sized": (s, [POINTER(ModelParams), ctypes.c_size_t]),
        "unmask_model_load": (s, [c_char_p, POINTER(ModelParams), POINTER(handle)]),
        "unmask_model_free": (None, [handle]),
        "unmask_model_info": (s, [handle, POINTER(ModelDescription)]),
        "unmask_plan_params_init_sized": (s, [POINTER(PlanParams), ctypes.c_size_t]),
        "unmask_plan": (s, [c_char_p, POINTER(PlanParams), POINTER(MemoryPlan)]),
        "unmask_generate_params_init_sized": (s, [POINTER(GenerateParams), ctypes.c_size_t]),
        "unmask_generate_param_count": (c_int64, []),
        "unmask_generate_param_info": (s, [c_int64, POINTER(ParameterInfo)]),
        "unmask_generate_params_set": (s, [POINTER(GenerateParams), c_char_p, c_char_p]),
        "unmask_generate_params_get": (s, [POINTER(GenerateParams), c_char_p, POINTER(c_char), c_int64, POINTER(c_int64)]),
        "unmask_enum_name": (c_char_p, [c_int32, c_int32]),
        "unmask_enum_value": (s, [c_int32, c_char_p, POINTER(c_int32)]),
        "unmask_generate": (s, [handle, POINTER(GenerateParams), POINTER(c_int32), c_int64, POINTER(Generation)]),
        "unmask_engine_params_init_sized": (s, [POINTER(EngineParams), ctypes.c_size_t]),
        "unmask_engine_create": (s, [handle, POINTER(EngineParams), POINTER(handle)]),
        "unmask_engine_free": (None, [handle]),
        "unmask_engine_shutdown": (s, [handle, c_int32, c_double]),
        "unmask_engine_submit": (s, [handle, POINTER(GenerateParams), POINTER(c_int32), c_int64, c_double,
                                     POINTER(handle)]),
        "unmask_engine_stats_get": (s, [handle, POINTER(EngineStats)]),
        "unmask_engine_metrics": (s, [handle, POINTER(c_char), c_int64, POINTER(c_int64)]),
        "unmask_request_wait": (s, [handle, c_double]),
        "unmask_request_cancel": (s, [handle]),
        "unmask_request_stop": (s, [handle]),
        "unmask_request_info_get": (s, [handle, POINTER(RequestInfo)]),
        "unmask_request_tokens": (s, [handle, POINTER(c_int32), c_int64, POINTER(c_int64)]),
        "unmask_request_text": (s, [handle, POINTER(c_char), c_int64, POINTER(c_int64)]),
        "unmask_request_free": (None, [handle]),
        "unmask_model_tokenizer": (s, [handle, POINTER(handle)]),
        "unmask_tokenize": (s, [handle, c_char_p, c_int64, c_int32, POINTER(c_int32), c_int64, POINTER(c_int64)]),
        "unmask_tokenize_chat": (s, [handle, c_char_p, c_char_p, POINTER(c_int32), c_int64, POINTER(c_int64)]),
        "unmask_tokenizer_vocab_size": (s, [handle, POINTER(c_int64)]),
        "unmask_tokenizer_has_chat_format": (s, [handle, POINTER(c_int32)]),
        "unmask_apply_chat_template": (s, [handle, POINTER(ChatMessage), c_int64, c_char_p, c_int32, POINTER(c_char),
                                           c_int64, POINTER(c_int64)]),
        "unmask_tokenize_messages": (s, [handle, POINTER(ChatMessage), c_int64, c_char_p, c_int32, POINTER(c_int32),
                                         c_int64, POINTER(c_int64)]),
        "unmask_detokenize": (s, [handle, POINTER(c_int32), c_int64, c_int32, POINTER(c_char), c_int64,
                                  POINTER(c_int64)]),
    }
    for name, (result, arguments) in prototypes.items():
        function = getattr(lib, name)
        function.restype = result
        function.argtypes = arguments
    return lib


lib = _declare(ctypes.CDLL(_find_library()))
