// unmask-server: an OpenAI-compatible HTTP server over one engine, with the gateway duties of a
// deployment (API keys, per-key rate limits, body limits, timeouts, readiness, draining, access
// logs and metrics), built on the public C API and an event-driven HTTP front (http_server.hpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>
#include <thread>

#include "access_control.hpp"
#include "http_server.hpp"
#include "log_file.hpp"
#include "openai_request.hpp"
#include "openai_response.hpp"
#include "unmask.h"

namespace unmask_server {

struct ServerOptions {
    std::string model_path;
    std::string model_name;           // the id clients send as "model"; default: the folder's name
    std::string host = "127.0.0.1";
    int port = 8080;                  // 0: any free port
    unmask_model_params model_params{};  // device_ids: gpu_devices' when that is not empty
    std::vector<int32_t> gpu_devices;     // the configuration's resources.gpu_devices, when several
    unmask_engine_params engine_params{};
    ApiKeys keys;                     // empty: no authentication
    double rate_limit_per_second = 0;
    double rate_limit_burst = 0;
    double max_auth_failures_per_minute = 10;  // per client address; 0: no limit
    http::Limits limits;              // connections, deadlines, sizes; worker_threads is set from the engine's
    std::string tls_certificate, tls_private_key;  // both or neither
    double drain_timeout_seconds = 30;
    bool log_prompts = false;
    int warmup_requests = 0;          // generations run before turning ready
};

class Server {
public:
    // Binds the listening socket (throws std::runtime_error when it cannot); loads nothing yet.
    Server(ServerOptions options, unmask_examples::LogFile& log);
    ~Server();

    int port() const { return http_->port(); }
    // Serves until shutdown() is called: health and readiness at once, the API once the model
    // is loaded and warmed up. Then drains and returns 0 (1 when the model failed to load).
    int run();
    // Starts the graceful shutdown: readiness turns 503 at once; safe from any thread.
    void shutdown();

private:
    enum class State { loading, ready, draining, failed };
    struct Job;

    void route();
    bool load();
    void drain();
    void handle_completion(const http::Request& request, http::Response& response, const http::Exchange& exchange,
                           Endpoint endpoint);
    void answer(Job& job, http::Response& response, const http::Exchange& exchange);
    void stream(std::shared_ptr<Job> job, http::Response& response);
    void stream_events(Job& job, http::BodyWriter& writer);
    void admit(const http::Request& request);
    void apply_service_limits(CompletionRequest& request) const;
    void reply_error(http::Response& response, const struct ApiError& error);
    void log_access(const http::Request& request, const http::Response& response, const http::Delivery& delivery);
    std::shared_ptr<Job> submit(const http::Request& request, Endpoint endpoint);
    std::string metrics();
    void log(int32_t level, const std::string& message);

    ServerOptions options_;
    unmask_examples::LogFile& log_;
    std::unique_ptr<http::Server> http_;
    std::atomic<State> state_{State::loading};
    std::mutex state_mutex_;
    std::condition_variable state_changed_;
    bool shutdown_requested_ = false;

    unmask_model* model_ = nullptr;
    unmask_engine* engine_ = nullptr;
    const unmask_tokenizer* tokenizer_ = nullptr;
    unmask_model_description info_{};
    ModelIdentity identity_;  // written by load() before the state turns ready
    int64_t created_ = 0;
    RateLimiter rate_limiter_;
    RateLimiter auth_failures_;  // per client address: a token per failed authentication

    std::mutex jobs_mutex_;
    std::set<Job*> jobs_;  // requests being served, for the drain
    std::condition_variable jobs_changed_;
    std::atomic<uint64_t> next_id_{1};

    std::mutex counters_mutex_;
    std::map<int, uint64_t> responses_by_status_;
    uint64_t client_disconnects_ = 0;
};

}  // namespace unmask_server
