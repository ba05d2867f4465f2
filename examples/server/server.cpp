#include "server.hpp"

#include <strings.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "answer_text.hpp"
#include "api_error.hpp"
#include "connection_probe.hpp"
#include "openai_response.hpp"
#include "unmask.hpp"

namespace unmask_server {
namespace {

using Clock = std::chrono::steady_clock;

// What the access log line of the request being served on this thread reports. cpp-httplib
// serves a connection's requests one at a time on one thread, handler and response writing
// included, so the handler fills it in and the logger reads it.
struct AccessRecord {
    Clock::time_point start = Clock::now();
    std::string request_id = "-", key = "-", prompt;
    // How a generation ended: stop or length (answered), timeout, cancelled, error, disconnected.
    // A stream's status line goes out before its end, so this is where its outcome shows.
    std::string outcome = "-";
    int64_t prompt_tokens = 0, completion_tokens = 0, steps = 0, forwards = 0;
};
thread_local AccessRecord access_record;

ApiError from_status(unmask_status status, const std::string& message) {
    switch (status) {
        case UNMASK_ERR_INVALID_ARGUMENT:
        case UNMASK_ERR_UNSUPPORTED: return ApiError(400, message, "", "invalid_value");
        case UNMASK_ERR_TOO_LONG: return ApiError(400, message, "", "context_length_exceeded");
        case UNMASK_ERR_OUT_OF_BUDGET: return ApiError(400, message, "", "out_of_budget");
        case UNMASK_ERR_QUEUE_FULL: {
            ApiError error(429, message, "", "queue_full");
            error.retry_after_seconds = 1;
            return error;
        }
        case UNMASK_ERR_SHUTTING_DOWN:
        case UNMASK_ERR_CANCELLED: return ApiError(503, message, "", "shutting_down");
        case UNMASK_ERR_TIMEOUT: return ApiError(504, message, "", "timeout");
        default: return ApiError(500, message, "", unmask_status_string(status));
    }
}

ApiError unavailable(const std::string& message, const char* code) {
    ApiError error(503, message, "", code);
    error.retry_after_seconds = 1;
    return error;
}

// The outcome of a request that ended without an answer.
const char* unanswered(const unmask_request_info& info) {
    return info.finish_reason == UNMASK_FINISH_TIMEOUT     ? "timeout"
           : info.finish_reason == UNMASK_FINISH_CANCELLED ? "cancelled"
                                                           : "error";
}

// The error a client gets for a request that ended without an answer.
ApiError failure(const unmask_request_info& info) {
    switch (info.finish_reason) {
        case UNMASK_FINISH_TIMEOUT: return ApiError(504, "the request passed its deadline", "", "timeout");
        case UNMASK_FINISH_CANCELLED: return unavailable("the server is shutting down", "shutting_down");
        default:
            return from_status(info.error_status, std::string("the request failed: ") + unmask_status_string(info.error_status));
    }
}

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string folder_name(const std::string& path) {
    const std::filesystem::path p = std::filesystem::path(path).lexically_normal();
    const std::string name = (p.has_filename() ? p : p.parent_path()).filename().string();
    return name.empty() ? "model" : name;
}

std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::vector<int32_t> encode(const unmask_tokenizer* tokenizer, const CompletionRequest& request) {
    if (!request.prompt_ids.empty()) return request.prompt_ids;
    const bool completion = request.endpoint == Endpoint::completions;
    const char* field = completion ? "prompt" : "messages";
    if (tokenizer == nullptr) throw invalid_field(field, "must be token ids: the model has no tokenizer");
    std::vector<int32_t> ids;
    try {
        const unmask::api::Tokenizer view(tokenizer);
        ids = completion ? view.encode(request.prompt, true) : view.encode_chat(request.user, request.system);
    } catch (const unmask::api::Error& e) {
        throw invalid_field(field, std::string("cannot be encoded: ") + e.what());
    }
    if (ids.empty()) throw invalid_field(field, "must not be empty");
    return ids;
}

}  // namespace

// One request being served: its parsed body, its engine request and what streams from it.
struct Server::Job {
    Job(Server& owner, CompletionRequest parsed, const httplib::Request& request)
        : server(owner), body(std::move(parsed)), probe(request) {}
    ~Job() {
        {
            // Out of the drain's sight before the handle goes.
            std::lock_guard lock(server.jobs_mutex_);
            server.jobs_.erase(this);
            server.jobs_changed_.notify_all();
        }
        unmask_request_free(handle);  // no stream callback reaches this job afterwards
    }
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;

    static int32_t on_stream_event(const unmask_stream_event* event, void* user_data) {
        auto& job = *static_cast<Job*>(user_data);
        std::lock_guard lock(job.mutex);
        job.latest.assign(event->tokens, event->tokens + event->token_count);
        job.fresh = true;
        job.changed.notify_all();
        return 0;
    }

    CompletionOutcome outcome() const {
        CompletionOutcome o;
        o.id = id;
        o.model = server.options_.model_name;
        o.created = created;
        o.prompt_tokens = prompt_tokens;
        return o;
    }

    Server& server;
    CompletionRequest body;
    ConnectionProbe probe;
    std::string id;
    int64_t created = unix_seconds();
    int64_t prompt_tokens = 0;
    unmask_request* handle = nullptr;
    bool client_gone = false;
    // Streaming: the generated region at the latest committed block.
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<int32_t> latest;
    bool fresh = false;
};

Server::Server(ServerOptions options, unmask_examples::LogFile& log)
    : options_(std::move(options)), log_(log), rate_limiter_(options_.rate_limit_per_second, options_.rate_limit_burst) {
    if (options_.model_name.empty()) options_.model_name = folder_name(options_.model_path);
    created_ = unix_seconds();
    if (!options_.tls_certificate.empty()) {
        auto tls = std::make_unique<httplib::SSLServer>(options_.tls_certificate.c_str(), options_.tls_private_key.c_str());
        if (!tls->is_valid())
            throw std::runtime_error("cannot use the TLS certificate '" + options_.tls_certificate + "' and key '" +
                                     options_.tls_private_key + "'");
        http_ = std::move(tls);
    } else {
        http_ = std::make_unique<httplib::Server>();
    }
    // A connection is a thread while its request runs: enough for every request the engine can
    // hold (running and queued) plus the probes, so overload is answered with 429, not a wait.
    const size_t threads = static_cast<size_t>(options_.engine_params.max_concurrent_requests +
                                               options_.engine_params.max_queued_requests) + 16;
    http_->new_task_queue = [threads] { return new httplib::ThreadPool(std::min<size_t>(threads, 1024)); };
    http_->set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
    // Idle keep-alive connections and slow clients hold a thread: keep both short.
    http_->set_keep_alive_timeout(2);
    http_->set_read_timeout(10);
    http_->set_write_timeout(10);
    route();
    if (options_.port == 0) {
        port_ = http_->bind_to_any_port(options_.host);
    } else {
        port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
    }
    if (port_ <= 0)
        throw std::runtime_error("cannot listen on " + options_.host + ":" + std::to_string(options_.port));
}

Server::~Server() {
    unmask_engine_free(engine_);
    unmask_model_free(model_);
}

void Server::log(int32_t level, const std::string& message) { log_.write(level, "server: " + message); }

void Server::reply_error(httplib::Response& response, const ApiError& error) {
    response.status = error.status;
    if (error.retry_after_seconds > 0)
        response.set_header("Retry-After", std::to_string(static_cast<int64_t>(std::ceil(error.retry_after_seconds))));
    if (error.status == 401) response.set_header("WWW-Authenticate", "Bearer");
    response.set_content(error_body(error), "application/json");
}

void Server::route() {
    http_->set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
        access_record = AccessRecord{};
        // Only bodies with a Content-Length are bounded by max_body_bytes (cpp-httplib 0.11 reads
        // chunked and length-less bodies whole, and inflates compressed ones): refuse the others
        // before their bodies are read, and ask the client to close the connection they are on.
        if (request.method != "POST") return httplib::Server::HandlerResponse::Unhandled;
        std::optional<ApiError> refused;
        if (request.has_header("Transfer-Encoding") || !request.has_header("Content-Length"))
            refused = ApiError(411, "a request body needs a Content-Length (chunked bodies are not accepted)", "",
                               "length_required");
        else if (request.has_header("Content-Encoding"))
            refused = ApiError(415, "compressed request bodies are not accepted", "", "unsupported_encoding");
        if (!refused) return httplib::Server::HandlerResponse::Unhandled;
        const_cast<httplib::Request&>(request).set_header("Connection", "close");  // the response says so
        reply_error(response, *refused);
        return httplib::Server::HandlerResponse::Handled;
    });
    http_->set_error_handler([this](const httplib::Request& request, httplib::Response& response) {
        if (!response.body.empty()) return;
        if (response.status == 413)
            reply_error(response, ApiError(413, "the request body is larger than max_body_bytes (" +
                                                    std::to_string(options_.max_body_bytes) + ")", "", "body_too_large"));
        else if (response.status == 404)
            reply_error(response, ApiError(404, "no such endpoint: " + request.method + " " + request.path, "", "not_found"));
        else if (response.status == 400)
            reply_error(response, ApiError(400, "malformed HTTP request", "", "bad_request"));
        else
            reply_error(response, ApiError(response.status, "HTTP " + std::to_string(response.status)));
    });
    http_->set_exception_handler([this](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
        std::string what = "unknown";
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        log(UNMASK_LOG_ERROR, "a handler failed: " + what);
        reply_error(response, ApiError(500, "internal error: " + what));
    });
    http_->set_logger([this](const httplib::Request& request, const httplib::Response& response) {
        const AccessRecord& r = access_record;
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - r.start).count();
        char line[512];
        std::snprintf(line, sizeof line,
                      "access id=%s key=%s client=%s method=%s path=%s status=%d outcome=%s latency_ms=%.1f "
                      "prompt_tokens=%lld completion_tokens=%lld steps=%lld forwards=%lld",
                      r.request_id.c_str(), r.key.c_str(), request.remote_addr.c_str(), quoted(request.method.substr(0, 16)).c_str(),
                      quoted(request.path.substr(0, 128)).c_str(), response.status, r.outcome.c_str(), ms, static_cast<long long>(r.prompt_tokens),
                      static_cast<long long>(r.completion_tokens), static_cast<long long>(r.steps),
                      static_cast<long long>(r.forwards));
        std::string message = line;
        if (options_.log_prompts && !r.prompt.empty()) message += " prompt=" + quoted(r.prompt);
        log_.write(UNMASK_LOG_INFO, message);
        access_record = AccessRecord{};  // requests refused before routing have no record of their own
        std::lock_guard lock(counters_mutex_);
        ++responses_by_status_[response.status];
    });

    http_->Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
        response.set_content(R"({"status":"alive"})", "application/json");
    });
    http_->Get("/readyz", [this](const httplib::Request&, httplib::Response& response) {
        const State state = state_.load();
        const char* name = state == State::loading ? "loading" : state == State::failed ? "failed" : "draining";
        if (state == State::ready) {
            unmask_engine_stats stats{};
            stats.struct_size = sizeof stats;
            const bool known = unmask_engine_stats_get(engine_, &stats) == UNMASK_OK;
            name = !known                                   ? "failed"
                   : stats.health == UNMASK_HEALTH_READY    ? "ready"
                   : stats.health == UNMASK_HEALTH_DRAINING ? "draining"
                                                            : "failed";
        }
        const bool ready = std::string_view(name) == "ready";
        response.status = ready ? 200 : 503;
        response.set_content(std::string(R"({"status":")") + name + "\"}", "application/json");
    });
    http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
        response.set_content(metrics(), "text/plain; version=0.0.4");
    });
    http_->Get("/v1/models", [this](const httplib::Request& request, httplib::Response& response) {
        try {
            admit(request);
            response.set_content(models_body(options_.model_name, created_), "application/json");
        } catch (const ApiError& error) {
            reply_error(response, error);
        }
    });
    http_->Post("/v1/completions", [this](const httplib::Request& request, httplib::Response& response) {
        handle_completion(request, response, Endpoint::completions);
    });
    http_->Post("/v1/chat/completions", [this](const httplib::Request& request, httplib::Response& response) {
        handle_completion(request, response, Endpoint::chat_completions);
    });
}

// Authentication and the rate limit of the /v1/ endpoints: in the handlers, once the body has been
// read, so that a refused request leaves its keep-alive connection usable.
void Server::admit(const httplib::Request& request) {
    std::string client = request.remote_addr;
    if (!options_.keys.empty()) {
        const std::string header = request.get_header_value("Authorization");
        std::optional<std::string> key;
        if (header.size() > 7 && strncasecmp(header.c_str(), "Bearer ", 7) == 0)
            key = options_.keys.find(std::string_view(header).substr(7));
        if (!key)
            throw ApiError(401, header.empty() ? "an API key is required (Authorization: Bearer KEY)" : "the API key is not valid",
                           "", "invalid_api_key");
        access_record.key = client = *key;
    }
    if (const double wait = rate_limiter_.acquire(client); wait > 0) {
        ApiError error(429, "rate limit exceeded: at most " + std::to_string(options_.rate_limit_per_second) +
                                " requests a second", "", "rate_limit_exceeded");
        error.retry_after_seconds = wait;
        throw error;
    }
}

std::string Server::metrics() {
    std::string text;
    if (const State state = state_.load(); state == State::ready || state == State::draining) {
        try {
            text = unmask::api::Tokenizer::read_text([&](char* buffer, int64_t capacity, int64_t* length) {
                return unmask_engine_metrics(engine_, buffer, capacity, length);
            }, "unmask_engine_metrics");
        } catch (const unmask::api::Error& e) {
            log(UNMASK_LOG_WARN, e.what());
        }
    }
    std::lock_guard lock(counters_mutex_);
    text += "# HELP unmask_server:http_responses_total HTTP responses by status code.\n"
            "# TYPE unmask_server:http_responses_total counter\n";
    for (const auto& [status, count] : responses_by_status_)
        text += "unmask_server:http_responses_total{code=\"" + std::to_string(status) + "\"} " + std::to_string(count) + "\n";
    text += "# HELP unmask_server:client_disconnects_total Requests cancelled because their client went away.\n"
            "# TYPE unmask_server:client_disconnects_total counter\n"
            "unmask_server:client_disconnects_total " + std::to_string(client_disconnects_) + "\n";
    const State state = state_.load();
    text += "# HELP unmask_server:ready 1 when the server takes requests.\n# TYPE unmask_server:ready gauge\n"
            "unmask_server:ready " + std::string(state == State::ready ? "1" : "0") + "\n";
    return text;
}

void Server::apply_service_limits(CompletionRequest& request) const {
    unmask_generate_params& p = request.params;
    if (!request.seed_given) p.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
    // The service's bounds are limits a client may tighten, never loosen.
    const unmask_engine_params& service = options_.engine_params;
    if (service.request_timeout_seconds > 0 && (p.timeout_seconds <= 0 || p.timeout_seconds > service.request_timeout_seconds))
        p.timeout_seconds = service.request_timeout_seconds;
    if (service.max_steps > 0 && (p.max_steps <= 0 || p.max_steps > service.max_steps)) p.max_steps = service.max_steps;
    if (service.min_steps > 0 && p.min_steps < service.min_steps) p.min_steps = service.min_steps;
    if (p.max_steps > 0 && p.min_steps > p.max_steps) p.min_steps = p.max_steps;
}

std::shared_ptr<Server::Job> Server::submit(const httplib::Request& request, Endpoint endpoint) {
    const State state = state_.load();
    if (state == State::loading) throw unavailable("the model is still loading", "loading");
    if (state != State::ready) throw unavailable("the server is shutting down", "shutting_down");

    auto job = std::make_shared<Job>(*this, parse_completion_request(request.body, endpoint), request);
    CompletionRequest& body = job->body;
    if (!body.model.empty() && body.model != options_.model_name)
        throw ApiError(404, "the model '" + body.model + "' does not exist; this server serves '" + options_.model_name + "'",
                       "model", "model_not_found");
    if (tokenizer_ == nullptr)
        throw ApiError(400, "the model has no tokenizer.json: the server answers with text and needs one", "",
                       "no_tokenizer");
    const std::vector<int32_t> ids = encode(tokenizer_, body);
    apply_service_limits(body);
    job->id = (endpoint == Endpoint::completions ? "cmpl-" : "chatcmpl-") + std::to_string(next_id_++);
    job->prompt_tokens = static_cast<int64_t>(ids.size());
    access_record.request_id = job->id;
    access_record.prompt_tokens = job->prompt_tokens;
    if (options_.log_prompts) access_record.prompt = endpoint == Endpoint::completions ? body.prompt : body.user;
    if (body.stream) {
        body.params.stream_callback = &Job::on_stream_event;
        body.params.stream_user_data = job.get();
    }
    // Registered and submitted in one step, so the drain sees every request with its handle.
    std::lock_guard lock(jobs_mutex_);
    if (state_.load() != State::ready) throw unavailable("the server is shutting down", "shutting_down");
    if (const unmask_status status = unmask_engine_submit(engine_, &body.params, ids.data(),
                                                          static_cast<int64_t>(ids.size()), 0, &job->handle);
        status != UNMASK_OK)
        throw from_status(status, unmask_last_error());
    jobs_.insert(job.get());
    return job;
}

void Server::handle_completion(const httplib::Request& request, httplib::Response& response, Endpoint endpoint) {
    try {
        admit(request);
        auto job = submit(request, endpoint);
        response.set_header("X-Request-Id", job->id);
        if (job->body.stream)
            stream(std::move(job), response);
        else
            answer(*job, response);
    } catch (const ApiError& error) {
        reply_error(response, error);
    }
}

void Server::answer(Job& job, httplib::Response& response) {
    while (unmask_request_wait(job.handle, 0.05) == UNMASK_ERR_TIMEOUT) {
        if (!job.probe.alive()) {
            job.client_gone = true;
            unmask_request_cancel(job.handle);
        }
    }
    unmask_request_info info{};
    info.struct_size = sizeof info;
    unmask_request_info_get(job.handle, &info);
    access_record.steps = info.steps;
    access_record.forwards = info.forwards;
    if (job.client_gone) {
        access_record.outcome = "disconnected";
        std::lock_guard lock(counters_mutex_);
        ++client_disconnects_;
        response.status = 499;  // nginx's "client closed request": logged, never sent
        return;
    }
    if (info.finish_reason != UNMASK_FINISH_LENGTH && info.finish_reason != UNMASK_FINISH_EOS) {
        access_record.outcome = unanswered(info);
        throw failure(info);
    }
    std::vector<int32_t> tokens(static_cast<size_t>(info.token_count));
    int64_t count = 0;
    unmask_request_tokens(job.handle, tokens.data(), info.token_count, &count);
    AnswerText text(tokenizer_, info_.mask_token_id, info_.eos_token_id, job.body.stop);
    text.advance(tokens.data(), count, true);
    CompletionOutcome outcome = job.outcome();
    outcome.text = text.text();
    outcome.finish_reason = text.stopped() || info.finish_reason == UNMASK_FINISH_EOS ? "stop" : "length";
    outcome.completion_tokens = text.committed_tokens();
    outcome.steps = info.steps;
    outcome.forwards = info.forwards;
    access_record.completion_tokens = outcome.completion_tokens;
    access_record.outcome = outcome.finish_reason;
    response.set_content(completion_body(job.body.endpoint, outcome), "application/json");
}

void Server::stream(std::shared_ptr<Job> job, httplib::Response& response) {
    response.set_header("Cache-Control", "no-cache");
    response.set_chunked_content_provider("text/event-stream", [this, job](size_t, httplib::DataSink& sink) {
        // cpp-httplib calls the provider outside its exception handling: nothing may escape.
        try {
            return stream_events(*job, sink);
        } catch (const std::exception& e) {
            log(UNMASK_LOG_ERROR, std::string("a stream failed: ") + e.what());
            const std::string event = server_sent_event(error_body(ApiError(500, e.what()))) + "data: [DONE]\n\n";
            sink.write(event.data(), event.size());
            sink.done();
            return true;
        }
    });
}

bool Server::stream_events(Job& job, httplib::DataSink& sink) {
    const Endpoint endpoint = job.body.endpoint;
    CompletionOutcome outcome = job.outcome();
    AnswerText text(tokenizer_, info_.mask_token_id, info_.eos_token_id, job.body.stop);
    const auto send = [&](const std::string& body) {
        const std::string event = server_sent_event(body);
        return sink.write(event.data(), event.size());
    };
    bool open = endpoint == Endpoint::completions || send(chunk_body(endpoint, outcome, "", "", true));
    bool finished = false;
    while (open && !finished) {
        std::vector<int32_t> tokens;
        {
            std::unique_lock lock(job.mutex);
            job.changed.wait_for(lock, std::chrono::milliseconds(50), [&] { return job.fresh; });
            if (job.fresh) tokens.swap(job.latest), job.fresh = false;
        }
        if (!tokens.empty()) {
            const std::string delta = text.advance(tokens.data(), static_cast<int64_t>(tokens.size()), false);
            if (!delta.empty()) open = send(chunk_body(endpoint, outcome, delta, "", false));
            if (text.ended()) unmask_request_stop(job.handle);  // the answer is complete
        }
        open = open && job.probe.alive() && sink.is_writable();
        finished = unmask_request_wait(job.handle, 0) == UNMASK_OK;
    }
    if (!open) {
        unmask_request_cancel(job.handle);
        unmask_request_wait(job.handle, -1);
        job.client_gone = true;
        access_record.outcome = "disconnected";
        std::lock_guard lock(counters_mutex_);
        ++client_disconnects_;
        return false;
    }
    unmask_request_info info{};
    info.struct_size = sizeof info;
    unmask_request_info_get(job.handle, &info);
    outcome.steps = access_record.steps = info.steps;
    outcome.forwards = access_record.forwards = info.forwards;
    const bool ended_early = text.ended();  // EOS or a stop string in the committed text: cancelled here
    if (ended_early || info.finish_reason == UNMASK_FINISH_LENGTH || info.finish_reason == UNMASK_FINISH_EOS) {
        std::string delta;
        if (!ended_early) {
            std::vector<int32_t> tokens(static_cast<size_t>(info.token_count));
            int64_t count = 0;
            unmask_request_tokens(job.handle, tokens.data(), info.token_count, &count);
            delta = text.advance(tokens.data(), count, true);
        }
        const bool stopped = ended_early || text.stopped() || info.finish_reason == UNMASK_FINISH_EOS;
        outcome.completion_tokens = access_record.completion_tokens = text.committed_tokens();
        access_record.outcome = stopped ? "stop" : "length";
        send(chunk_body(endpoint, outcome, delta, access_record.outcome, false));
        if (job.body.include_usage) send(usage_chunk_body(endpoint, outcome));
    } else {
        access_record.outcome = unanswered(info);
        send(error_body(failure(info)));
    }
    sink.write("data: [DONE]\n\n", 14);
    sink.done();
    return true;
}

bool Server::load() {
    const auto started = Clock::now();
    log(UNMASK_LOG_INFO, "loading " + options_.model_path);
    unmask_model_params params = options_.model_params;
    params.log_callback = &unmask_examples::LogFile::sink;
    params.log_user_data = &log_;
    params.progress_callback = [](uint64_t, uint64_t, void* user_data) -> int32_t {
        auto& server = *static_cast<Server*>(user_data);
        std::lock_guard lock(server.state_mutex_);
        return server.shutdown_requested_ ? 1 : 0;
    };
    params.progress_user_data = this;
    if (unmask_model_load(options_.model_path.c_str(), &params, &model_) != UNMASK_OK) {
        log(UNMASK_LOG_ERROR, std::string("cannot load the model: ") + unmask_last_error());
        return false;
    }
    info_.struct_size = sizeof info_;
    unmask_model_info(model_, &info_);
    unmask_model_tokenizer(model_, &tokenizer_);
    unmask_engine_params engine_params = options_.engine_params;
    engine_params.log_callback = &unmask_examples::LogFile::sink;
    engine_params.log_user_data = &log_;
    if (unmask_engine_create(model_, &engine_params, &engine_) != UNMASK_OK) {
        log(UNMASK_LOG_ERROR, std::string("cannot start the engine: ") + unmask_last_error());
        return false;
    }
    if (options_.warmup_requests > 0)
        log(UNMASK_LOG_INFO, "warming up: " + std::to_string(options_.warmup_requests) + " generations");
    // A shutdown while warming up stops at the next generation (the one running finishes).
    for (int i = 0; i < options_.warmup_requests; ++i) {
        {
            std::lock_guard lock(state_mutex_);
            if (shutdown_requested_) {
                log(UNMASK_LOG_INFO, "warm-up stopped by the shutdown after " + std::to_string(i) + " generations");
                return true;
            }
        }
        unmask_generate_params warmup;
        unmask_generate_params_init(&warmup);
        warmup.gen_length = warmup.steps = 64;
        const int32_t prompt[1] = {info_.eos_token_id >= 0 ? info_.eos_token_id : 0};
        unmask_request* request = nullptr;
        if (unmask_engine_submit(engine_, &warmup, prompt, 1, 1e9, &request) == UNMASK_OK)
            unmask_request_wait(request, -1);
        unmask_request_free(request);
    }
    log(UNMASK_LOG_INFO, "ready: '" + options_.model_name + "' in " +
                             std::to_string(std::chrono::duration<double>(Clock::now() - started).count()) + " s");
    return true;
}

void Server::shutdown() {
    std::lock_guard lock(state_mutex_);
    shutdown_requested_ = true;
    if (state_.load() == State::ready) state_ = State::draining;  // readiness turns 503 at once
    state_changed_.notify_all();
}

void Server::drain() {
    size_t queued = 0, running = 0;
    {
        std::lock_guard lock(jobs_mutex_);
        state_ = State::draining;
        for (Job* job : jobs_) {
            unmask_request_info info{};
            info.struct_size = sizeof info;
            if (job->handle == nullptr || unmask_request_info_get(job->handle, &info) != UNMASK_OK) continue;
            if (info.state == UNMASK_REQUEST_QUEUED) {
                unmask_request_cancel(job->handle);  // answered 503
                ++queued;
            } else if (info.state == UNMASK_REQUEST_RUNNING) {
                ++running;
            }
        }
    }
    log(UNMASK_LOG_INFO, "draining: " + std::to_string(running) + " running, " + std::to_string(queued) +
                             " queued requests cancelled; drain timeout " + std::to_string(options_.drain_timeout_seconds) + " s");
    unmask_engine_shutdown(engine_, UNMASK_SHUTDOWN_DRAIN, options_.drain_timeout_seconds);
    // Every request has its outcome now; give the handlers a moment to write their responses.
    std::unique_lock lock(jobs_mutex_);
    jobs_changed_.wait_for(lock, std::chrono::seconds(10), [&] { return jobs_.empty(); });
}

int Server::run() {
    std::thread listener([this] { http_->listen_after_bind(); });
    const bool loaded = load();
    {
        std::unique_lock lock(state_mutex_);
        if (loaded && !shutdown_requested_) state_ = State::ready;
        else if (!loaded) state_ = State::failed;
        if (loaded) state_changed_.wait(lock, [&] { return shutdown_requested_; });
    }
    if (loaded) drain();
    log(UNMASK_LOG_INFO, "stopping");
    http_->stop();
    listener.join();
    std::lock_guard lock(state_mutex_);
    return loaded || shutdown_requested_ ? 0 : 1;  // a load cancelled by the shutdown is no failure
}

}  // namespace unmask_server
