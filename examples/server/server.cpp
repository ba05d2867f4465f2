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
#include "openai_response.hpp"
#include "progress_meter.hpp"
#include "unmask.hpp"

namespace unmask_server {
namespace {

using Clock = std::chrono::steady_clock;
using unmask_examples::AnswerText;

// What the access log line of the request being served on this thread reports. The HTTP front
// runs a request's handler, writes its response and calls the access logger on one worker thread,
// so the handler fills it in and the logger reads it. (Probes run on the network thread and fill
// in nothing.)
struct AccessRecord {
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
// A 503 says the request was never started, so a load balancer may send it to another replica
// (deploy/haproxy retries 503s and refused connections only); a request cut off after it began
// (the drain's deadline) is a 500, which nobody retries on the client's behalf.
ApiError failure(const unmask_request_info& info) {
    switch (info.finish_reason) {
        case UNMASK_FINISH_TIMEOUT: return ApiError(504, "the request passed its deadline", "", "timeout");
        case UNMASK_FINISH_CANCELLED:
            if (info.forwards > 0)
                return ApiError(500, "the server shut down before the answer was finished", "", "interrupted_by_shutdown");
            return unavailable("the server is shutting down", "shutting_down");
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

std::string last_user_message(const CompletionRequest& request) {
    for (auto m = request.messages.rbegin(); m != request.messages.rend(); ++m)
        if (m->role == "user") return m->content;
    return "";
}

// A chat answer when tools are offered: its valid calls become tool_calls (finish_reason
// tool_calls); a call that is not valid is reported and the answer stays text.
void read_calls(const CompletionRequest& request, CompletionOutcome& outcome) {
    if (request.endpoint != Endpoint::chat_completions || request.tool_choice == ToolChoice::none) return;
    ToolCallReading reading = read_tool_calls(outcome.text, request.tools, request.tool_choice, request.tool_name);
    outcome.text = std::move(reading.content);
    outcome.tool_calls = std::move(reading.calls);
    outcome.tool_call_error = std::move(reading.error);
    if (!outcome.tool_calls.empty()) outcome.finish_reason = "tool_calls";
}

std::vector<int32_t> encode(const unmask_tokenizer* tokenizer, const CompletionRequest& request) {
    if (!request.prompt_ids.empty()) return request.prompt_ids;
    const bool completion = request.endpoint == Endpoint::completions;
    const char* field = completion ? "prompt" : "messages";
    if (tokenizer == nullptr) throw invalid_field(field, "must be token ids: the model has no tokenizer");
    std::vector<int32_t> ids;
    try {
        const unmask::api::Tokenizer view(tokenizer);
        ids = completion ? view.encode(request.prompt, true) : view.encode_messages(request.messages, template_tools(request));
    } catch (const unmask::api::Error& e) {
        throw invalid_field(field, std::string("cannot be encoded: ") + e.what());
    }
    if (ids.empty()) throw invalid_field(field, "must not be empty");
    return ids;
}

}  // namespace

// One request being served: its parsed body, its engine request and what streams from it.
struct Server::Job {
    Job(Server& owner, CompletionRequest parsed) : server(owner), body(std::move(parsed)) {}
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
    std::string id;
    int64_t created = unix_seconds();
    int64_t prompt_tokens = 0;
    unmask_request* handle = nullptr;
    // Streaming: the generated region at the latest committed block.
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<int32_t> latest;
    bool fresh = false;
};

Server::Server(ServerOptions options, unmask_examples::LogFile& log)
    : options_(std::move(options)), log_(log), rate_limiter_(options_.rate_limit_per_second, options_.rate_limit_burst),
      auth_failures_(options_.max_auth_failures_per_minute / 60, options_.max_auth_failures_per_minute) {
    if (options_.model_name.empty()) options_.model_name = folder_name(options_.model_path);
    created_ = unix_seconds();
    // A worker holds a request while it runs: enough for every request the engine can hold
    // (running and queued) and a margin, so overload is answered by the engine with 429.
    http::Limits limits = options_.limits;
    limits.worker_threads = std::min<size_t>(static_cast<size_t>(options_.engine_params.max_concurrent_requests +
                                                                 options_.engine_params.max_queued_requests) + 16, 1024);
    http_ = std::make_unique<http::Server>(options_.host, options_.port,
                                           http::TlsFiles{options_.tls_certificate, options_.tls_private_key}, limits);
    route();
}

Server::~Server() {
    unmask_engine_free(engine_);
    unmask_model_free(model_);
}

void Server::log(int32_t level, const std::string& message) { log_.write(level, "server: " + message); }

void Server::reply_error(http::Response& response, const ApiError& error) {
    response.status = error.status;
    if (error.retry_after_seconds > 0)
        response.set_header("Retry-After", std::to_string(static_cast<int64_t>(std::ceil(error.retry_after_seconds))));
    if (error.status == 401) response.set_header("WWW-Authenticate", "Bearer");
    response.set_content(error_body(error), "application/json");
}

void Server::log_access(const http::Request& request, const http::Response& response, const http::Delivery& delivery) {
    if (!delivery.delivered) access_record.outcome = "disconnected";
    const AccessRecord& r = access_record;
    // A response the client did not get is logged as nginx logs it, 499, whatever it would have been.
    const int status = delivery.delivered ? response.status : 499;
    char line[512];
    std::snprintf(line, sizeof line,
                  "access id=%s key=%s client=%s method=%s path=%s status=%d outcome=%s latency_ms=%.1f "
                  "prompt_tokens=%lld completion_tokens=%lld steps=%lld forwards=%lld",
                  r.request_id.c_str(), r.key.c_str(), request.remote_addr.c_str(), quoted(request.method.substr(0, 16)).c_str(),
                  quoted(request.path.substr(0, 128)).c_str(), status, r.outcome.c_str(), delivery.seconds * 1000,
                  static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.completion_tokens),
                  static_cast<long long>(r.steps), static_cast<long long>(r.forwards));
    std::string message = line;
    if (options_.log_prompts && !r.prompt.empty()) message += " prompt=" + quoted(r.prompt);
    log_.write(UNMASK_LOG_INFO, message);
    access_record = AccessRecord{};
    std::lock_guard lock(counters_mutex_);
    if (delivery.delivered) ++responses_by_status_[status];
    else ++client_disconnects_;
}

void Server::route() {
    http_->set_error_writer([this](http::Response& response, const std::string& message, const char* code) {
        ApiError error(response.status, message, "", code);
        if (response.status == 503) error.retry_after_seconds = 1;
        reply_error(response, error);
    });
    http_->set_access_logger([this](const http::Request& request, const http::Response& response,
                                    const http::Delivery& delivery) { log_access(request, response, delivery); });
    // Probes run on the network thread: never behind busy workers.
    http_->route("GET", "/healthz", [](const http::Request&, http::Response& response, const http::Exchange&) {
        response.set_content(R"({"status":"alive"})", "application/json");
    }, true);
    http_->route("GET", "/readyz", [this](const http::Request&, http::Response& response, const http::Exchange&) {
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
    }, true);
    http_->route("GET", "/metrics", [this](const http::Request&, http::Response& response, const http::Exchange&) {
        response.set_content(metrics(), "text/plain; version=0.0.4");
    }, true);
    http_->route("GET", "/v1/models", [this](const http::Request& request, http::Response& response, const http::Exchange&) {
        try {
            admit(request);
            const State state = state_.load();
            const bool loaded = state == State::ready || state == State::draining;
            response.set_content(models_body(options_.model_name, created_, loaded ? identity_ : ModelIdentity{}),
                                 "application/json");
        } catch (const ApiError& error) {
            reply_error(response, error);
        }
    });
    http_->route("POST", "/v1/completions", [this](const http::Request& request, http::Response& response,
                                                   const http::Exchange& exchange) {
        handle_completion(request, response, exchange, Endpoint::completions);
    });
    http_->route("POST", "/v1/chat/completions", [this](const http::Request& request, http::Response& response,
                                                        const http::Exchange& exchange) {
        handle_completion(request, response, exchange, Endpoint::chat_completions);
    });
}

// Authentication and the rate limit of the /v1/ endpoints: in the handlers, once the body has been
// read, so that a refused request leaves its keep-alive connection usable.
void Server::admit(const http::Request& request) {
    std::string client = request.remote_addr;
    if (!options_.keys.empty()) {
        // An address that failed too often is refused before its key is even looked at, so keys
        // cannot be guessed at the rate requests arrive.
        if (const double wait = auth_failures_.due(request.remote_addr); wait > 0) {
            ApiError error(429, "too many failed authentications from this address: at most " +
                                    std::to_string(int64_t(options_.max_auth_failures_per_minute)) + " a minute", "",
                           "too_many_auth_failures");
            error.retry_after_seconds = wait;
            throw error;
        }
        const std::string header = request.header("Authorization");
        std::optional<std::string> key;
        if (header.size() > 7 && strncasecmp(header.c_str(), "Bearer ", 7) == 0)
            key = options_.keys.find(std::string_view(header).substr(7));
        if (!key) {
            if (!header.empty()) auth_failures_.acquire(request.remote_addr);  // a guess, not a missing key
            throw ApiError(401, header.empty() ? "an API key is required (Authorization: Bearer KEY)" : "the API key is not valid",
                           "", "invalid_api_key");
        }
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
    text += "# HELP unmask_server_http_responses_total HTTP responses by status code.\n"
            "# TYPE unmask_server_http_responses_total counter\n";
    for (const auto& [status, count] : responses_by_status_)
        text += "unmask_server_http_responses_total{code=\"" + std::to_string(status) + "\"} " + std::to_string(count) + "\n";
    text += "# HELP unmask_server_client_disconnects_total Responses not delivered: the client went away first.\n"
            "# TYPE unmask_server_client_disconnects_total counter\n"
            "unmask_server_client_disconnects_total " + std::to_string(client_disconnects_) + "\n";
    const http::FrontStats front = http_->stats();
    const auto add = [&](const char* name, const char* type, const char* help, uint64_t value) {
        text += std::string("# HELP unmask_server_") + name + " " + help + "\n# TYPE unmask_server_" + name + " " + type +
                "\nunmask_server_" + name + " " + std::to_string(value) + "\n";
    };
    add("connections_open", "gauge", "HTTP connections open now.", front.connections_open);
    add("connections_accepted_total", "counter", "HTTP connections accepted.", front.connections_accepted);
    add("connections_refused_total", "counter", "Connections closed at once: over max_connections or the per-address bound.",
        front.connections_refused);
    add("connection_timeouts_total", "counter", "Connections closed for a missed deadline (handshake, headers, body, write).",
        front.timeouts);
    add("malformed_requests_total", "counter", "Requests the front refused as malformed (400, 413, 415, 431).", front.malformed);
    add("workers_busy_total", "counter", "Requests answered 503 for want of a worker.", front.workers_busy);
    const State state = state_.load();
    if (state == State::ready || state == State::draining) {
        const auto label = [](const std::string& value) {  // Prometheus' text format: \\, \" and \n escaped
            std::string out;
            for (const char c : value) out += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
            return out;
        };
        text += "# HELP unmask_server_model_info The model this replica serves: 1, with its identity as labels.\n"
                "# TYPE unmask_server_model_info gauge\n"
                "unmask_server_model_info{model=\"" + label(options_.model_name) + "\",path=\"" + label(identity_.path) +
                "\",fingerprint=\"" + label(identity_.fingerprint) + "\",precision=\"" + label(identity_.precision) +
                "\"} 1\n";
    }
    // Prometheus' standard name: a change means the process restarted (deploy/prometheus/alerts.yml).
    text += "# HELP process_start_time_seconds When the server process started, in seconds since the epoch.\n"
            "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds " + std::to_string(created_) + "\n";
    text += "# HELP unmask_server_ready 1 when the server takes requests.\n# TYPE unmask_server_ready gauge\n"
            "unmask_server_ready " + std::string(state == State::ready ? "1" : "0") + "\n";
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

std::shared_ptr<Server::Job> Server::submit(const http::Request& request, Endpoint endpoint) {
    const State state = state_.load();
    if (state == State::loading) throw unavailable("the model is still loading", "loading");
    if (state != State::ready) throw unavailable("the server is shutting down", "shutting_down");

    auto job = std::make_shared<Job>(*this, parse_completion_request(request.body, endpoint));
    CompletionRequest& body = job->body;
    if (!body.model.empty() && body.model != options_.model_name)
        throw ApiError(404, "the model '" + body.model + "' does not exist; this server serves '" + options_.model_name + "'",
                       "model", "model_not_found");
    if (tokenizer_ == nullptr)
        throw ApiError(400, "the model has no tokenizer (tokenizer.json or a GGUF tokenizer): the server answers with text and needs one", "",
                       "no_tokenizer");
    const std::vector<int32_t> ids = encode(tokenizer_, body);
    apply_service_limits(body);
    job->id = (endpoint == Endpoint::completions ? "cmpl-" : "chatcmpl-") + std::to_string(next_id_++);
    job->prompt_tokens = static_cast<int64_t>(ids.size());
    access_record.request_id = job->id;
    access_record.prompt_tokens = job->prompt_tokens;
    if (options_.log_prompts) access_record.prompt = endpoint == Endpoint::completions ? body.prompt : last_user_message(body);
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

void Server::handle_completion(const http::Request& request, http::Response& response, const http::Exchange& exchange,
                               Endpoint endpoint) {
    try {
        admit(request);
        auto job = submit(request, endpoint);
        response.set_header("X-Request-Id", job->id);
        if (job->body.stream)
            stream(std::move(job), response);
        else
            answer(*job, response, exchange);
    } catch (const ApiError& error) {
        reply_error(response, error);
    }
}

void Server::answer(Job& job, http::Response& response, const http::Exchange& exchange) {
    bool client_gone = false;
    while (unmask_request_wait(job.handle, 0.05) == UNMASK_ERR_TIMEOUT) {
        if (!client_gone && exchange.client_gone()) {
            client_gone = true;
            unmask_request_cancel(job.handle);
        }
    }
    unmask_request_info info{};
    info.struct_size = sizeof info;
    unmask_request_info_get(job.handle, &info);
    access_record.steps = info.steps;
    access_record.forwards = info.forwards;
    if (client_gone) return;  // nothing is sent: logged as a disconnect
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
    read_calls(job.body, outcome);
    access_record.completion_tokens = outcome.completion_tokens;
    access_record.outcome = outcome.finish_reason;
    response.set_content(completion_body(job.body.endpoint, outcome), "application/json");
}

void Server::stream(std::shared_ptr<Job> job, http::Response& response) {
    response.set_header("Cache-Control", "no-cache");
    response.content_type = "text/event-stream";
    response.stream = [this, job](http::BodyWriter& writer) {
        try {
            stream_events(*job, writer);
        } catch (const std::exception& e) {
            log(UNMASK_LOG_ERROR, std::string("a stream failed: ") + e.what());
            writer.write(server_sent_event(error_body(ApiError(500, e.what()))) + "data: [DONE]\n\n");
        }
    };
}

// The events of a stream as its blocks commit. A client that goes away cancels the request; the
// access log then says so (the front reports the stream undelivered).
void Server::stream_events(Job& job, http::BodyWriter& writer) {
    const Endpoint endpoint = job.body.endpoint;
    CompletionOutcome outcome = job.outcome();
    AnswerText text(tokenizer_, info_.mask_token_id, info_.eos_token_id, job.body.stop);
    const auto send = [&](const std::string& body) { return writer.write(server_sent_event(body)); };
    const bool with_tools = endpoint == Endpoint::chat_completions && job.body.tool_choice != ToolChoice::none;
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
            // With tools the answer is held until it is whole: a call is checked before it is sent.
            if (!delta.empty() && !with_tools) open = send(chunk_body(endpoint, outcome, delta, "", false));
            if (text.ended()) unmask_request_stop(job.handle);  // the answer is complete
        }
        open = open && !writer.client_gone();
        finished = unmask_request_wait(job.handle, 0) == UNMASK_OK;
    }
    if (!open) {
        unmask_request_cancel(job.handle);
        unmask_request_wait(job.handle, -1);
        return;
    }
    unmask_request_info info{};
    info.struct_size = sizeof info;
    unmask_request_info_get(job.handle, &info);
    outcome.steps = access_record.steps = info.steps;
    outcome.forwards = access_record.forwards = info.forwards;
    const bool ended_early = text.ended();  // EOS or a stop string in the committed text: stopped here
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
        outcome.finish_reason = stopped ? "stop" : "length";
        if (with_tools) {
            outcome.text = text.text();
            read_calls(job.body, outcome);
            delta = outcome.text;
            if (!delta.empty()) send(chunk_body(endpoint, outcome, delta, "", false));
            delta.clear();
            for (size_t i = 0; i < outcome.tool_calls.size(); ++i) send(tool_call_chunk_body(outcome, i));
        }
        access_record.outcome = outcome.finish_reason;
        send(chunk_body(endpoint, outcome, delta, access_record.outcome, false));
        if (job.body.include_usage) send(usage_chunk_body(endpoint, outcome));
    } else {
        access_record.outcome = unanswered(info);
        send(error_body(failure(info)));
    }
    writer.write("data: [DONE]\n\n");
}

bool Server::load() {
    const auto started = Clock::now();
    log(UNMASK_LOG_INFO, "loading " + options_.model_path);
    unmask_model_params params = options_.model_params;
    if (!options_.gpu_devices.empty()) params.device_ids = options_.gpu_devices.data();
    params.log_callback = &unmask_examples::LogFile::sink;
    params.log_user_data = &log_;
    // A log line per tenth of the bytes verified and read; a shutdown asked for meanwhile cancels.
    struct Loading {
        Server& server;
        unmask_examples::ProgressMeter meter;
    } loading{*this, unmask_examples::ProgressMeter("loading", unmask_examples::ProgressMeter::Unit::bytes, nullptr,
                                                    [this](const std::string& line) { log(UNMASK_LOG_INFO, line); })};
    params.progress_callback = [](uint64_t done, uint64_t total, void* user_data) -> int32_t {
        auto& load = *static_cast<Loading*>(user_data);
        load.meter.update(done, total);
        std::lock_guard lock(load.server.state_mutex_);
        return load.server.shutdown_requested_ ? 1 : 0;
    };
    params.progress_user_data = &loading;
    if (unmask_model_load(options_.model_path.c_str(), &params, &model_) != UNMASK_OK) {
        log(UNMASK_LOG_ERROR, std::string("cannot load the model: ") + unmask_last_error());
        return false;
    }
    info_.struct_size = sizeof info_;
    unmask_model_info(model_, &info_);
    const char* precision = unmask_enum_name(UNMASK_ENUM_PRECISION, info_.precision);
    identity_ = {options_.model_path, info_.fingerprint,
                 info_.precision == UNMASK_PRECISION_AUTO || precision == nullptr ? "mixed" : precision};
    log(UNMASK_LOG_INFO, "model " + identity_.path + ": " + identity_.fingerprint + ", " + identity_.precision);
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

// Bounded by the drain timeout (and a second for the last writes), whatever the clients do: what
// is not written by then is cut off when the front stops.
void Server::drain() {
    const auto started = Clock::now();
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
    // Every request has its outcome now; the handlers write their responses in what is left.
    const double left = options_.drain_timeout_seconds - std::chrono::duration<double>(Clock::now() - started).count();
    std::unique_lock lock(jobs_mutex_);
    jobs_changed_.wait_for(lock, std::chrono::duration<double>(std::max(1.0, left)), [&] { return jobs_.empty(); });
}

int Server::run() {
    http_->run();
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
    std::lock_guard lock(state_mutex_);
    return loaded || shutdown_requested_ ? 0 : 1;  // a load cancelled by the shutdown is no failure
}

}  // namespace unmask_server
