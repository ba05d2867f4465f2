/*
 * unmask.h - the public C ABI of unmask, an inference library for diffusion language models.
 *
 * This header is the whole contract. It is C99, uses only fixed-width integers, doubles and
 * pointers in its structs, and never changes the meaning of a published symbol, value or field:
 * new behaviour is added as new functions, new status codes or new struct fields appended at the end.
 *
 * Conventions that hold for every function below:
 * - Every fallible call returns an unmask_status; UNMASK_OK (0) means success. On failure the
 *   out-parameters are left untouched (out handles are set to NULL) and unmask_last_error()
 *   describes the failure on the calling thread.
 * - No call aborts, asserts or lets a C++ exception escape, whatever its input.
 * - Parameter structs begin with `uint32_t struct_size`. Fill them with the matching
 *   unmask_*_params_init() and then change only the fields you care about. The library reads only
 *   the first struct_size bytes, so a program built against an older header keeps working. Since
 *   ABI 1.4 unmask_*_params_init(p) is a macro that passes sizeof(*p) to unmask_*_params_init_sized,
 *   which writes only that many bytes; the functions of the same names remain for programs built
 *   against older headers and write the struct as ABI 1.3 defined it (so a program built against
 *   a header before 1.3 whose struct was smaller must not call them with a newer library). FFI
 *   bindings should call the _sized forms with their struct's size.
 * - Callbacks receive the user_data pointer given next to them and may be called from worker
 *   threads of the library.
 */
#ifndef UNMASK_H
#define UNMASK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define UNMASK_API __attribute__((visibility("default")))
#else
#define UNMASK_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------------- */

/* The ABI this header describes. The major number changes only when a published symbol, value
 * or struct layout would have to change (it is the shared library's SOVERSION); the minor number
 * grows when something is added. */
#define UNMASK_ABI_VERSION_MAJOR 1
#define UNMASK_ABI_VERSION_MINOR 13
#define UNMASK_ABI_VERSION ((UNMASK_ABI_VERSION_MAJOR << 16) | UNMASK_ABI_VERSION_MINOR)

/* The ABI version of the library actually loaded, encoded like UNMASK_ABI_VERSION. A program is
 * compatible when the major numbers are equal and the library's minor number is at least the
 * header's. Thread-safe; never fails. */
UNMASK_API uint32_t unmask_abi_version(void);

/* The release of the loaded library, e.g. "0.1.0 (cpu, cuda, nccl)": the version, then the
 * backends this build contains. Static storage; thread-safe; never fails. */
UNMASK_API const char *unmask_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * Status codes and errors
 * ------------------------------------------------------------------------------------------- */

typedef int32_t unmask_status;

/* Frozen values: a code never changes meaning, new codes are appended. */
#define UNMASK_OK 0
#define UNMASK_ERR_INVALID_ARGUMENT 1 /* a NULL pointer, wrong struct_size, out-of-range value */
#define UNMASK_ERR_UNSUPPORTED 2      /* valid request this build or model cannot serve */
#define UNMASK_ERR_MODEL_FORMAT 3     /* a model file or config is malformed or inconsistent */
#define UNMASK_ERR_IO 4               /* a file is missing or cannot be read */
#define UNMASK_ERR_OUT_OF_BUDGET 5    /* the work does not fit the memory budget */
#define UNMASK_ERR_QUEUE_FULL 6       /* the engine's request queue is at its bound */
#define UNMASK_ERR_TIMEOUT 7          /* a deadline or wait timeout passed */
#define UNMASK_ERR_CANCELLED 8        /* the caller cancelled the operation */
#define UNMASK_ERR_TOO_LONG 9         /* a prompt or sequence exceeds the model's or engine's limit */
#define UNMASK_ERR_SHUTTING_DOWN 10   /* the engine is draining or stopped */
#define UNMASK_ERR_DEVICE 11          /* the accelerator failed (driver error, device lost) */
#define UNMASK_ERR_INTERNAL 12        /* a bug in unmask; please report it with the message */

/* A short constant name for a status, e.g. "INVALID_ARGUMENT"; "UNKNOWN" for values this
 * library does not know. Static storage; thread-safe; never fails. */
UNMASK_API const char *unmask_status_string(unmask_status status);

/* The message of the most recent failed call on the calling thread, naming the argument, file or
 * value that was wrong; "" when no call on this thread has failed yet. The pointer stays valid
 * until the next failing call on the same thread. Successful calls do not clear it. */
UNMASK_API const char *unmask_last_error(void);

/* ---------------------------------------------------------------------------------------------
 * Logging and progress
 * ------------------------------------------------------------------------------------------- */

#define UNMASK_LOG_DEBUG 0
#define UNMASK_LOG_INFO 1
#define UNMASK_LOG_WARN 2
#define UNMASK_LOG_ERROR 3

/* Receives one log line (no trailing newline). Set per model load or engine, never globally. May be
 * called from worker threads, and concurrently when several engines share it. */
typedef void (*unmask_log_callback)(int32_t level, const char *message, void *user_data);

/* Reports progress of a long operation in bytes. Return 0 to continue, anything else to cancel:
 * the operation then fails with UNMASK_ERR_CANCELLED and releases what it had taken. */
typedef int32_t (*unmask_progress_callback)(uint64_t bytes_done, uint64_t bytes_total, void *user_data);

/* ---------------------------------------------------------------------------------------------
 * Backends and opaque handles
 * ------------------------------------------------------------------------------------------- */

/* Where the weights live and the work runs. */
#define UNMASK_BACKEND_CPU 0
#define UNMASK_BACKEND_CUDA 1

/* Number of devices of a backend usable by this process: 1 for UNMASK_BACKEND_CPU; for
 * UNMASK_BACKEND_CUDA the visible GPUs, 0 when the build has no CUDA or the machine no driver.
 * Thread-safe. Errors: INVALID_ARGUMENT (unknown backend, NULL count). */
UNMASK_API unmask_status unmask_backend_device_count(int32_t backend, int32_t *count);

/* Immutable weights and tokenizer; thread-safe and shareable once loaded. */
typedef struct unmask_model unmask_model;
/* Scheduler and memory pools of one model; submit, cancel and stats are thread-safe. */
typedef struct unmask_engine unmask_engine;
/* One generation request; owned by one caller. */
typedef struct unmask_request unmask_request;

/* ---------------------------------------------------------------------------------------------
 * Models
 * ------------------------------------------------------------------------------------------- */

/* Precision of the weights in memory (unmask_model_params.precision, unmask_model_description.precision). */
#define UNMASK_PRECISION_AUTO 0 /* keep each tensor's dtype from the file */
#define UNMASK_PRECISION_FP32 1
#define UNMASK_PRECISION_BF16 2
#define UNMASK_PRECISION_FP16 3
/* Since ABI 1.11: weight-only quantization at load (models only; never a cache's precision): the
 * matrices of float files (not the embeddings, the LM head, norms or routers) as Q8_0 (INT8: int8
 * weights in groups of 32 with an fp16 scale), Q4_0 (Q4: 4-bit weights in groups of 32 with an
 * fp16 scale) or F8_E4M3 (FP8: fp8 e4m3 weights in groups of 128 with an fp32 scale); tensors
 * already quantized in the file (GGUF blocks, an fp8 checkpoint's weights) stay as they are. CPU
 * backend only so far. */
#define UNMASK_PRECISION_INT8 4
#define UNMASK_PRECISION_Q4 5
#define UNMASK_PRECISION_FP8 6

/* When to verify the checksum manifest (a `sha256sum`-format file SHA256SUMS in the directory). */
#define UNMASK_CHECKSUM_IF_PRESENT 0 /* verify when the manifest exists */
#define UNMASK_CHECKSUM_REQUIRE 1    /* fail with UNMASK_ERR_MODEL_FORMAT when it is missing */
#define UNMASK_CHECKSUM_SKIP 2       /* never read the manifest */

typedef struct unmask_model_params {
    uint32_t struct_size;   /* sizeof(unmask_model_params); set by unmask_model_params_init */
    int32_t precision;      /* UNMASK_PRECISION_*; default AUTO */
    int32_t checksum_mode;  /* UNMASK_CHECKSUM_*; default IF_PRESENT */
    int32_t backend;        /* UNMASK_BACKEND_*; default CPU */
    unmask_log_callback log_callback;           /* may be NULL: no logging */
    void *log_user_data;
    int32_t log_level;                          /* lowest UNMASK_LOG_* passed on; default INFO */
    int32_t metadata_only;                      /* 1: read config and tensor headers only, touch no
                                                   weight data (inspect, plan); the model cannot run */
    unmask_progress_callback progress_callback; /* may be NULL; bytes read and verified */
    void *progress_user_data;
    /* Since ABI 1.1: the device's memory budget. The weights are reserved against it before any is
     * read, and each generation's state and scratch before it runs; what does not fit fails with
     * UNMASK_ERR_OUT_OF_BUDGET. The budget is memory_budget_bytes when given, capped by
     * memory_fraction x the device's memory (system RAM for the CPU backend, total memory for
     * CUDA) when the fraction is below 1; with no byte budget, the fraction of the device's
     * memory. The margin is kept free of it. */
    int64_t memory_budget_bytes;                /* 0 (default): no byte cap; negative is invalid */
    double memory_fraction;                     /* in (0, 1]; default 1 */
    double memory_margin;                       /* fraction of the budget kept free, in [0, 1); default 0.10 */
    /* Since ABI 1.4: which GPU (CUDA device index, 0..1023) a UNMASK_BACKEND_CUDA model's
     * weights are copied to and its work runs on; not used by the CPU backend. */
    int32_t device;                             /* default 0 */
    int32_t reserved;                           /* since ABI 1.11: 0; keeps the field below at offset
                                                   88, past an older caller's struct_size */
    /* Since ABI 1.11: 1 to quantize the embedding and the LM head too at INT8, Q4 and FP8 (where
     * their rows are whole blocks; INVALID_ARGUMENT with another precision); default 0: they keep
     * the file's type (docs/loading.md). */
    int32_t quantize_embeddings;
    /* Since ABI 1.13 (from offset 96, past the padding an older caller's struct_size covers): the
     * devices sharing the model, by tensor and expert parallelism (docs/parallel.md). With the CPU
     * backend they are host devices of this process: the budget holds the model once and each
     * device's copies of its weight shares, K/V shards and scratch, and every generation and
     * engine of the model runs on all of them, its threads divided among them. With CUDA they are
     * GPUs, which need the forward to drive NCCL: UNSUPPORTED beyond one GPU in this version.
     * UNSUPPORTED too, naming the count, for a model that cannot be shared so: attention heads,
     * routed experts or MLP widths that do not divide among the devices, K/V heads that neither
     * divide nor replicate evenly, fewer vocabulary rows than needed for a slice each, a quantized
     * column share that is not whole blocks. */
    const int32_t *device_ids;                  /* CUDA: `devices` distinct GPU indexes, the first in
                                                   place of `device`; NULL (default): device,
                                                   device + 1, ...; must be NULL for the CPU */
    int32_t devices;                            /* 1..UNMASK_MAX_DEVICES; default 1 */
} unmask_model_params;

/* Since ABI 1.13: the most devices one model is shared among. */
#define UNMASK_MAX_DEVICES 64

/* Fills *params with the defaults above (through the macro below). The function writes the ABI 1.3
 * struct, for programs built against older headers; call it by its parenthesised name to pass
 * NULL (INVALID_ARGUMENT). */
UNMASK_API unmask_status unmask_model_params_init(unmask_model_params *params);
/* Since ABI 1.4: fills the first `size` bytes of *params (from the struct's first published size
 * up to sizeof) with the defaults and sets struct_size = size. Errors: INVALID_ARGUMENT for NULL
 * or a size outside that range. */
UNMASK_API unmask_status unmask_model_params_init_sized(unmask_model_params *params, size_t size);
#define unmask_model_params_init(params) unmask_model_params_init_sized((params), sizeof *(params))

/* Loads a Hugging Face model directory (config.json, model.safetensors or shards with
 * model.safetensors.index.json, tokenizer files), or a GGUF file as llama.cpp's converter writes
 * the llada and dream architectures (F32, F16 or BF16 tensors; its own tokenizer).
 * `params` may be NULL for the defaults.
 * On success *out_model owns the model; free it with unmask_model_free.
 * Errors: INVALID_ARGUMENT (NULL path or out_model, bad params), IO (missing or unreadable file,
 * naming it), MODEL_FORMAT (malformed file or config, naming the problem), UNSUPPORTED (unknown
 * architecture or backend), CANCELLED (the progress callback asked to stop), OUT_OF_BUDGET (the
 * weights do not fit the memory budget). */
UNMASK_API unmask_status unmask_model_load(const char *path, const unmask_model_params *params,
                                           unmask_model **out_model);

/* Releases a model. NULL is a no-op. The model must no longer be used by any engine. */
UNMASK_API void unmask_model_free(unmask_model *model);

typedef struct unmask_model_description {
    uint32_t struct_size;        /* set by the caller to sizeof(unmask_model_description) */
    int32_t precision;           /* UNMASK_PRECISION_* of the loaded weights (AUTO: mixed) */
    const char *architecture;    /* "llada", "llada-moe" or "dream"; owned by the model */
    uint64_t parameters_total;   /* every weight element */
    uint64_t parameters_active;  /* elements used per token (differs from total for MoE) */
    uint64_t weight_bytes;       /* bytes of the weights as loaded */
    int64_t vocab_size;          /* rows of the LM head */
    int32_t layers;
    int32_t hidden_size;
    int32_t attention_heads;
    int32_t kv_heads;
    int32_t head_dim;
    int32_t experts;             /* 0 for dense models */
    int32_t experts_per_token;   /* 0 for dense models */
    int32_t mask_token_id;
    int64_t max_sequence_length;
    int64_t tensor_count;        /* weights bound, see unmask_model_tensor */
    int32_t checksums_verified;  /* 1 when SHA256SUMS was verified during the load */
    int32_t eos_token_id;        /* -1 when the config declares none */
    /* Since ABI 1.2. */
    int64_t diffusion_block_size; /* > 0: a block diffusion model (block-causal attention); generation
                                     decodes in blocks of this size. 0: bidirectional */
    /* Since ABI 1.12: what tells this version of the model's files from another (owned by the
     * model): "sha256sums:" and the SHA-256 of the checksum manifest's entries for the files
     * loaded, which loading verified; without a manifest, "headers:" and the SHA-256 of config.json
     * and each weight file's name, size and header (tensor names, types, shapes, offsets; the
     * weights themselves are not read for it). */
    const char *fingerprint;
} unmask_model_description;

/* Describes a loaded model. The caller sets info->struct_size; only fields inside it are written,
 * so a program built against an older header gets the fields it knows. Thread-safe.
 * Errors: INVALID_ARGUMENT (NULL model or info, struct_size too small or too large). */
UNMASK_API unmask_status unmask_model_info(const unmask_model *model, unmask_model_description *info);

/* The memory books of the model's device (since ABI 1.1). Reserved bytes are held for work
 * (weights, admitted sequences, whole scratch pools); bytes in use are what is actually allocated
 * or held: the measured figure a plan is compared with. */
typedef struct unmask_memory_usage {
    uint32_t struct_size;    /* set by the caller to sizeof(unmask_memory_usage) */
    int32_t backend;         /* UNMASK_BACKEND_* of the device */
    uint64_t capacity;       /* the usable budget: budget less the margin */
    uint64_t reserved;       /* held now; never above capacity */
    uint64_t in_use;         /* allocated now */
    uint64_t peak_reserved;  /* since the load */
    uint64_t peak_in_use;    /* since the load */
} unmask_memory_usage;

/* Reports the model device's memory. Thread-safe.
 * Errors: INVALID_ARGUMENT (NULL model or usage, bad struct_size). */
UNMASK_API unmask_status unmask_model_memory(const unmask_model *model, unmask_memory_usage *usage);

/* Element types of tensors (unmask_tensor_description.dtype). Q8_0 to Q6_K are ggml's block
 * formats as GGUF files hold them (docs/loading.md); their `bytes` count whole blocks. F8_E4M3
 * (since ABI 1.11): in a file, an fp8 checkpoint's weights (whose scales are separate tensors); in
 * memory, groups of 128 e4m3 values of a row each with its fp32 scale (132 bytes per 128). */
#define UNMASK_DTYPE_F32 0
#define UNMASK_DTYPE_F16 1
#define UNMASK_DTYPE_BF16 2
#define UNMASK_DTYPE_Q8_0 3
#define UNMASK_DTYPE_Q4_0 4
#define UNMASK_DTYPE_Q4_K 5
#define UNMASK_DTYPE_Q5_K 6
#define UNMASK_DTYPE_Q6_K 7
#define UNMASK_DTYPE_F8_E4M3 8

#define UNMASK_MAX_DIMS 8

typedef struct unmask_tensor_description {
    uint32_t struct_size;        /* set by the caller to sizeof(unmask_tensor_description) */
    int32_t dtype;               /* UNMASK_DTYPE_* in memory */
    const char *name;            /* e.g. "model.layers.0.self_attn.q_proj.weight"; owned by the model */
    const char *component;       /* "embedding", "attention", "norm", "mlp", "router", "experts",
                                    "shared_experts" or "lm_head"; static storage */
    int32_t file_dtype;          /* UNMASK_DTYPE_* in the file */
    int32_t dims;
    int64_t shape[UNMASK_MAX_DIMS];
    uint64_t bytes;              /* in memory */
} unmask_tensor_description;

/* Describes weight `index` (0 <= index < tensor_count of unmask_model_info). Thread-safe.
 * Errors: INVALID_ARGUMENT (NULL, bad struct_size, index out of range). */
UNMASK_API unmask_status unmask_model_tensor(const unmask_model *model, int64_t index,
                                             unmask_tensor_description *info);

/* ---------------------------------------------------------------------------------------------
 * Memory planning (since ABI 1.1)
 *
 * Before loading anything, a host can ask what a deployment needs per device: the weights by
 * component (with several devices, each one's share: its attention heads, its part of the dense
 * MLPs and of the LM head, 1/N of the routed experts; the embedding, norms and routers on each),
 * each sequence's state (canvas and decode state, K/V cache when a cache mode is on, doubled with
 * CFG; each device holds its K/V heads), and the scratch of the largest forward (activations,
 * logits of one output chunk, the backend's workspace). Every device runs every sequence.
 * ------------------------------------------------------------------------------------------- */

/* Indexes of unmask_memory_plan.weights_by_component. */
#define UNMASK_COMPONENT_EMBEDDING 0
#define UNMASK_COMPONENT_ATTENTION 1
#define UNMASK_COMPONENT_NORM 2
#define UNMASK_COMPONENT_MLP 3
#define UNMASK_COMPONENT_ROUTER 4
#define UNMASK_COMPONENT_EXPERTS 5
#define UNMASK_COMPONENT_SHARED_EXPERTS 6
#define UNMASK_COMPONENT_LM_HEAD 7
#define UNMASK_COMPONENT_COUNT 8

typedef struct unmask_plan_params {
    uint32_t struct_size;         /* sizeof(unmask_plan_params); set by unmask_plan_params_init */
    int32_t precision;            /* UNMASK_PRECISION_*; default AUTO (reads the safetensors headers;
                                     an explicit precision needs only config.json) */
    int32_t backend;              /* UNMASK_BACKEND_*; default CPU */
    int32_t devices;              /* sharing the model (tensor parallelism); default 1 */
    int32_t threads;              /* CPU threads (their workspace); 0 (default): all cores */
    int32_t kv_cache;             /* 1: a cache mode keeps K/V per sequence; default 0 */
    int32_t cfg;                  /* 1: classifier-free guidance doubles each sequence; default 0 */
    int32_t max_concurrent;       /* sequences running at once; default 1 */
    int64_t memory_budget_bytes;  /* per device; 0 (default): no byte cap; negative is invalid */
    double memory_fraction;       /* of each device's memory, in (0, 1]; default 1 */
    double memory_margin;         /* fraction of the budget kept free, in [0, 1); default 0.10 */
    uint64_t device_memory_bytes; /* 0 (default): ask the device; else plan for a device this large */
    int64_t max_sequence_length;  /* prompt + generation; 0 (default): the model's maximum */
    int32_t kv_cache_precision;   /* since ABI 1.5: UNMASK_PRECISION_FP32 (default) or _BF16 (needs
                                     kv_cache = 1), as unmask_generate_params.cache_precision */
    int32_t reserved;             /* since ABI 1.11: 0; keeps the field below at offset 80, past an
                                     older caller's struct_size */
    int32_t quantize_embeddings;  /* since ABI 1.11: as unmask_model_params.quantize_embeddings */
} unmask_plan_params;

/* Fills *params with the defaults above (see unmask_model_params_init). */
UNMASK_API unmask_status unmask_plan_params_init(unmask_plan_params *params);
/* Since ABI 1.4: fills the first `size` bytes of *params (from the struct's first published size
 * up to sizeof) with the defaults and sets struct_size = size. Errors: INVALID_ARGUMENT for NULL
 * or a size outside that range. */
UNMASK_API unmask_status unmask_plan_params_init_sized(unmask_plan_params *params, size_t size);
#define unmask_plan_params_init(params) unmask_plan_params_init_sized((params), sizeof *(params))

typedef struct unmask_memory_plan {
    uint32_t struct_size;          /* set by the caller to sizeof(unmask_memory_plan) */
    int32_t fits;                  /* 1 when required <= usable on every device */
    int32_t devices;
    int32_t max_concurrent;        /* as planned */
    int64_t max_sequence_length;   /* as planned */
    int64_t sequences_per_device;  /* every device runs every sequence: max_concurrent */
    /* Per device, in bytes. */
    uint64_t device_memory;        /* 0 when a byte budget alone was given */
    uint64_t budget;
    uint64_t margin;
    uint64_t usable;               /* budget - margin */
    uint64_t weights;              /* static */
    uint64_t weights_by_component[UNMASK_COMPONENT_COUNT];
    uint64_t sequence_state;       /* one sequence at max_sequence_length */
    uint64_t dynamic;              /* sequences_per_device of them */
    uint64_t scratch;              /* the largest forward */
    uint64_t required;             /* weights + dynamic + scratch */
    /* The whole model. */
    uint64_t weights_total;        /* every device together, experts once */
    uint64_t parameters_total;
    /* What fits instead; 0 when nothing does. */
    int64_t max_concurrent_at_length;   /* most sequences of max_sequence_length */
    int64_t max_length_at_concurrency;  /* longest sequence with max_concurrent of them */
} unmask_memory_plan;

/* Plans a deployment of the model at `path` (a directory or a GGUF file) from its config.json or
 * GGUF metadata (and the tensor headers for AUTO precision); no weight data is read. `params` may be NULL for the defaults. The caller sets
 * plan->struct_size. Thread-safe.
 * Errors: INVALID_ARGUMENT (NULL path or plan, bad params: a negative budget, a fraction outside
 * (0, 1], a margin outside [0, 1), a length beyond the model's), IO, MODEL_FORMAT, UNSUPPORTED
 * (as unmask_model_load; also a CUDA plan without a device or device_memory_bytes). */
UNMASK_API unmask_status unmask_plan(const char *path, const unmask_plan_params *params, unmask_memory_plan *plan);

/* ---------------------------------------------------------------------------------------------
 * Generation
 * ------------------------------------------------------------------------------------------- */

/* Commit policies (unmask_generate_params.policy). LLaDA's: */
#define UNMASK_POLICY_LOW_CONFIDENCE 0 /* commit the most probable predictions first */
#define UNMASK_POLICY_RANDOM 1         /* commit in a random order */
/* Dream's (they decode the whole canvas: block_length must be 0 or gen_length): */
#define UNMASK_POLICY_ORIGIN 2       /* each masked position independently with probability 1 - s/t */
#define UNMASK_POLICY_MASKGIT_PLUS 3 /* top-1 probability first */
#define UNMASK_POLICY_TOPK_MARGIN 4  /* top-1 minus top-2 probability first */
#define UNMASK_POLICY_ENTROPY 5      /* lowest entropy first */
/* RND1's sampler (whole canvas; since ABI 1.10): lowest entropy first, the highest-entropy
 * floor(masks * (steps - 1 - step) / steps) kept masked; the canvas's last position holds the
 * model's pad token. */
#define UNMASK_POLICY_RND1 6

/* K/V cache modes (unmask_generate_params.cache_mode). Every block starts with a forward of the
 * whole canvas that fills the sequence's cache; the other steps of the block feed only part of it
 * and read the other positions' keys and values from the cache. PREFIX and DUAL are
 * approximations (the cached K/V go stale as the canvas changes); NONE is exact. For block
 * diffusion models (unmask_model_description.diffusion_block_size > 0) both are exact and feed
 * only the block (its first step also the finished blocks before it whose K/V are not final). */
#define UNMASK_CACHE_NONE 0   /* every step recomputes the whole canvas */
#define UNMASK_CACHE_PREFIX 1 /* recompute the block and everything after it; reuse the prefix */
#define UNMASK_CACHE_DUAL 2   /* recompute only the block; reuse prefix and suffix */

/* EOS/EOT confidences (unmask_generate_params.eos_confidence), LLaDA's confidence_eos_eot_inf. */
#define UNMASK_EOS_CONFIDENCE_OFF 0
#define UNMASK_EOS_CONFIDENCE_REFERENCE 1 /* as LLaDA's reference behaves: only EOT gets -inf */
#define UNMASK_EOS_CONFIDENCE_BOTH 2      /* as intended: EOS and EOT get -inf */

/* Why a generation ended (unmask_generation.finish_reason). */
#define UNMASK_FINISH_LENGTH 1    /* the whole generation region was filled, no EOS in it */
#define UNMASK_FINISH_EOS 2       /* the answer ended: it contains EOS (early stop filled the rest with EOS),
                                     or the caller stopped it at its end (unmask_request_stop) */
#define UNMASK_FINISH_CANCELLED 3 /* the step callback asked to stop (engine: cancelled or shut down) */
#define UNMASK_FINISH_TIMEOUT 4   /* engine: the request's deadline passed (checked between steps) */
#define UNMASK_FINISH_ERROR 5     /* engine: the request failed; unmask_request_info has the status */

/* Called after each denoising step of each sequence: its index in the batch, the step number
 * (from 0), how many positions this step committed, and the whole canvas (prompt included,
 * masks as mask_token_id; valid during the call only). Return 0 to continue, non-zero to cancel
 * that sequence (its result then has finish_reason CANCELLED and the partial canvas). */
typedef int32_t (*unmask_step_callback)(int64_t sequence, int64_t step, int64_t committed, const int32_t *canvas,
                                        int64_t canvas_length, void *user_data);

/* Engine streaming: what one event reports. `tokens` is the generated region as it stands (masks
 * as mask_token_id where nothing is committed yet), valid during the call only. */
#define UNMASK_STREAM_BLOCK 1 /* a block was committed (with early stop: the answer ended) */
#define UNMASK_STREAM_STEP 2  /* a step ran (only with stream_steps = 1) */
typedef struct unmask_stream_event {
    uint32_t struct_size;
    int32_t kind;              /* UNMASK_STREAM_* */
    uint64_t request_id;
    int64_t step;              /* from 0 */
    int64_t completed_blocks;
    int64_t committed;         /* positions this step committed */
    const int32_t *tokens;
    int64_t token_count;
} unmask_stream_event;

/* Called on the engine's scheduler thread; keep it short, and do not free the request from it.
 * Return 0 to continue, non-zero to cancel the request. */
typedef int32_t (*unmask_stream_callback)(const unmask_stream_event *event, void *user_data);

typedef struct unmask_generate_params {
    uint32_t struct_size;
    int32_t policy;          /* UNMASK_POLICY_*; default LOW_CONFIDENCE */
    int64_t gen_length;      /* positions to generate after the prompt; default 128 */
    int64_t steps;           /* denoising steps (fixed schedules); default 128 */
    int64_t block_length;    /* semi-autoregressive blocks; 0 (default) = the model's diffusion_block_size
                                for a block diffusion model, else gen_length */
    int64_t min_steps;       /* 0 = unbounded; docs/decoding.md: how bounds apply per policy */
    int64_t max_steps;       /* 0 = unbounded */
    double temperature;      /* 0 = greedy (default) */
    int64_t top_k;           /* Dream policies: 0 = off */
    double top_p;            /* Dream policies: 1 = off (default) */
    double cfg_scale;        /* classifier-free guidance; 0 = off */
    double threshold;        /* > 0: commit every masked position of the block with confidence >= threshold */
    double factor;           /* > 0: Fast-dLLM's factor rule (exclusive with threshold) */
    double alg_temp;         /* Dream: > 0 samples the committed positions instead of taking the top ones */
    double eps;              /* Dream: final timestep; default 1e-3 */
    uint64_t seed;           /* all randomness derives from it; default 0 */
    int32_t logits_eos_inf;  /* 1: EOS can never be sampled */
    int32_t eos_confidence;  /* UNMASK_EOS_CONFIDENCE_*; default OFF */
    int32_t early_stop;      /* 1: once the answer has ended with EOS in a finished block, fill the rest
                                with EOS and stop */
    int32_t threads;         /* CPU threads (max(1, threads / devices) each); 0 = all (default) */
    int64_t eos_token_id;    /* -1 = the model's (default) */
    int64_t eot_token_id;    /* -1 = none (default) */
    unmask_step_callback step_callback; /* may be NULL */
    void *step_user_data;
    /* Since ABI 1.1, for engine requests (unmask_engine_submit); synchronous generation ignores them. */
    double timeout_seconds;                 /* 0: the engine's default; from submission, queue
                                               included; above 1e9: none */
    unmask_stream_callback stream_callback; /* may be NULL; per committed block */
    void *stream_user_data;
    int32_t stream_steps;                   /* 1: also after every step */
    /* Since ABI 1.2: K/V caching (docs/cache-modes.md). */
    int32_t cache_mode;          /* UNMASK_CACHE_*; default NONE (exact) */
    int64_t cache_refresh_steps; /* > 0: also recompute the whole canvas every this many steps of a block;
                                    0 (default): only at block starts */
    int64_t cache_vicinity;      /* also recompute this many positions on each side of the block; default 0 */
    /* Since ABI 1.5: the K/V cache's elements. UNMASK_PRECISION_FP32 (default) or _BF16: half the
     * bytes per sequence, each key and value rounded to bf16 as it is stored (so even the exact
     * cache of block diffusion models is then within bf16 rounding of no cache). BF16 needs a
     * cache_mode. */
    int32_t cache_precision;
    /* (4 bytes of padding follow: ABI 1.9's fields start at offset 224, which an ABI 1.5-1.8
     * caller's struct_size never covers.) */
    /* Since ABI 1.9: LLaDA2.1's token editing, with threshold decoding (docs/decoding.md). */
    double edit_threshold;       /* > 0: a step also replaces each committed token of the block whose
                                    prediction differs with probability above it; 0 = off (default) */
    int64_t max_post_edit_steps; /* steps of edits alone after a block's last mask; default 16 */
} unmask_generate_params;

/* Fills *params with the defaults above (see unmask_model_params_init). */
UNMASK_API unmask_status unmask_generate_params_init(unmask_generate_params *params);
/* Since ABI 1.4: fills the first `size` bytes of *params (from the struct's first published size
 * up to sizeof) with the defaults and sets struct_size = size. Errors: INVALID_ARGUMENT for NULL
 * or a size outside that range. */
UNMASK_API unmask_status unmask_generate_params_init_sized(unmask_generate_params *params, size_t size);
#define unmask_generate_params_init(params) unmask_generate_params_init_sized((params), sizeof *(params))

/* Since ABI 1.6: the generation parameters by name, as the tools and the server spell them: the
 * field names above (the callbacks and struct_size excepted). One table in the library holds
 * every parameter's type, range, default and a line of documentation; setting by name checks
 * the value against it, so front ends keep no ranges of their own (docs/c-abi.md). */
#define UNMASK_PARAM_INTEGER 0 /* an integer within [minimum, maximum] */
#define UNMASK_PARAM_NUMBER 1  /* a finite number within the bounds (each inclusive or exclusive) */
#define UNMASK_PARAM_FLAG 2    /* "true" or "false" ("1" or "0") */
#define UNMASK_PARAM_CHOICE 3  /* one of `choices` by name (or its UNMASK_* number) */

typedef struct unmask_parameter_info {
    uint32_t struct_size;      /* sizeof(unmask_parameter_info) */
    int32_t type;              /* UNMASK_PARAM_* */
    const char *name;          /* e.g. "threshold"; static storage, like every string here */
    const char *doc;           /* one line */
    const char *default_value; /* as text, e.g. "0.001" or "low_confidence" */
    const char *choices;       /* CHOICE: the names, comma-separated; otherwise "" */
    double minimum;            /* INTEGER and NUMBER */
    double maximum;            /* INTEGER and NUMBER; infinity: no upper bound */
    int32_t minimum_exclusive; /* 1: the value must exceed `minimum` */
    int32_t maximum_exclusive; /* 1: the value must stay below `maximum` */
} unmask_parameter_info;

/* The number of parameters; indexes 0..count-1 name them in the struct's field order. */
UNMASK_API int64_t unmask_generate_param_count(void);
/* Describes parameter `index`. Errors: INVALID_ARGUMENT for an index out of range, or a NULL or
 * unsized `info`. */
UNMASK_API unmask_status unmask_generate_param_info(int64_t index, unmask_parameter_info *info);
/* Sets the parameter `name` of *params from `value` as text ("0.9", "dual", "true"), checked
 * against its range or choices. Errors: INVALID_ARGUMENT naming the parameter for an unknown
 * name, a value of the wrong form or outside the range, or a field beyond params->struct_size
 * (an older struct); *params is unchanged then. */
UNMASK_API unmask_status unmask_generate_params_set(unmask_generate_params *params, const char *name,
                                                    const char *value);
/* Writes the parameter `name` of *params as text (what _set reads back; choices by name) into
 * `value` (capacity bytes) and its length without the NUL into *length: the text is whole and
 * NUL-terminated when *length < capacity (call again with more room otherwise). Errors:
 * INVALID_ARGUMENT for an unknown name or a field beyond params->struct_size. */
UNMASK_API unmask_status unmask_generate_params_get(const unmask_generate_params *params, const char *name,
                                                    char *value, int64_t capacity, int64_t *length);

/* Since ABI 1.6: the names of enumerated values, as the parameters, the tools and the server
 * spell them ("low_confidence", "dual", "bf16", "eos"). */
#define UNMASK_ENUM_POLICY 0         /* UNMASK_POLICY_* */
#define UNMASK_ENUM_CACHE_MODE 1     /* UNMASK_CACHE_* */
#define UNMASK_ENUM_PRECISION 2      /* UNMASK_PRECISION_* */
#define UNMASK_ENUM_FINISH_REASON 3  /* UNMASK_FINISH_* */
#define UNMASK_ENUM_EOS_CONFIDENCE 4 /* UNMASK_EOS_CONFIDENCE_* */
/* The name of `value` of `enumeration` (static storage), or NULL when it has none. Never fails. */
UNMASK_API const char *unmask_enum_name(int32_t enumeration, int32_t value);
/* The value named `name`. Errors: INVALID_ARGUMENT for an unknown enumeration, a NULL argument,
 * or a name that is not one of its values (the message lists them). */
UNMASK_API unmask_status unmask_enum_value(int32_t enumeration, const char *name, int32_t *value);

/* The result of one sequence. The caller provides `tokens` with room for `tokens_capacity`
 * ids; the generated ids are written there (prompt excluded; for infilling, the whole canvas). */
typedef struct unmask_generation {
    uint32_t struct_size;     /* sizeof(unmask_generation) */
    int32_t finish_reason;    /* UNMASK_FINISH_* */
    int32_t *tokens;
    int64_t tokens_capacity;
    int64_t token_count;      /* ids written */
    int64_t steps;            /* denoising steps taken */
    int64_t forwards;         /* model evaluations (classifier-free guidance counts two per step) */
} unmask_generation;

/* Generates for one prompt of token ids, synchronously, on the CPU. Errors: INVALID_ARGUMENT
 * (NULL, bad or inconsistent parameters naming the field, token ids outside the vocabulary,
 * tokens_capacity below gen_length), TOO_LONG (prompt + gen_length above the model's maximum),
 * UNSUPPORTED (the model was loaded metadata-only), OUT_OF_BUDGET (the sequence's state and
 * scratch do not fit what the model's memory budget has left; the message gives the longest
 * sequence that would fit now). Thread-safe for distinct outputs: concurrent calls share the budget. */
UNMASK_API unmask_status unmask_generate(const unmask_model *model, const unmask_generate_params *params,
                                         const int32_t *prompt, int64_t prompt_length, unmask_generation *result);

/* Generates for `count` prompts at once: every step runs one forward over all unfinished
 * sequences (several forwards when the budget's scratch cannot hold them all at once). A
 * sequence's tokens do not depend on the others in the batch. results[i] receives prompt i's
 * generation. */
UNMASK_API unmask_status unmask_generate_batch(const unmask_model *model, const unmask_generate_params *params,
                                               int64_t count, const int32_t *const *prompts,
                                               const int64_t *prompt_lengths, unmask_generation *results);

/* Fill in the middle: `canvas` holds fixed tokens and masks (the model's mask_token_id) anywhere;
 * the masked positions from the first one to the end form the generation region (gen_length in
 * params is ignored; block_length 0 means one block, or a block diffusion model's own blocks). The
 * whole canvas is written to
 * result->tokens (tokens_capacity >= canvas_length). */
UNMASK_API unmask_status unmask_infill(const unmask_model *model, const unmask_generate_params *params,
                                       const int32_t *canvas, int64_t canvas_length, unmask_generation *result);

/* ---------------------------------------------------------------------------------------------
 * The engine (since ABI 1.1)
 *
 * One engine per model serves requests submitted from any number of threads: a bounded queue, a
 * limit on running requests, admission first come first served within the memory budget, and
 * continuous batching (every running request takes one step per iteration in shared forwards;
 * requests join and leave between steps). Deadlines and cancels are checked between steps. Every
 * submitted request gets exactly one outcome, also at shutdown.
 * ------------------------------------------------------------------------------------------- */

typedef struct unmask_engine_params {
    uint32_t struct_size;             /* sizeof(unmask_engine_params); set by unmask_engine_params_init */
    int32_t max_concurrent_requests;  /* running at once; default 8 */
    int32_t max_queued_requests;      /* waiting beyond the free running slots; default 64 */
    int32_t threads;                  /* CPU threads (max(1, threads / devices) each); 0 (default): all */
    int64_t max_sequence_length;      /* prompt + generation admitted; 0 (default): the model's; a block
                                         diffusion model's engine rounds it up to whole blocks */
    int64_t max_tokens_per_forward;   /* rows per forward; 0 (default): every running request at the
                                         longest length, or as many rows as the budget allows */
    double request_timeout_seconds;   /* default deadline of a request; 0 (default): none */
    int64_t min_steps;                /* default step bounds of requests that set none; 0: none */
    int64_t max_steps;
    unmask_log_callback log_callback; /* may be NULL; called from the scheduler thread too */
    void *log_user_data;
    int32_t log_level;                /* default INFO */
} unmask_engine_params;

/* Fills *params with the defaults above (see unmask_model_params_init). */
UNMASK_API unmask_status unmask_engine_params_init(unmask_engine_params *params);
/* Since ABI 1.4: fills the first `size` bytes of *params (from the struct's first published size
 * up to sizeof) with the defaults and sets struct_size = size. Errors: INVALID_ARGUMENT for NULL
 * or a size outside that range. */
UNMASK_API unmask_status unmask_engine_params_init_sized(unmask_engine_params *params, size_t size);
#define unmask_engine_params_init(params) unmask_engine_params_init_sized((params), sizeof *(params))

/* Starts an engine on a loaded model, which must outlive it. Its scratch is reserved in the
 * model's memory budget now. Errors: INVALID_ARGUMENT, UNSUPPORTED (a metadata-only model),
 * OUT_OF_BUDGET (not even one request of max_sequence_length fits). */
UNMASK_API unmask_status unmask_engine_create(const unmask_model *model, const unmask_engine_params *params,
                                              unmask_engine **out_engine);

/* Loads the model named by a service configuration file (JSON, or YAML by the extension .yaml or
 * .yml; docs/engine.md) and starts an engine that owns it. Errors: IO, INVALID_ARGUMENT (an
 * unknown key, a wrong type or value, naming the key), and those of unmask_model_load and
 * unmask_engine_create. */
UNMASK_API unmask_status unmask_engine_create_from_config(const char *path, unmask_engine **out_engine);

/* A service configuration file as read (docs/engine.md); what unmask_engine_create_from_config
 * uses, for hosts that apply it themselves. */
#define UNMASK_MAX_PATH 4096
typedef struct unmask_service_config {
    uint32_t struct_size;              /* set by the caller to sizeof(unmask_service_config) */
    int32_t listen_port;               /* 0: not given */
    int32_t max_concurrent_requests;   /* default 8 */
    int32_t max_queued_requests;       /* default 64 */
    double request_timeout_seconds;    /* 0: none */
    char weights_path[UNMASK_MAX_PATH];/* NUL-terminated; relative paths resolved against the file's folder */
    int32_t precision;                 /* UNMASK_PRECISION_* */
    int32_t gpu_device_count;          /* entries of resources.gpu_devices; 0: the CPU */
    int64_t max_sequence_length;       /* 0: the model's */
    int64_t min_diffusion_steps;       /* 0: none */
    int64_t max_diffusion_steps;       /* 0: none */
    double memory_fraction;            /* default 1 */
    int32_t log_level;                 /* UNMASK_LOG_* */
    int32_t log_rotation_size_mb;      /* 0: no rotation */
    /* Since ABI 1.3, DEPRECATED since ABI 1.6: the section `server` belongs to unmask-server, which
     * reads it with unmask_service_config_section and checks it itself. The library still fills
     * these fields for programs built against 1.3 to 1.5: each key as given when it has its type
     * (else the default), without checking the values; ABI 2 drops them. Strings are
     * NUL-terminated, "" when not given; paths are resolved like weights_path. */
    char bind_address[256];            /* default "127.0.0.1" */
    char api_keys_env[256];            /* the environment variable holding API keys */
    char api_key_file[UNMASK_MAX_PATH];
    double rate_limit_per_second;      /* requests per API key; 0: no limit */
    int64_t rate_limit_burst;          /* the bucket's size; 0: max(1, rate_limit_per_second) */
    int64_t max_body_bytes;            /* default 1 MiB */
    char tls_certificate[UNMASK_MAX_PATH];
    char tls_private_key[UNMASK_MAX_PATH];
    double drain_timeout_seconds;      /* default 30 */
    char log_file[UNMASK_MAX_PATH];    /* "": standard error */
    int32_t log_prompts;               /* 1: access log lines include the prompt text */
    /* Since ABI 1.4. */
    int32_t gpu_device;                /* resources.gpu_devices[0], the GPU an engine runs on, when
                                          gpu_device_count > 0; 0 otherwise (which is not GPU 0) */
    /* Since ABI 1.11. */
    int32_t quantize_embeddings;       /* model.quantize_embeddings: 1 or 0 (default) */
    /* Since ABI 1.13. */
    int32_t cpu_devices;               /* resources.cpu_devices: host devices sharing the model on the
                                          CPU (unmask_model_params.devices); default 1 */
    int32_t gpu_devices[UNMASK_MAX_DEVICES]; /* resources.gpu_devices, gpu_device_count of them */
} unmask_service_config;

/* Reads and validates a configuration file. Errors: IO, INVALID_ARGUMENT naming the key. */
UNMASK_API unmask_status unmask_service_config_read(const char *path, unmask_service_config *config);

/* Since ABI 1.6: one section of a configuration file ("service", "model", "resources" or
 * "server") as JSON text, YAML read as the library reads it: how a host reads a section of its
 * own (unmask-server its `server`). The library's sections are checked first. The text ("null"
 * for an absent section) goes into `json` (capacity bytes) and its length without the NUL into
 * *length; it is whole and NUL-terminated when *length < capacity. Relative paths in it are the
 * caller's to resolve against the file's folder. Errors: IO, INVALID_ARGUMENT (a bad file, naming
 * the key, or an unknown section name). */
UNMASK_API unmask_status unmask_service_config_section(const char *path, const char *section, char *json,
                                                       int64_t capacity, int64_t *length);

/* The model the engine serves (owned by the caller or, from a configuration, by the engine). */
UNMASK_API unmask_status unmask_engine_model(const unmask_engine *engine, const unmask_model **model);

/* Stops the engine (as UNMASK_SHUTDOWN_IMMEDIATE) and frees it. Requests stay valid until freed.
 * NULL is a no-op. */
UNMASK_API void unmask_engine_free(unmask_engine *engine);

#define UNMASK_SHUTDOWN_DRAIN 0     /* take no new requests; finish queued and running ones */
#define UNMASK_SHUTDOWN_IMMEDIATE 1 /* take no new requests; cancel queued and running ones */

/* Shuts the engine down and returns when its scheduler has stopped. A drain that takes longer
 * than timeout_seconds (0: no limit) cancels what is left. Later submissions get SHUTTING_DOWN. */
UNMASK_API unmask_status unmask_engine_shutdown(unmask_engine *engine, int32_t mode, double timeout_seconds);

/* Submits a prompt of token ids with the given decoding parameters (NULL: defaults). With
 * wait_seconds 0 a full queue is QUEUE_FULL at once; with wait_seconds > 0 the call waits that long
 * for room. On success *out_request is the caller's handle (free it with unmask_request_free).
 * Errors: INVALID_ARGUMENT (bad parameters, naming the field), TOO_LONG (beyond the engine's
 * max_sequence_length), OUT_OF_BUDGET (a request that could never fit, with the longest length
 * that would), QUEUE_FULL, SHUTTING_DOWN; once the engine has FAILED (health), the failure's status
 * and reason: DEVICE for a lost GPU, INTERNAL otherwise. Thread-safe. */
UNMASK_API unmask_status unmask_engine_submit(unmask_engine *engine, const unmask_generate_params *params,
                                              const int32_t *prompt, int64_t prompt_length, double wait_seconds,
                                              unmask_request **out_request);

/* Waits for the request's outcome: OK once it has one, TIMEOUT when timeout_seconds passed first
 * (negative, or above 1e9: wait without limit). Thread-safe. */
UNMASK_API unmask_status unmask_request_wait(const unmask_request *request, double timeout_seconds);

/* Asks the engine to stop the request (between steps; a queued one at once). Its outcome is then
 * CANCELLED unless it had already finished. Thread-safe. */
UNMASK_API unmask_status unmask_request_cancel(unmask_request *request);

/* Since ABI 1.7: tells the engine that the caller has found the end of the answer (a stop string
 * in its text, say): the request stops between steps like a cancel, but its outcome is EOS, the
 * answer having ended, and it is counted so. The first of cancel and stop wins. Thread-safe. */
UNMASK_API unmask_status unmask_request_stop(unmask_request *request);

#define UNMASK_REQUEST_QUEUED 0
#define UNMASK_REQUEST_RUNNING 1
#define UNMASK_REQUEST_FINISHED 2

typedef struct unmask_request_info {
    uint32_t struct_size;         /* set by the caller to sizeof(unmask_request_info) */
    int32_t state;                /* UNMASK_REQUEST_*; the fields below are set once FINISHED */
    uint64_t request_id;
    int32_t finish_reason;        /* UNMASK_FINISH_* */
    int32_t error_status;         /* for UNMASK_FINISH_ERROR: the failure's unmask_status */
    int64_t token_count;          /* generated ids (unmask_request_tokens) */
    int64_t steps;
    int64_t forwards;
    double queue_seconds;         /* submission to admission */
    double compute_seconds;       /* admission to the outcome */
    double first_block_seconds;   /* submission to the first committed block; -1: none */
    double end_to_end_seconds;    /* submission to the outcome */
} unmask_request_info;

/* Describes the request (polling: state is FINISHED once the outcome exists). Thread-safe. */
UNMASK_API unmask_status unmask_request_info_get(const unmask_request *request, unmask_request_info *info);

/* Copies the generated ids (prompt excluded) of a finished request into tokens[0..capacity) and
 * sets *count to how many there are (call with capacity 0 to size the buffer). Errors:
 * INVALID_ARGUMENT before the request has finished. */
UNMASK_API unmask_status unmask_request_tokens(const unmask_request *request, int32_t *tokens, int64_t capacity,
                                               int64_t *count);

/* The finished request's answer as UTF-8 text (its ids up to the first EOS, special tokens
 * skipped), as unmask_detokenize writes it: the first min(capacity, *length) bytes, no NUL, and
 * *length the whole text's size. A caller-owned model must still be loaded. Errors: UNSUPPORTED
 * without a tokenizer, INVALID_ARGUMENT before the request has finished. */
UNMASK_API unmask_status unmask_request_text(const unmask_request *request, char *text, int64_t capacity,
                                             int64_t *length);

/* Releases the handle; a request still queued or running is cancelled first, and its stream
 * callback is not called again once this returns. NULL is a no-op. */
UNMASK_API void unmask_request_free(unmask_request *request);

#define UNMASK_HEALTH_LOADING 0
#define UNMASK_HEALTH_READY 1
#define UNMASK_HEALTH_DRAINING 2
#define UNMASK_HEALTH_FAILED 3
#define UNMASK_HEALTH_STOPPED 4

typedef struct unmask_engine_stats {
    uint32_t struct_size;                 /* set by the caller to sizeof(unmask_engine_stats) */
    int32_t health;                       /* UNMASK_HEALTH_* */
    int64_t requests_running;
    int64_t requests_waiting;
    uint64_t requests_submitted;
    uint64_t requests_rejected;           /* QUEUE_FULL, SHUTTING_DOWN or a FAILED engine's at submission */
    uint64_t finished[6];                 /* by UNMASK_FINISH_* (index 0 unused) */
    uint64_t steps_total;                 /* denoising steps, summed over requests */
    uint64_t forwards_total;              /* model evaluations, summed over requests */
    uint64_t generation_tokens_total;     /* positions generated by requests that finished */
    uint64_t prompt_tokens_total;
    double queue_seconds_p50, queue_seconds_p95, queue_seconds_p99;  /* over the latest 10000 */
    double first_block_seconds_p50, first_block_seconds_p95, first_block_seconds_p99;
    double end_to_end_seconds_p50, end_to_end_seconds_p95, end_to_end_seconds_p99;
    uint64_t memory_capacity;             /* the usable budget */
    uint64_t memory_planned;              /* weights + scratch + max_concurrent states at max length */
    uint64_t memory_reserved;
    uint64_t memory_in_use;
    uint64_t memory_peak_in_use;
    int64_t max_tokens_per_forward;       /* as the engine sized its forwards */
} unmask_engine_stats;

/* A snapshot of the engine's counters, latencies and memory. Thread-safe. */
UNMASK_API unmask_status unmask_engine_stats_get(const unmask_engine *engine, unmask_engine_stats *stats);

/* The same in the Prometheus text format (metric names as vLLM's, prefixed `unmask_`; `unmask:` before
 * ABI 1.12), written as unmask_detokenize writes text (no NUL; *length the whole size; capacity 0 to
 * size it). */
UNMASK_API unmask_status unmask_engine_metrics(const unmask_engine *engine, char *text, int64_t capacity,
                                               int64_t *length);

/* ---------------------------------------------------------------------------------------------
 * Tokenizers (Hugging Face tokenizer.json)
 * ------------------------------------------------------------------------------------------- */

/* An immutable tokenizer; thread-safe. */
typedef struct unmask_tokenizer unmask_tokenizer;

/* Loads a tokenizer.json, the tokenizer.json in a directory, or a GGUF file's tokenizer. Free it with
 * unmask_tokenizer_free. Errors: INVALID_ARGUMENT (NULL), IO (missing file), MODEL_FORMAT
 * (malformed file, naming the problem), UNSUPPORTED (a component this version lacks, naming it). */
UNMASK_API unmask_status unmask_tokenizer_load(const char *path, unmask_tokenizer **out_tokenizer);

/* Releases a tokenizer loaded with unmask_tokenizer_load. NULL is a no-op. */
UNMASK_API void unmask_tokenizer_free(unmask_tokenizer *tokenizer);

/* The tokenizer of a model whose directory holds a tokenizer.json, owned by the model (do not
 * free it); *out_tokenizer is NULL when the directory has none. */
UNMASK_API unmask_status unmask_model_tokenizer(const unmask_model *model, const unmask_tokenizer **out_tokenizer);

/* Since ABI 1.7: one past the highest id the tokenizer knows (its vocabulary and added tokens);
 * unmask_detokenize skips ids at or beyond it. */
UNMASK_API unmask_status unmask_tokenizer_vocab_size(const unmask_tokenizer *tokenizer, int64_t *size);

/* Encodes `text_length` bytes of UTF-8 (invalid sequences are read as U+FFFD). Writes up to
 * `capacity` ids and sets *count to the number of ids of the whole text: when *count > capacity,
 * call again with a larger buffer. add_special_tokens = 1 applies the tokenizer's template (BOS). */
UNMASK_API unmask_status unmask_tokenize(const unmask_tokenizer *tokenizer, const char *text, int64_t text_length,
                                         int32_t add_special_tokens, int32_t *ids, int64_t capacity, int64_t *count);

/* Encodes a chat prompt: an optional system message (NULL or "" for none) and one user message,
 * ending where the assistant's answer begins: unmask_tokenize_messages with those two messages.
 * Since ABI 1.8 the model's chat template formats it when it has one; before, and for models
 * without one, the built-in format of the tokenizer's family (ChatML for Qwen and Dream, the
 * LLaMA-3 headers with tokenizer_config.json's BOS, `<|user|>...<|assistant|>`). Writes ids like
 * unmask_tokenize. Errors: UNSUPPORTED when the tokenizer has no chat format, INVALID_ARGUMENT for
 * a system message the format cannot hold (the template's message). */
UNMASK_API unmask_status unmask_tokenize_chat(const unmask_tokenizer *tokenizer, const char *system, const char *user,
                                              int32_t *ids, int64_t capacity, int64_t *count);

/* Since ABI 1.8: one message of a conversation, as OpenAI's chat API and Hugging Face's chat
 * templates spell it. Strings are UTF-8 and NUL-terminated; NULL means absent. */
typedef struct unmask_chat_message {
    uint32_t struct_size;     /* set by unmask_chat_message_init; the same in every element of an array */
    uint32_t reserved;        /* 0 */
    const char *role;         /* "system", "user", "assistant", "tool" (what the template knows) */
    const char *content;      /* NULL: none (an assistant turn that only calls tools) */
    const char *tool_calls;   /* an assistant's calls: a JSON array of OpenAI tool calls,
                                 [{"type": "function", "function": {"name": ..., "arguments": ...}}] */
    const char *tool_call_id; /* a "tool" message's: the id of the call it answers */
    const char *name;         /* a "tool" message's: the tool's name */
} unmask_chat_message;

/* Since ABI 1.8: zeroes *message and sets struct_size; `size` is the caller's sizeof. */
UNMASK_API unmask_status unmask_chat_message_init_sized(unmask_chat_message *message, size_t size);
#define unmask_chat_message_init(message) unmask_chat_message_init_sized((message), sizeof *(message))

/* Since ABI 1.8: whether the tokenizer can format chats (*has = 1): its model has a chat template
 * (tokenizer_config.json's chat_template, or chat_template.jinja) or one of the built-in formats of
 * unmask_tokenize_chat. */
UNMASK_API unmask_status unmask_tokenizer_has_chat_format(const unmask_tokenizer *tokenizer, int32_t *has);

/* Since ABI 1.8: the prompt text of a conversation: `count` messages (an array whose elements'
 * struct_size is the stride), `tools_json` (NULL, or a JSON array of OpenAI tool definitions
 * {"type": "function", "function": {"name", "description", "parameters"}}) and, when
 * add_generation_prompt = 1, the opening of the assistant's answer. The model's Jinja chat template
 * renders it as Hugging Face's apply_chat_template does (byte for byte on the templates CI checks);
 * a model without one uses the built-in format of its family, with the tools described in a
 * system message (docs/tokenizers.md). Writes text like unmask_detokenize. Errors:
 * INVALID_ARGUMENT for malformed messages or JSON and for what the template refuses (its
 * raise_exception message, e.g. roles that must alternate); UNSUPPORTED when the model has no chat
 * format or its template uses Jinja this version lacks (naming it). */
UNMASK_API unmask_status unmask_apply_chat_template(const unmask_tokenizer *tokenizer, const unmask_chat_message *messages,
                                                    int64_t count, const char *tools_json, int32_t add_generation_prompt,
                                                    char *text, int64_t capacity, int64_t *length);

/* Since ABI 1.8: the same conversation encoded to ids (special tokens in the text are read as
 * tokens; no BOS is added beyond what the template writes). Writes ids like unmask_tokenize. */
UNMASK_API unmask_status unmask_tokenize_messages(const unmask_tokenizer *tokenizer, const unmask_chat_message *messages,
                                                  int64_t count, const char *tools_json, int32_t add_generation_prompt,
                                                  int32_t *ids, int64_t capacity, int64_t *ids_count);

/* Decodes ids to UTF-8 text. Writes up to `capacity` bytes (no terminating NUL) and sets *length
 * to the byte length of the whole text: when *length > capacity, call again with a larger buffer.
 * Ids the tokenizer lacks (a model's padding rows beyond the tokenizer) are skipped, as Hugging
 * Face's decoder does. Errors: INVALID_ARGUMENT for a negative id. */
UNMASK_API unmask_status unmask_detokenize(const unmask_tokenizer *tokenizer, const int32_t *ids, int64_t count,
                                           int32_t skip_special_tokens, char *text, int64_t capacity, int64_t *length);

#ifdef __cplusplus
}
#endif

#endif /* UNMASK_H */
