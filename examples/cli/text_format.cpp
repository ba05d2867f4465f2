#include "text_format.hpp"

#include <cmath>
#include <cstdio>
#include <utility>

#include "args.hpp"
#include "parse_number.hpp"

namespace unmask_cli {

std::string with_thousands(uint64_t value) {
    const std::string digits = std::to_string(value);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

std::string binary_size(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = double(bytes);
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
    return text;
}

uint64_t parse_bytes(const std::string& text, const std::string& option) {
    const std::pair<const char*, double> suffixes[] = {
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
        {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
        {"K", 1e3},      {"M", 1e6},         {"G", 1e9},            {"T", 1e12}};
    std::string number = text;
    double scale = 1.0;
    for (const auto& [suffix, factor] : suffixes) {
        const std::string s = suffix;
        if (number.size() > s.size() && number.compare(number.size() - s.size(), s.size(), s) == 0) {
            number.resize(number.size() - s.size());
            scale = factor;
            break;
        }
    }
    const std::optional<double> value = unmask_examples::parse_number(number);
    if (!value || !std::isfinite(*value))
        throw UsageError("--" + option + " must be a size in bytes (e.g. 80000000000, 80GB, 24GiB), got '" + text + "'");
    const double bytes = std::floor(*value * scale);
    if (bytes < 1 || bytes > 9.2e18)
        throw UsageError("--" + option + " must be a positive size below 9.2e18 bytes, got '" + text + "'");
    return static_cast<uint64_t>(bytes);
}

}  // namespace unmask_cli
