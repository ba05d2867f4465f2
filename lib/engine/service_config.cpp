#include "engine/service_config.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "core/error.hpp"
#include "format/strict_json.hpp"

namespace unmask {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> section_names = {"service", "model", "resources", "server"};

// YAML -> the JSON value model, so both syntaxes go through one validator. Recursive, so bounded
// as JSON files are (yaml-cpp's own bound, 2000 levels, is for its parser's stack, not ours).
json from_yaml(const YAML::Node& node, const std::string& where, int depth = 1) {
    if (depth > max_json_depth) fail(Status::invalid_argument, "the configuration nests deeper than {} levels", max_json_depth);
    switch (node.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined: return nullptr;
        case YAML::NodeType::Sequence: {
            json out = json::array();
            for (const auto& item : node) out.push_back(from_yaml(item, where, depth + 1));
            return out;
        }
        case YAML::NodeType::Map: {
            json out = json::object();
            for (const auto& item : node) {
                const std::string key = item.first.as<std::string>();
                if (out.contains(key)) fail(Status::invalid_argument, "{}: the key '{}' appears twice", where, key);
                out[key] = from_yaml(item.second, where.empty() ? key : where + "." + key, depth + 1);
            }
            return out;
        }
        case YAML::NodeType::Scalar: {
            // YAML 1.2's core schema: decimal integers (no octal or hex surprises), floats, true and
            // false; quoted scalars and everything else are strings.
            const std::string text = node.Scalar();
            if (node.Tag() == "!") return text;
            static const std::regex integer(R"([-+]?[0-9]+)");
            static const std::regex number(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
            if (std::regex_match(text, integer)) {
                try {
                    return std::stoll(text, nullptr, 10);
                } catch (const std::out_of_range&) {
                    fail(Status::invalid_argument, "'{}' is out of range: {}", where, text);
                }
            }
            if (std::regex_match(text, number)) return std::stod(text);
            if (text == "true" || text == "True" || text == "TRUE") return true;
            if (text == "false" || text == "False" || text == "FALSE") return false;
            if (text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
            return text;
        }
    }
    return nullptr;
}

class Section {
public:
    Section(const json& root, const char* name) : name_(name) {
        if (!root.contains(name) || root.at(name).is_null()) return;  // absent or empty: defaults
        value_ = &root.at(name);
        if (!value_->is_object()) fail(Status::invalid_argument, "'{}' must be a mapping of keys", name);
    }
    // Throws for keys this section does not know.
    void allow_only(std::initializer_list<const char*> keys) const {
        if (value_ == nullptr) return;
        for (const auto& item : value_->items()) {
            const std::string& key = item.key();
            if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return key == k; }) == keys.end())
                fail(Status::invalid_argument, "'{}.{}' is not a known key (known: {})", name_, key,
                     fmt::join(keys.begin(), keys.end(), ", "));
        }
    }
    const json* find(const char* key) const {
        if (value_ == nullptr || !value_->contains(key)) return nullptr;
        return &value_->at(key);
    }
    void integer(const char* key, int64_t& out, int64_t min, int64_t max) const {
        const json* v = find(key);
        if (v == nullptr) return;
        if (!v->is_number_integer())
            fail(Status::invalid_argument, "'{}.{}' must be an integer, got {}", name_, key, v->dump());
        const auto value = v->get<int64_t>();
        if (value < min || value > max)
            fail(Status::invalid_argument, "'{}.{}' must be within {}..{}, got {}", name_, key, min, max, value);
        out = value;
    }
    void number(const char* key, double& out, double min, double max, bool min_exclusive) const {
        const json* v = find(key);
        if (v == nullptr) return;
        if (!v->is_number()) fail(Status::invalid_argument, "'{}.{}' must be a number, got {}", name_, key, v->dump());
        const auto value = v->get<double>();
        if (!std::isfinite(value) || value < min || (min_exclusive && value == min) || value > max)
            fail(Status::invalid_argument, "'{}.{}' must be within {}{}, {}], got {}", name_, key, min_exclusive ? "(" : "[",
                 min, max, value);
        out = value;
    }
    void boolean(const char* key, bool& out) const {
        const json* v = find(key);
        if (v == nullptr) return;
        if (!v->is_boolean()) fail(Status::invalid_argument, "'{}.{}' must be true or false, got {}", name_, key, v->dump());
        out = v->get<bool>();
    }
    std::optional<std::string> string(const char* key) const {
        const json* v = find(key);
        if (v == nullptr) return std::nullopt;
        if (!v->is_string()) fail(Status::invalid_argument, "'{}.{}' must be a string, got {}", name_, key, v->dump());
        return v->get<std::string>();
    }
    template <typename T>
    void choice(const char* key, T& out, const std::map<std::string, T>& choices) const {
        const auto text = string(key);
        if (!text) return;
        const auto it = choices.find(*text);
        if (it == choices.end()) {
            std::vector<std::string> names;
            for (const auto& [k, v] : choices) names.push_back(k);
            fail(Status::invalid_argument, "'{}.{}' must be one of {}, got '{}'", name_, key, fmt::join(names, ", "), *text);
        }
        out = it->second;
    }

private:
    const char* name_;
    const json* value_ = nullptr;
};


json parse_document(std::string_view text, bool yaml) {
    json root;
    if (yaml) {
        try {
            root = from_yaml(YAML::Load(std::string(text)), "");
        } catch (const YAML::Exception& e) {
            fail(Status::invalid_argument, "the configuration is not valid YAML: {}", e.what());
        }
    } else {
        try {
            root = parse_json_rejecting_duplicates(text, "the configuration");
        } catch (const Error& e) {
            throw Error(Status::invalid_argument, e.what());
        }
    }
    if (!root.is_object()) fail(Status::invalid_argument, "the configuration must be a mapping of sections");
    for (const auto& [key, value] : root.items())
        if (std::find(section_names.begin(), section_names.end(), key) == section_names.end())
            fail(Status::invalid_argument, "'{}' is not a known section (known: {})", key, fmt::join(section_names, ", "));
    // The server's section is the HTTP server's to read (unmask_service_config_section); here only
    // its shape is checked.
    Section(root, "server");
    return root;
}

// The library's sections of a parsed document.
ServiceConfig config_from(const json& root, const std::filesystem::path& directory) {
    ServiceConfig config;
    const auto anchored = [&](const std::string& path) {
        return path.empty() || std::filesystem::path(path).is_absolute() ? std::filesystem::path(path) : directory / path;
    };
    const Section service(root, "service");
    service.allow_only({"listen_port", "max_concurrent_requests", "max_queued_requests", "request_timeout_seconds"});
    service.integer("listen_port", config.listen_port, 0, 65535);
    service.integer("max_concurrent_requests", config.max_concurrent_requests, 1, 65536);
    service.integer("max_queued_requests", config.max_queued_requests, 1, 10'000'000);
    service.number("request_timeout_seconds", config.request_timeout_seconds, 0, 1e9, false);

    const Section model(root, "model");
    model.allow_only({"weights_path", "precision", "quantize_embeddings", "max_sequence_length", "min_diffusion_steps",
                      "max_diffusion_steps"});
    const auto weights = model.string("weights_path");
    if (!weights || weights->empty()) fail(Status::invalid_argument, "'model.weights_path' is required");
    config.weights_path = anchored(*weights);
    model.choice<Precision>("precision", config.precision,
                            {{"auto", Precision::automatic}, {"fp32", Precision::fp32}, {"bf16", Precision::bf16},
                             {"fp16", Precision::fp16}, {"int8", Precision::int8}, {"q4", Precision::q4}, {"fp8", Precision::fp8}});
    model.boolean("quantize_embeddings", config.quantize_embeddings);
    if (config.quantize_embeddings && !quantizes_at_load(config.precision))
        fail(Status::invalid_argument, "'model.quantize_embeddings' needs 'model.precision' int8, q4 or fp8");
    model.integer("max_sequence_length", config.max_sequence_length, 1, int64_t(1) << 30);
    model.integer("min_diffusion_steps", config.min_diffusion_steps, 0, int64_t(1) << 20);
    model.integer("max_diffusion_steps", config.max_diffusion_steps, 0, int64_t(1) << 20);
    if (config.max_diffusion_steps > 0 && config.min_diffusion_steps > config.max_diffusion_steps)
        fail(Status::invalid_argument, "'model.min_diffusion_steps' ({}) exceeds 'model.max_diffusion_steps' ({})",
             config.min_diffusion_steps, config.max_diffusion_steps);

    const Section resources(root, "resources");
    resources.allow_only({"gpu_devices", "cpu_devices", "memory_fraction", "log_level", "log_rotation_size_mb"});
    if (const json* devices = resources.find("gpu_devices")) {
        if (!devices->is_array())
            fail(Status::invalid_argument, "'resources.gpu_devices' must be a list of device indexes, got {}", devices->dump());
        if (devices->size() > size_t(max_devices))
            fail(Status::invalid_argument, "'resources.gpu_devices' lists {} devices; at most {} share a model",
                 devices->size(), max_devices);
        for (const json& d : *devices) {
            if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > 1023)
                fail(Status::invalid_argument, "'resources.gpu_devices' entries must be device indexes 0..1023, got {}",
                     d.dump());
            const int64_t index = d.get<int64_t>();
            if (std::find(config.gpu_devices.begin(), config.gpu_devices.end(), index) != config.gpu_devices.end())
                fail(Status::invalid_argument, "'resources.gpu_devices' lists device {} twice", index);
            config.gpu_devices.push_back(index);
        }
    }
    resources.integer("cpu_devices", config.cpu_devices, 1, max_devices);
    if (config.cpu_devices > 1 && !config.gpu_devices.empty())
        fail(Status::invalid_argument, "'resources.cpu_devices' shares the model among host devices; it cannot go "
             "with 'resources.gpu_devices'");
    resources.number("memory_fraction", config.memory_fraction, 0, 1, true);
    resources.choice<LogLevel>("log_level", config.log_level,
                               {{"debug", LogLevel::debug}, {"info", LogLevel::info}, {"warn", LogLevel::warn},
                                {"warning", LogLevel::warn}, {"error", LogLevel::error}});
    resources.integer("log_rotation_size_mb", config.log_rotation_size_mb, 0, 1 << 20);

    return config;
}


// The file's document with its library sections checked, and the folder relative paths start from.
std::pair<json, std::filesystem::path> read_document(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(Status::io, "cannot open the configuration file '{}'", path.string());
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) fail(Status::io, "cannot read the configuration file '{}'", path.string());
    const auto extension = path.extension().string();
    const auto directory = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    try {
        json root = parse_document(text.str(), extension == ".yaml" || extension == ".yml");
        config_from(root, directory);
        return {std::move(root), directory};
    } catch (const Error& e) {
        throw Error(e.status(), fmt::format("{}: {}", path.string(), e.what()));
    }
}

}  // namespace

ServiceConfig parse_service_config(std::string_view text, bool yaml, const std::filesystem::path& directory) {
    return config_from(parse_document(text, yaml), directory);
}

ServiceConfig read_service_config(const std::filesystem::path& path) {
    const auto [root, directory] = read_document(path);
    return config_from(root, directory);
}

std::string read_config_section(const std::filesystem::path& path, std::string_view section) {
    if (std::find(section_names.begin(), section_names.end(), section) == section_names.end())
        fail(Status::invalid_argument, "'{}' is not a section of a service configuration (they are {})", section,
             fmt::join(section_names, ", "));
    const auto [root, directory] = read_document(path);
    const auto found = root.find(std::string(section));
    return found == root.end() ? "null" : found->dump();
}

}  // namespace unmask
