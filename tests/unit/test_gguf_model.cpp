// GGUF files as models: a LLaDA and a Dream converted the way llama.cpp's converter writes them
// (tests/fixtures/gguf_writer.py: llama.cpp's names and keys, LLaDA's q/k rows interleaved) load
// as the directories they came from, weight for weight, tokenize as their tokenizer.json and
// generate the same tokens. Bad files name the key or tensor.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "compare.hpp"
#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "core/sha256.hpp"
#include "cpu/dequantize.hpp"
#include "fixtures.hpp"
#include "model/forward.hpp"
#include "model/gguf_model.hpp"
#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

std::vector<char> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A copy of `source` with the first `from` replaced by `to` (same length), written to a temporary file.
std::string edited_copy(const std::string& source, const std::string& from, const std::string& to) {
    REQUIRE(from.size() == to.size());
    std::vector<char> bytes = read_file(source);
    const auto at = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
    REQUIRE(at != bytes.end());
    std::copy(to.begin(), to.end(), at);
    static const ScratchDirectory scratch("gguf-edits");  // removed when the test program ends
    const auto path = scratch.path() / (to + ".gguf");
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return path.string();
}

Error load_error(const std::string& path) {
    try {
        load_model(path, {});
    } catch (const Error& e) {
        return e;
    }
    FAIL("loading '" << path << "' succeeded");
    return Error(Status::internal, "");
}

// The GGUF name a weight was bound from.
std::string gguf_name_of(const Weight& w) { return gguf_tensor_name({w.name, w.shape, w.role, w.layer, w.expert}); }

std::vector<int32_t> generate(const char* path, const std::vector<int32_t>& prompt, int32_t precision = UNMASK_PRECISION_AUTO) {
    unmask_model_params model_params;
    unmask_model_params_init(&model_params);
    model_params.precision = precision;
    unmask_model* model = nullptr;
    REQUIRE_MESSAGE(unmask_model_load(path, &model_params, &model) == UNMASK_OK, unmask_last_error());
    unmask_generate_params params;
    unmask_generate_params_init(&params);
    params.gen_length = 8;
    params.steps = 4;
    params.block_length = 8;
    std::vector<int32_t> tokens(8);
    unmask_generation result{};
    result.struct_size = sizeof result;
    result.tokens = tokens.data();
    result.tokens_capacity = int64_t(tokens.size());
    REQUIRE_MESSAGE(unmask_generate(model, &params, prompt.data(), int64_t(prompt.size()), &result) == UNMASK_OK,
                    unmask_last_error());
    unmask_model_free(model);
    tokens.resize(size_t(result.token_count));
    return tokens;
}

// A GGUF LLaDA's config (read from its metadata) against the directory it was converted from.
void check_same_llada(const ModelSpec& b, const ModelSpec& a) {
    CHECK(b.architecture == Architecture::llada);
    CHECK(b.hidden_size == a.hidden_size);
    CHECK(b.layers == a.layers);
    CHECK(b.attention_heads == a.attention_heads);
    CHECK(b.kv_heads == a.kv_heads);
    CHECK(b.head_dim == a.head_dim);
    CHECK(b.intermediate_size == a.intermediate_size);
    CHECK(b.vocab_size == a.vocab_size);
    CHECK(b.embedding_rows == a.embedding_rows);
    CHECK(b.max_sequence_length == a.max_sequence_length);
    CHECK(b.rope_theta == a.rope_theta);
    CHECK(float(b.rms_norm_eps) == float(a.rms_norm_eps));  // GGUF stores it as float32
    CHECK(b.mask_token_id == a.mask_token_id);
    CHECK(b.eos_token_id == a.eos_token_id);
    CHECK(b.tie_word_embeddings == a.tie_word_embeddings);
    CHECK_FALSE(b.logits_shift);
}

}  // namespace

TEST_CASE("a GGUF LLaDA binds every weight as the directory it was converted from, with q and k rows restored") {
    const auto directory = load_model(fixture_path("good/llada"), {});
    const auto gguf = load_model(fixture_path("gguf/llada-f32.gguf"), {});
    check_same_llada(gguf->spec(), directory->spec());

    REQUIRE(gguf->weights().size() == directory->weights().size());
    for (const Weight& w : directory->weights()) {
        CAPTURE(w.name);
        const Weight& g = gguf->weight(w.name);
        CHECK(g.role == w.role);
        CHECK(g.layer == w.layer);
        CHECK(g.shape == w.shape);
        REQUIRE(g.dtype == w.dtype);
        CHECK(std::memcmp(g.data, w.data, w.elements * dtype_size(w.dtype)) == 0);
    }
    // The file's own q rows are interleaved: the bound weight is not the file's bytes.
    const GgufTensor* stored = gguf->gguf()->header().find_tensor("blk.0.attn_q.weight");
    REQUIRE(stored != nullptr);
    const Weight& q = gguf->weight("model.transformer.blocks.0.q_proj.weight");
    CHECK(std::memcmp(gguf->gguf()->tensor_bytes(*stored), q.data, q.elements * 4) != 0);
    CHECK(read_model_config(fixture_path("gguf/llada-f32.gguf")).hidden_size == directory->spec().hidden_size);
}

TEST_CASE("a GGUF Dream with its own tokenizer tokenizes and generates as its directory") {
    const std::string directory = fixture_path("good/tiny-chat");
    const std::string gguf = fixture_path("gguf/tiny-chat-bf16.gguf");
    const auto from_json = Tokenizer::load(directory);
    const auto from_gguf = Tokenizer::load(gguf);
    CHECK(from_gguf->vocab_size() == from_json->vocab_size());
    for (const std::string text : {"the tether", "  he said: <|im_start|>the<|im_end|>\n\nthe end", "", "日本語 ☃ 123"}) {
        CAPTURE(text);
        const auto ids = from_gguf->encode(text, true);
        CHECK(ids == from_json->encode(text, true));
        CHECK(from_gguf->decode(ids, false) == from_json->decode(ids, false));
    }
    CHECK(from_gguf->token_id("<|mask|>") == 261);

    const auto model = load_model(gguf, {});
    CHECK(model->spec().architecture == Architecture::dream);
    CHECK(model->spec().logits_shift);
    CHECK(model->spec().mask_token_id == 261);  // found by its text: the file has no mask_token_id key
    CHECK(model->weights().front().file_dtype == DType::bf16);

    const std::vector<int32_t> prompt = from_json->encode("the tether", false);
    const auto expected = generate(directory.c_str(), prompt);
    CHECK(expected.size() == 8);
    CHECK(generate(gguf.c_str(), prompt) == expected);
}

TEST_CASE("the quantized types' block layouts agree in the container, the loader and the kernels") {
    for (DType d : {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k}) {
        CAPTURE(dtype_name(d));
        std::optional<GgmlType> ggml;
        for (uint32_t id = 0; id < 64 && !ggml; ++id)
            if (const auto t = ggml_type(id); t && t->name == dtype_name(d)) ggml = t;
        REQUIRE(ggml);
        const kernels::ElementType kernel = element_type(d);
        CHECK(kernels::block_elements(kernel) == ggml->block_elements);
        CHECK(kernels::block_bytes(kernel) == ggml->block_bytes);
        CHECK(dtype_bytes(d, 3 * ggml->block_elements) == 3 * ggml->block_bytes);
        CHECK(is_quantized_dtype(d));
        CHECK_FALSE(parse_dtype(dtype_name(d)));  // not a safetensors type
    }
}

TEST_CASE("a Q8_0 GGUF runs on its blocks and gives the tokens of its weights decoded at load") {
    const std::string path = fixture_path("gguf/llada-q8_0.gguf");
    const auto quantized = load_model(path, {});
    const auto decoded = load_model(path, {.precision = Precision::fp32});
    int64_t blocks = 0;
    for (const Weight& w : quantized->weights()) {
        CAPTURE(w.name);
        const Weight& d = decoded->weight(w.name);
        CHECK(d.dtype == DType::f32);
        CHECK(d.file_dtype == w.file_dtype);
        if (w.dtype != DType::q8_0) continue;
        ++blocks;
        // Kept as blocks in place (34 bytes per 32 weights), not widened.
        CHECK(quantized->description().bytes_by_component[size_t(w.component)] > 0);
        const GgufTensor* stored = quantized->gguf()->header().find_tensor(gguf_name_of(w));
        REQUIRE(stored != nullptr);
        if (w.role != Role::q_proj && w.role != Role::k_proj) CHECK(w.data == quantized->gguf()->tensor_bytes(*stored));
    }
    CHECK(blocks == 14);  // every matrix but the two ffn_down
    // 16384 weights in Q8_0 blocks of 34 bytes per 32; the two ffn_down and five norms in fp32.
    CHECK(quantized->description().weight_bytes == 16384 / 32 * 34 + (2 * 48 * 32 + 5 * 32) * 4);
    CHECK(decoded->description().weight_bytes == (16384 + 2 * 48 * 32 + 5 * 32) * 4);

    const std::vector<int32_t> prompt = {3, 14, 15, 9, 26};
    const auto expected = generate(path.c_str(), prompt, UNMASK_PRECISION_FP32);
    CHECK(expected.size() == 8);
    CHECK(generate(path.c_str(), prompt) == expected);
}

// llama.cpp's llada-moe: a LLaDA-MoE of routed layers whose experts the converter stacked per layer
// and matrix ([experts, rows, columns]); each expert binds its slice, in place.
TEST_CASE("a GGUF LLaDA-MoE binds each expert's slice of its layer's stack and generates as its directory") {
    const std::string directory_path = fixture_path("good/llada-moe-routed");
    const std::string path = fixture_path("gguf/llada-moe.gguf");
    const auto directory = load_model(directory_path, {});
    const auto gguf = load_model(path, {});
    CHECK(gguf->spec().architecture_name == "llada-moe");
    CHECK(gguf->spec().experts == 4);
    REQUIRE(gguf->weights().size() == directory->weights().size());
    for (const Weight& w : directory->weights()) {
        CAPTURE(w.name);
        const Weight& g = gguf->weight(w.name);
        REQUIRE(g.shape == w.shape);
        REQUIRE(g.dtype == w.dtype);
        CHECK(std::memcmp(g.data, w.data, dtype_bytes(w.dtype, w.elements)) == 0);
    }
    const std::vector<int32_t> prompt = {3, 14, 15, 9, 26};
    const auto expected = generate(directory_path.c_str(), prompt);
    CHECK(expected.size() == 8);
    CHECK(generate(path.c_str(), prompt) == expected);

    // Q8_0 stacks (gate and up): each expert's slice decodes to its own matrix within half a step.
    const std::string quantized_path = fixture_path("gguf/llada-moe-q8_0.gguf");
    const auto quantized = load_model(quantized_path, {});
    int64_t slices = 0;
    for (const Weight& w : quantized->weights()) {
        if (w.dtype != DType::q8_0) continue;
        CAPTURE(w.name);
        ++slices;
        CHECK(w.expert >= 0);
        const Weight& original = directory->weight(w.name);
        std::vector<float> row(size_t(w.shape[1]));
        const uint64_t row_bytes = dtype_bytes(w.dtype, uint64_t(w.shape[1]));
        for (int64_t r = 0; r < w.shape[0]; ++r) {
            const auto* blocks = static_cast<const uint8_t*>(w.data) + uint64_t(r) * row_bytes;
            kernels::cpu::dequantize_row(kernels::ElementType::q8_0, blocks, w.shape[1], row.data());
            uint16_t half = 0;
            std::memcpy(&half, blocks, 2);
            for (int64_t j = 0; j < w.shape[1]; ++j)
                REQUIRE(std::fabs(row[size_t(j)] - static_cast<const float*>(original.data)[r * w.shape[1] + j]) <=
                        0.56f * std::fabs(fp16_to_float(half)));
        }
    }
    CHECK(slices == 16);  // gate and up of 4 experts in 2 layers
    CHECK(generate(quantized_path.c_str(), prompt) == generate(quantized_path.c_str(), prompt, UNMASK_PRECISION_FP32));
}

namespace {

// The SHA-256 of unmask's fp32 decoding of a quantized tensor of a GGUF file (its values as
// little-endian floats, as the fixtures' values.json records ggml's and gguf-py's).
std::string decoded_digest(const GgufFile& file, const GgufTensor& t) {
    std::optional<DType> dtype;
    for (DType d : {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k})
        if (dtype_name(d) == t.type.name) dtype = d;
    REQUIRE(dtype);
    std::vector<float> values(size_t(t.elements));
    kernels::cpu::dequantize_row(element_type(*dtype), file.tensor_bytes(t), int64_t(t.elements), values.data());
    Sha256 digest;
    digest.update(reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4);
    return digest.hex_digest();
}

// The logits of one forward of `tokens` on two CPU threads, with bf16 products (matmul.hpp) or not.
std::vector<float> forward_logits(const Model& model, const std::vector<int32_t>& tokens, bool bf16_products) {
    auto backend = make_cpu_backend(2, bf16_products);
    const auto length = static_cast<int64_t>(tokens.size());
    Forward forward(model, *backend, {length, length});
    const std::vector<ForwardSequence> batch = {{tokens, {}, nullptr, {}, 0.0}};
    return forward.run(batch, true).logits;
}

}  // namespace

// tests/fixtures/ggml: gguf/llada-256-f32.gguf quantized by ggml's own quantizer and written by
// ggml's own GGUF writer (make_ggml_fixtures.sh records how), with the SHA-256 of ggml's own
// dequantization of each quantized tensor.
TEST_CASE("GGUF files quantized by ggml itself decode to ggml's values and run as they do decoded at load") {
    const std::string directory = std::string(UNMASK_SOURCE_DIR) + "/tests/fixtures/ggml/";
    std::ifstream in(directory + "values.json");
    const nlohmann::json digests = nlohmann::json::parse(in);
    const std::string source = fixture_path("gguf/llada-256-f32.gguf");
    for (const std::string type : {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"}) {
        CAPTURE(type);
        const std::string path = directory + "llada-256-" + type + ".gguf";
        const GgufFile file(path);
        int64_t quantized = 0;
        for (const GgufTensor& t : file.header().tensors) {
            if (t.type.block_elements == 1) continue;
            CAPTURE(t.name);
            ++quantized;
            CHECK(decoded_digest(file, t) == digests.at(type).at(std::string(t.name)).get<std::string>());
        }
        CHECK(quantized == 9);  // every matrix, the embedding and the LM head
        // On their blocks as decoded at load: the same bits with fp32 products; with bf16 products
        // (on an AVX512-BF16 CPU the blocks are decoded into bf16 panels), within bf16's tolerance.
        const std::vector<int32_t> prompt = {3, 14, 15, 9, 26};
        const auto blocks = load_model(path, {});
        const auto decoded = load_model(path, {.precision = Precision::fp32});
        const std::vector<float> expected = forward_logits(*decoded, prompt, false);
        CHECK(forward_logits(*blocks, prompt, false) == expected);
        CHECK(relative_error(forward_logits(*blocks, prompt, true), expected) <= 2e-2);
        CHECK(generate(path.c_str(), prompt).size() == 8);
        // unmask's load-time quantizers make ggml's blocks of the same weights, bit for bit
        // (q and k rows restored from llama.cpp's order in both).
        if (type != "q8_0" && type != "q4_0") continue;
        const auto ggml = load_model(path, {});
        const auto ours = load_model(source, {.precision = type == "q8_0" ? Precision::int8 : Precision::q4});
        int64_t compared = 0;
        for (const Weight& w : ours->weights()) {
            if (!is_quantized_dtype(w.dtype)) continue;  // the embedding, LM head and norms stay float
            CAPTURE(w.name);
            const Weight& theirs = ggml->weight(w.name);
            REQUIRE(theirs.dtype == w.dtype);
            CHECK(std::memcmp(theirs.data, w.data, dtype_bytes(w.dtype, w.elements)) == 0);
            ++compared;
        }
        CHECK(compared == 7);
    }
}

// tests/fixtures/llamacpp: good/llada-256 converted by llama.cpp's own converter and quantized to
// Q4_K_M by its own llama-quantize (make_llamacpp_fixtures.sh records how), with the SHA-256 of
// gguf-py's dequantization of each quantized tensor: names, metadata, tokenizer keys, q/k row
// order and the Q4_K_M mixture as llama.cpp's tools write them.
TEST_CASE("a GGUF made by llama.cpp's converter and llama-quantize is the directory it came from") {
    const std::string directory = std::string(UNMASK_SOURCE_DIR) + "/tests/fixtures/llamacpp/";
    const std::string path = directory + "llada-256-q4_k_m.gguf";
    std::ifstream in(directory + "values.json");
    const nlohmann::json digests = nlohmann::json::parse(in).at("q4_k_m");
    const GgufFile file(path);
    std::set<std::string> types;
    for (const GgufTensor& t : file.header().tensors) {
        if (t.type.block_elements == 1) continue;
        CAPTURE(t.name);
        types.insert(std::string(t.type.name));
        CHECK(decoded_digest(file, t) == digests.at(std::string(t.name)).at("sha256").get<std::string>());
    }
    CHECK(types == std::set<std::string>{"Q4_K", "Q6_K"});  // Q4_K_M: Q6_K for the LM head and some V/down
    CHECK(size_t(std::distance(digests.begin(), digests.end())) == 9);

    // Bound as the directory's weights, within Q4_K's error; a row out of place (the q/k order the
    // converter interleaves) would be off by the weights' whole size.
    const auto source = load_model(fixture_path("good/llada-256"), {});
    const auto decoded = load_model(path, {.precision = Precision::fp32});
    check_same_llada(decoded->spec(), source->spec());
    REQUIRE(decoded->weights().size() == source->weights().size());
    double largest = 0;
    for (const Weight& w : source->weights()) {
        CAPTURE(w.name);
        const Weight& g = decoded->weight(w.name);
        REQUIRE(g.shape == w.shape);
        REQUIRE((g.dtype == DType::f32 && w.dtype == DType::f32));
        const auto* x = static_cast<const float*>(w.data);
        const auto* y = static_cast<const float*>(g.data);
        double error = 0, norm = 0;
        for (uint64_t i = 0; i < w.elements; ++i) {
            error += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
            norm += double(x[i]) * x[i];
        }
        const bool matrix = w.shape.size() == 2;
        CHECK(std::sqrt(error / norm) <= (matrix ? 0.1 : 0.0));  // norms stay F32
        largest = std::max(largest, std::sqrt(error / norm));
    }
    MESSAGE("llama.cpp's Q4_K_M against the source weights: relative RMS error at most " << largest);
    // The file's own tokenizer (gguf-py's keys) is the directory's tokenizer.json.
    const auto from_json = Tokenizer::load(fixture_path("good/llada-256"));
    const auto from_gguf = Tokenizer::load(path);
    CHECK(from_gguf->vocab_size() == from_json->vocab_size());
    for (const std::string text : {"12+34=46;", "(1,2)<|mdm_mask|><|endoftext|>", ""}) {
        CAPTURE(text);
        const auto ids = from_gguf->encode(text, true);
        CHECK(ids == from_json->encode(text, true));
        CHECK(from_gguf->decode(ids, false) == from_json->decode(ids, false));
    }
    CHECK(from_gguf->token_id("<|mdm_mask|>") == 63);
    // Runs on its blocks as it does decoded at load.
    const std::vector<int32_t> prompt = from_json->encode("12+34=", false);
    const auto expected = generate(path.c_str(), prompt, UNMASK_PRECISION_FP32);
    CHECK(expected.size() == 8);
    CHECK(generate(path.c_str(), prompt) == expected);
}

TEST_CASE("bad GGUF models name the key or tensor") {
    const std::string good = fixture_path("gguf/llada-f32.gguf");
    Error e = load_error(edited_copy(good, "llada", "lladx"));  // general.architecture's value comes first
    CHECK(e.status() == Status::unsupported);
    CHECK(std::string(e.what()).find("GGUF architecture 'lladx'") != std::string::npos);

    e = load_error(edited_copy(good, "blk.1.ffn_up.weight", "blk.1.ffn_up.weighx"));
    CHECK(e.status() == Status::model_format);
    CHECK(std::string(e.what()).find("missing tensor 'blk.1.ffn_up.weight'") != std::string::npos);

    e = load_error(edited_copy(good, "llada.feed_forward_length", "llada.feed_forward_lengtx"));
    CHECK(e.status() == Status::model_format);
    CHECK(std::string(e.what()).find("'llada.feed_forward_length' is missing") != std::string::npos);

    e = load_error(edited_copy(good, "tokenizer.ggml.mask_token_id", "tokenizer.ggml.mask_token_ix"));
    CHECK(e.status() == Status::model_format);
    CHECK(std::string(e.what()).find("no mask token") != std::string::npos);

    // A block type this version does not read, and a quantized norm: a valid file all the same.
    e = load_error(fixture_path("gguf/llada-q4_1.gguf"));
    CHECK(e.status() == Status::unsupported);
    CHECK(std::string(e.what()).find("2 problem(s)") != std::string::npos);
    CHECK(std::string(e.what()).find("tensor 'blk.0.attn_v.weight' has dtype Q4_1") != std::string::npos);
    CHECK(std::string(e.what()).find("tensor 'blk.1.attn_norm.weight' has dtype Q8_0; norms") != std::string::npos);

    // The seed file holds a Q8_0 tensor but lacks the model's keys: the first missing one is named.
    e = load_error(fixture_path("gguf/llada.gguf"));
    CHECK(e.status() == Status::model_format);
    CHECK(std::string(e.what()).find("is missing") != std::string::npos);

    unmask_model* model = nullptr;
    CHECK(unmask_model_load(edited_copy(good, "llada", "lladx").c_str(), nullptr, &model) == UNMASK_ERR_UNSUPPORTED);
    CHECK(model == nullptr);

    // A vocabulary this version cannot tokenize with: the model loads and runs on token ids.
    const std::string unknown_pre = edited_copy(fixture_path("gguf/tiny-chat-bf16.gguf"), "gpt-2", "gpt-9");
    try {
        Tokenizer::load(unknown_pre);
        FAIL("a tokenizer with pre-tokenizer 'gpt-9' loaded");
    } catch (const Error& error) {
        CHECK(error.status() == Status::unsupported);
        CHECK(std::string(error.what()).find("pre-tokenizer 'gpt-9'") != std::string::npos);
    }
    REQUIRE(unmask_model_load(unknown_pre.c_str(), nullptr, &model) == UNMASK_OK);
    const unmask_tokenizer* tokenizer = nullptr;
    CHECK(unmask_model_tokenizer(model, &tokenizer) == UNMASK_OK);
    CHECK(tokenizer == nullptr);
    unmask_model_free(model);
    CHECK(generate(unknown_pre.c_str(), {104, 105}).size() == 8);
}
