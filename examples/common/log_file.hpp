// A log file for the library's log callback: one line per message with a UTC timestamp and the
// level, moved to PATH.1 when it passes a size (standard error takes the lines while the file
// cannot be reopened). Shared by the `unmask` command and unmask-server.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace unmask_examples {

class LogFile {
public:
    // Appends to `path` (created when missing); "" writes to standard error and never rotates.
    // `rotate_bytes` 0: never rotate. Throws std::runtime_error when the file cannot be opened.
    LogFile(std::string path, uint64_t rotate_bytes);
    ~LogFile();
    LogFile(const LogFile&) = delete;
    LogFile& operator=(const LogFile&) = delete;

    // An unmask_log_callback; user_data is the LogFile.
    static void sink(int32_t level, const char* message, void* user_data);
    void write(int32_t level, const std::string& message);

private:
    std::string path_;
    uint64_t rotate_bytes_;
    std::mutex mutex_;
    FILE* file_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace unmask_examples
