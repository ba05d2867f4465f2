#include "tokenizer/tokenizer.hpp"

#include <system_error>

#include <utf8proc.h>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "core/utf8.hpp"
#include "format/gguf.hpp"
#include "format/strict_json.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace unmask {
namespace {

// Longer added tokens are refused at load: matching costs up to this many bytes per position.
constexpr size_t max_added_token_bytes = 256;
// Ids far beyond the number of tokens would make the id table absurdly large.
constexpr int64_t max_token_id = int64_t{1} << 24;

// Unicode \w and \s, as the reference's single_word, lstrip and rstrip use them.
bool is_word_code_point(uint32_t cp) {
    const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    return cp == '_' || (category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO) ||
           (category >= UTF8PROC_CATEGORY_MN && category <= UTF8PROC_CATEGORY_ME) ||
           (category >= UTF8PROC_CATEGORY_ND && category <= UTF8PROC_CATEGORY_NO) || category == UTF8PROC_CATEGORY_PC;
}
bool is_space_code_point(uint32_t cp) {
    return cp == ' ' || (cp >= '\t' && cp <= '\r') || cp == 0x85 || cp == 0xA0 ||
           utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS || cp == 0x2028 || cp == 0x2029;
}
// The code point that ends just before byte `end` (valid UTF-8).
uint32_t code_point_before(std::string_view text, size_t end, size_t& begin) {
    begin = end - 1;
    while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
    size_t i = begin;
    return next_code_point(text, i);
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::load(const std::filesystem::path& path) {
    std::error_code ec;
    const auto file = std::filesystem::is_directory(path, ec) ? path / "tokenizer.json" : path;
    if (!std::filesystem::exists(file, ec)) fail(Status::io, "tokenizer file '{}' does not exist", file.string());
    const MappedFile mapped(file);
    if (is_gguf(mapped.data(), mapped.size())) return from_gguf(parse_gguf_file(mapped.data(), mapped.size(), file.filename().string()));
    auto tokenizer = parse(std::string_view(reinterpret_cast<const char*>(mapped.data()), mapped.size()), "tokenizer.json");
    // tokenizer_config.json beside it names the BOS token chat prompts start with.
    const auto config_path = file.parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(config_path, ec)) {
        const MappedFile config_file(config_path);
        const auto config = parse_json_rejecting_duplicates(
            std::string_view(reinterpret_cast<const char*>(config_file.data()), config_file.size()), "tokenizer_config.json");
        if (config.is_object() && config.contains("bos_token")) {
            const auto& bos = config["bos_token"];
            const std::string name = bos.is_string() ? bos.get<std::string>()
                                     : bos.is_object() && bos.contains("content") && bos["content"].is_string()
                                         ? bos["content"].get<std::string>()
                                         : std::string();
            if (!name.empty() && tokenizer->has_token(name)) tokenizer->bos_token_ = name;
        }
        tokenizer->chat_template_ = ChatTemplate::load(file.parent_path(), config);
    } else {
        tokenizer->chat_template_ = ChatTemplate::load(file.parent_path(), nlohmann::json());
    }
    return tokenizer;
}

std::unique_ptr<Tokenizer> Tokenizer::parse(std::string_view json, std::string_view label) {
    if (auto bad = find_invalid_utf8(json)) fail(Status::model_format, "{}: not valid UTF-8 (byte {})", label, *bad);
    return build(parse_json_rejecting_duplicates(json, label), label);
}

std::unique_ptr<Tokenizer> Tokenizer::build(const nlohmann::json& root, std::string_view label) {
    if (!root.is_object()) fail(Status::model_format, "{}: the top level is not an object", label);
    auto t = std::unique_ptr<Tokenizer>(new Tokenizer());
    try {
        const auto& model = root.at("model");
        if (model.value("type", std::string("BPE")) != "BPE")
            fail(Status::unsupported, "{}: model type '{}' is not supported (only BPE)", label, model.value("type", ""));
        t->model_ = std::make_unique<BpeModel>(model);
        t->normalizer_ = make_normalizer(root.value("normalizer", nlohmann::json()));
        t->pre_tokenizer_ = make_pre_tokenizer(root.value("pre_tokenizer", nlohmann::json()));
        t->decoder_ = make_decoder(root.value("decoder", nlohmann::json()));

        for (const auto& entry : root.value("added_tokens", nlohmann::json::array())) {
            AddedToken a;
            a.id = json_token_id(entry.at("id"), "an added token's id");
            a.content = entry.at("content").get<std::string>();
            a.special = entry.value("special", false);
            a.lstrip = entry.value("lstrip", false);
            a.rstrip = entry.value("rstrip", false);
            a.single_word = entry.value("single_word", false);
            a.normalized = entry.value("normalized", !a.special);
            if (a.id < 0 || a.id > max_token_id || a.content.empty() || find_invalid_utf8(a.content))
                fail(Status::model_format, "{}: added token {} is invalid", label, a.id);
            if (a.content.size() > max_added_token_bytes)
                fail(Status::unsupported, "{}: added token {} is longer than {} bytes", label, a.id, max_added_token_bytes);
            // As the reference: an added token the model's vocabulary already spells takes the
            // model's id, and a normalized one is known (and decoded) by its normalized text.
            if (a.normalized && t->normalizer_) t->normalizer_->normalize(a.content);
            if (const int32_t model_id = t->model_->id_of(a.content); model_id >= 0) a.id = model_id;
            t->added_by_id_[a.id] = t->added_.size();
            t->added_.push_back(std::move(a));
        }
        for (size_t i = 0; i < t->added_.size(); ++i) {
            auto& trie = t->trie_[t->added_[i].normalized ? 1 : 0];
            if (trie.empty()) trie.emplace_back();
            int32_t node = 0;
            for (unsigned char c : t->added_[i].content) {  // normalized ones were normalized above
                auto it = trie[size_t(node)].children.find(c);
                if (it == trie[size_t(node)].children.end()) {
                    trie.emplace_back();
                    it = trie[size_t(node)].children.emplace(c, static_cast<int32_t>(trie.size() - 1)).first;
                }
                node = it->second;
            }
            trie[size_t(node)].token = static_cast<int32_t>(i);
        }

        int64_t max_id = -1;
        for (const auto& [token, id] : t->model_->vocab()) max_id = std::max<int64_t>(max_id, id);
        for (const auto& a : t->added_) max_id = std::max<int64_t>(max_id, a.id);
        if (max_id > max_token_id) fail(Status::model_format, "{}: token id {} is beyond the supported {}", label, max_id, max_token_id);
        t->id_to_token_.resize(size_t(max_id + 1));
        for (const auto& [token, id] : t->model_->vocab()) t->id_to_token_[size_t(id)] = token;
        for (const auto& a : t->added_) t->id_to_token_[size_t(a.id)] = a.content;

        if (const auto post = root.find("post_processor"); post != root.end()) t->read_post_processor(*post, label);
        for (const auto* ids : {&t->template_prefix_, &t->template_suffix_})
            for (int32_t id : *ids)
                if (id < 0 || id >= t->vocab_size() || t->id_to_token_[size_t(id)].empty())
                    fail(Status::model_format, "{}: the post-processor's token id {} is not in the vocabulary", label, id);
    } catch (const nlohmann::json::exception& e) {
        fail(Status::model_format, "{}: {}", label, e.what());
    }
    return t;
}

void Tokenizer::read_post_processor(const nlohmann::json& post, std::string_view label) {
    if (post.is_null()) return;
    const std::string type = json_string(post, "type", "post_processor");
    if (type == "Sequence") {  // e.g. Llama-3.1: ByteLevel then TemplateProcessing
        for (const auto& step : json_array(post, "processors", "Sequence post_processor")) read_post_processor(step, label);
    } else if (type == "TemplateProcessing") {
        bool after_sequence = false;
        for (const auto& item : json_array(post, "single", "TemplateProcessing")) {
            if (item.contains("Sequence")) {
                after_sequence = true;
                continue;
            }
            const std::string name = item.at("SpecialToken").at("id").get<std::string>();
            for (const auto& id : post.at("special_tokens").at(name).at("ids"))
                (after_sequence ? template_suffix_ : template_prefix_).push_back(json_token_id(id, "a post-processor id"));
        }
    } else if (type != "ByteLevel") {  // ByteLevel only adjusts offsets
        fail(Status::unsupported, "{}: post_processor type '{}' is not supported", label, type);
    }
}

int32_t Tokenizer::token_id(std::string_view token) const {
    for (const auto& a : added_)
        if (a.content == token) return a.id;
    return model_->id_of(token);
}

void Tokenizer::split_added(std::string_view text, bool normalized,
                            std::vector<std::pair<std::string, int32_t>>& out) const {
    const auto& trie = trie_[normalized ? 1 : 0];
    std::string plain;
    size_t i = 0;
    while (i < text.size()) {
        int32_t best = -1;
        size_t best_end = 0;
        if (!trie.empty()) {
            int32_t node = 0;
            for (size_t j = i; j < text.size(); ++j) {
                const auto it = trie[size_t(node)].children.find(static_cast<unsigned char>(text[j]));
                if (it == trie[size_t(node)].children.end()) break;
                node = it->second;
                if (trie[size_t(node)].token >= 0) {
                    best = trie[size_t(node)].token;
                    best_end = j + 1;
                }
            }
        }
        if (best >= 0) {
            const AddedToken& a = added_[size_t(best)];
            size_t before = 0, after = best_end;
            const bool word_ok = !a.single_word ||
                                 ((i == 0 || !is_word_code_point(code_point_before(text, i, before))) &&
                                  (best_end == text.size() || !is_word_code_point(next_code_point(text, after))));
            if (!word_ok) {  // the matched text stays plain; matching resumes after it, as the reference
                plain.append(text.substr(i, best_end - i));
                i = best_end;
                continue;
            }
            if (a.lstrip) {
                size_t start = 0;
                while (!plain.empty() && is_space_code_point(code_point_before(plain, plain.size(), start))) plain.resize(start);
            }
            if (!plain.empty()) out.emplace_back(std::move(plain), -1);
            plain.clear();
            out.emplace_back(std::string(), a.id);
            i = best_end;
            if (a.rstrip)
                for (size_t next = i; i < text.size() && is_space_code_point(next_code_point(text, next)); next = i) i = next;
            continue;
        }
        plain.push_back(text[i++]);
    }
    if (!plain.empty()) out.emplace_back(std::move(plain), -1);
}

void Tokenizer::encode_text(std::string_view text, bool text_start, std::vector<int32_t>& out) const {
    std::string normalized(text);
    if (normalizer_) normalizer_->normalize(normalized);
    std::vector<std::pair<std::string, int32_t>> parts;
    split_added(normalized, true, parts);
    for (size_t k = 0; k < parts.size(); ++k) {
        auto& [piece, id] = parts[k];
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        std::vector<std::string> pieces{std::move(piece)};
        if (pre_tokenizer_) pre_tokenizer_->split(pieces, text_start && k == 0);
        for (const auto& p : pieces) model_->encode(p, out);
    }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
    const std::string clean = sanitize_utf8(text);
    std::vector<int32_t> ids;
    if (add_special_tokens) ids = template_prefix_;
    std::vector<std::pair<std::string, int32_t>> parts;
    split_added(clean, false, parts);
    for (size_t k = 0; k < parts.size(); ++k) {
        if (parts[k].second >= 0) ids.push_back(parts[k].second);
        else encode_text(parts[k].first, k == 0, ids);
    }
    if (add_special_tokens) ids.insert(ids.end(), template_suffix_.begin(), template_suffix_.end());
    return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        if (id < 0) fail(Status::invalid_argument, "token id {} is negative", id);
        // Ids the tokenizer lacks (a model's padded vocabulary rows) are skipped, as the reference does.
        if (id >= vocab_size() || id_to_token_[size_t(id)].empty()) continue;
        if (skip_special_tokens)
            if (const auto it = added_by_id_.find(id); it != added_by_id_.end() && added_[it->second].special) continue;
        tokens.push_back(id_to_token_[size_t(id)]);
    }
    if (!decoder_) {
        std::string joined;
        for (size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
        return joined;
    }
    decoder_->decode(tokens);
    std::string text;
    for (const auto& t : tokens) text += t;
    return text;
}

std::string StreamDecoder::push(std::span<const int32_t> ids) {
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    const std::string text = tokenizer_.decode(ids_, skip_special_);
    // An incomplete UTF-8 sequence decodes to U+FFFD at the end: wait for the bytes that complete it.
    std::string_view stable(text);
    while (stable.size() >= 3 && stable.substr(stable.size() - 3) == "\xEF\xBF\xBD") stable.remove_suffix(3);
    if (stable.size() <= emitted_) return {};
    std::string fresh(stable.substr(emitted_));
    emitted_ = stable.size();
    return fresh;
}

}  // namespace unmask
