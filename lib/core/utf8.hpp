// UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace unmask {

// The byte offset of the first invalid sequence, or nullopt when `text` is valid UTF-8.
std::optional<size_t> find_invalid_utf8(std::string_view text) noexcept;

}  // namespace unmask
