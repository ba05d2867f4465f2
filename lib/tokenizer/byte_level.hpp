// GPT-2's byte-level alphabet: every byte maps to a printable code point (printable Latin-1
// bytes to themselves, the others to U+0100 and up), so BPE vocabularies can spell any bytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace unmask {

// The UTF-8 spelling of the code point that stands for `byte`.
const std::string& byte_to_symbol(uint8_t byte);

// The byte a code point stands for, if it is one of the 256 symbols.
std::optional<uint8_t> symbol_to_byte(uint32_t code_point);

// Every byte of `bytes` mapped to its symbol.
std::string bytes_to_symbols(std::string_view bytes);

}  // namespace unmask
