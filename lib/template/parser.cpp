// A recursive-descent parser with Jinja2's grammar and operator precedence (jinja2/parser.py):
// conditional < or < and < not < comparison < + - < ~ < * / // % < ** < unary - + < postfix
// (attribute, item, call) < filters and tests, which bind to the primary before any operator.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "core/error.hpp"
#include "template/lexer.hpp"
#include "template/syntax.hpp"

namespace unmask::jinja {
namespace {

using K = Token::Kind;

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Body parse_template() {
        std::string end;
        Body body = parse_body({}, end);
        return body;
    }

private:
    // Nodes until a block tag whose keyword is in `ends` (returned in `end`, the tag consumed up
    // to its keyword) or, when `ends` is empty, the end of the template.
    Body parse_body(std::initializer_list<std::string_view> ends, std::string& end) {
        Deeper deeper(*this);
        Body body;
        while (true) {
            const Token& token = peek();
            if (token.kind == K::end) {
                if (ends.size() == 0) return body;
                fail(Status::invalid_argument, "chat template: the template ends inside a block; expected {{% {} %}}", *(ends.end() - 1));
            }
            if (token.kind == K::text) {
                body.push_back(node(Node::Kind::text));
                body.back().text = next().value;
            } else if (token.kind == K::variable_begin) {
                next();
                body.push_back(node(Node::Kind::output));
                body.back().expression = expression();
                expect(K::variable_end, "}}");
            } else {
                next();  // {%
                const Token& keyword = expect(K::name, "a statement keyword");
                for (const std::string_view candidate : ends)
                    if (keyword.value == candidate) {
                        end = keyword.value;
                        return body;
                    }
                body.push_back(statement(keyword));
            }
        }
    }

    Node statement(const Token& keyword) {
        const std::string& word = keyword.value;
        if (word == "if") return if_chain();
        if (word == "for") return for_loop();
        if (word == "set") return set();
        if (word == "macro") return macro();
        if (word == "break" || word == "continue") {
            Node n = node(word == "break" ? Node::Kind::loop_break : Node::Kind::loop_continue);
            expect(K::block_end, "%}");
            return n;
        }
        if (word == "generation") {  // Hugging Face's assistant-mask extension: renders its body
            Node n = node(Node::Kind::scope);
            expect(K::block_end, "%}");
            std::string end;
            n.body = parse_body({"endgeneration"}, end);
            expect(K::block_end, "%}");
            return n;
        }
        fail(Status::invalid_argument, "chat template line {}: unknown or unsupported statement '{}'", keyword.line, word);
    }

    Node if_chain() {
        Node n = node(Node::Kind::if_chain);
        std::string end = "elif";
        while (end == "elif") {
            ExprPtr condition = expression();
            expect(K::block_end, "%}");
            Body body = parse_body({"elif", "else", "endif"}, end);
            n.branches.emplace_back(std::move(condition), std::move(body));
        }
        if (end == "else") {
            expect(K::block_end, "%}");
            n.otherwise = parse_body({"endif"}, end);
        }
        expect(K::block_end, "%}");
        return n;
    }

    Node for_loop() {
        Node n = node(Node::Kind::for_loop);
        do n.targets.push_back(expect(K::name, "a loop variable").value);
        while (skip_op(","));
        const Token& in = expect(K::name, "'in'");
        if (in.value != "in") fail(Status::invalid_argument, "chat template line {}: expected 'in', found '{}'", in.line, in.value);
        n.expression = or_expression();  // a conditional here would swallow the loop's `if`
        if (skip_name("if")) n.condition = expression();
        if (peek().kind == K::name && peek().value == "recursive")
            fail(Status::invalid_argument, "chat template line {}: recursive loops are not supported", peek().line);
        expect(K::block_end, "%}");
        std::string end;
        n.body = parse_body({"else", "endfor"}, end);
        if (end == "else") {
            expect(K::block_end, "%}");
            n.otherwise = parse_body({"endfor"}, end);
        }
        expect(K::block_end, "%}");
        return n;
    }

    Node set() {
        Node n = node(Node::Kind::set);
        n.targets.push_back(expect(K::name, "a variable name").value);
        if (skip_op(".")) {
            n.attribute = expect(K::name, "an attribute name").value;
        } else {
            while (skip_op(",")) n.targets.push_back(expect(K::name, "a variable name").value);
        }
        if (peek().kind == K::block_end && n.targets.size() == 1 && n.attribute.empty()) {
            next();
            n.kind = Node::Kind::set_block;
            std::string end;
            n.body = parse_body({"endset"}, end);
            expect(K::block_end, "%}");
            return n;
        }
        expect_op("=");
        n.expression = expression();
        if (n.targets.size() > 1 && peek().kind == K::op && peek().value == ",") {
            ExprPtr tuple = expr(Expr::Kind::list);
            add(*tuple, std::move(n.expression));
            while (skip_op(",")) add(*tuple, expression());
            n.expression = std::move(tuple);
        }
        expect(K::block_end, "%}");
        return n;
    }

    Node macro() {
        Node n = node(Node::Kind::macro);
        n.targets.push_back(expect(K::name, "a macro name").value);
        expect_op("(");
        while (!skip_op(")")) {
            if (!n.parameters.empty()) expect_op(",");
            if (skip_op(")")) break;
            std::string name = expect(K::name, "a parameter name").value;
            ExprPtr fallback;
            if (skip_op("=")) fallback = expression();
            n.parameters.emplace_back(std::move(name), std::move(fallback));
        }
        expect(K::block_end, "%}");
        std::string end;
        n.body = parse_body({"endmacro"}, end);
        expect(K::block_end, "%}");
        return n;
    }

    // --- expressions ---

    ExprPtr expression() {
        Deeper deeper(*this);
        ExprPtr value = or_expression();
        while (skip_name("if")) {
            ExprPtr e = expr(Expr::Kind::conditional);
            add(*e, or_expression());
            add(*e, std::move(value));
            add(*e, skip_name("else") ? expression() : nullptr);
            value = std::move(e);
        }
        return value;
    }

    ExprPtr or_expression() {
        ExprPtr left = and_expression();
        while (skip_name("or")) left = binary(Expr::Kind::logical_or, std::move(left), and_expression());
        return left;
    }

    ExprPtr and_expression() {
        ExprPtr left = not_expression();
        while (skip_name("and")) left = binary(Expr::Kind::logical_and, std::move(left), not_expression());
        return left;
    }

    ExprPtr not_expression() {
        if (peek().kind == K::name && peek().value == "not") {
            Deeper deeper(*this);
            next();
            ExprPtr e = expr(Expr::Kind::logical_not);
            add(*e, not_expression());
            return e;
        }
        return comparison();
    }

    ExprPtr comparison() {
        ExprPtr first = sum();
        ExprPtr e;
        while (true) {
            std::string op;
            const Token& t = peek();
            if (t.kind == K::op && (t.value == "==" || t.value == "!=" || t.value == "<" || t.value == ">" ||
                                    t.value == "<=" || t.value == ">=")) {
                op = next().value;
            } else if (t.kind == K::name && t.value == "in") {
                next();
                op = "in";
            } else if (t.kind == K::name && t.value == "not" && peek(1).kind == K::name && peek(1).value == "in") {
                next();
                next();
                op = "not in";
            } else {
                break;
            }
            if (!e) {
                e = expr(Expr::Kind::compare);
                add(*e, std::move(first));
            }
            e->ops.push_back(op);
            add(*e, sum());
        }
        return e ? std::move(e) : std::move(first);
    }

    ExprPtr sum() {
        ExprPtr left = concatenation();
        while (peek_op("+") || peek_op("-")) {
            std::string op = next().value;
            left = binary(Expr::Kind::binary, std::move(left), concatenation(), op);
        }
        return left;
    }

    ExprPtr concatenation() {
        ExprPtr left = product();
        while (skip_op("~")) left = binary(Expr::Kind::binary, std::move(left), product(), "~");
        return left;
    }

    ExprPtr product() {
        ExprPtr left = power();
        while (peek_op("*") || peek_op("/") || peek_op("//") || peek_op("%")) {
            std::string op = next().value;
            left = binary(Expr::Kind::binary, std::move(left), power(), op);
        }
        return left;
    }

    ExprPtr power() {
        ExprPtr left = unary(true);
        while (skip_op("**")) left = binary(Expr::Kind::binary, std::move(left), unary(true), "**");
        return left;
    }

    ExprPtr unary(bool with_filters) {
        Deeper deeper(*this);
        ExprPtr value;
        if (peek_op("-") || peek_op("+")) {
            value = expr(next().value == "-" ? Expr::Kind::negate : Expr::Kind::unary_plus);
            add(*value, unary(false));
        } else {
            value = postfix(primary());
        }
        return with_filters ? filters_and_tests(std::move(value)) : std::move(value);
    }

    ExprPtr primary() {
        const Token& t = peek();
        if (t.kind == K::name) {
            next();
            if (t.value == "true" || t.value == "True") return literal(Value(true));
            if (t.value == "false" || t.value == "False") return literal(Value(false));
            if (t.value == "none" || t.value == "None") return literal(Value::none());
            ExprPtr e = expr(Expr::Kind::name);
            e->name = t.value;
            return e;
        }
        if (t.kind == K::string) {
            std::string text = next().value;
            while (peek().kind == K::string) text += next().value;  // adjacent literals concatenate
            return literal(Value(std::move(text)));
        }
        if (t.kind == K::integer) {
            errno = 0;
            const long long v = std::strtoll(t.value.c_str(), nullptr, 10);
            if (errno == ERANGE) fail(Status::invalid_argument, "chat template line {}: integer {} is too large", t.line, t.value);
            next();
            return literal(Value(int64_t(v)));
        }
        if (t.kind == K::floating) {
            next();
            return literal(Value(std::strtod(t.value.c_str(), nullptr)));
        }
        if (skip_op("(")) {
            if (skip_op(")")) return expr(Expr::Kind::list);  // ()
            ExprPtr first = expression();
            if (!peek_op(",")) {
                expect_op(")");
                return first;
            }
            ExprPtr tuple = expr(Expr::Kind::list);
            add(*tuple, std::move(first));
            while (skip_op(",")) {
                if (peek_op(")")) break;
                add(*tuple, expression());
            }
            expect_op(")");
            return tuple;
        }
        if (skip_op("[")) {
            ExprPtr list = expr(Expr::Kind::list);
            while (!skip_op("]")) {
                if (!list->operands.empty()) {
                    expect_op(",");
                    if (skip_op("]")) break;
                }
                add(*list, expression());
            }
            return list;
        }
        if (skip_op("{")) {
            ExprPtr dict = expr(Expr::Kind::dict);
            while (!skip_op("}")) {
                if (!dict->operands.empty()) {
                    expect_op(",");
                    if (skip_op("}")) break;
                }
                add(*dict, expression());
                expect_op(":");
                add(*dict, expression());
            }
            return dict;
        }
        fail(Status::invalid_argument, "chat template line {}: unexpected {}", t.line, describe(t));
    }

    ExprPtr postfix(ExprPtr value) {
        while (true) {
            if (skip_op(".")) {
                const Token& t = next();
                if (t.kind == K::name) {
                    ExprPtr e = expr(Expr::Kind::attribute);
                    e->name = t.value;
                    add(*e, std::move(value));
                    value = std::move(e);
                } else if (t.kind == K::integer) {  // foo.0 is foo[0]
                    ExprPtr e = expr(Expr::Kind::item);
                    add(*e, std::move(value));
                    add(*e, literal(Value(int64_t(std::strtoll(t.value.c_str(), nullptr, 10)))));
                    value = std::move(e);
                } else {
                    fail(Status::invalid_argument, "chat template line {}: expected an attribute name after '.'", t.line);
                }
            } else if (skip_op("[")) {
                value = subscript(std::move(value));
            } else if (peek_op("(")) {
                value = call(Expr::Kind::call, std::move(value));
            } else {
                return value;
            }
        }
    }

    ExprPtr subscript(ExprPtr target) {
        Deeper deeper(*this);
        ExprPtr bounds[3];
        int colons = 0;
        while (!peek_op("]")) {
            if (skip_op(":")) {
                if (++colons > 2) fail(Status::invalid_argument, "chat template line {}: a slice has at most two ':'", peek().line);
                continue;
            }
            if (bounds[colons]) fail(Status::invalid_argument, "chat template line {}: expected ':' or ']' in a subscript", peek().line);
            bounds[colons] = expression();
        }
        next();
        if (colons == 0) {
            if (!bounds[0]) fail(Status::invalid_argument, "chat template line {}: an empty subscript", peek().line);
            ExprPtr e = expr(Expr::Kind::item);
            add(*e, std::move(target));
            add(*e, std::move(bounds[0]));
            return e;
        }
        ExprPtr e = expr(Expr::Kind::slice);
        add(*e, std::move(target));
        for (auto& bound : bounds) add(*e, std::move(bound));
        return e;
    }

    // target(args...) for calls, or the arguments of a filter or test named already.
    ExprPtr call(Expr::Kind kind, ExprPtr target, std::string name = {}) {
        ExprPtr e = expr(kind);
        e->name = std::move(name);
        add(*e, std::move(target));
        if (!skip_op("(")) return e;
        while (!skip_op(")")) {
            if (e->operands.size() > 1) {
                expect_op(",");
                if (skip_op(")")) break;
            }
            if (peek().kind == K::name && peek(1).kind == K::op && peek(1).value == "=") {
                e->keywords.push_back(next().value);
                next();
            } else if (!e->keywords.empty()) {
                fail(Status::invalid_argument, "chat template line {}: a positional argument after a keyword argument", peek().line);
            }
            add(*e, expression());
        }
        return e;
    }

    ExprPtr filters_and_tests(ExprPtr value) {
        while (true) {
            if (skip_op("|")) {
                std::string name = dotted_name();
                value = call(Expr::Kind::filter, std::move(value), std::move(name));
            } else if (skip_name("is")) {
                const bool negated = skip_name("not");
                std::string name = dotted_name();
                if (peek_op("(")) {
                    value = call(Expr::Kind::test, std::move(value), std::move(name));
                } else {
                    ExprPtr e = expr(Expr::Kind::test);
                    e->name = std::move(name);
                    add(*e, std::move(value));
                    // Jinja's one-argument form, `x is divisibleby 3`.
                    const Token& t = peek();
                    const bool argument =
                        (t.kind == K::name && t.value != "else" && t.value != "or" && t.value != "and" && t.value != "is") ||
                        t.kind == K::string || t.kind == K::integer || t.kind == K::floating || peek_op("[") || peek_op("{");
                    if (argument) add(*e, postfix(primary()));
                    value = std::move(e);
                }
                value->negated = negated;
            } else if (peek_op("(")) {
                value = call(Expr::Kind::call, std::move(value));
            } else {
                return value;
            }
        }
    }

    std::string dotted_name() {
        std::string name = expect(K::name, "a filter or test name").value;
        while (peek_op(".")) {
            next();
            name += "." + expect(K::name, "a name").value;
        }
        return name;
    }

    // --- helpers ---

    struct Deeper {
        explicit Deeper(Parser& p) : parser(p) {
            if (++parser.depth_ > max_nesting)
                fail(Status::invalid_argument, "chat template line {}: nested deeper than {} levels", parser.peek().line, max_nesting);
        }
        ~Deeper() { --parser.depth_; }
        Parser& parser;
    };

    const Token& peek(size_t ahead = 0) const {
        const size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
        return tokens_[i];
    }
    const Token& next() {
        const Token& t = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) ++pos_;
        return t;
    }
    bool peek_op(std::string_view op) const { return peek().kind == K::op && peek().value == op; }
    bool skip_op(std::string_view op) {
        if (!peek_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(std::string_view name) {
        if (peek().kind != K::name || peek().value != name) return false;
        next();
        return true;
    }
    const Token& expect(K kind, std::string_view what) {
        if (peek().kind != kind) fail(Status::invalid_argument, "chat template line {}: expected {}, found {}", peek().line, what, describe(peek()));
        return next();
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op)) fail(Status::invalid_argument, "chat template line {}: expected '{}', found {}", peek().line, op, describe(peek()));
    }

    static std::string describe(const Token& t) {
        switch (t.kind) {
            case K::text: return "text";
            case K::variable_begin: return "'{{'";
            case K::variable_end: return "'}}'";
            case K::block_begin: return "'{%'";
            case K::block_end: return "'%}'";
            case K::end: return "the end of the template";
            case K::string: return "a string";
            default: return "'" + t.value + "'";
        }
    }

    // Chains (a + b + c, x|f|g, a.b.c) are parsed in loops but evaluated recursively: every
    // expression's height is bounded, whatever the nesting of the text.
    void add(Expr& parent, ExprPtr child) const {
        if (child) {
            parent.height = std::max(parent.height, child->height + 1);
            if (parent.height > max_expression_height)
                fail(Status::invalid_argument, "chat template line {}: an expression deeper than {} levels", parent.line,
                     max_expression_height);
        }
        parent.operands.push_back(std::move(child));
    }

    Node node(Node::Kind kind) const {
        Node n;
        n.kind = kind;
        n.line = peek().line;
        return n;
    }
    ExprPtr expr(Expr::Kind kind) const {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = peek().line;
        return e;
    }
    ExprPtr literal(Value value) const {
        ExprPtr e = expr(Expr::Kind::literal);
        e->value = std::move(value);
        return e;
    }
    ExprPtr binary(Expr::Kind kind, ExprPtr left, ExprPtr right, std::string op = {}) const {
        ExprPtr e = expr(kind);
        e->name = std::move(op);
        add(*e, std::move(left));
        add(*e, std::move(right));
        return e;
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
};

}  // namespace

Body parse(std::string_view source) { return Parser(tokenize(source)).parse_template(); }

}  // namespace unmask::jinja
