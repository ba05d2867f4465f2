#include "tokenizer/decoder.hpp"

#include <cctype>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/pre_tokenizer.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace unmask {
namespace {

// Byte-level symbols back to bytes; a token with a character outside the alphabet (an added
// token) keeps its own UTF-8 bytes. Invalid UTF-8 becomes U+FFFD.
class ByteLevel final : public Decoder {
public:
    void decode(std::vector<std::string>& tokens) const override {
        std::string bytes;
        for (const auto& token : tokens) {
            std::string mapped;
            bool all_mapped = true;
            for (size_t i = 0; i < token.size() && all_mapped;) {
                const auto byte = symbol_to_byte(next_code_point(token, i));
                if (byte) mapped.push_back(static_cast<char>(*byte));
                else all_mapped = false;
            }
            bytes += all_mapped ? mapped : token;
        }
        tokens = {sanitize_utf8(bytes)};
    }
};

// <0xXX> tokens become their bytes; a run of them that is not valid UTF-8 becomes one U+FFFD per byte.
class ByteFallback final : public Decoder {
public:
    void decode(std::vector<std::string>& tokens) const override {
        std::vector<std::string> out;
        std::string run;
        size_t run_length = 0;
        auto flush = [&] {
            if (run_length == 0) return;
            if (find_invalid_utf8(run)) {
                std::string replacement;
                for (size_t i = 0; i < run_length; ++i) replacement += "\xEF\xBF\xBD";
                out.push_back(replacement);
            } else {
                out.push_back(run);
            }
            run.clear();
            run_length = 0;
        };
        for (const auto& token : tokens) {
            if (token.size() == 6 && token.rfind("<0x", 0) == 0 && token[5] == '>' &&
                std::isxdigit(static_cast<unsigned char>(token[3])) && std::isxdigit(static_cast<unsigned char>(token[4]))) {
                run.push_back(static_cast<char>(std::stoi(token.substr(3, 2), nullptr, 16)));
                ++run_length;
                continue;
            }
            flush();
            out.push_back(token);
        }
        flush();
        tokens = std::move(out);
    }
};

class Fuse final : public Decoder {
public:
    void decode(std::vector<std::string>& tokens) const override {
        std::string joined;
        for (const auto& t : tokens) joined += t;
        tokens = {joined};
    }
};

class Strip final : public Decoder {
public:
    Strip(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
    void decode(std::vector<std::string>& tokens) const override {
        for (auto& token : tokens) {
            for (size_t i = 0; i < start_ && token.rfind(content_, 0) == 0; ++i) token.erase(0, content_.size());
            for (size_t i = 0; i < stop_ && token.size() >= content_.size() &&
                               token.compare(token.size() - content_.size(), content_.size(), content_) == 0;
                 ++i)
                token.erase(token.size() - content_.size());
        }
    }

private:
    std::string content_;
    size_t start_, stop_;
};

class Replace final : public Decoder {
public:
    Replace(const nlohmann::json& pattern, std::string content)
        : regex_(pattern_regex(pattern, "Replace decoder"), "Replace decoder"), content_(std::move(content)) {}
    void decode(std::vector<std::string>& tokens) const override {
        for (auto& token : tokens) token = replace_all(regex_, token, content_);
    }

private:
    Regex regex_;
    std::string content_;
};

class Metaspace final : public Decoder {
public:
    Metaspace(std::string replacement, bool prepend) : replacement_(std::move(replacement)), prepend_(prepend) {}
    void decode(std::vector<std::string>& tokens) const override {
        for (size_t t = 0; t < tokens.size(); ++t) {
            std::string out;
            const std::string& token = tokens[t];
            for (size_t i = 0; i < token.size();) {
                if (token.compare(i, replacement_.size(), replacement_) == 0) {
                    if (!(t == 0 && prepend_)) out.push_back(' ');  // the reference drops them all in the first token
                    i += replacement_.size();
                } else {
                    out.push_back(token[i++]);
                }
            }
            tokens[t] = std::move(out);
        }
    }

private:
    std::string replacement_;
    bool prepend_;
};

class Sequence final : public Decoder {
public:
    explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
    void decode(std::vector<std::string>& tokens) const override {
        for (const auto& step : steps_) step->decode(tokens);
    }

private:
    std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& config) {
    if (config.is_null()) return nullptr;
    const std::string type = json_string(config, "type", "decoder");
    if (type == "ByteLevel") return std::make_unique<ByteLevel>();
    if (type == "ByteFallback") return std::make_unique<ByteFallback>();
    if (type == "Fuse") return std::make_unique<Fuse>();
    if (type == "Strip") {
        const auto bound = [&](const char* key) {
            const auto it = config.find(key);
            if (it == config.end()) return size_t{0};
            if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1024)
                fail(Status::model_format, "tokenizer.json: Strip decoder '{}' {} is not an integer in 0..1024", key, it->dump());
            return static_cast<size_t>(it->get<int64_t>());
        };
        return std::make_unique<Strip>(single_character(config, "content", " ", "Strip decoder"), bound("start"),
                                       bound("stop"));
    }
    if (type == "Replace") return std::make_unique<Replace>(config.at("pattern"), json_string(config, "content", "Replace decoder"));
    if (type == "Metaspace") {
        const std::string scheme = config.value("prepend_scheme", config.value("add_prefix_space", true) ? "always" : "never");
        return std::make_unique<Metaspace>(single_character(config, "replacement", "\xE2\x96\x81", "Metaspace decoder"),
                                           scheme != "never");
    }
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Decoder>> steps;
        for (const auto& step : json_array(config, "decoders", "Sequence decoder"))
            if (auto d = make_decoder(step)) steps.push_back(std::move(d));
        return std::make_unique<Sequence>(std::move(steps));
    }
    fail(Status::unsupported, "tokenizer.json: decoder type '{}' is not supported", type);
}

}  // namespace unmask
