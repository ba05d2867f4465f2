// The building blocks of model loading: SHA-256, float conversions, UTF-8 validation, the
// safetensors header parser and the checksum manifest parser.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "core/sha256.hpp"
#include "core/utf8.hpp"
#include "format/checksum_manifest.hpp"
#include "format/safetensors.hpp"

using namespace unmask;

namespace {
std::string sha256_of(const std::string& text) {
    Sha256 hash;
    hash.update(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    return hash.hex_digest();
}

Status status_of(const std::function<void()>& body) {
    try {
        body();
    } catch (const Error& e) {
        return e.status();
    }
    return Status::ok;
}
}  // namespace

TEST_CASE("SHA-256 matches the FIPS 180-4 test vectors") {
    CHECK(sha256_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    Sha256 million;
    const std::string chunk(1000, 'a');  // fed in pieces that straddle the 64-byte blocks
    for (int i = 0; i < 1000; ++i) million.update(reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size());
    CHECK(million.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("bf16 and fp16 conversions round to nearest even and keep special values") {
    CHECK(float_to_bf16(1.0f) == 0x3F80);
    CHECK(float_to_bf16(bits_to_float(0x3F808000)) == 0x3F80);  // tie, even stays
    CHECK(float_to_bf16(bits_to_float(0x3F818000)) == 0x3F82);  // tie, odd rounds up
    CHECK(float_to_bf16(bits_to_float(0x3F808001)) == 0x3F81);
    CHECK(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    CHECK(bf16_to_float(float_to_bf16(-std::numeric_limits<float>::infinity())) == -std::numeric_limits<float>::infinity());

    CHECK(float_to_fp16(1.0f) == 0x3C00);
    CHECK(float_to_fp16(65504.0f) == 0x7BFF);
    CHECK(float_to_fp16(65520.0f) == 0x7C00);  // rounds to infinity
    CHECK(float_to_fp16(-2.0f) == 0xC000);
    CHECK(fp16_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
    CHECK(float_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);
    CHECK(float_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);  // tie to even (zero)
    CHECK(float_to_fp16(std::ldexp(3.0f, -25)) == 0x0002);  // tie to even (two)
    CHECK(std::isnan(fp16_to_float(float_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
    for (uint32_t h = 0; h < 0x7C00; ++h) REQUIRE(float_to_fp16(fp16_to_float(static_cast<uint16_t>(h))) == h);
}

TEST_CASE("UTF-8 validation finds overlong, surrogate, truncated and out-of-range sequences") {
    CHECK_FALSE(find_invalid_utf8("plain ascii").has_value());
    CHECK_FALSE(find_invalid_utf8("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80").has_value());
    CHECK(find_invalid_utf8("ab\xC0\xAF") == 2u);           // overlong '/'
    CHECK(find_invalid_utf8("\xED\xA0\x80") == 0u);         // surrogate U+D800
    CHECK(find_invalid_utf8("x\xE4\xB8") == 1u);            // truncated
    CHECK(find_invalid_utf8("\xF4\x90\x80\x80") == 0u);     // above U+10FFFF
    CHECK(find_invalid_utf8("\xFF") == 0u);
}

TEST_CASE("a safetensors header with metadata and zero-sized tensors parses") {
    const std::string header =
        R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
        R"("empty":{"dtype":"BF16","shape":[0,4],"data_offsets":[8,8]},"c":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]}})";
    const SafetensorsHeader parsed = parse_safetensors_header(header, 14, "t");
    REQUIRE(parsed.tensors.size() == 3);
    CHECK(parsed.metadata.at("format") == "pt");
    CHECK(parsed.tensors[0].name == "b");
    CHECK(parsed.tensors.back().name == "c");
    CHECK(parsed.tensors.back().elements == 3);
}

TEST_CASE("safetensors headers that lie are rejected") {
    auto parse = [](const std::string& header, uint64_t data) { parse_safetensors_header(header, data, "t"); };
    CHECK(status_of([&] { parse("[]", 0); }) == Status::model_format);
    CHECK(status_of([&] { parse(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4); }) == Status::model_format);
    CHECK(status_of([&] { parse(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4); }) == Status::model_format);
    CHECK(status_of([&] { parse(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8); }) == Status::model_format);
    CHECK(status_of([&] { parse(R"({"__metadata__":{"k":1}})", 0); }) == Status::model_format);
    CHECK(status_of([&] { parse(R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4); }) ==
          Status::model_format);
}

TEST_CASE("checksum manifests follow sha256sum's format and name only plain files") {
    const std::string digest(64, 'a');
    const auto manifest = parse_checksum_manifest(digest + "  model.safetensors\n" + digest + " *config.json\r\n", "SUMS");
    CHECK(manifest.size() == 2);
    CHECK(manifest.count("config.json") == 1);
    CHECK(status_of([&] { parse_checksum_manifest("nonsense\n", "SUMS"); }) == Status::model_format);
    CHECK(status_of([&] { parse_checksum_manifest(digest + "  ../etc/passwd\n", "SUMS"); }) == Status::model_format);
    CHECK(status_of([&] { parse_checksum_manifest(digest + "  a\n" + digest + "  a\n", "SUMS"); }) == Status::model_format);
}
