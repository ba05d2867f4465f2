// A GGUF file's own tokenizer (tokenizer.ggml.*), as llama.cpp's converter stores a byte-level
// BPE vocabulary (`tokenizer.ggml.model` "gpt2"): the tokens by id with their types, the merges
// as "left right" strings, the pre-tokenizer by name (`tokenizer.ggml.pre`), the special token
// ids and `add_bos_token`, and the chat template. It is turned into the tokenizer.json it stands
// for and built by the same code, so both formats tokenize alike. As llama.cpp does, no Unicode
// normalisation is applied (a tokenizer.json may ask for NFC; texts already in NFC agree).
#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "format/gguf.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace unmask {
namespace {

// gguf-py's TokenType.
enum TokenType : int64_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

// The split before the byte-level mapping, by llama.cpp's pre-tokenizer name. The expressions are
// the ones the models' own tokenizer.json files give (Meta's Llama-3, Qwen2/Qwen3), which
// llama.cpp's names stand for.
constexpr std::string_view llama3_split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view qwen2_split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct NamedSplit {
    std::string_view name;
    std::string_view split;  // empty: GPT-2's own expression (ByteLevel with use_regex)
    bool ignore_merges;      // a word the vocabulary holds whole is one token (llama.cpp: Llama-3)
};
constexpr NamedSplit named_splits[] = {
    {"default", "", false}, {"gpt-2", "", false},         {"llama-bpe", llama3_split, true},
    {"llama3", llama3_split, true}, {"qwen2", qwen2_split, false},
};

nlohmann::json pre_tokenizer_json(const NamedSplit& pre) {
    const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                                       {"use_regex", pre.split.empty()}};
    if (pre.split.empty()) return byte_level;
    const nlohmann::json split = {{"type", "Split"}, {"pattern", {{"Regex", pre.split}}}, {"behavior", "Isolated"}, {"invert", false}};
    return {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}};
}

const NamedSplit& pre_tokenizer(const GgufHeader& header) {
    const std::string_view name = header.string("tokenizer.ggml.pre").value_or("default");
    for (const auto& pre : named_splits)
        if (pre.name == name) return pre;
    fail(Status::unsupported, "{}: pre-tokenizer '{}' is not supported (supported: default, gpt-2, llama-bpe, llama3, qwen2)",
         header.label, name);
}

template <typename T>
T required(const GgufHeader& header, std::optional<T> value, std::string_view key) {
    if (!value) fail(Status::model_format, "{}: metadata key '{}' is missing", header.label, key);
    return std::move(*value);
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufHeader& header) {
    const std::string_view model = required(header, header.string("tokenizer.ggml.model"), "tokenizer.ggml.model");
    if (model != "gpt2")
        fail(Status::unsupported, "{}: tokenizer model '{}' is not supported (only byte-level BPE, 'gpt2')", header.label, model);
    const auto tokens = required(header, header.strings("tokenizer.ggml.tokens"), "tokenizer.ggml.tokens");
    const auto types = header.integers("tokenizer.ggml.token_type").value_or(std::vector<int64_t>(tokens.size(), normal));
    if (types.size() != tokens.size())
        fail(Status::model_format, "{}: tokenizer.ggml.token_type has {} entries for {} tokens", header.label, types.size(), tokens.size());
    const auto merges = header.strings("tokenizer.ggml.merges").value_or(std::vector<std::string_view>{});
    const NamedSplit& pre = pre_tokenizer(header);

    nlohmann::json vocab = nlohmann::json::object();
    nlohmann::json added = nlohmann::json::array();
    std::set<std::string_view> seen;
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (!seen.insert(tokens[id]).second)
            fail(Status::model_format, "{}: token {} ('{}') appears twice in tokenizer.ggml.tokens", header.label, id, tokens[id]);
        if (types[id] == control || types[id] == user_defined)
            added.push_back({{"id", id}, {"content", tokens[id]}, {"special", types[id] == control}, {"normalized", false}});
        else if (types[id] != unused)
            vocab[std::string(tokens[id])] = id;
    }
    nlohmann::json post = nullptr;
    const auto bos = header.integer("tokenizer.ggml.bos_token_id");
    auto token_text = [&](std::optional<int64_t> id) -> std::string {
        return id && *id >= 0 && size_t(*id) < tokens.size() ? std::string(tokens[size_t(*id)]) : std::string();
    };
    if (header.boolean("tokenizer.ggml.add_bos_token").value_or(false)) {
        const std::string text = token_text(bos);
        if (text.empty()) fail(Status::model_format, "{}: add_bos_token is set but tokenizer.ggml.bos_token_id names no token", header.label);
        post = {{"type", "TemplateProcessing"},
                {"single", {{{"SpecialToken", {{"id", text}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                {"special_tokens", {{text, {{"id", text}, {"ids", {*bos}}, {"tokens", {text}}}}}}};
    }
    const nlohmann::json root = {
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer", pre_tokenizer_json(pre)},
        {"post_processor", post},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", true}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", pre.ignore_merges}, {"byte_fallback", false}}},
    };
    auto tokenizer = build(root, header.label);
    // The chat template sees the special tokens' texts, as tokenizer_config.json would give them.
    nlohmann::json config = nlohmann::json::object();
    if (const std::string text = token_text(bos); !text.empty()) {
        config["bos_token"] = text;
        tokenizer->bos_token_ = text;
    }
    if (const std::string text = token_text(header.integer("tokenizer.ggml.eos_token_id")); !text.empty()) config["eos_token"] = text;
    const auto chat_template = header.string("tokenizer.chat_template");
    if (chat_template) tokenizer->chat_template_ = ChatTemplate::parse(std::string(*chat_template), config);
    return tokenizer;
}

}  // namespace unmask
