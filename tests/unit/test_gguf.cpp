// The GGUF container reader (lib/format/gguf): a file written here byte by byte from the
// specification (ggml docs/gguf.md) parses to what was written, and each way a file can lie is
// refused with MODEL_FORMAT and a message that names the part. And ggml's quantized blocks
// (kernels/cpu/dequantize) decode to the bits of an independent decoder.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "cpu/dequantize.hpp"
#include "cpu/quantize.hpp"
#include "fixtures.hpp"
#include "format/gguf.hpp"

using namespace unmask;

namespace {

// Little-endian bytes of a GGUF file, built part by part.
struct Bytes {
    std::vector<uint8_t> data;

    template <typename T>
    Bytes& put(T value) {
        const size_t at = data.size();
        data.resize(at + sizeof value);
        std::memcpy(data.data() + at, &value, sizeof value);
        return *this;
    }
    Bytes& u32(uint32_t value) { return put(value); }
    Bytes& u64(uint64_t value) { return put(value); }
    Bytes& str(std::string_view text) {
        u64(text.size());
        data.insert(data.end(), text.begin(), text.end());
        return *this;
    }
    Bytes& append(const Bytes& other) {
        data.insert(data.end(), other.data.begin(), other.data.end());
        return *this;
    }
};

Bytes pair(std::string_view key, GgufType type, const Bytes& value) {
    return Bytes().str(key).u32(static_cast<uint32_t>(type)).append(value);
}

Bytes string_pair(std::string_view key, std::string_view value) { return pair(key, GgufType::string, Bytes().str(value)); }

Bytes u32_pair(std::string_view key, uint32_t value) { return pair(key, GgufType::uint32, Bytes().u32(value)); }

Bytes tensor_info(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
    Bytes b;
    b.str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) b.u64(d);
    return b.u32(type).u64(offset);
}

struct FileParts {
    uint32_t version = 3;
    std::vector<Bytes> metadata;
    std::vector<Bytes> tensors;
    uint64_t alignment = 32;
    size_t data_bytes = 0;
};

std::vector<uint8_t> build(const FileParts& parts) {
    Bytes file;
    file.data = {'G', 'G', 'U', 'F'};
    file.u32(parts.version).u64(parts.tensors.size()).u64(parts.metadata.size());
    for (const Bytes& m : parts.metadata) file.append(m);
    for (const Bytes& t : parts.tensors) file.append(t);
    while (file.data.size() % parts.alignment != 0) file.data.push_back(0);
    for (size_t i = 0; i < parts.data_bytes; ++i) file.data.push_back(static_cast<uint8_t>(i * 7 + 1));
    return file.data;
}

// A small valid file: metadata of each kind and two tensors, F32 [3, 2] (ggml dims 2, 3) at 0
// and Q8_0 with rows of 32 (two blocks of 34 bytes) at 64, alignment 64.
FileParts valid_parts() {
    FileParts parts;
    parts.alignment = 64;
    parts.metadata = {
        string_pair("general.architecture", "llada"),
        u32_pair("general.alignment", 64),
        pair("llada.context_length", GgufType::uint64, Bytes().u64(4096)),
        pair("llada.attention.layer_norm_rms_epsilon", GgufType::float32, Bytes().put(1e-5f)),
        pair("diffusion.shift_logits", GgufType::boolean, Bytes().put(uint8_t{0})),
        pair("small", GgufType::int8, Bytes().put(int8_t{-3})),
        pair("tokenizer.ggml.tokens", GgufType::array,
             Bytes().u32(static_cast<uint32_t>(GgufType::string)).u64(3).str("a").str("\xc3\xa9t\xc3\xa9").str("")),
        pair("tokenizer.ggml.token_type", GgufType::array,
             Bytes().u32(static_cast<uint32_t>(GgufType::int32)).u64(3).put(int32_t{1}).put(int32_t{-2}).put(int32_t{3})),
        pair("tokenizer.ggml.scores", GgufType::array,
             Bytes().u32(static_cast<uint32_t>(GgufType::float32)).u64(2).put(0.5f).put(-1.25f)),
    };
    parts.tensors = {tensor_info("a.weight", {2, 3}, 0, 0), tensor_info("q.weight", {32, 2}, 8, 64)};
    parts.data_bytes = 64 + 68;
    return parts;
}

void check_refused(const std::vector<uint8_t>& file, const std::string& expected) {
    CAPTURE(expected);
    try {
        parse_gguf_file(file.data(), file.size(), "t.gguf");
        FAIL("the file was accepted");
    } catch (const Error& error) {
        CHECK(error.status() == Status::model_format);
        CHECK_MESSAGE(std::string(error.what()).find(expected) != std::string::npos, std::string(error.what()));
        CHECK(std::string(error.what()).rfind("t.gguf: ", 0) == 0);
    }
}

}  // namespace

TEST_CASE("a GGUF file parses to the metadata and tensors it was written with") {
    const std::vector<uint8_t> file = build(valid_parts());
    const GgufHeader header = parse_gguf_file(file.data(), file.size(), "t.gguf");
    CHECK(header.version == 3);
    CHECK(header.alignment == 64);
    CHECK(header.data_offset % 64 == 0);
    CHECK(header.data_offset + 64 + 68 == file.size());
    REQUIRE(header.metadata.size() == 9);
    CHECK(header.string("general.architecture") == "llada");
    CHECK(header.integer("llada.context_length") == 4096);
    CHECK(header.integer("small") == -3);
    CHECK(header.number("llada.attention.layer_norm_rms_epsilon") == doctest::Approx(1e-5));
    CHECK(header.number("llada.context_length") == 4096.0);  // an integer is a number
    CHECK(header.boolean("diffusion.shift_logits") == false);
    CHECK(*header.strings("tokenizer.ggml.tokens") == std::vector<std::string_view>{"a", "\xc3\xa9t\xc3\xa9", ""});
    CHECK(*header.integers("tokenizer.ggml.token_type") == std::vector<int64_t>{1, -2, 3});
    CHECK(*header.numbers("tokenizer.ggml.scores") == std::vector<double>{0.5, -1.25});
    CHECK_FALSE(header.integer("absent").has_value());

    REQUIRE(header.tensors.size() == 2);
    const GgufTensor& a = header.tensors[0];
    CHECK(a.name == "a.weight");
    CHECK(a.type.name == "F32");
    CHECK(a.dims == std::vector<int64_t>{2, 3});
    CHECK(a.shape == std::vector<int64_t>{3, 2});  // row-major: 3 rows of 2
    CHECK(a.elements == 6);
    CHECK(a.end - a.begin == 24);
    const GgufTensor* q = header.find_tensor("q.weight");
    REQUIRE(q != nullptr);
    CHECK(q->type.name == "Q8_0");
    CHECK(q->begin == 64);
    CHECK(q->end - q->begin == 2 * 34);
    // The first data byte the writer put at q's offset.
    CHECK(file[header.data_offset + q->begin] == static_cast<uint8_t>(64 * 7 + 1));
}

TEST_CASE("GGUF metadata read as the wrong type names the key and both types") {
    const std::vector<uint8_t> file = build(valid_parts());
    const GgufHeader header = parse_gguf_file(file.data(), file.size(), "t.gguf");
    auto message = [](auto&& read) -> std::string {
        try {
            read();
        } catch (const Error& error) {
            return error.status() == Status::model_format ? error.what() : "wrong status";
        }
        return "no error";
    };
    CHECK(message([&] { header.integer("general.architecture"); }) ==
          "t.gguf: metadata 'general.architecture' is string but must be an integer");
    CHECK(message([&] { header.string("llada.context_length"); }) ==
          "t.gguf: metadata 'llada.context_length' is uint64 but must be a string");
    CHECK(message([&] { header.strings("tokenizer.ggml.scores"); }) ==
          "t.gguf: metadata 'tokenizer.ggml.scores' is an array of float32 but must be an array of strings");
    CHECK(message([&] { header.boolean("small"); }) == "t.gguf: metadata 'small' is int8 but must be a bool");
}

TEST_CASE("GGUF files that lie are refused with the malformed part named") {
    const std::vector<uint8_t> good = build(valid_parts());
    parse_gguf_file(good.data(), good.size(), "t.gguf");  // the base every case breaks in one place

    auto with = [](auto&& change) {
        FileParts parts = valid_parts();
        change(parts);
        return build(parts);
    };
    std::vector<uint8_t> bad = good;
    bad[0] = 'X';
    check_refused(bad, "not a GGUF file");
    check_refused(with([](FileParts& p) { p.version = 1; }), "GGUF version 1");
    check_refused(with([](FileParts& p) { p.version = 0x03000000; }), "(a big-endian file?)");
    check_refused(std::vector<uint8_t>(good.begin(), good.begin() + 20), "the metadata count needs 8 bytes");
    bad = good;
    bad[16] = 0xff;  // metadata count: 255 + ...
    bad[20] = 0x01;
    check_refused(bad, "metadata pairs but only");
    bad = good;
    bad[8] = 0xff;  // tensor count
    bad[12] = 0x01;
    check_refused(bad, "tensors but only");
    check_refused(std::vector<uint8_t>(good.begin(), good.begin() + 200), "(truncated file?)");

    check_refused(with([](FileParts& p) { p.metadata.push_back(string_pair("general.architecture", "x")); }),
                  "metadata 'general.architecture' appears twice");
    check_refused(with([](FileParts& p) { p.metadata.push_back(string_pair("", "x")); }), "has an empty key");
    check_refused(with([](FileParts& p) { p.metadata.push_back(string_pair("k\xff", "x")); }), "is not valid UTF-8");
    check_refused(with([](FileParts& p) { p.metadata.push_back(string_pair("k", "\xc3")); }),
                  "metadata 'k' is not valid UTF-8");
    check_refused(with([](FileParts& p) { p.metadata.push_back(pair("k", static_cast<GgufType>(13), Bytes().u32(0))); }),
                  "metadata 'k' has unknown value type 13");
    check_refused(with([](FileParts& p) {
                      p.metadata.push_back(pair("k", GgufType::array,
                                                Bytes().u32(static_cast<uint32_t>(GgufType::array)).u64(1)));
                  }),
                  "is an array of arrays");
    check_refused(with([](FileParts& p) { p.metadata.push_back(pair("k", GgufType::boolean, Bytes().put(uint8_t{2}))); }),
                  "has a bool of value 2");
    check_refused(with([](FileParts& p) {
                      p.metadata.push_back(pair("k", GgufType::array,
                                                Bytes().u32(static_cast<uint32_t>(GgufType::uint64)).u64(uint64_t(1) << 62)));
                  }),
                  "whose size overflows");
    check_refused(with([](FileParts& p) {
                      p.metadata.push_back(pair("k", GgufType::array,
                                                Bytes().u32(static_cast<uint32_t>(GgufType::string)).u64(1000000)));
                  }),
                  "metadata 'k' needs ");
    check_refused(with([](FileParts& p) { p.metadata[1] = u32_pair("general.alignment", 48); }),
                  "general.alignment 48 is not a power of two");
    check_refused(with([](FileParts& p) { p.metadata[1] = pair("general.alignment", GgufType::uint64, Bytes().u64(64)); }),
                  "metadata 'general.alignment' is uint64 but must be uint32");

    check_refused(with([](FileParts& p) { p.tensors[0] = tensor_info("a.weight", {}, 0, 0); }), "has 0 dimensions");
    check_refused(with([](FileParts& p) { p.tensors[0] = tensor_info("a.weight", {1, 1, 1, 1, 1}, 0, 0); }),
                  "has 5 dimensions");
    check_refused(with([](FileParts& p) { p.tensors[0] = tensor_info("a.weight", {uint64_t(1) << 40, uint64_t(1) << 40}, 0, 0); }),
                  "whose element count overflows");
    check_refused(with([](FileParts& p) { p.tensors[0] = tensor_info("a.weight", {256}, 16, 0); }),
                  "has ggml type 16, which this reader does not know");
    check_refused(with([](FileParts& p) { p.tensors[1] = tensor_info("q.weight", {48, 2}, 8, 64); }),
                  "has rows of 48 elements, not a multiple of Q8_0's block of 32");
    check_refused(with([](FileParts& p) { p.tensors[1] = tensor_info("q.weight", {32, 2}, 8, 96); }),
                  "starts at data offset 96, not a multiple of the alignment 64");
    check_refused(with([](FileParts& p) { p.tensors[1] = tensor_info("q.weight", {32, 4}, 8, 64); }),
                  "tensor 'q.weight' needs data bytes 64..200 but the data section holds 132");
    check_refused(with([](FileParts& p) { p.tensors[1] = tensor_info("q.weight", {32, 2}, 8, 0); }),
                  "tensors 'a.weight' and 'q.weight' overlap");
    check_refused(with([](FileParts& p) { p.tensors[1] = tensor_info("a.weight", {32, 2}, 8, 64); }),
                  "tensor 'a.weight' appears twice");
    check_refused(with([](FileParts& p) { p.tensors[1] = tensor_info("", {32, 2}, 8, 64); }), "has an empty name");

    // An empty tensor in a file cut before the padding: no byte is read, but the data section
    // (where its bytes would be) lies past the end (found by the fuzzer).
    FileParts empty;
    empty.tensors = {tensor_info("empty", {0}, 0, 0)};
    std::vector<uint8_t> cut = build(empty);
    cut.resize(24 + empty.tensors[0].data.size());
    check_refused(cut, "the data section would start at byte 64, past the end of the file (61 bytes");
}

TEST_CASE("GGUF files from an independent writer (tests/fixtures/gguf_writer.py) parse") {
    const GgufFile file(fixture_path("gguf/llada.gguf"));
    const GgufHeader& header = file.header();
    CHECK(header.alignment == 32);
    CHECK(header.string("general.architecture") == "llada");
    CHECK(header.integer("llada.context_length") == 64);
    CHECK(header.boolean("diffusion.shift_logits") == false);
    CHECK(*header.strings("tokenizer.ggml.tokens") ==
          std::vector<std::string_view>{"<|endoftext|>", "a", "b", "ab", "\xc4\xa0" "c"});
    CHECK(*header.strings("tokenizer.ggml.merges") == std::vector<std::string_view>{"a b"});
    const GgufTensor* embedding = header.find_tensor("token_embd.weight");
    REQUIRE(embedding != nullptr);
    CHECK(embedding->shape == std::vector<int64_t>{5, 4});
    float values[20];
    std::memcpy(values, file.tensor_bytes(*embedding), sizeof values);
    for (int i = 0; i < 20; ++i) CHECK(values[i] == float(i));
    const GgufTensor* norm = header.find_tensor("output_norm.weight");
    REQUIRE(norm != nullptr);
    CHECK(norm->type.name == "BF16");
    CHECK(norm->begin == 96);  // 80 bytes of embedding, padded to 32
    CHECK(header.find_tensor("blk.0.attn_q.weight")->type.name == "Q8_0");

    const GgufFile aligned(fixture_path("gguf/aligned64.gguf"));
    CHECK(aligned.header().alignment == 64);
    CHECK(aligned.header().data_offset % 64 == 0);
    CHECK(*aligned.header().integers("y") == std::vector<int64_t>{1, 2, 3});
    CHECK(aligned.header().number("x") == 0.5);
}

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("load-time quantization makes ggml's reference Q8_0 and Q4_0 blocks, and stays close to the values") {
    using kernels::ElementType;
    for (const auto& [name, type] : {std::pair{"q8_0", ElementType::q8_0}, std::pair{"q4_0", ElementType::q4_0}}) {
        CAPTURE(name);
        // Random and edge-case rows (zeros, ties at .5, a negative extreme) and their blocks from
        // tests/reference/gguf_dequantize.py.
        const std::vector<uint8_t> input = read_bytes(test_data_path(std::string("reference/quantize/") + name + ".input"));
        const std::vector<uint8_t> expected = read_bytes(test_data_path(std::string("reference/quantize/") + name + ".blocks"));
        const int64_t elements = int64_t(input.size() / 4);
        std::vector<float> x(static_cast<size_t>(elements));
        std::memcpy(x.data(), input.data(), input.size());
        REQUIRE(expected.size() == size_t(kernels::row_bytes(type, elements)));
        std::vector<uint8_t> blocks(expected.size(), 0xAA);
        kernels::cpu::quantize_row(type, x.data(), elements, blocks.data());
        CHECK(blocks == expected);
        // Each value comes back within half a step (and the scale's fp16 rounding); Q4_0 clamps
        // the side opposite its extreme at 7 steps, up to a whole step away.
        const float bound = type == ElementType::q8_0 ? 0.56f : 1.01f;
        std::vector<float> back(static_cast<size_t>(elements));
        kernels::cpu::dequantize_row(type, blocks.data(), elements, back.data());
        for (int64_t b = 0; b < elements / 32; ++b) {
            uint16_t half = 0;
            std::memcpy(&half, blocks.data() + b * kernels::block_bytes(type), 2);
            const float step = std::fabs(fp16_to_float(half));
            for (int64_t j = 32 * b; j < 32 * (b + 1); ++j) REQUIRE(std::fabs(back[size_t(j)] - x[size_t(j)]) <= bound * step + 1e-30f);
        }
    }
    // Non-finite weights give defined blocks, not undefined behaviour.
    std::vector<float> bad(32, 1.0f);
    bad[3] = std::numeric_limits<float>::quiet_NaN();
    bad[7] = std::numeric_limits<float>::infinity();
    std::vector<uint8_t> out(34);
    kernels::cpu::quantize_row(kernels::ElementType::q8_0, bad.data(), 32, out.data());
    kernels::cpu::quantize_row(kernels::ElementType::q4_0, bad.data(), 32, out.data());
}

TEST_CASE("ggml's quantized blocks decode to the bits of an independent decoder") {
    using kernels::ElementType;
    const std::pair<const char*, ElementType> formats[] = {{"q8_0", ElementType::q8_0}, {"q4_0", ElementType::q4_0},
                                                           {"q4_k", ElementType::q4_k}, {"q5_k", ElementType::q5_k},
                                                           {"q6_k", ElementType::q6_k}};
    for (const auto& [name, format] : formats) {
        CAPTURE(name);
        // Random blocks (random bytes, finite fp16 scales) and their values from
        // tests/reference/gguf_dequantize.py, written from the formats' public description.
        const std::vector<uint8_t> blocks = read_bytes(test_data_path(std::string("reference/dequantize/") + name + ".blocks"));
        const std::vector<uint8_t> expected = read_bytes(test_data_path(std::string("reference/dequantize/") + name + ".expected"));
        REQUIRE(blocks.size() % size_t(kernels::block_bytes(format)) == 0);
        const int64_t count = int64_t(blocks.size()) / kernels::block_bytes(format);
        const int64_t elements = count * kernels::block_elements(format);
        REQUIRE(expected.size() == size_t(elements) * 4);
        std::vector<float> values(size_t(elements), -1.0f);
        kernels::cpu::dequantize_row(format, blocks.data(), elements, values.data());
        int64_t differing = 0;
        for (int64_t i = 0; i < elements; ++i) {
            uint32_t want = 0, got = 0;
            std::memcpy(&want, expected.data() + 4 * i, 4);
            std::memcpy(&got, &values[size_t(i)], 4);
            if (want != got && differing++ < 3) {
                CAPTURE(i);
                CHECK(got == want);
            }
        }
        CHECK(differing == 0);
    }
}
