// A section of a service configuration file that a host owns (unmask-server's `server`): the
// library reads the file, YAML or JSON, and hands the section over as JSON
// (unmask_service_config_section); this checks it key by key, each failure a
// std::invalid_argument naming 'section.key' as the library does for its own sections.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace unmask_examples {

class ConfigSection {
public:
    // Throws std::invalid_argument with the library's message for a file it refuses.
    ConfigSection(const std::string& path, const std::string& name);

    // Throws for keys this section does not know.
    void allow_only(std::initializer_list<const char*> keys) const;
    std::optional<int64_t> integer(const char* key, int64_t min, int64_t max) const;
    std::optional<double> number(const char* key, double min, double max) const;
    std::optional<bool> boolean(const char* key) const;
    std::optional<std::string> string(const char* key) const;
    // A string that names a file: relative to the configuration file's folder.
    std::optional<std::string> path(const char* key) const;

    [[noreturn]] void fail(const char* key, const std::string& message) const;

private:
    const nlohmann::json* find(const char* key) const;

    std::string name_;
    std::filesystem::path directory_;
    nlohmann::json value_;  // null: the section is absent (every key its default)
};

}  // namespace unmask_examples
