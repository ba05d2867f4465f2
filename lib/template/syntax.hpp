// The parsed form of a template: statements (Node) holding expressions (Expr).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.hpp"

namespace unmask::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        literal,      // value
        name,         // name
        list,         // operands: the elements
        dict,         // operands: key, value, key, value...
        attribute,    // operands[0].name
        item,         // operands[0][operands[1]]
        slice,        // operands[0][operands[1]:operands[2]:operands[3]], absent bounds null
        call,         // operands[0](operands[1..]); the last keywords.size() are keyword arguments
        filter,       // operands[0] | name(operands[1..]), keywords as for call
        test,         // operands[0] is [not] name(operands[1..]); negated
        logical_not,  // not operands[0]
        negate,       // -operands[0]
        unary_plus,   // +operands[0]
        binary,       // operands[0] name operands[1]: + - * / // % ** ~
        compare,      // operands[0] ops[0] operands[1] ops[1] ...: == != < > <= >= in, "not in"
        logical_and,
        logical_or,
        conditional,  // operands[1] if operands[0] else operands[2] (null: undefined)
    };
    Kind kind;
    int line;
    Value value;
    std::string name;
    std::vector<ExprPtr> operands;
    std::vector<std::string> keywords;
    std::vector<std::string> ops;
    bool negated = false;
    int height = 1;  // of the expression tree below and including this node
};

struct Node;
using Body = std::vector<Node>;

struct Node {
    enum class Kind {
        text,          // text
        output,        // {{ expression }}
        if_chain,      // branches; otherwise
        for_loop,      // for targets in expression [if condition]: body; otherwise
        set,           // targets (or target.attribute) = expression
        set_block,     // {% set target %}body{% endset %}
        macro,         // target(parameters): body
        loop_break,
        loop_continue,
        scope,         // body rendered in place ({% generation %})
    };
    Kind kind = Kind::text;
    int line = 0;
    std::string text;
    ExprPtr expression;
    ExprPtr condition;
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body;
    Body otherwise;
    std::vector<std::string> targets;
    std::string attribute;
    std::vector<std::pair<std::string, ExprPtr>> parameters;  // a macro's, defaults null when absent
};

// Throws Error(INVALID_ARGUMENT) naming the line on a syntax error, a construct chat templates
// do not use (include, extends, import, call blocks, recursive loops), or nesting deeper than
// max_nesting (the parser and the renderer recurse once per level).
inline constexpr int max_nesting = 96;
inline constexpr int max_expression_height = 192;
Body parse(std::string_view source);

}  // namespace unmask::jinja
