#include "tokenizer/pre_tokenizer.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace unmask {
namespace {

// GPT-2's split, used by ByteLevel when use_regex is true.
constexpr const char* gpt2_pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

Behavior parse_behavior(const std::string& name) {
    if (name == "Removed") return Behavior::removed;
    if (name == "Isolated") return Behavior::isolated;
    if (name == "MergedWithPrevious") return Behavior::merged_with_previous;
    if (name == "MergedWithNext") return Behavior::merged_with_next;
    if (name == "Contiguous") return Behavior::contiguous;
    fail(Status::model_format, "tokenizer.json: Split behavior '{}' is unknown", name);
}

// Splits `text` around the matches of `regex` the way Hugging Face's SplitDelimiterBehavior does.
void split_piece(const std::string& text, const Regex& regex, Behavior behavior, bool invert,
                 std::vector<std::string>& out) {
    struct Segment {
        size_t begin, end;
        bool match;  // with invert, the matches are the content and the rest the delimiters
    };
    std::vector<Segment> segments;
    size_t last = 0;
    for (const auto& [begin, end] : regex.find_all(text)) {
        if (begin > last) segments.push_back({last, begin, invert});
        segments.push_back({begin, end, !invert});
        last = end;
    }
    if (last < text.size()) segments.push_back({last, text.size(), invert});

    std::vector<Segment> merged;
    bool previous_match = false;
    switch (behavior) {
        case Behavior::removed:
            for (const Segment& s : segments)
                if (!s.match) merged.push_back(s);
            break;
        case Behavior::isolated: merged = segments; break;
        case Behavior::merged_with_previous:  // a delimiter joins the piece before it
            for (const Segment& s : segments) {
                if (s.match && !previous_match && !merged.empty()) merged.back().end = s.end;
                else merged.push_back(s);
                previous_match = s.match;
            }
            break;
        case Behavior::merged_with_next:  // a delimiter joins the piece after it
            for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
                if (it->match && !previous_match && !merged.empty()) merged.back().begin = it->begin;
                else merged.push_back(*it);
                previous_match = it->match;
            }
            std::reverse(merged.begin(), merged.end());
            break;
        case Behavior::contiguous:  // runs of delimiters become one piece
            for (const Segment& s : segments) {
                if (!merged.empty() && s.match && previous_match) merged.back().end = s.end;
                else merged.push_back(s);
                previous_match = s.match;
            }
            break;
    }
    for (const Segment& s : merged) out.push_back(text.substr(s.begin, s.end - s.begin));
}

class Split final : public PreTokenizer {
public:
    explicit Split(const nlohmann::json& c)
        : regex_(pattern_regex(c.at("pattern"), "Split pre-tokenizer"), "Split pre-tokenizer"),
          behavior_(parse_behavior(json_string(c, "behavior", "Split pre-tokenizer"))),
          invert_(c.value("invert", false)) {}
    void split(std::vector<std::string>& pieces, bool /*text_start*/) const override {
        std::vector<std::string> out;
        for (const auto& piece : pieces) split_piece(piece, regex_, behavior_, invert_, out);
        pieces = std::move(out);
    }

private:
    Regex regex_;
    Behavior behavior_;
    bool invert_;
};

class ByteLevel final : public PreTokenizer {
public:
    explicit ByteLevel(const nlohmann::json& c) : add_prefix_space_(c.value("add_prefix_space", false)) {
        if (c.value("use_regex", true)) regex_ = std::make_unique<Regex>(gpt2_pattern, "ByteLevel pre-tokenizer");
    }
    void split(std::vector<std::string>& pieces, bool /*text_start*/) const override {
        if (add_prefix_space_)  // every piece, as the reference splits before adding
            for (auto& piece : pieces)
                if (!piece.empty() && piece[0] != ' ') piece.insert(0, " ");
        if (regex_) {
            std::vector<std::string> out;
            for (const auto& piece : pieces) split_piece(piece, *regex_, Behavior::isolated, false, out);
            pieces = std::move(out);
        }
        for (auto& piece : pieces) piece = bytes_to_symbols(piece);
    }

private:
    bool add_prefix_space_;
    std::unique_ptr<Regex> regex_;
};

class Metaspace final : public PreTokenizer {
public:
    explicit Metaspace(const nlohmann::json& c)
        : replacement_(single_character(c, "replacement", "\xE2\x96\x81", "Metaspace pre-tokenizer")),
          split_(c.value("split", true)) {
        // Older files say add_prefix_space; newer ones prepend_scheme (always, first, never).
        const std::string scheme = c.value("prepend_scheme", c.value("add_prefix_space", true) ? "always" : "never");
        prepend_ = scheme != "never";
        first_only_ = scheme == "first";
    }
    void split(std::vector<std::string>& pieces, bool text_start) const override {
        std::vector<std::string> out;
        for (size_t i = 0; i < pieces.size(); ++i) {
            std::string text;
            for (char c : pieces[i]) {
                if (c == ' ') text += replacement_;
                else text.push_back(c);
            }
            if (prepend_ && (!first_only_ || (i == 0 && text_start)) && text.rfind(replacement_, 0) != 0)
                text.insert(0, replacement_);
            if (!split_) {
                out.push_back(std::move(text));
                continue;
            }
            // Each piece starts at a replacement character (merged with what follows it).
            size_t start = 0;
            for (size_t pos = text.find(replacement_, 1); pos != std::string::npos; pos = text.find(replacement_, pos + 1)) {
                if (pos > start) out.push_back(text.substr(start, pos - start));
                start = pos;
            }
            if (start < text.size()) out.push_back(text.substr(start));
        }
        pieces = std::move(out);
    }

private:
    std::string replacement_;
    bool split_, prepend_ = true, first_only_ = false;
};

class Digits final : public PreTokenizer {
public:
    explicit Digits(const nlohmann::json& c)
        : regex_(c.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)", "Digits pre-tokenizer") {}
    void split(std::vector<std::string>& pieces, bool /*text_start*/) const override {
        std::vector<std::string> out;
        for (const auto& piece : pieces) split_piece(piece, regex_, Behavior::isolated, false, out);
        pieces = std::move(out);
    }

private:
    Regex regex_;
};

class Sequence final : public PreTokenizer {
public:
    explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
    void split(std::vector<std::string>& pieces, bool text_start) const override {
        for (const auto& step : steps_) step->split(pieces, text_start);
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::string single_character(const nlohmann::json& config, const char* key, const std::string& fallback,
                             std::string_view where) {
    const std::string value = config.contains(key) ? json_string(config, key, where) : fallback;
    size_t i = 0;
    if (!value.empty()) next_code_point(value, i);
    if (value.empty() || i != value.size() || find_invalid_utf8(value))
        fail(Status::model_format, "tokenizer.json: {} '{}' must be exactly one character, got '{}'", where, key, value);
    return value;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& config) {
    if (config.is_null()) return nullptr;
    const std::string type = json_string(config, "type", "pre_tokenizer");
    if (type == "Split") return std::make_unique<Split>(config);
    if (type == "ByteLevel") return std::make_unique<ByteLevel>(config);
    if (type == "Metaspace") return std::make_unique<Metaspace>(config);
    if (type == "Digits") return std::make_unique<Digits>(config);
    if (type == "Sequence") {
        std::vector<std::unique_ptr<PreTokenizer>> steps;
        for (const auto& step : json_array(config, "pretokenizers", "Sequence pre-tokenizer"))
            if (auto p = make_pre_tokenizer(step)) steps.push_back(std::move(p));
        return std::make_unique<Sequence>(std::move(steps));
    }
    fail(Status::unsupported, "tokenizer.json: pre-tokenizer type '{}' is not supported", type);
}

}  // namespace unmask
