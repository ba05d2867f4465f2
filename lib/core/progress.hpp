// Progress of a long operation (a load, a checksum pass), reported to the caller.
#pragma once

#include <cstdint>
#include <functional>

namespace unmask {

// Called with bytes done and total; returns false to cancel the operation.
using ProgressFn = std::function<bool(uint64_t done, uint64_t total)>;

}  // namespace unmask
