#include "tokenizer/normalizer.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace unmask {
namespace {

class UnicodeForm final : public Normalizer {
public:
    explicit UnicodeForm(utf8proc_option_t options) : options_(options) {}
    void normalize(std::string& text) const override {
        utf8proc_uint8_t* result = nullptr;
        const auto length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                         static_cast<utf8proc_ssize_t>(text.size()), &result, options_);
        if (length < 0) fail(Status::internal, "Unicode normalisation failed: {}", utf8proc_errmsg(length));
        text.assign(reinterpret_cast<const char*>(result), static_cast<size_t>(length));
        std::free(result);
    }

private:
    utf8proc_option_t options_;
};

class Prepend final : public Normalizer {
public:
    explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
    void normalize(std::string& text) const override {
        if (!text.empty()) text.insert(0, prefix_);
    }

private:
    std::string prefix_;
};

class Replace final : public Normalizer {
public:
    Replace(const nlohmann::json& pattern, std::string content)
        : regex_(pattern_regex(pattern, "Replace normalizer"), "Replace normalizer"), content_(std::move(content)) {}
    void normalize(std::string& text) const override { text = replace_all(regex_, text, content_); }

private:
    Regex regex_;
    std::string content_;
};

class Strip final : public Normalizer {
public:
    Strip(bool left, bool right) : left_(left), right_(right) {}
    void normalize(std::string& text) const override {
        size_t begin = 0, end = text.size();
        // Unicode White_Space at either end.
        auto space_at = [&](size_t i, size_t& length) {
            size_t j = i;
            const uint32_t cp = next_code_point(text, j);
            length = j - i;
            return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS || cp == '\t' ||
                   cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        };
        size_t length = 0;
        if (left_)
            while (begin < end && space_at(begin, length)) begin += length;
        if (right_)
            while (end > begin) {
                size_t start = end - 1;
                while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
                if (!space_at(start, length)) break;
                end = start;
            }
        text = text.substr(begin, end - begin);
    }

private:
    bool left_, right_;
};

class Lowercase final : public Normalizer {
public:
    void normalize(std::string& text) const override {
        std::string out;
        for (size_t i = 0; i < text.size();) {
            const uint32_t cp = next_code_point(text, i);
            if (cp == 0x130) {  // İ lowercases to two code points (i + combining dot), as Rust's to_lowercase does
                out.append("i\xCC\x87");
                continue;
            }
            append_utf8(out, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
        }
        text = std::move(out);
    }
};

class Sequence final : public Normalizer {
public:
    explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
    void normalize(std::string& text) const override {
        for (const auto& step : steps_) step->normalize(text);
    }

private:
    std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& config) {
    if (config.is_null()) return nullptr;
    const std::string type = json_string(config, "type", "normalizer");
    if (type == "NFC") return std::make_unique<UnicodeForm>(utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (type == "NFD") return std::make_unique<UnicodeForm>(utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
    if (type == "NFKC")
        return std::make_unique<UnicodeForm>(utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
    if (type == "NFKD")
        return std::make_unique<UnicodeForm>(utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
    if (type == "Prepend") return std::make_unique<Prepend>(json_string(config, "prepend", "Prepend normalizer"));
    if (type == "Replace")
        return std::make_unique<Replace>(config.at("pattern"), json_string(config, "content", "Replace normalizer"));
    if (type == "Strip") return std::make_unique<Strip>(config.value("strip_left", true), config.value("strip_right", true));
    if (type == "Lowercase") return std::make_unique<Lowercase>();
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Normalizer>> steps;
        for (const auto& step : json_array(config, "normalizers", "Sequence normalizer"))
            if (auto n = make_normalizer(step)) steps.push_back(std::move(n));
        return std::make_unique<Sequence>(std::move(steps));
    }
    fail(Status::unsupported, "tokenizer.json: normalizer type '{}' is not supported", type);
}

}  // namespace unmask
