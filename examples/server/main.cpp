// unmask-server: serves a model over HTTP with the OpenAI API. See examples/server/README.md.
//
//   unmask-server [--config FILE] [-m DIR] [--host ADDR] [--port N] [--model-name NAME]
//                 [--threads N] [--max-concurrent N] [--max-queued N] [--timeout S]
//                 [--warmup N] [--log-file PATH] [--log-rotation-mb MB]
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "bundled_model.hpp"
#include "log_file.hpp"
#include "server.hpp"
#include "server_config.hpp"
#include "service_params.hpp"

namespace {

using unmask_cli::ParsedArgs;
using unmask_cli::UsageError;

const unmask_cli::CommandSpec command{
    "",
    "Serves a model over HTTP with the OpenAI API. API keys, rate limits, body limits, TLS and draining are set in\n"
    "the configuration's server section.",
    "",
    0,
    0,
    {{"config", "FILE", "a service configuration (JSON or YAML): service, model, resources, server"},
     {"model", "DIR", "the model directory (default: the configuration's, $UNMASK_MODEL or the bundled model)", 'm'},
     {"host", "ADDR", "the address to listen on (default: server.bind_address or 127.0.0.1)"},
     {"port", "N", "the port (default: service.listen_port or 8080; 0: any free port)"},
     {"model-name", "NAME", "the model id of the API (default: the model folder's name)"},
     {"threads", "N", "CPU threads of the engine (default: all)"},
     {"max-concurrent", "N", "requests running at once (default: the configuration's or 8)"},
     {"max-queued", "N", "requests waiting for admission (default: the configuration's or 64)"},
     {"timeout", "SECONDS", "default deadline of a request (0: none)"},
     {"warmup", "N", "run N generations before turning ready (default 0)"},
     {"log-file", "PATH", "the log, access lines included (default: server.log_file or standard error)"},
     {"log-rotation-mb", "MB", "move the log file to PATH.1 when it passes this size (default: log_rotation_size_mb)"}},
    false,
    "unmask-server"};

double number(const ParsedArgs& args, const char* name, double otherwise) {
    const double value = args.number(name).value_or(otherwise);
    if (!(value >= 0 && value <= 1e9)) throw UsageError(std::string("--") + name + " must be within 0..1e9");
    return value;
}

// The options of a configuration file, then the command line's on top.
unmask_server::ServerOptions server_options(const ParsedArgs& args, std::string& log_path,
                                            uint64_t& log_rotate_bytes) {
    unmask_server::ServerOptions o;
    unmask_model_params_init(&o.model_params);
    unmask_engine_params_init(&o.engine_params);
    if (const auto path = args.value("config")) {
        auto config = std::make_unique<unmask_service_config>();
        config->struct_size = sizeof *config;
        if (unmask_service_config_read(path->c_str(), config.get()) != UNMASK_OK)
            throw std::runtime_error(unmask_last_error());
        const unmask_service_config& c = *config;
        o.model_path = c.weights_path;
        if (c.listen_port > 0) o.port = c.listen_port;
        unmask_examples::apply_service_config(c, o.model_params, o.engine_params);
        // c goes at the end of this block: the server keeps the ids and points at its copy when it loads.
        o.model_params.device_ids = nullptr;
        if (c.gpu_device_count > 1) o.gpu_devices.assign(c.gpu_devices, c.gpu_devices + c.gpu_device_count);
        log_rotate_bytes = static_cast<uint64_t>(c.log_rotation_size_mb) << 20;
        // The server's own section (the library reads the others).
        const unmask_server::ServerSection server = unmask_server::read_server_section(*path);
        o.host = server.bind_address;
        o.keys = unmask_server::ApiKeys::load(server.api_keys_env, server.api_key_file);
        o.rate_limit_per_second = server.rate_limit_per_second;
        o.rate_limit_burst = static_cast<double>(server.rate_limit_burst);
        o.max_auth_failures_per_minute = static_cast<double>(server.max_auth_failures_per_minute);
        o.limits.max_body_bytes = static_cast<uint64_t>(server.max_body_bytes);
        o.limits.max_header_bytes = static_cast<size_t>(server.max_header_bytes);
        o.limits.max_connections = static_cast<size_t>(server.max_connections);
        o.limits.max_connections_per_address = static_cast<size_t>(server.max_connections_per_address);
        o.limits.header_seconds = server.header_timeout_seconds;
        o.limits.body_seconds = server.body_timeout_seconds;
        o.limits.idle_seconds = server.keep_alive_timeout_seconds;
        o.limits.write_seconds = server.write_timeout_seconds;
        o.tls_certificate = server.tls_certificate;
        o.tls_private_key = server.tls_private_key;
        o.drain_timeout_seconds = server.drain_timeout_seconds;
        o.log_prompts = server.log_prompts;
        log_path = server.log_file;
    }
    o.model_path = args.value("model").value_or(o.model_path);
    if (o.model_path.empty()) o.model_path = unmask_examples::default_model_path();
    o.host = args.value("host").value_or(o.host);
    o.model_name = args.value("model-name").value_or(o.model_name);
    log_path = args.value("log-file").value_or(log_path);
    o.port = static_cast<int>(args.integer("port", o.port, 0, 65535));
    o.engine_params.threads = static_cast<int32_t>(args.integer("threads", o.engine_params.threads, 0, 4096));
    o.engine_params.max_concurrent_requests =
        static_cast<int32_t>(args.integer("max-concurrent", o.engine_params.max_concurrent_requests, 1, 65536));
    o.engine_params.max_queued_requests =
        static_cast<int32_t>(args.integer("max-queued", o.engine_params.max_queued_requests, 1, 1'000'000));
    o.engine_params.request_timeout_seconds = number(args, "timeout", o.engine_params.request_timeout_seconds);
    log_rotate_bytes = static_cast<uint64_t>(number(args, "log-rotation-mb", double(log_rotate_bytes) / 1048576.0) * 1048576.0);
    o.warmup_requests = static_cast<int>(args.integer("warmup", 0, 0, 1000));
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    // SIGTERM and SIGINT start the graceful shutdown on a thread of their own; blocked here before
    // any other thread starts, so every thread inherits the mask. SIGPIPE: a client that went
    // away is a failed write, not the end of the server.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    std::unique_ptr<unmask_examples::LogFile> log;
    std::unique_ptr<unmask_server::Server> server;
    try {
        const ParsedArgs args = unmask_cli::parse_args(command, std::vector<std::string>(argv + 1, argv + argc));
        if (args.has("help")) {
            std::fputs(unmask_cli::help_text(command).c_str(), stdout);
            return 0;
        }
        std::string log_path;
        uint64_t log_rotate_bytes = 0;
        auto options = server_options(args, log_path, log_rotate_bytes);
        log = std::make_unique<unmask_examples::LogFile>(log_path, log_rotate_bytes);
        const std::string address = (options.tls_certificate.empty() ? "http://" : "https://") + options.host;
        server = std::make_unique<unmask_server::Server>(std::move(options), *log);
        std::printf("unmask-server listening on %s:%d\n", address.c_str(), server->port());
        std::fflush(stdout);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "unmask-server: %s (see 'unmask-server --help')\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "unmask-server: %s\n", e.what());
        return 1;
    }

    std::atomic<bool> finished{false};
    std::thread signal_waiter([&] {
        int received = 0;
        sigwait(&signals, &received);
        if (finished) return;
        log->write(UNMASK_LOG_INFO, std::string("server: ") + strsignal(received) + ": draining, then exiting");
        server->shutdown();
        // A second signal while draining: stop now, as an operator pressing Ctrl-C twice expects.
        sigwait(&signals, &received);
        if (finished) return;
        log->write(UNMASK_LOG_WARN, std::string("server: ") + strsignal(received) + " again: exiting at once");
        std::_Exit(1);
    });
    const int status = server->run();
    // Wake the signal thread when the server stopped by itself (a failed load).
    finished = true;
    pthread_kill(signal_waiter.native_handle(), SIGTERM);
    signal_waiter.join();
    server.reset();
    return status;
}
