// Tokenizer parity with Hugging Face's tokenizers (the reference, via npm) on real tokenizer files
// (Qwen3, Llama-3, a SentencePiece-style Llama-2, Gemma-3): identical ids with and without special
// tokens, and identical decoded text, for a corpus of prose, code, numbers, CJK, emoji and
// combining marks, special tokens inside text, empty input, invalid UTF-8 and 1 MB of text.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "core/utf8.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace unmask;

namespace {

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("tokenizers match Hugging Face's reference token for token on every corpus file") {
    std::ifstream in(test_data_path("tokenizers/expected.json"));
    REQUIRE_MESSAGE(in.good(), "run tests/tokenizer/make_expected.js first (ctest does)");
    const auto cases = nlohmann::json::parse(in);
    REQUIRE(cases.size() == 40);
    std::map<std::string, std::unique_ptr<Tokenizer>> tokenizers;
    for (const auto& c : cases) {
        const std::string family = c["tokenizer"];
        const std::string corpus = c["corpus"];
        CAPTURE(family);
        CAPTURE(corpus);
        auto& tokenizer = tokenizers[family];
        if (!tokenizer) tokenizer = Tokenizer::load(c["file"].get<std::string>());
        const std::string text = read_bytes(test_data_path("tokenizers/corpus/" + corpus));
        CHECK(tokenizer->encode(text, false) == c["ids"].get<std::vector<int32_t>>());
        CHECK(tokenizer->encode(text, true) == c["ids_with_special"].get<std::vector<int32_t>>());
        const auto ids = c["ids"].get<std::vector<int32_t>>();
        CHECK(tokenizer->decode(ids, false) == c["decoded"].get<std::string>());
        CHECK(tokenizer->decode(ids, true) == c["decoded_skip_special"].get<std::string>());
    }
}

TEST_CASE("streaming decode never emits a broken UTF-8 sequence and adds up to the full decode") {
    std::ifstream in(test_data_path("tokenizers/expected.json"));
    const auto cases = nlohmann::json::parse(in);
    for (const auto& c : cases) {
        if (c["corpus"] != "emoji_and_marks" && c["corpus"] != "cjk") continue;
        CAPTURE(c["tokenizer"].get<std::string>());
        const auto tokenizer = Tokenizer::load(c["file"].get<std::string>());
        StreamDecoder stream(*tokenizer, false);
        std::string streamed;
        for (int32_t id : c["ids"].get<std::vector<int32_t>>()) {
            const std::string piece = stream.push(std::span(&id, 1));
            CHECK_FALSE(find_invalid_utf8(piece).has_value());
            streamed += piece;
        }
        CHECK(streamed == c["decoded"].get<std::string>());
    }
}
