#include "log_file.hpp"

#include <sys/stat.h>

#include <ctime>
#include <stdexcept>

namespace unmask_examples {

LogFile::LogFile(std::string path, uint64_t rotate_bytes) : path_(std::move(path)), rotate_bytes_(rotate_bytes) {
    if (path_.empty()) return;
    file_ = std::fopen(path_.c_str(), "a");
    if (file_ == nullptr) throw std::runtime_error("cannot open the log file '" + path_ + "'");
    struct stat info{};
    if (stat(path_.c_str(), &info) == 0) size_ = static_cast<uint64_t>(info.st_size);
}

LogFile::~LogFile() {
    if (file_ != nullptr) std::fclose(file_);
}

void LogFile::sink(int32_t level, const char* message, void* user_data) {
    static_cast<LogFile*>(user_data)->write(level, message != nullptr ? message : "");
}

void LogFile::write(int32_t level, const std::string& message) {
    static const char* const names[] = {"debug", "info", "warn", "error"};
    std::lock_guard lock(mutex_);
    if (!path_.empty() && file_ != nullptr && rotate_bytes_ > 0 && size_ >= rotate_bytes_) {
        std::fclose(file_);
        const bool moved = std::rename(path_.c_str(), (path_ + ".1").c_str()) == 0;
        file_ = std::fopen(path_.c_str(), moved ? "w" : "a");
        size_ = 0;
    }
    if (!path_.empty() && file_ == nullptr) file_ = std::fopen(path_.c_str(), "a");  // retried after a failure
    FILE* out = file_ != nullptr ? file_ : stderr;  // never lose a line
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
    const int written =
        std::fprintf(out, "%s %s %s\n", stamp, names[level >= 0 && level <= 3 ? level : 3], message.c_str());
    if (written > 0) size_ += static_cast<uint64_t>(written);
    std::fflush(out);
}

}  // namespace unmask_examples
