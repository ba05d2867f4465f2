// A Hugging Face tokenizer.json: normalizer, pre-tokenizer, BPE model, added tokens, the
// TemplateProcessing post-processor and the decoder, applied as the reference does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe.hpp"
#include "tokenizer/decoder.hpp"
#include "tokenizer/normalizer.hpp"
#include "tokenizer/pre_tokenizer.hpp"

namespace unmask {

class ChatTemplate;
struct GgufHeader;

struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool special = false;
    bool lstrip = false, rstrip = false, single_word = false, normalized = false;
};

class Tokenizer {
public:
    // `path` is a tokenizer.json, a directory holding one, or a GGUF file (its own tokenizer).
    // Throws IO, MODEL_FORMAT, UNSUPPORTED.
    static std::unique_ptr<Tokenizer> load(const std::filesystem::path& path);
    // The same from the file's text (fuzzing, tests).
    static std::unique_ptr<Tokenizer> parse(std::string_view json, std::string_view label);
    // The tokenizer a GGUF file stores in its metadata (tokenizer/gguf_vocab.cpp). Throws
    // MODEL_FORMAT (missing or inconsistent keys) or UNSUPPORTED (another model or pre-tokenizer).
    static std::unique_ptr<Tokenizer> from_gguf(const GgufHeader& header);

    // Invalid UTF-8 in `text` is replaced by U+FFFD first, as the reference receives it.
    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
    // Ids the tokenizer lacks are skipped (as the reference does); negative ids are INVALID_ARGUMENT.
    std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

    int32_t token_id(std::string_view token) const;  // -1 when absent
    // tokenizer_config.json's bos_token when it is in the vocabulary, else "".
    const std::string& bos_token() const noexcept { return bos_token_; }
    bool has_token(std::string_view token) const { return token_id(token) >= 0; }
    // The model's chat template (tokenizer_config.json or chat_template.jinja), or nullptr.
    const ChatTemplate* chat_template() const noexcept { return chat_template_.get(); }
    int64_t vocab_size() const noexcept { return static_cast<int64_t>(id_to_token_.size()); }

private:
    Tokenizer() = default;
    // From tokenizer.json's parsed form.
    static std::unique_ptr<Tokenizer> build(const nlohmann::json& root, std::string_view label);
    // `text_start`: the text begins the input (no added token before it).
    void encode_text(std::string_view text, bool text_start, std::vector<int32_t>& out) const;
    void read_post_processor(const nlohmann::json& post, std::string_view label);
    // Splits `text` into plain text and added tokens (longest match first); `normalized` picks
    // which added tokens to look for.
    void split_added(std::string_view text, bool normalized, std::vector<std::pair<std::string, int32_t>>& out) const;

    struct TrieNode {
        std::unordered_map<unsigned char, int32_t> children;
        int32_t token = -1;  // index into added_
    };

    std::unique_ptr<Normalizer> normalizer_;
    std::unique_ptr<PreTokenizer> pre_tokenizer_;
    std::unique_ptr<BpeModel> model_;
    std::unique_ptr<Decoder> decoder_;
    std::vector<AddedToken> added_;
    std::unordered_map<int32_t, size_t> added_by_id_;
    std::vector<TrieNode> trie_[2];  // [normalized]
    std::vector<std::string> id_to_token_;
    std::vector<int32_t> template_prefix_, template_suffix_;  // TemplateProcessing "single"
    std::string bos_token_;
    std::shared_ptr<const ChatTemplate> chat_template_;
};

// Emits text as ids arrive, never a broken UTF-8 sequence (it waits for the rest of one).
class StreamDecoder {
public:
    StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
        : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}
    // The new text that `ids` complete (possibly empty).
    std::string push(std::span<const int32_t> ids);

private:
    const Tokenizer& tokenizer_;
    bool skip_special_;
    std::vector<int32_t> ids_;
    size_t emitted_ = 0;  // bytes of decode(ids_) already returned
};

}  // namespace unmask
