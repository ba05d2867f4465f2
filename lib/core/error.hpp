// The one error type of the core. Core code throws unmask::Error; the C API boundary (capi/)
// turns it into an unmask_status and the thread's last-error message. Codes equal unmask.h's
// (capi/abi_enums.cpp checks every enum the ABI exposes).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace unmask {

enum class Status : int32_t {
    ok = 0,
    invalid_argument = 1,
    unsupported = 2,
    model_format = 3,
    io = 4,
    out_of_budget = 5,
    queue_full = 6,
    timeout = 7,
    cancelled = 8,
    too_long = 9,
    shutting_down = 10,
    device = 11,
    internal = 12,
};

// The constant name of a status ("INVALID_ARGUMENT"), or "UNKNOWN".
const char* status_name(int32_t status) noexcept;

class Error : public std::runtime_error {
public:
    Error(Status status, std::string message) : std::runtime_error(std::move(message)), status_(status) {}
    Status status() const noexcept { return status_; }

private:
    Status status_;
};

// A device this process can no longer use (a GPU whose context a faulting kernel corrupted):
// status DEVICE, and every later call on that device fails the same way, so whoever meets it
// stops using the device rather than retrying (an engine fails: Health::failed).
class DeviceLost : public Error {
public:
    explicit DeviceLost(std::string message) : Error(Status::device, std::move(message)) {}
};

// Throws Error(status, formatted message). The message names the thing that was wrong and the
// value that was seen.
template <typename... Args>
[[noreturn]] void fail(Status status, fmt::format_string<Args...> format, Args&&... args) {
    throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace unmask
