#include "server_config.hpp"

#include "config_section.hpp"

namespace unmask_server {

ServerSection read_server_section(const std::string& path) {
    const unmask_examples::ConfigSection section(path, "server");
    section.allow_only({"bind_address", "api_keys_env", "api_key_file", "rate_limit_per_second", "rate_limit_burst",
                        "max_auth_failures_per_minute", "max_body_bytes", "max_header_bytes", "max_connections",
                        "max_connections_per_address", "header_timeout_seconds", "body_timeout_seconds",
                        "keep_alive_timeout_seconds", "write_timeout_seconds", "tls_certificate", "tls_private_key",
                        "drain_timeout_seconds", "log_file", "log_prompts"});
    ServerSection s;
    if (auto v = section.string("bind_address")) {
        if (v->empty()) section.fail("bind_address", "must not be empty");
        s.bind_address = *v;
    }
    s.api_keys_env = section.string("api_keys_env").value_or(s.api_keys_env);
    s.api_key_file = section.path("api_key_file").value_or(s.api_key_file);
    s.rate_limit_per_second = section.number("rate_limit_per_second", 0, 1e9).value_or(s.rate_limit_per_second);
    s.rate_limit_burst = section.integer("rate_limit_burst", 0, 1'000'000'000).value_or(s.rate_limit_burst);
    s.max_auth_failures_per_minute =
        section.integer("max_auth_failures_per_minute", 0, 1'000'000).value_or(s.max_auth_failures_per_minute);
    s.max_body_bytes = section.integer("max_body_bytes", 1, int64_t{1} << 40).value_or(s.max_body_bytes);
    s.max_header_bytes = section.integer("max_header_bytes", 1024, 1 << 24).value_or(s.max_header_bytes);
    s.max_connections = section.integer("max_connections", 1, 1'000'000).value_or(s.max_connections);
    s.max_connections_per_address =
        section.integer("max_connections_per_address", 1, 1'000'000).value_or(s.max_connections_per_address);
    // Deadlines: above zero (a connection must end), below a day.
    const auto deadline = [&](const char* key, double otherwise) {
        const double value = section.number(key, 0, 86400).value_or(otherwise);
        if (value <= 0) section.fail(key, "must be above 0");
        return value;
    };
    s.header_timeout_seconds = deadline("header_timeout_seconds", s.header_timeout_seconds);
    s.body_timeout_seconds = deadline("body_timeout_seconds", s.body_timeout_seconds);
    s.keep_alive_timeout_seconds = deadline("keep_alive_timeout_seconds", s.keep_alive_timeout_seconds);
    s.write_timeout_seconds = deadline("write_timeout_seconds", s.write_timeout_seconds);
    s.tls_certificate = section.path("tls_certificate").value_or(s.tls_certificate);
    s.tls_private_key = section.path("tls_private_key").value_or(s.tls_private_key);
    if (s.tls_certificate.empty() != s.tls_private_key.empty())
        section.fail("tls_certificate", "and 'server.tls_private_key' go together");
    s.drain_timeout_seconds = section.number("drain_timeout_seconds", 0, 1e9).value_or(s.drain_timeout_seconds);
    s.log_file = section.path("log_file").value_or(s.log_file);
    s.log_prompts = section.boolean("log_prompts").value_or(s.log_prompts);
    return s;
}

}  // namespace unmask_server
