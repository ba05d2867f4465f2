#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.hpp"

#include <pcre2.h>

#include "core/error.hpp"

namespace unmask {

struct Regex::Compiled {
    pcre2_code* code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, std::string_view label) : compiled_(std::make_unique<Compiled>()) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
    if (compiled_->code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        fail(Status::model_format, "{}: regex '{}' does not compile at offset {}: {}", label, pattern, offset,
             reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
    std::vector<std::pair<size_t, size_t>> matches;
    pcre2_match_data* data = pcre2_match_data_create_from_pattern(compiled_->code, nullptr);
    if (data == nullptr) throw std::bad_alloc();
    size_t offset = 0;
    while (offset <= text.size()) {
        const int rc = pcre2_match(compiled_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), offset,
                                   PCRE2_NO_UTF_CHECK, data, nullptr);
        if (rc < 0) break;  // no match (or a resource limit: the rest stays one piece)
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
        const size_t begin = ovector[0], end = ovector[1];
        if (end > begin) {
            matches.emplace_back(begin, end);
            offset = end;
        } else {  // empty match: step over one code point
            offset = begin + 1;
            while (offset < text.size() && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80) ++offset;
        }
    }
    pcre2_match_data_free(data);
    return matches;
}

std::string Regex::escape(std::string_view literal) {
    std::string out = "\\Q";
    for (size_t i = 0; i < literal.size(); ++i) {
        if (literal.substr(i, 2) == "\\E") {
            out += "\\E\\\\E\\Q";
            ++i;
        } else {
            out.push_back(literal[i]);
        }
    }
    return out + "\\E";
}

}  // namespace unmask
