#include "engine_session.hpp"

#include <stdexcept>

#include "commands.hpp"
#include "service_params.hpp"

namespace unmask_cli {

std::vector<OptionSpec> with_engine_options(std::vector<OptionSpec> options) {
    const std::vector<OptionSpec> engine = {
        {"model", "PATH", "the Hugging Face model directory or GGUF file (default: $UNMASK_MODEL or the bundled model)", 'm'},
        {"config", "FILE", "a service configuration (JSON or YAML); flags override its values"},
        {"precision", "P", "auto (file dtypes), fp32, bf16, fp16, or int8, q4 or fp8 (matrices quantized at load)"},
        quantize_embeddings_option,
        {"backend", "B", "cpu (default) or cuda"},
        {"device", "N", "the GPU for --backend cuda (default 0)"},
        {"devices", "N", "devices sharing the model (docs/parallel.md): host devices on the CPU (default 1)"},
        {"threads", "N", "CPU threads (default: all)"},
        {"max-concurrent", "N", "requests running at once"},
        {"max-queued", "N", "requests waiting for admission (default 64)"},
        {"timeout", "SECONDS", "default deadline per request (0: none)"},
        {"log-file", "PATH", "write the library's log there"},
        {"log-rotation-mb", "MB", "move the log file to PATH.1 when it passes this size"},
        {"progress", "", "report loading on stderr (a line per tenth) even when it is not a terminal"}};
    options.insert(options.end(), engine.begin(), engine.end());
    return with_memory_options(std::move(options));
}

bool read_config_option(const ParsedArgs& args, unmask_service_config& config) {
    const auto path = args.value("config");
    if (!path) return false;
    config = {};
    config.struct_size = sizeof config;
    check(unmask_service_config_read(path->c_str(), &config));
    return true;
}

EngineSession load_session_model(const ParsedArgs& args, int32_t default_concurrency) {
    unmask_service_config config{};
    const bool configured = read_config_option(args, config);
    unmask_model_params model_params;
    check(unmask_model_params_init(&model_params));
    unmask_engine_params engine_params;
    check(unmask_engine_params_init(&engine_params));
    engine_params.max_concurrent_requests = default_concurrency;
    std::string path;
    double rotation_mb = 0;
    if (configured) {
        path = config.weights_path;
        unmask_examples::apply_service_config(config, model_params, engine_params);
        rotation_mb = double(config.log_rotation_size_mb);
    }
    if (auto v = args.value("model")) path = *v;
    if (path.empty()) path = default_model_path();
    if (auto v = args.value("precision")) model_params.precision = parse_precision(*v);
    if (args.has("quantize-embeddings")) model_params.quantize_embeddings = 1;
    if (auto v = args.value("backend")) model_params.backend = parse_backend(*v);
    apply_memory_options(args, model_params);
    auto int32 = [&](const char* name, int32_t& field, int64_t min) {
        if (auto v = args.integer(name)) {
            if (*v < min || *v > INT32_MAX) throw UsageError(std::string("--") + name + " is out of range");
            field = static_cast<int32_t>(*v);
        }
    };
    int32("device", model_params.device, 0);
    int32("devices", model_params.devices, 1);
    // The configuration's GPUs give way to a backend, a device or devices named here.
    if (configured && config.gpu_device_count > 0 && (args.has("backend") || args.has("device") || args.has("devices"))) {
        model_params.device_ids = nullptr;
        if (!args.has("devices")) model_params.devices = 1;
    }
    int32("threads", engine_params.threads, 0);
    int32("max-concurrent", engine_params.max_concurrent_requests, 1);
    int32("max-queued", engine_params.max_queued_requests, 1);
    if (auto v = args.number("timeout")) engine_params.request_timeout_seconds = *v;
    if (auto v = args.number("log-rotation-mb")) {
        if (!(*v >= 0 && *v < 1e9)) throw UsageError("--log-rotation-mb must be a size in MB, at least 0");
        rotation_mb = *v;
    }

    EngineSession session;
    if (auto log_path = args.value("log-file")) {
        try {
            session.log = std::make_unique<LogFile>(*log_path, static_cast<uint64_t>(rotation_mb * 1048576.0));
        } catch (const std::runtime_error& e) {
            throw CommandError(UNMASK_ERR_IO, std::string("IO: ") + e.what());
        }
        model_params.log_callback = &LogFile::sink;
        model_params.log_user_data = session.log.get();
        engine_params.log_callback = &LogFile::sink;
        engine_params.log_user_data = session.log.get();
    }
    session.model = load_model(path, model_params, args.has("progress"));
    session.engine_params = engine_params;
    check(unmask_model_tokenizer(session.model.get(), &session.tokenizer));
    session.info.struct_size = sizeof session.info;
    check(unmask_model_info(session.model.get(), &session.info));
    return session;
}

void start_engine(EngineSession& session) {
    unmask_engine* engine = nullptr;
    check(unmask_engine_create(session.model.get(), &session.engine_params, &engine));
    session.engine.reset(engine);
}

}  // namespace unmask_cli
