// A logger is a callback plus a threshold, owned by whoever was given them (a model load, an
// engine). There is no global logger: two engines in one process log to their own sinks.
#pragma once

#include <cstdint>
#include <string_view>

#include <fmt/format.h>

namespace unmask {

enum class LogLevel : int32_t { debug = 0, info = 1, warn = 2, error = 3 };

using LogSink = void (*)(int32_t level, const char* message, void* user_data);

class Logger {
public:
    Logger() = default;
    Logger(LogSink sink, void* user_data, LogLevel threshold)
        : sink_(sink), user_data_(user_data), threshold_(threshold) {}

    bool enabled(LogLevel level) const noexcept { return sink_ != nullptr && level >= threshold_; }

    // Never throws: a failing formatter or sink must not turn a log line into an error.
    void write(LogLevel level, std::string_view message) const noexcept;

    template <typename... Args>
    void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) const noexcept {
        if (!enabled(level)) return;
        try {
            write(level, fmt::format(format, std::forward<Args>(args)...));
        } catch (...) {
        }
    }
    template <typename... Args>
    void debug(fmt::format_string<Args...> f, Args&&... a) const noexcept { log(LogLevel::debug, f, std::forward<Args>(a)...); }
    template <typename... Args>
    void info(fmt::format_string<Args...> f, Args&&... a) const noexcept { log(LogLevel::info, f, std::forward<Args>(a)...); }
    template <typename... Args>
    void warn(fmt::format_string<Args...> f, Args&&... a) const noexcept { log(LogLevel::warn, f, std::forward<Args>(a)...); }
    template <typename... Args>
    void error(fmt::format_string<Args...> f, Args&&... a) const noexcept { log(LogLevel::error, f, std::forward<Args>(a)...); }

private:
    LogSink sink_ = nullptr;
    void* user_data_ = nullptr;
    LogLevel threshold_ = LogLevel::info;
};

}  // namespace unmask
