// unmask_model_*: loading, describing and freeing models.
#include <memory>
#include <span>

#include "boundary.hpp"
#include "handles.hpp"
#include "memory_params.hpp"
#include "model/model.hpp"
#include "weight_params.hpp"

using namespace unmask;
using namespace unmask::capi;

namespace {

int32_t public_dtype(DType dtype) {
    switch (dtype) {
        case DType::f16: return UNMASK_DTYPE_F16;
        case DType::bf16: return UNMASK_DTYPE_BF16;
        case DType::q8_0: return UNMASK_DTYPE_Q8_0;
        case DType::q4_0: return UNMASK_DTYPE_Q4_0;
        case DType::q4_k: return UNMASK_DTYPE_Q4_K;
        case DType::q5_k: return UNMASK_DTYPE_Q5_K;
        case DType::q6_k: return UNMASK_DTYPE_Q6_K;
        case DType::f8_e4m3:
        case DType::f8_e4m3_b128: return UNMASK_DTYPE_F8_E4M3;
        default: return UNMASK_DTYPE_F32;  // weights are bound only as the types above and F32
    }
}

unmask_model_params default_model_params() {
    unmask_model_params p{};
    p.struct_size = sizeof(unmask_model_params);
    p.precision = UNMASK_PRECISION_AUTO;
    p.checksum_mode = UNMASK_CHECKSUM_IF_PRESENT;
    p.backend = UNMASK_BACKEND_CPU;
    p.log_level = UNMASK_LOG_INFO;
    p.memory_fraction = 1.0;
    p.memory_margin = 0.10;
    p.devices = 1;
    return p;
}

LoadOptions to_load_options(const unmask_model_params& p) {
    LoadOptions options;
    const WeightPrecision weights = read_weight_precision(p.precision, p.reserved, p.quantize_embeddings);
    options.precision = weights.precision;
    options.quantize_embeddings = weights.quantize_embeddings;
    options.checksum_mode = static_cast<ChecksumMode>(require_one_of(
        p.checksum_mode, {UNMASK_CHECKSUM_IF_PRESENT, UNMASK_CHECKSUM_REQUIRE, UNMASK_CHECKSUM_SKIP},
        "params->checksum_mode"));
    options.backend = static_cast<BackendKind>(
        require_one_of(p.backend, {UNMASK_BACKEND_CPU, UNMASK_BACKEND_CUDA}, "params->backend"));
    const auto level = require_one_of(
        p.log_level, {UNMASK_LOG_DEBUG, UNMASK_LOG_INFO, UNMASK_LOG_WARN, UNMASK_LOG_ERROR}, "params->log_level");
    options.metadata_only = require_one_of(p.metadata_only, {0, 1}, "params->metadata_only") == 1;
    options.logger = Logger(p.log_callback, p.log_user_data, static_cast<LogLevel>(level));
    if (p.progress_callback != nullptr) {
        options.progress = [callback = p.progress_callback, user_data = p.progress_user_data](uint64_t done,
                                                                                              uint64_t total) {
            return callback(done, total, user_data) == 0;
        };
    }
    return options;
}

// The device the model is placed on (the first of several), after checking `devices` and
// `device_ids`: a count in 1..UNMASK_MAX_DEVICES, GPU indexes in 0..1023, distinct.
int32_t first_device(const unmask_model_params& p, BackendKind backend) {
    auto check_index = [](int32_t index, const char* name) {
        if (index < 0 || index > 1023)
            fail(Status::invalid_argument, "{} must be a device index in 0..1023, got {}", name, index);
    };
    check_index(p.device, "params->device");
    if (p.devices < 1 || p.devices > UNMASK_MAX_DEVICES)
        fail(Status::invalid_argument, "params->devices must be in 1..{}, got {}", UNMASK_MAX_DEVICES, p.devices);
    if (p.device_ids == nullptr) return p.device;
    if (backend == BackendKind::cpu)
        fail(Status::invalid_argument, "params->device_ids names GPUs; the CPU backend's devices are host devices, "
             "counted by params->devices alone (leave device_ids NULL)");
    const std::span<const int32_t> ids(p.device_ids, static_cast<size_t>(p.devices));
    for (size_t i = 0; i < ids.size(); ++i) {
        check_index(ids[i], fmt::format("params->device_ids[{}]", i).c_str());
        for (size_t j = 0; j < i; ++j)
            if (ids[j] == ids[i]) fail(Status::invalid_argument, "params->device_ids lists GPU {} twice", ids[i]);
    }
    return ids[0];
}

}  // namespace

// Parenthesised: the header makes the name a macro for the sized form.
extern "C" unmask_status(unmask_model_params_init)(unmask_model_params* params) {
    return guarded(__func__, [&] { write_defaults(params, model_params_v1_3_size, default_model_params(), model_params_v1_size); });
}

extern "C" unmask_status unmask_model_params_init_sized(unmask_model_params* params, size_t size) {
    return guarded(__func__, [&] { write_defaults(params, size, default_model_params(), model_params_v1_size); });
}

extern "C" unmask_status unmask_model_load(const char* path, const unmask_model_params* params,
                                           unmask_model** out_model) {
    return guarded(__func__, [&] {
        require_not_null(out_model, "out_model");
        *out_model = nullptr;
        require_not_null(path, "path");
        const auto p = read_params(params, "params", default_model_params(), model_params_v1_size);
        const LoadOptions options = to_load_options(p);
        const int32_t device = first_device(p, options.backend);
        const MemoryBudget budget = read_budget(p.memory_budget_bytes, p.memory_fraction, p.memory_margin, "params");
        auto loaded = LoadedModel::load(path, options, device, budget, p.devices);
        auto handle = std::make_unique<unmask_model>();
        handle->tokenizer.tokenizer = loaded->tokenizer();
        handle->loaded = std::move(loaded);
        *out_model = handle.release();
    });
}

extern "C" void unmask_model_free(unmask_model* model) { delete model; }

extern "C" unmask_status unmask_model_memory(const unmask_model* model, unmask_memory_usage* usage) {
    return guarded(__func__, [&] {
        require_not_null(model, "model");
        const size_t size = writable_size(usage, "usage", memory_usage_v1_size);
        const MemoryLedger& memory = model->loaded->memory();
        unmask_memory_usage out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.backend = static_cast<int32_t>(model->loaded->backend());
        out.capacity = memory.capacity();
        out.reserved = memory.reserved();
        out.in_use = memory.in_use();
        out.peak_reserved = memory.peak_reserved();
        out.peak_in_use = memory.peak_in_use();
        std::memcpy(usage, &out, size);
    });
}

extern "C" unmask_status unmask_model_info(const unmask_model* model, unmask_model_description* info) {
    return guarded(__func__, [&] {
        require_not_null(model, "model");
        const size_t size = writable_size(info, "info", model_description_v1_size);
        const Model& m = model->model();
        const ModelSpec& spec = m.spec();
        const ModelDescription& d = m.description();
        unmask_model_description out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.precision = static_cast<int32_t>(d.precision);
        out.architecture = spec.architecture_name.c_str();
        out.parameters_total = d.parameters_total;
        out.parameters_active = d.parameters_active;
        out.weight_bytes = d.weight_bytes;
        out.vocab_size = spec.vocab_size;
        out.layers = static_cast<int32_t>(spec.layers);
        out.hidden_size = static_cast<int32_t>(spec.hidden_size);
        out.attention_heads = static_cast<int32_t>(spec.attention_heads);
        out.kv_heads = static_cast<int32_t>(spec.kv_heads);
        out.head_dim = static_cast<int32_t>(spec.head_dim);
        out.experts = static_cast<int32_t>(spec.experts);
        out.experts_per_token = static_cast<int32_t>(spec.experts_per_token);
        out.mask_token_id = static_cast<int32_t>(spec.mask_token_id);
        out.max_sequence_length = spec.max_sequence_length;
        out.tensor_count = static_cast<int64_t>(m.weights().size());
        out.checksums_verified = d.checksums == ChecksumResult::verified ? 1 : 0;
        out.eos_token_id = static_cast<int32_t>(spec.eos_token_id);
        out.diffusion_block_size = spec.diffusion_block_size;
        out.fingerprint = d.fingerprint.c_str();
        std::memcpy(info, &out, size);
    });
}

extern "C" unmask_status unmask_model_tensor(const unmask_model* model, int64_t index, unmask_tensor_description* info) {
    return guarded(__func__, [&] {
        require_not_null(model, "model");
        const size_t size = writable_size(info, "info", tensor_description_v1_size);
        const auto& weights = model->model().weights();
        if (index < 0 || index >= static_cast<int64_t>(weights.size()))
            fail(Status::invalid_argument, "index {} is outside the model's {} tensors", index, weights.size());
        const Weight& w = weights[static_cast<size_t>(index)];
        unmask_tensor_description out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.dtype = public_dtype(w.dtype);
        out.name = w.name.c_str();
        out.component = component_name(w.component).data();
        out.file_dtype = public_dtype(w.file_dtype);
        out.dims = static_cast<int32_t>(std::min<size_t>(w.shape.size(), UNMASK_MAX_DIMS));
        for (int32_t i = 0; i < out.dims; ++i) out.shape[i] = w.shape[static_cast<size_t>(i)];
        out.bytes = dtype_bytes(w.dtype, w.elements);
        std::memcpy(info, &out, size);
    });
}
