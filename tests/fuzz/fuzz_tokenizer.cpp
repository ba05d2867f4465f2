// libFuzzer target. An input starting with '{' is a tokenizer.json: parsed, then used to encode
// and decode a fixed text. Any other input is text, encoded and decoded with a small seeded
// tokenizer. Anything may fail with unmask::Error; nothing may crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/error.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

// A small byte-level BPE with a merge, an added token, a normaliser and a Split regex.
constexpr std::string_view seed_tokenizer = R"({
  "added_tokens": [{"id": 3, "content": "<|x|>", "special": true, "normalized": false}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}|\\s+(?!\\S)|[^\\s\\p{N}]+"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "byte_fallback": false, "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}
})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    static const auto seeded = unmask::Tokenizer::parse(seed_tokenizer, "seed");
    try {
        if (!input.empty() && input[0] == '{') {
            const auto parsed = unmask::Tokenizer::parse(input, "fuzz");
            const auto ids = parsed->encode("Hello, world! 123 caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD <|x|>", true);
            (void)parsed->decode(ids, true);
        } else {
            const auto ids = seeded->encode(input, true);
            (void)seeded->decode(ids, false);
        }
    } catch (const unmask::Error&) {
    }
    return 0;
}
