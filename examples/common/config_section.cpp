#include "config_section.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "unmask.h"

namespace unmask_examples {

ConfigSection::ConfigSection(const std::string& path, const std::string& name) : name_(name) {
    std::vector<char> text(4096);
    int64_t length = 0;
    for (;;) {
        if (unmask_service_config_section(path.c_str(), name.c_str(), text.data(), static_cast<int64_t>(text.size()),
                                          &length) != UNMASK_OK)
            throw std::invalid_argument(unmask_last_error());
        if (length < static_cast<int64_t>(text.size())) break;
        text.resize(static_cast<size_t>(length) + 1);
    }
    value_ = nlohmann::json::parse(text.data(), text.data() + length);
    const std::filesystem::path file(path);
    directory_ = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
}

void ConfigSection::fail(const char* key, const std::string& message) const {
    throw std::invalid_argument("'" + name_ + "." + key + "' " + message);
}

const nlohmann::json* ConfigSection::find(const char* key) const {
    if (!value_.is_object()) return nullptr;
    const auto it = value_.find(key);
    return it == value_.end() || it->is_null() ? nullptr : &*it;
}

void ConfigSection::allow_only(std::initializer_list<const char*> keys) const {
    if (!value_.is_object()) return;
    for (const auto& item : value_.items()) {
        if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return item.key() == k; }) != keys.end())
            continue;
        std::string known;
        for (const char* k : keys) known += (known.empty() ? "" : ", ") + std::string(k);
        fail(item.key().c_str(), "is not a known key (known: " + known + ")");
    }
}

std::optional<int64_t> ConfigSection::integer(const char* key, int64_t min, int64_t max) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) fail(key, "must be an integer, got " + v->dump());
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(max))
        fail(key, "must be within " + std::to_string(min) + ".." + std::to_string(max) + ", got " + v->dump());
    const auto value = v->get<int64_t>();
    if (value < min || value > max)
        fail(key, "must be within " + std::to_string(min) + ".." + std::to_string(max) + ", got " + std::to_string(value));
    return value;
}

std::optional<double> ConfigSection::number(const char* key, double min, double max) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) fail(key, "must be a number, got " + v->dump());
    const auto value = v->get<double>();
    if (!std::isfinite(value) || value < min || value > max)
        fail(key, "must be within [" + nlohmann::json(min).dump() + ", " + nlohmann::json(max).dump() + "], got " +
                      v->dump());
    return value;
}

std::optional<bool> ConfigSection::boolean(const char* key) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) fail(key, "must be true or false, got " + v->dump());
    return v->get<bool>();
}

std::optional<std::string> ConfigSection::string(const char* key) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) fail(key, "must be a string, got " + v->dump());
    return v->get<std::string>();
}

std::optional<std::string> ConfigSection::path(const char* key) const {
    auto text = string(key);
    if (text && !text->empty() && std::filesystem::path(*text).is_relative()) text = (directory_ / *text).string();
    return text;
}

}  // namespace unmask_examples
