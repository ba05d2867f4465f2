#include <string>
#include <utility>

#include "boundary.hpp"

namespace {
thread_local std::string last_error;
}

namespace unmask::capi {
void set_last_error(std::string message) noexcept { last_error = std::move(message); }
}  // namespace unmask::capi

extern "C" const char* unmask_last_error(void) { return last_error.c_str(); }

extern "C" const char* unmask_status_string(unmask_status status) { return unmask::status_name(status); }
