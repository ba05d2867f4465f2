// The `server` section of a service configuration file: unmask-server's own (the library reads
// only service, model and resources). Every key is optional; an unknown key, a wrong type or an
// impossible value is a std::invalid_argument naming the key ('server.max_body_bytes').
//
//   server: bind_address, api_keys_env, api_key_file, rate_limit_per_second, rate_limit_burst,
//           max_auth_failures_per_minute, max_body_bytes, max_header_bytes, max_connections,
//           max_connections_per_address, header_timeout_seconds, body_timeout_seconds,
//           keep_alive_timeout_seconds, write_timeout_seconds, tls_certificate, tls_private_key,
//           drain_timeout_seconds, log_file, log_prompts
#pragma once

#include <cstdint>
#include <string>

namespace unmask_server {

struct ServerSection {
    std::string bind_address = "127.0.0.1";
    std::string api_keys_env;  // the environment variable holding the API keys
    std::string api_key_file;  // relative paths: from the configuration file's folder
    double rate_limit_per_second = 0;  // per API key; 0: no limit
    int64_t rate_limit_burst = 0;      // bucket size; 0: max(1, rate_limit_per_second)
    int64_t max_auth_failures_per_minute = 10;  // per client address, then 429; 0: no limit
    int64_t max_body_bytes = int64_t{1} << 20;
    int64_t max_header_bytes = 16 * 1024;
    int64_t max_connections = 1024;
    int64_t max_connections_per_address = 64;
    double header_timeout_seconds = 10;     // a TLS handshake, or a request's headers
    double body_timeout_seconds = 30;       // a request's body, once its headers are in
    double keep_alive_timeout_seconds = 5;  // an idle connection between requests
    double write_timeout_seconds = 10;      // one write of a response (a stream: of one event)
    std::string tls_certificate, tls_private_key;  // both or neither
    double drain_timeout_seconds = 30;
    std::string log_file;  // empty: standard error
    bool log_prompts = false;
};

// Reads the section of the configuration file at `path` (defaults when it has none).
ServerSection read_server_section(const std::string& path);

}  // namespace unmask_server
