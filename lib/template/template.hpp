// A Jinja template as Hugging Face renders chat templates (transformers' apply_chat_template:
// a sandboxed Jinja2 environment with trim_blocks, lstrip_blocks and loop controls). Implements
// the subset real chat templates use: if/elif/else, for (with else, filters, loop.*, break,
// continue), set (also blocks and namespace attributes), macros, Python expressions, slices,
// Jinja's filters and tests, the str and dict methods templates call, and the globals
// raise_exception, strftime_now, range, namespace and dict.
//
// Output matches Python's jinja2 byte for byte on the templates tests/template/ checks. Every
// render is bounded: output size, work (expressions evaluated, loop iterations) and macro
// recursion all have limits, and a template that passes one is an error, never a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "template/syntax.hpp"
#include "template/value.hpp"

namespace unmask::jinja {

struct RenderLimits {
    size_t max_output_bytes = size_t{8} << 20;
    uint64_t max_steps = 5'000'000;    // expressions evaluated and statements run
    int max_call_depth = 32;          // macros calling macros
};

class Template {
public:
    // Throws Error(INVALID_ARGUMENT) naming the line of a syntax error; templates longer than
    // max_source_bytes are refused.
    static constexpr size_t max_source_bytes = size_t{1} << 20;
    explicit Template(std::string_view source);

    // Renders with `variables` beside the globals. Throws Error(INVALID_ARGUMENT) on a template
    // error (raise_exception's message, an undefined value used, a type error) or a limit passed.
    std::string render(const Dict& variables, const RenderLimits& limits = {}) const;

private:
    Body body_;
};

}  // namespace unmask::jinja
