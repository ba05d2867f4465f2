#include "tokenizer/byte_level.hpp"

#include <vector>

#include "core/utf8.hpp"

namespace unmask {
namespace {

struct Alphabet {
    std::array<uint32_t, 256> code_point{};
    std::array<std::string, 256> symbol;
    std::vector<int> byte_of;  // indexed by code point, -1 when none

    Alphabet() : byte_of(512, -1) {
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            code_point[size_t(b)] = printable ? uint32_t(b) : next++;
            append_utf8(symbol[size_t(b)], code_point[size_t(b)]);
            byte_of[code_point[size_t(b)]] = b;
        }
    }
};

const Alphabet& alphabet() {
    static const Alphabet a;
    return a;
}

}  // namespace

const std::string& byte_to_symbol(uint8_t byte) { return alphabet().symbol[byte]; }

std::optional<uint8_t> symbol_to_byte(uint32_t code_point) {
    const auto& a = alphabet();
    if (code_point >= a.byte_of.size() || a.byte_of[code_point] < 0) return std::nullopt;
    return static_cast<uint8_t>(a.byte_of[code_point]);
}

std::string bytes_to_symbols(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) out += byte_to_symbol(static_cast<uint8_t>(c));
    return out;
}

}  // namespace unmask
