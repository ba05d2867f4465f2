#include <string>
#include <utility>

#include "boundary.hpp"

namespace {
thread_local std::string last_error;
}

namespace unmask::capi {
void record_error(const char* function, const char* prefix, const char* detail) noexcept {
    try {
        last_error.assign(function).append(": ").append(prefix).append(detail);
    } catch (...) {
        // No memory for the message: keep what fits without allocating.
        static constexpr char fallback[] = "out of memory while recording an error";
        if (last_error.capacity() >= sizeof fallback) last_error.assign(fallback);
        else last_error.clear();
    }
}
}  // namespace unmask::capi

extern "C" const char* unmask_last_error(void) { return last_error.c_str(); }

extern "C" const char* unmask_status_string(unmask_status status) { return unmask::status_name(status); }
