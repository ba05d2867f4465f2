// Splits a Jinja template into text and the tokens of its tags, with the whitespace control of
// Hugging Face's chat-template environment: trim_blocks and lstrip_blocks on, `-` and `+`
// modifiers, and Jinja's defaults (newlines normalised to \n, one trailing newline dropped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace unmask::jinja {

struct Token {
    enum class Kind {
        text,            // literal output
        variable_begin,  // {{
        variable_end,    // }}
        block_begin,     // {%
        block_end,       // %}
        name,
        string,          // value holds the unescaped text
        integer,
        floating,
        op,              // value holds the operator: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
        end,
    };
    Kind kind;
    std::string value;
    int line;
};

// Throws Error(INVALID_ARGUMENT) naming the line on an unterminated tag, string or comment, or a
// character no Jinja token starts with.
std::vector<Token> tokenize(std::string_view source);

}  // namespace unmask::jinja
