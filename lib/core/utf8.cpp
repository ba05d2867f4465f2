#include "core/utf8.hpp"

#include <cstdint>
#include <string>

namespace unmask {

std::optional<size_t> find_invalid_utf8(std::string_view text) noexcept {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const uint8_t c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t length;
        uint32_t lowest;  // smallest code point of this length: anything below is overlong
        uint32_t code;
        if ((c & 0xE0) == 0xC0) {
            length = 2, lowest = 0x80, code = c & 0x1Fu;
        } else if ((c & 0xF0) == 0xE0) {
            length = 3, lowest = 0x800, code = c & 0x0Fu;
        } else if ((c & 0xF8) == 0xF0) {
            length = 4, lowest = 0x10000, code = c & 0x07u;
        } else {
            return i;
        }
        if (n - i < length) return i;
        for (size_t k = 1; k < length; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            code = (code << 6) | (s[i + k] & 0x3Fu);
        }
        if (code < lowest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return i;
        i += length;
    }
    return std::nullopt;
}

}  // namespace unmask

namespace unmask {
namespace {

// The length of the valid sequence starting at s[i], or 0 with `consumed` set to the length of
// the maximal subpart to replace (WHATWG: at least 1 byte).
size_t valid_sequence_length(const uint8_t* s, size_t n, size_t i, size_t& consumed) noexcept {
    const uint8_t c = s[i];
    consumed = 1;
    if (c < 0x80) return 1;
    size_t length;
    uint8_t lower = 0x80, upper = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) length = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        length = 3;
        if (c == 0xE0) lower = 0xA0;
        if (c == 0xED) upper = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        length = 4;
        if (c == 0xF0) lower = 0x90;
        if (c == 0xF4) upper = 0x8F;
    } else {
        return 0;
    }
    for (size_t k = 1; k < length; ++k) {
        if (i + k >= n) return 0;
        const uint8_t b = s[i + k];
        if (b < (k == 1 ? lower : 0x80) || b > (k == 1 ? upper : 0xBF)) return 0;
        consumed = k + 1;
    }
    return length;
}

}  // namespace

std::string sanitize_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        size_t consumed = 0;
        const size_t length = valid_sequence_length(s, text.size(), i, consumed);
        if (length > 0) {
            out.append(text.substr(i, length));
            i += length;
        } else {
            out.append("\xEF\xBF\xBD");
            i += consumed;
        }
    }
    return out;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

uint32_t next_code_point(std::string_view text, size_t& i) noexcept {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
        ++i;
        return c;
    }
    const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    uint32_t cp = c & (length == 2 ? 0x1Fu : length == 3 ? 0x0Fu : 0x07u);
    for (size_t k = 1; k < length && i + k < text.size(); ++k) cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3Fu);
    i += length;
    return cp;
}

size_t complete_utf8_prefix(std::string_view bytes) noexcept {
    // Look back at most 3 bytes for the start of a sequence that is still incomplete.
    const size_t n = bytes.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto c = static_cast<uint8_t>(bytes[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
        const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return length > back ? n - back : n;
    }
    return n;
}

}  // namespace unmask
