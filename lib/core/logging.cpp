#include "core/logging.hpp"

#include <string>

namespace unmask {

void Logger::write(LogLevel level, std::string_view message) const noexcept {
    if (!enabled(level)) return;
    try {
        const std::string line(message);  // the sink gets a NUL-terminated copy
        sink_(static_cast<int32_t>(level), line.c_str(), user_data_);
    } catch (...) {
    }
}

}  // namespace unmask
