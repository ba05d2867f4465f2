#include "template/lexer.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "core/utf8.hpp"

namespace unmask::jinja {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
bool is_space(char c) { return is_blank(c) || c == '\n'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Jinja reads the source with its newlines normalised and, keep_trailing_newline being off, one
// final newline removed.
std::string normalise(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// A string literal's body with Python's escapes decoded (Jinja decodes them as unicode-escape).
std::string unescape(std::string_view body, int line) {
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
        if (body[i] != '\\' || i + 1 == body.size()) {
            out += body[i];
            continue;
        }
        const char c = body[++i];
        switch (c) {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x':
            case 'u':
            case 'U': {
                const size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
                uint32_t code = 0;
                for (size_t k = 1; k <= digits; ++k) {
                    const int h = i + k < body.size() ? hex_value(body[i + k]) : -1;
                    if (h < 0) fail(Status::invalid_argument, "chat template line {}: a truncated \\{} escape", line, c);
                    code = code * 16 + uint32_t(h);
                }
                if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
                    fail(Status::invalid_argument, "chat template line {}: escape \\{} names no character", line, c);
                append_utf8(out, code);
                i += digits;
                break;
            }
            default:
                if (c >= '0' && c <= '7') {
                    uint32_t code = uint32_t(c - '0');
                    for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
                        code = code * 8 + uint32_t(body[++i] - '0');
                    append_utf8(out, code);
                } else {
                    out += '\\';
                    out += c;
                }
        }
    }
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string_view source) : source_(normalise(source)) {}

    std::vector<Token> run() {
        bool line_starting = true;
        while (true) {
            const size_t start = next_tag(pos_);
            std::string text = source_.substr(pos_, start - pos_);
            count_lines(pos_, start);
            if (start == source_.size()) {
                emit_text(std::move(text));
                break;
            }
            const char kind = source_[start + 1];
            const char modifier = start + 2 < source_.size() ? source_[start + 2] : '\0';
            if (modifier == '-') {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            } else if (kind != '{' && modifier != '+') {
                // lstrip_blocks: a block or comment tag alone on its line takes the line's indent.
                const size_t line_start = text.rfind('\n') + 1;  // npos + 1 == 0
                if ((line_start > 0 || line_starting) && line_start < text.size()) {
                    bool blank = true;
                    for (size_t i = line_start; i < text.size(); ++i) blank = blank && is_blank(text[i]);
                    if (blank) text.resize(line_start);
                }
            }
            emit_text(std::move(text));
            pos_ = start + 2 + ((modifier == '-' || (modifier == '+' && kind != '{')) ? 1 : 0);
            count_lines(start, pos_);
            if (kind == '#') {
                line_starting = comment();
            } else {
                line_starting = tag(kind == '{');
            }
        }
        tokens_.push_back({Token::Kind::end, "", line_});
        return std::move(tokens_);
    }

private:
    size_t next_tag(size_t from) const {
        for (size_t i = from; i + 1 < source_.size(); ++i)
            if (source_[i] == '{' && (source_[i + 1] == '{' || source_[i + 1] == '%' || source_[i + 1] == '#')) return i;
        return source_.size();
    }

    void emit_text(std::string text) {
        if (text.empty()) return;
        const int line = line_ - int(std::count(text.begin(), text.end(), '\n'));
        tokens_.push_back({Token::Kind::text, std::move(text), line});
    }

    void count_lines(size_t from, size_t to) {
        for (size_t i = from; i < to; ++i) line_ += source_[i] == '\n';
    }

    // After a tag's closing delimiter: `-` strips all whitespace, trim_blocks one newline after a
    // block or comment. Returns whether what the tag consumed ended a line (lstrip_blocks then
    // applies to the next tag even without a newline in the text between).
    bool after_close(char end_modifier, bool is_block) {
        const size_t from = pos_;
        if (end_modifier == '-') {
            while (pos_ < source_.size() && is_space(source_[pos_])) ++pos_;
        } else if (is_block && end_modifier != '+' && pos_ < source_.size() && source_[pos_] == '\n') {
            ++pos_;
        }
        count_lines(from, pos_);
        return pos_ > from ? source_[pos_ - 1] == '\n' : false;
    }

    bool comment() {
        const size_t close = source_.find("#}", pos_);
        if (close == std::string::npos) fail(Status::invalid_argument, "chat template line {}: a comment is not closed", line_);
        const char end_modifier = close > pos_ ? source_[close - 1] : '\0';
        count_lines(pos_, close + 2);
        pos_ = close + 2;
        return after_close(end_modifier, true);
    }

    bool tag(bool variable) {
        const size_t first_token = tokens_.size();
        tokens_.push_back({variable ? Token::Kind::variable_begin : Token::Kind::block_begin, "", line_});
        int depth = 0;
        while (true) {
            while (pos_ < source_.size() && is_space(source_[pos_])) {
                line_ += source_[pos_] == '\n';
                ++pos_;
            }
            if (pos_ >= source_.size())
                fail(Status::invalid_argument, "chat template line {}: a {} is not closed", line_, variable ? "{{ tag" : "{% tag");
            const std::string_view rest = std::string_view(source_).substr(pos_);
            char end_modifier = '\0';
            size_t close_length = 0;
            if (depth == 0) {
                const std::string_view close = variable ? "}}" : "%}";
                if (rest.starts_with(close)) {
                    close_length = 2;
                } else if ((rest[0] == '-' || (!variable && rest[0] == '+')) && rest.substr(1).starts_with(close)) {
                    end_modifier = rest[0];
                    close_length = 3;
                }
            }
            if (close_length) {
                pos_ += close_length;
                tokens_.push_back({variable ? Token::Kind::variable_end : Token::Kind::block_end, "", line_});
                const bool line_end = after_close(end_modifier, !variable);
                if (!variable && tokens_.size() == first_token + 3 && tokens_[first_token + 1].value == "raw" &&
                    tokens_[first_token + 1].kind == Token::Kind::name)
                    return raw(first_token);
                return line_end;
            }
            lex_one(rest, depth);
        }
    }

    // {% raw %}...{% endraw %}: the text between, untouched.
    bool raw(size_t first_token) {
        tokens_.resize(first_token);
        size_t search = pos_;
        while (true) {
            const size_t open = source_.find("{%", search);
            if (open == std::string::npos) fail(Status::invalid_argument, "chat template line {}: {{% raw %}} is not closed", line_);
            size_t p = open + 2;
            const char modifier = p < source_.size() ? source_[p] : '\0';
            if (modifier == '-' || modifier == '+') ++p;
            while (p < source_.size() && is_space(source_[p])) ++p;
            if (source_.compare(p, 6, "endraw") != 0) {
                search = open + 2;
                continue;
            }
            p += 6;
            while (p < source_.size() && is_space(source_[p])) ++p;
            char end_modifier = '\0';
            if (p < source_.size() && (source_[p] == '-' || source_[p] == '+')) end_modifier = source_[p++];
            if (source_.compare(p, 2, "%}") != 0) {
                search = open + 2;
                continue;
            }
            std::string text = source_.substr(pos_, open - pos_);
            if (modifier == '-')
                while (!text.empty() && is_space(text.back())) text.pop_back();
            emit_text(std::move(text));
            count_lines(pos_, p + 2);
            pos_ = p + 2;
            return after_close(end_modifier, true);
        }
    }

    void lex_one(std::string_view rest, int& depth) {
        const char c = rest[0];
        if (is_name_start(c)) {
            size_t n = 1;
            while (n < rest.size() && is_name_char(rest[n])) ++n;
            push(Token::Kind::name, std::string(rest.substr(0, n)), n);
            return;
        }
        if (is_digit(c)) {
            size_t n = 0;
            while (n < rest.size() && (is_digit(rest[n]) || (rest[n] == '_' && n + 1 < rest.size() && is_digit(rest[n + 1])))) ++n;
            bool floating = false;
            if (n + 1 < rest.size() && rest[n] == '.' && is_digit(rest[n + 1])) {
                floating = true;
                ++n;
                while (n < rest.size() && (is_digit(rest[n]) || rest[n] == '_')) ++n;
            }
            if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
                size_t m = n + 1;
                if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
                if (m < rest.size() && is_digit(rest[m])) {
                    floating = true;
                    n = m;
                    while (n < rest.size() && is_digit(rest[n])) ++n;
                }
            }
            std::string digits;
            for (const char d : rest.substr(0, n))
                if (d != '_') digits += d;
            push(floating ? Token::Kind::floating : Token::Kind::integer, std::move(digits), n);
            return;
        }
        if (c == '\'' || c == '"') {
            size_t n = 1;
            while (n < rest.size() && rest[n] != c) n += rest[n] == '\\' ? 2 : 1;
            if (n >= rest.size()) fail(Status::invalid_argument, "chat template line {}: a string is not closed", line_);
            const int line = line_;
            const std::string_view body = rest.substr(1, n - 1);
            for (const char b : body) line_ += b == '\n';
            tokens_.push_back({Token::Kind::string, unescape(body, line), line});
            pos_ += n + 1;
            return;
        }
        static constexpr std::string_view two[] = {"//", "**", "==", "!=", "<=", ">="};
        for (const std::string_view op : two)
            if (rest.starts_with(op)) {
                push(Token::Kind::op, std::string(op), 2);
                return;
            }
        if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos)
            fail(Status::invalid_argument, "chat template line {}: unexpected character '{}'", line_,
                 std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : fmt::format("\\x{:02x}", static_cast<unsigned char>(c)));
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        push(Token::Kind::op, std::string(1, c), 1);
    }

    void push(Token::Kind kind, std::string value, size_t length) {
        tokens_.push_back({kind, std::move(value), line_});
        pos_ += length;
    }

    std::string source_;
    size_t pos_ = 0;
    int line_ = 1;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace unmask::jinja
