#include "format/config_reader.hpp"

#include "core/error.hpp"

namespace unmask {

ConfigReader::ConfigReader(const nlohmann::json& root, std::string label) : root_(root), label_(std::move(label)) {
    if (!root_.is_object()) fail(Status::model_format, "{}: the top level is not a JSON object", label_);
}

const nlohmann::json* ConfigReader::find(std::string_view key) const {
    const auto it = root_.find(key);
    if (it == root_.end() || it->is_null()) return nullptr;
    return &*it;
}

bool ConfigReader::has(std::string_view key) const { return find(key) != nullptr; }

void ConfigReader::fail_field(std::string_view key, std::string_view problem) const {
    fail(Status::model_format, "{}: field '{}' {}", label_, key, problem);
}

std::optional<int64_t> ConfigReader::optional_integer(std::string_view key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number_integer()) fail_field(key, fmt::format("must be an integer, got {}", value->dump()));
    return value->get<int64_t>();
}

int64_t ConfigReader::integer(std::string_view key) const {
    const auto value = optional_integer(key);
    if (!value) fail_field(key, "is missing");
    return *value;
}

int64_t ConfigReader::positive_integer(std::string_view key) const {
    const int64_t value = integer(key);
    if (value <= 0) fail_field(key, fmt::format("must be positive, got {}", value));
    return value;
}

std::optional<double> ConfigReader::optional_number(std::string_view key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number()) fail_field(key, fmt::format("must be a number, got {}", value->dump()));
    return value->get<double>();
}

double ConfigReader::number(std::string_view key) const {
    const auto value = optional_number(key);
    if (!value) fail_field(key, "is missing");
    return *value;
}

bool ConfigReader::boolean(std::string_view key, bool default_value) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return default_value;
    if (!value->is_boolean()) fail_field(key, fmt::format("must be true or false, got {}", value->dump()));
    return value->get<bool>();
}

std::optional<std::string> ConfigReader::optional_string(std::string_view key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) fail_field(key, fmt::format("must be a string, got {}", value->dump()));
    return value->get<std::string>();
}

std::optional<int64_t> ConfigReader::optional_token_id(std::string_view key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_number_integer()) return value->get<int64_t>();
    if (value->is_array() && !value->empty() && (*value)[0].is_number_integer()) return (*value)[0].get<int64_t>();
    fail_field(key, fmt::format("must be a token id or a list of token ids, got {}", value->dump()));
}

}  // namespace unmask
