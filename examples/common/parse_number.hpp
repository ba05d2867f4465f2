// Whole-string number parsing for the example programs' options and settings: the text must be
// a number and nothing else ("12", "0.5", "1e-3"; not "", "12x" or " 12").
// (std::stoll and std::stod skip leading white space, so it is refused before them.)
#pragma once

#include <cctype>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

namespace unmask_examples {

inline std::optional<int64_t> parse_integer(const std::string& text) {
    try {
        size_t used = 0;
        const long long value = std::stoll(text, &used);
        if (used == text.size() && !std::isspace(static_cast<unsigned char>(text.front()))) return value;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

inline std::optional<double> parse_number(const std::string& text) {
    try {
        size_t used = 0;
        const double value = std::stod(text, &used);
        if (used == text.size() && !std::isspace(static_cast<unsigned char>(text.front()))) return value;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

}  // namespace unmask_examples
