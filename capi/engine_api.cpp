// unmask_engine_*, unmask_request_*: the engine behind the C API.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "boundary.hpp"
#include "engine/metrics.hpp"
#include "engine/service_config.hpp"
#include "generate_params.hpp"
#include "handles.hpp"

using namespace unmask;
using namespace unmask::capi;

namespace {


unmask_engine_params default_engine_params() {
    unmask_engine_params p{};
    p.struct_size = sizeof p;
    p.max_concurrent_requests = 8;
    p.max_queued_requests = 64;
    p.log_level = UNMASK_LOG_INFO;
    return p;
}

EngineOptions to_engine_options(const unmask_engine_params& p) {
    EngineOptions o;
    o.max_concurrent_requests = p.max_concurrent_requests;
    o.max_queued_requests = p.max_queued_requests;
    if (p.threads < 0 || p.threads > 1024) fail(Status::invalid_argument, "params->threads {} is outside 0..1024", p.threads);
    o.threads = p.threads;
    if (p.max_sequence_length < 0)
        fail(Status::invalid_argument, "params->max_sequence_length must not be negative, got {}", p.max_sequence_length);
    o.max_sequence_length = p.max_sequence_length;
    o.max_tokens_per_forward = p.max_tokens_per_forward;
    o.request_timeout_seconds = p.request_timeout_seconds;
    o.min_steps = p.min_steps;
    o.max_steps = p.max_steps;
    const auto level = require_one_of(
        p.log_level, {UNMASK_LOG_DEBUG, UNMASK_LOG_INFO, UNMASK_LOG_WARN, UNMASK_LOG_ERROR}, "params->log_level");
    o.logger = Logger(p.log_callback, p.log_user_data, static_cast<LogLevel>(level));
    return o;
}

unmask_engine* start_engine(std::shared_ptr<const unmask_model> model, EngineOptions options) {
    require_not_null(model.get(), "model");
    auto engine = model->loaded->start_engine(std::move(options));
    return new unmask_engine{std::move(model), std::move(engine)};
}

const Request& request_of(const unmask_request* request) {
    require_not_null(request, "request");
    return *request->request;
}

RequestResult finished_result(const unmask_request* request) {
    const Request& r = request_of(request);
    if (!r.finished()) fail(Status::invalid_argument, "request {} has not finished yet", r.id());
    return r.result();
}

}  // namespace

// Parenthesised: the header makes the name a macro for the sized form.
extern "C" unmask_status(unmask_engine_params_init)(unmask_engine_params* params) {
    return guarded(__func__, [&] { write_defaults(params, engine_params_v1_3_size, default_engine_params(), engine_params_v1_size); });
}

extern "C" unmask_status unmask_engine_params_init_sized(unmask_engine_params* params, size_t size) {
    return guarded(__func__, [&] { write_defaults(params, size, default_engine_params(), engine_params_v1_size); });
}

extern "C" unmask_status unmask_engine_create(const unmask_model* model, const unmask_engine_params* params,
                                              unmask_engine** out_engine) {
    return guarded(__func__, [&] {
        require_not_null(out_engine, "out_engine");
        *out_engine = nullptr;
        require_not_null(model, "model");
        const auto p = read_params(params, "params", default_engine_params(), engine_params_v1_size);
        // The caller owns the model: a handle that never deletes it.
        *out_engine = start_engine(std::shared_ptr<const unmask_model>(model, [](const unmask_model*) {}),
                                   to_engine_options(p));
    });
}

extern "C" unmask_status unmask_engine_create_from_config(const char* path, unmask_engine** out_engine) {
    return guarded(__func__, [&] {
        require_not_null(out_engine, "out_engine");
        *out_engine = nullptr;
        require_not_null(path, "path");
        const ServiceConfig config = read_service_config(path);
        unmask_model_params load;
        unmask_model_params_init(&load);
        load.precision = static_cast<int32_t>(config.precision);
        load.quantize_embeddings = config.quantize_embeddings ? 1 : 0;
        load.backend = config.gpu_devices.empty() ? UNMASK_BACKEND_CPU : UNMASK_BACKEND_CUDA;
        const std::vector<int32_t> gpus(config.gpu_devices.begin(), config.gpu_devices.end());
        if (!gpus.empty()) {
            load.devices = static_cast<int32_t>(gpus.size());
            load.device_ids = gpus.data();
        } else {
            load.devices = static_cast<int32_t>(config.cpu_devices);
        }
        load.memory_fraction = config.memory_fraction;
        load.log_level = static_cast<int32_t>(config.log_level);
        unmask_model* model = nullptr;
        if (const unmask_status status = unmask_model_load(config.weights_path.c_str(), &load, &model); status != UNMASK_OK)
            throw Error(static_cast<Status>(status), unmask_last_error());
        std::shared_ptr<const unmask_model> owned(model, [](const unmask_model* m) { unmask_model_free(const_cast<unmask_model*>(m)); });
        EngineOptions options;
        options.max_concurrent_requests = config.max_concurrent_requests;
        options.max_queued_requests = config.max_queued_requests;
        options.request_timeout_seconds = config.request_timeout_seconds;
        options.max_sequence_length = config.max_sequence_length;
        options.min_steps = config.min_diffusion_steps;
        options.max_steps = config.max_diffusion_steps;
        *out_engine = start_engine(std::move(owned), std::move(options));
    });
}

extern "C" unmask_status unmask_engine_model(const unmask_engine* engine, const unmask_model** model) {
    return guarded(__func__, [&] {
        require_not_null(engine, "engine");
        require_not_null(model, "model");
        *model = engine->model.get();
    });
}

extern "C" void unmask_engine_free(unmask_engine* engine) { delete engine; }

extern "C" unmask_status unmask_engine_shutdown(unmask_engine* engine, int32_t mode, double timeout_seconds) {
    return guarded(__func__, [&] {
        require_not_null(engine, "engine");
        require_one_of(mode, {UNMASK_SHUTDOWN_DRAIN, UNMASK_SHUTDOWN_IMMEDIATE}, "mode");
        if (!(timeout_seconds >= 0) || !std::isfinite(timeout_seconds))
            fail(Status::invalid_argument, "timeout_seconds must be finite and not negative, got {}", timeout_seconds);
        const auto timeout = std::chrono::duration<double>(timeout_seconds > 0 ? std::min(timeout_seconds, 1e9) : 1e9);
        engine->engine->shutdown(mode == UNMASK_SHUTDOWN_DRAIN ? Engine::ShutdownMode::drain
                                                              : Engine::ShutdownMode::immediate,
                                 timeout);
    });
}

extern "C" unmask_status unmask_engine_submit(unmask_engine* engine, const unmask_generate_params* params,
                                              const int32_t* prompt, int64_t prompt_length, double wait_seconds,
                                              unmask_request** out_request) {
    return guarded(__func__, [&] {
        require_not_null(out_request, "out_request");
        *out_request = nullptr;
        require_not_null(engine, "engine");
        if (!(wait_seconds >= 0) || !std::isfinite(wait_seconds))
            fail(Status::invalid_argument, "wait_seconds must be finite and not negative, got {}", wait_seconds);
        const auto p = read_params(params, "params", default_generate_params(), generate_params_v1_size);
        RequestInput input;
        input.params = to_decode_params(p);
        input.canvas = prompt_canvas(engine->model->model().spec(), input.params, prompt, prompt_length, 0);
        input.first_output = prompt_length;
        input.timeout_seconds = p.timeout_seconds;
        input.stream_steps = p.stream_steps == 1;
        auto handle = std::make_unique<unmask_request>();
        handle->model = engine->model;
        if (p.stream_callback != nullptr) {
            handle->stream = std::make_shared<unmask_stream_target>();
            handle->stream->callback = p.stream_callback;
            handle->stream->user_data = p.stream_user_data;
            input.stream = [target = handle->stream](const StreamEvent& e) {
                std::lock_guard lock(target->mutex);
                if (target->detached) return false;  // the handle was freed: stop the request
                unmask_stream_event event{};
                event.struct_size = sizeof event;
                event.kind = e.block_completed ? UNMASK_STREAM_BLOCK : UNMASK_STREAM_STEP;
                event.request_id = e.request_id;
                event.step = e.step;
                event.completed_blocks = e.completed_blocks;
                event.committed = e.committed;
                event.tokens = e.tokens.data();
                event.token_count = static_cast<int64_t>(e.tokens.size());
                return target->callback(&event, target->user_data) == 0;
            };
        }
        const auto wait = wait_seconds > 0 ? std::optional(std::chrono::duration<double>(std::min(wait_seconds, 1e9)))
                                           : std::nullopt;
        handle->request = engine->engine->submit(std::move(input), wait);
        *out_request = handle.release();
    });
}

extern "C" unmask_status unmask_request_wait(const unmask_request* request, double timeout_seconds) {
    return guarded(__func__, [&] {
        const Request& r = request_of(request);
        if (std::isnan(timeout_seconds)) fail(Status::invalid_argument, "timeout_seconds is NaN");
        // Beyond about 31 years is no limit (longer waits would overflow the clock).
        const auto timeout = timeout_seconds < 0 || timeout_seconds > 1e9
                                 ? std::nullopt
                                 : std::optional(std::chrono::duration<double>(timeout_seconds));
        if (!r.wait(timeout))
            fail(Status::timeout, "request {} has no outcome yet after {} s", r.id(), timeout_seconds);
    });
}

extern "C" unmask_status unmask_request_cancel(unmask_request* request) {
    return guarded(__func__, [&] {
        require_not_null(request, "request");
        request->request->cancel();
    });
}

extern "C" unmask_status unmask_request_stop(unmask_request* request) {
    return guarded(__func__, [&] {
        require_not_null(request, "request");
        request->request->stop();
    });
}

extern "C" unmask_status unmask_request_info_get(const unmask_request* request, unmask_request_info* info) {
    return guarded(__func__, [&] {
        const Request& r = request_of(request);
        const size_t size = writable_size(info, "info", request_info_v1_size);
        unmask_request_info out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.request_id = r.id();
        if (r.finished()) {
            const RequestResult result = r.result();
            out.state = UNMASK_REQUEST_FINISHED;
            out.finish_reason = static_cast<int32_t>(result.finish);
            out.error_status = static_cast<int32_t>(result.error_status);
            out.token_count = static_cast<int64_t>(result.tokens.size());
            out.steps = result.steps;
            out.forwards = result.forwards;
            out.queue_seconds = result.timings.queue;
            out.compute_seconds = result.timings.compute;
            out.first_block_seconds = result.timings.first_block;
            out.end_to_end_seconds = result.timings.end_to_end;
        } else {
            out.state = r.admitted() ? UNMASK_REQUEST_RUNNING : UNMASK_REQUEST_QUEUED;
        }
        std::memcpy(info, &out, size);
    });
}

extern "C" unmask_status unmask_request_tokens(const unmask_request* request, int32_t* tokens, int64_t capacity,
                                               int64_t* count) {
    return guarded(__func__, [&] {
        require_not_null(count, "count");
        require_array(tokens, capacity, "tokens", "capacity");
        const RequestResult result = finished_result(request);
        write_sized(result.tokens.data(), result.tokens.size(), tokens, capacity, count);
    });
}

extern "C" unmask_status unmask_request_text(const unmask_request* request, char* text, int64_t capacity,
                                             int64_t* length) {
    return guarded(__func__, [&] {
        require_not_null(length, "length");
        require_array(text, capacity, "text", "capacity");
        const RequestResult result = finished_result(request);
        const Tokenizer* tokenizer = request->model->tokenizer.tokenizer.get();
        if (tokenizer == nullptr) fail(Status::unsupported, "the model has no tokenizer (no tokenizer.json, or a GGUF file without one)");
        // The answer ends at the first EOS (what follows is padding the model wrote).
        const int64_t eos = request->model->model().spec().eos_token_id;
        const auto end = eos >= 0 ? std::find(result.tokens.begin(), result.tokens.end(), static_cast<int32_t>(eos))
                                  : result.tokens.end();
        const std::string decoded =
            tokenizer->decode(std::span(result.tokens.data(), size_t(end - result.tokens.begin())), true);
        write_sized(decoded.data(), decoded.size(), text, capacity, length);
    });
}

extern "C" void unmask_request_free(unmask_request* request) {
    if (request == nullptr) return;
    request->request->cancel();
    if (request->stream) {
        // Waits for a callback in progress; none starts afterwards.
        std::lock_guard lock(request->stream->mutex);
        request->stream->detached = true;
    }
    delete request;
}

extern "C" unmask_status unmask_engine_stats_get(const unmask_engine* engine, unmask_engine_stats* stats) {
    return guarded(__func__, [&] {
        require_not_null(engine, "engine");
        const size_t size = writable_size(stats, "stats", engine_stats_v1_size);
        const EngineStats s = engine->engine->stats();
        unmask_engine_stats out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.health = static_cast<int32_t>(s.health);
        out.requests_running = s.running;
        out.requests_waiting = s.waiting;
        out.requests_submitted = s.submitted;
        out.requests_rejected = s.rejected;
        std::copy(std::begin(s.finished), std::end(s.finished), out.finished);
        out.steps_total = s.steps;
        out.forwards_total = s.forwards;
        out.generation_tokens_total = s.generated_tokens;
        out.prompt_tokens_total = s.prompt_tokens;
        out.queue_seconds_p50 = s.queue_time.quantile(0.50);
        out.queue_seconds_p95 = s.queue_time.quantile(0.95);
        out.queue_seconds_p99 = s.queue_time.quantile(0.99);
        out.first_block_seconds_p50 = s.first_block_time.quantile(0.50);
        out.first_block_seconds_p95 = s.first_block_time.quantile(0.95);
        out.first_block_seconds_p99 = s.first_block_time.quantile(0.99);
        out.end_to_end_seconds_p50 = s.end_to_end_time.quantile(0.50);
        out.end_to_end_seconds_p95 = s.end_to_end_time.quantile(0.95);
        out.end_to_end_seconds_p99 = s.end_to_end_time.quantile(0.99);
        out.memory_capacity = s.memory_capacity;
        out.memory_planned = s.memory_planned;
        out.memory_reserved = s.memory_reserved;
        out.memory_in_use = s.memory_in_use;
        out.memory_peak_in_use = s.memory_peak_in_use;
        out.max_tokens_per_forward = s.max_tokens_per_forward;
        std::memcpy(stats, &out, size);
    });
}

extern "C" unmask_status unmask_engine_metrics(const unmask_engine* engine, char* text, int64_t capacity,
                                               int64_t* length) {
    return guarded(__func__, [&] {
        require_not_null(engine, "engine");
        require_not_null(length, "length");
        require_array(text, capacity, "text", "capacity");
        const std::string rendered = prometheus_text(engine->engine->stats());
        write_sized(rendered.data(), rendered.size(), text, capacity, length);
    });
}
