// unmask_service_config_read, unmask_service_config_section: a service configuration file as the
// library reads it (engine/service_config.hpp), and any section of it for the host that owns it.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "boundary.hpp"
#include "engine/service_config.hpp"

using namespace unmask;
using namespace unmask::capi;

namespace {

// Copies a configured string into a fixed field of unmask_service_config, NUL-terminated.
template <size_t N>
void copy_text(const std::string& text, char (&field)[N], const char* key) {
    if (text.size() >= N) fail(Status::invalid_argument, "'{}' is longer than {} bytes", key, N - 1);
    std::memcpy(field, text.c_str(), text.size() + 1);
}

// ABI 1.3's fields of the `server` section, deprecated since 1.6 (the section is unmask-server's,
// read with unmask_service_config_section): filled as before for programs built against 1.3 to
// 1.5, each key taken when it has its type, relative paths resolved against the file's folder.
// Whether the values make sense is the server's to say.
void fill_deprecated_server_fields(const std::filesystem::path& path, unmask_service_config& out) {
    const nlohmann::json section = nlohmann::json::parse(read_config_section(path, "server"));
    const std::filesystem::path directory = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    auto text = [&](const char* key, auto& field, const char* otherwise, bool is_path) {
        const auto value = section.is_object() ? section.find(key) : section.end();
        std::string given = value != section.end() && value->is_string() ? value->get<std::string>() : otherwise;
        if (is_path && !given.empty() && std::filesystem::path(given).is_relative()) given = (directory / given).string();
        copy_text(given, field, key);
    };
    auto number = [&](const char* key, auto& field, auto otherwise) {
        const auto value = section.is_object() ? section.find(key) : section.end();
        field = value != section.end() && value->is_number() ? value->get<decltype(otherwise)>() : otherwise;
    };
    text("bind_address", out.bind_address, "127.0.0.1", false);
    text("api_keys_env", out.api_keys_env, "", false);
    text("api_key_file", out.api_key_file, "", true);
    number("rate_limit_per_second", out.rate_limit_per_second, 0.0);
    number("rate_limit_burst", out.rate_limit_burst, int64_t{0});
    number("max_body_bytes", out.max_body_bytes, int64_t{1} << 20);
    text("tls_certificate", out.tls_certificate, "", true);
    text("tls_private_key", out.tls_private_key, "", true);
    number("drain_timeout_seconds", out.drain_timeout_seconds, 30.0);
    text("log_file", out.log_file, "", true);
    const auto prompts = section.is_object() ? section.find("log_prompts") : section.end();
    out.log_prompts = prompts != section.end() && prompts->is_boolean() && prompts->get<bool>() ? 1 : 0;
}

}  // namespace

extern "C" unmask_status unmask_service_config_read(const char* path, unmask_service_config* config) {
    return guarded(__func__, [&] {
        require_not_null(path, "path");
        const size_t size = writable_size(config, "config", service_config_v1_size);
        const ServiceConfig c = read_service_config(path);
        unmask_service_config out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.listen_port = static_cast<int32_t>(c.listen_port);
        out.max_concurrent_requests = static_cast<int32_t>(c.max_concurrent_requests);
        out.max_queued_requests = static_cast<int32_t>(c.max_queued_requests);
        out.request_timeout_seconds = c.request_timeout_seconds;
        copy_text(c.weights_path.string(), out.weights_path, "model.weights_path");
        out.precision = static_cast<int32_t>(c.precision);
        out.gpu_device_count = static_cast<int32_t>(c.gpu_devices.size());
        out.max_sequence_length = c.max_sequence_length;
        out.min_diffusion_steps = c.min_diffusion_steps;
        out.max_diffusion_steps = c.max_diffusion_steps;
        out.memory_fraction = c.memory_fraction;
        out.log_level = static_cast<int32_t>(c.log_level);
        out.log_rotation_size_mb = static_cast<int32_t>(c.log_rotation_size_mb);
        if (size > service_config_v1_size) fill_deprecated_server_fields(path, out);
        out.gpu_device = c.gpu_devices.empty() ? 0 : static_cast<int32_t>(c.gpu_devices[0]);
        out.quantize_embeddings = c.quantize_embeddings ? 1 : 0;
        out.cpu_devices = static_cast<int32_t>(c.cpu_devices);
        static_assert(max_devices == UNMASK_MAX_DEVICES, "the configuration's GPU list must fit its C array");
        for (size_t i = 0; i < std::min(c.gpu_devices.size(), size_t(UNMASK_MAX_DEVICES)); ++i)
            out.gpu_devices[i] = static_cast<int32_t>(c.gpu_devices[i]);
        std::memcpy(config, &out, size);
    });
}

extern "C" unmask_status unmask_service_config_section(const char* path, const char* section, char* json,
                                                       int64_t capacity, int64_t* length) {
    return guarded(__func__, [&] {
        require_not_null(path, "path");
        require_not_null(section, "section");
        require_not_null(length, "length");
        require_array(json, capacity, "json", "capacity");
        write_text(read_config_section(path, section), json, capacity, length);
    });
}
