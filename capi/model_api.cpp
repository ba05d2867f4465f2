// unmask_model_*: loading, describing and freeing models.
#include <memory>

#include "boundary.hpp"
#include "handles.hpp"
#include "model/model.hpp"

using namespace unmask;
using namespace unmask::capi;

namespace {

// Sizes of the first published versions of the structs (ABI 1.0); never change these.
constexpr size_t model_params_v1_size = sizeof(unmask_model_params);
constexpr size_t model_description_v1_size = sizeof(unmask_model_description);

unmask_model_params default_model_params() {
    unmask_model_params p{};
    p.struct_size = sizeof(unmask_model_params);
    p.precision = UNMASK_PRECISION_AUTO;
    p.checksum_mode = UNMASK_CHECKSUM_IF_PRESENT;
    p.backend = UNMASK_BACKEND_CPU;
    p.log_level = UNMASK_LOG_INFO;
    return p;
}

LoadOptions to_load_options(const unmask_model_params& p) {
    LoadOptions options;
    options.precision = static_cast<Precision>(require_one_of(
        p.precision, {UNMASK_PRECISION_AUTO, UNMASK_PRECISION_FP32, UNMASK_PRECISION_BF16, UNMASK_PRECISION_FP16},
        "params->precision"));
    options.checksum_mode = static_cast<ChecksumMode>(require_one_of(
        p.checksum_mode, {UNMASK_CHECKSUM_IF_PRESENT, UNMASK_CHECKSUM_REQUIRE, UNMASK_CHECKSUM_SKIP},
        "params->checksum_mode"));
    options.backend = static_cast<BackendKind>(
        require_one_of(p.backend, {UNMASK_BACKEND_CPU, UNMASK_BACKEND_CUDA}, "params->backend"));
    const auto level = require_one_of(
        p.log_level, {UNMASK_LOG_DEBUG, UNMASK_LOG_INFO, UNMASK_LOG_WARN, UNMASK_LOG_ERROR}, "params->log_level");
    if (p.reserved0 != 0) fail(Status::invalid_argument, "params->reserved0 must be 0, got {}", p.reserved0);
    options.logger = Logger(p.log_callback, p.log_user_data, static_cast<LogLevel>(level));
    if (p.progress_callback != nullptr) {
        options.progress = [callback = p.progress_callback, user_data = p.progress_user_data](uint64_t done,
                                                                                              uint64_t total) {
            return callback(done, total, user_data) == 0;
        };
    }
    return options;
}

}  // namespace

extern "C" unmask_status unmask_model_params_init(unmask_model_params* params) {
    return guarded(__func__, [&] {
        require_not_null(params, "params");
        *params = default_model_params();
    });
}

extern "C" unmask_status unmask_model_load(const char* path, const unmask_model_params* params,
                                           unmask_model** out_model) {
    return guarded(__func__, [&] {
        require_not_null(out_model, "out_model");
        *out_model = nullptr;
        require_not_null(path, "path");
        const auto options =
            to_load_options(read_params(params, "params", default_model_params(), model_params_v1_size));
        auto model = load_model(path, options);
        *out_model = new unmask_model{std::move(model)};
    });
}

extern "C" void unmask_model_free(unmask_model* model) { delete model; }

extern "C" unmask_status unmask_model_info(const unmask_model* model, unmask_model_description* info) {
    return guarded(__func__, [&] {
        require_not_null(model, "model");
        const size_t size = writable_size(info, "info", model_description_v1_size);
        const ModelDescription& d = model->model->description();
        unmask_model_description out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.precision = static_cast<int32_t>(d.precision);
        out.architecture = d.architecture.c_str();
        out.parameters_total = d.parameters_total;
        out.parameters_active = d.parameters_active;
        out.weight_bytes = d.weight_bytes;
        out.vocab_size = d.vocab_size;
        out.layers = d.layers;
        out.hidden_size = d.hidden_size;
        out.attention_heads = d.attention_heads;
        out.kv_heads = d.kv_heads;
        out.head_dim = d.head_dim;
        out.experts = d.experts;
        out.experts_per_token = d.experts_per_token;
        out.mask_token_id = d.mask_token_id;
        out.max_sequence_length = d.max_sequence_length;
        std::memcpy(info, &out, size);
    });
}
