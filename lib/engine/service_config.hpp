// The service configuration file of a deployment (docs/engine.md), in JSON or
// YAML:
//
//   service:   listen_port, max_concurrent_requests, max_queued_requests, request_timeout_seconds
//   model:     weights_path, precision, quantize_embeddings, max_sequence_length, min_diffusion_steps,
//              max_diffusion_steps
//   resources: gpu_devices, cpu_devices, memory_fraction, log_level, log_rotation_size_mb
//   server:    unmask-server's own (examples/server reads it through read_config_section); the
//              library checks only that it is a mapping
//
// Every key of the library's sections is optional except model.weights_path (an empty section is
// all defaults; 0 means "none" for listen_port and the step bounds); an unknown key, a wrong type
// or an impossible value is INVALID_ARGUMENT naming the key (`service.max_concurrent_requests`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/logging.hpp"
#include "model/load_options.hpp"

namespace unmask {

struct ServiceConfig {
    int64_t listen_port = 0;  // 0: none (the HTTP server reads it)
    int64_t max_concurrent_requests = 8;
    int64_t max_queued_requests = 64;
    double request_timeout_seconds = 0;  // 0: none
    std::filesystem::path weights_path;  // relative paths are relative to the file's directory
    Precision precision = Precision::automatic;
    bool quantize_embeddings = false;
    int64_t max_sequence_length = 0;  // 0: the model's
    int64_t min_diffusion_steps = 0, max_diffusion_steps = 0;
    std::vector<int64_t> gpu_devices;  // empty: the CPU; distinct, at most max_devices
    int64_t cpu_devices = 1;           // host devices sharing the model on the CPU (without gpu_devices)
    double memory_fraction = 1.0;
    LogLevel log_level = LogLevel::info;
    int64_t log_rotation_size_mb = 0;  // 0: no rotation
};

// Reads a file: YAML for the extensions .yaml and .yml, JSON otherwise. Throws IO or INVALID_ARGUMENT.
ServiceConfig read_service_config(const std::filesystem::path& path);
// Parses text already read; `yaml` selects the syntax, `directory` anchors relative paths.
ServiceConfig parse_service_config(std::string_view text, bool yaml, const std::filesystem::path& directory);
// One section of the file as JSON text ("null" when absent), after the library's sections are
// checked: how a host reads a section of its own (unmask-server's `server`). Relative paths in it
// are the host's to resolve against the file's folder. Throws IO or INVALID_ARGUMENT (also for a
// name that is not a section of a service configuration).
std::string read_config_section(const std::filesystem::path& path, std::string_view section);

}  // namespace unmask
