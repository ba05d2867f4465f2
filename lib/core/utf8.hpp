// UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace unmask {

// The byte offset of the first invalid sequence, or nullopt when `text` is valid UTF-8.
std::optional<size_t> find_invalid_utf8(std::string_view text) noexcept;

// `text` with each maximal invalid subsequence replaced by U+FFFD, as the WHATWG decoder (and so
// JavaScript's TextDecoder) does.
std::string sanitize_utf8(std::string_view text);

// Appends the UTF-8 encoding of `code_point` (<= U+10FFFF, not a surrogate).
void append_utf8(std::string& out, uint32_t code_point);

// Decodes the code point at `text[i]` of valid UTF-8 and advances i past it.
uint32_t next_code_point(std::string_view text, size_t& i) noexcept;

// The length of the longest prefix of `bytes` that ends on a code point boundary, treating an
// incomplete sequence at the end as not yet complete (streaming).
size_t complete_utf8_prefix(std::string_view bytes) noexcept;

}  // namespace unmask
