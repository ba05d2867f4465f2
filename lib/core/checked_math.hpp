// Arithmetic on sizes read from files: overflow is an error to report, never a wrap-around.
#pragma once

#include <cstdint>

namespace unmask {

// result = a * b; false (result unspecified) on overflow.
inline bool checked_multiply(uint64_t a, uint64_t b, uint64_t& result) noexcept {
    return !__builtin_mul_overflow(a, b, &result);
}

inline bool checked_add(uint64_t a, uint64_t b, uint64_t& result) noexcept {
    return !__builtin_add_overflow(a, b, &result);
}

}  // namespace unmask
