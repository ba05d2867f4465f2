// Typed access to a config.json object. Every failure names the file and the field:
// "config.json: field 'd_model' must be an integer, got "4096"".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace unmask {

class ConfigReader {
public:
    ConfigReader(const nlohmann::json& root, std::string label);

    bool has(std::string_view key) const;  // present and not null
    int64_t integer(std::string_view key) const;
    int64_t positive_integer(std::string_view key) const;
    std::optional<int64_t> optional_integer(std::string_view key) const;
    double number(std::string_view key) const;
    std::optional<double> optional_number(std::string_view key) const;
    bool boolean(std::string_view key, bool default_value) const;
    std::optional<std::string> optional_string(std::string_view key) const;
    // A token id given as an integer or as a list of integers (the first one counts).
    std::optional<int64_t> optional_token_id(std::string_view key) const;
    const nlohmann::json* find(std::string_view key) const;  // nullptr when absent or null
    const std::string& label() const noexcept { return label_; }

    [[noreturn]] void fail_field(std::string_view key, std::string_view problem) const;

private:
    const nlohmann::json& root_;
    std::string label_;
};

}  // namespace unmask
