#include "core/utf8.hpp"

#include <cstdint>

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
