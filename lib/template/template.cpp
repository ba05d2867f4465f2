// The renderer: walks the parsed template (recursion bounded by the parser's nesting limits and
// the macro call depth) with Jinja2's scoping: a for loop's body has its own scope, so `set` in
// a loop is not seen after it (templates use namespace() for that); if blocks share their
// enclosing scope; a macro sees its arguments, the template's top level and the globals.
#include "template/template.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "template/builtins.hpp"

namespace unmask::jinja {
namespace {

[[noreturn]] void render_error(int line, const std::string& message) {
    fail(Status::invalid_argument, "chat template line {}: {}", line, message);
}

using Frame = std::vector<std::pair<std::string, Value>>;

class Renderer {
public:
    Renderer(const Dict& variables, const RenderLimits& limits) : limits_(limits), globals_(global_functions()) {
        root_.assign(variables.items.begin(), variables.items.end());
        frames_.push_back(&root_);
    }

    std::string run(const Body& body) {
        std::string out;
        out_ = &out;
        render(body);
        return out;
    }

private:
    enum class Flow { normal, stop_loop, next_iteration };

    // Statements, expressions and macro calls nest at most max_frames deep together, whatever
    // combination a template uses: the renderer's stack stays small.
    static constexpr int max_frames = 768;
    struct FrameGuard {
        explicit FrameGuard(Renderer& r) : renderer(r) {
            if (++renderer.frames_deep_ > max_frames)
                fail(Status::invalid_argument, "chat template: rendering nests deeper than {} levels", max_frames);
        }
        ~FrameGuard() { --renderer.frames_deep_; }
        Renderer& renderer;
    };

    Flow render(const Body& body) {
        const FrameGuard guard(*this);
        for (const Node& node : body) {
            step();
            const Flow flow = render(node);
            if (flow != Flow::normal) return flow;
        }
        return Flow::normal;
    }

    Flow render(const Node& node) {
        switch (node.kind) {
            case Node::Kind::text: emit(node.text); break;
            case Node::Kind::output: emit(eval(*node.expression).str()); break;
            case Node::Kind::if_chain:
                for (const auto& [condition, body] : node.branches)
                    if (eval(*condition).truthy()) return render(body);
                return render(node.otherwise);
            case Node::Kind::for_loop: render_loop(node); break;
            case Node::Kind::set: {
                Value value = eval(*node.expression);
                if (!node.attribute.empty()) {
                    Value target = lookup(node.targets[0]);
                    if (target.kind() != Value::Kind::name_space)
                        render_error(node.line, fmt::format("cannot set attribute '{}' of a {}: only a namespace() takes attributes",
                                                            node.attribute, target.type_name()));
                    if (holds_namespace(value, 0))  // a namespace inside a namespace could make a cycle
                        render_error(node.line, "a namespace attribute cannot hold a namespace");
                    target.dict().set(node.attribute, std::move(value));
                } else if (node.targets.size() == 1) {
                    set_local(node.targets[0], std::move(value));
                } else {
                    unpack(node, node.targets, value);
                }
                break;
            }
            case Node::Kind::set_block: set_local(node.targets[0], Value(capture(node.body))); break;
            case Node::Kind::macro: define_macro(node); break;
            case Node::Kind::loop_break:
                if (loops_ == 0) render_error(node.line, "break outside a loop");
                return Flow::stop_loop;
            case Node::Kind::loop_continue:
                if (loops_ == 0) render_error(node.line, "continue outside a loop");
                return Flow::next_iteration;
            case Node::Kind::scope: return render(node.body);
        }
        return Flow::normal;
    }

    void render_loop(const Node& node) {
        const Value iterable = eval(*node.expression);
        List items;
        switch (iterable.kind()) {
            case Value::Kind::undefined: break;
            case Value::Kind::list: items = iterable.list(); break;
            case Value::Kind::dict:
                for (const auto& [key, _] : iterable.dict().items) items.emplace_back(key);
                break;
            case Value::Kind::string:
                if (code_point_count(iterable.as_string()) > max_list_items)
                    render_error(node.line, fmt::format("a loop over more than {} characters", max_list_items));
                for (std::string& cp : code_points(iterable.as_string())) items.emplace_back(std::move(cp));
                break;
            default: render_error(node.line, fmt::format("a {} is not iterable", iterable.type_name()));
        }
        steps_ += items.size();  // the copy
        Frame frame;
        frames_.push_back(&frame);
        ++loops_;
        if (node.condition) {  // {% for x in xs if c %}: loop.* counts the items kept
            List kept;
            for (const Value& item : items) {
                step();
                bind(node, item);
                if (eval(*node.condition).truthy()) kept.push_back(item);
            }
            items = std::move(kept);
        }
        const int64_t length = int64_t(items.size());
        auto index = std::make_shared<int64_t>(0);
        const Value cycle = Value::callable("loop.cycle", [index](Arguments& args) -> Value {
            if (args.positional.empty()) fail(Status::invalid_argument, "chat template: loop.cycle needs at least one value");
            return args.positional[size_t(*index) % args.positional.size()];
        });
        for (int64_t i = 0; i < length; ++i) {
            *index = i;
            step();
            bind(node, items[size_t(i)]);
            Dict loop;
            loop.set("index", Value(i + 1));
            loop.set("index0", Value(i));
            loop.set("revindex", Value(length - i));
            loop.set("revindex0", Value(length - i - 1));
            loop.set("first", Value(i == 0));
            loop.set("last", Value(i == length - 1));
            loop.set("length", Value(length));
            loop.set("depth", Value(int64_t(1)));
            loop.set("depth0", Value(int64_t(0)));
            if (i > 0) loop.set("previtem", items[size_t(i - 1)]);
            if (i + 1 < length) loop.set("nextitem", items[size_t(i + 1)]);
            loop.set("cycle", cycle);
            set_local("loop", Value(std::move(loop)));
            if (render(node.body) == Flow::stop_loop) break;
        }
        --loops_;
        frames_.pop_back();
        if (length == 0) render(node.otherwise);
    }

    // Lists and dicts nest at most Value::max_depth deep, so this recursion is bounded.
    static bool holds_namespace(const Value& value, int depth) {
        if (value.kind() == Value::Kind::name_space) return true;
        if (depth > Value::max_depth) return false;
        if (value.is_list())
            for (const Value& element : value.list())
                if (holds_namespace(element, depth + 1)) return true;
        if (value.is_dict())
            for (const auto& [key, element] : value.dict().items)
                if (holds_namespace(element, depth + 1)) return true;
        return false;
    }

    void bind(const Node& node, const Value& item) {
        if (node.targets.size() == 1) set_local(node.targets[0], item);
        else unpack(node, node.targets, item);
    }

    void unpack(const Node& node, const std::vector<std::string>& targets, const Value& value) {
        if (!value.is_list() || value.list().size() != targets.size())
            render_error(node.line, fmt::format("cannot unpack a {} into {} names", value.type_name(), targets.size()));
        for (size_t i = 0; i < targets.size(); ++i) set_local(targets[i], value.list()[i]);
    }

    void set_local(const std::string& name, Value value) {
        Frame& frame = *frames_.back();
        for (auto& [key, existing] : frame)
            if (key == name) {
                existing = std::move(value);
                return;
            }
        frame.emplace_back(name, std::move(value));
    }

    Value lookup(const std::string& name) const {
        for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame)
            for (const auto& [key, value] : **frame)
                if (key == name) return value;
        if (const Value* global = globals_.find(name)) return *global;
        return Value();
    }

    std::string capture(const Body& body) {
        std::string captured;
        std::string* outer = out_;
        out_ = &captured;
        render(body);
        out_ = outer;
        return captured;
    }

    void define_macro(const Node& node) {
        const Node* macro = &node;
        set_local(node.targets[0], Value::callable(node.targets[0], [this, macro](Arguments& args) -> Value {
            if (++call_depth_ > limits_.max_call_depth)
                render_error(macro->line, fmt::format("macros call each other deeper than {} levels", limits_.max_call_depth));
            if (args.positional.size() > macro->parameters.size())
                render_error(macro->line, fmt::format("macro '{}' takes {} arguments, given {}", macro->targets[0],
                                                      macro->parameters.size(), args.positional.size()));
            // The macro's scope: the template's top level, then its arguments.
            Frame frame;
            std::vector<Frame*> caller_frames = {&root_, &frame};
            std::swap(frames_, caller_frames);
            const int caller_loops = loops_;
            loops_ = 0;
            for (size_t i = 0; i < macro->parameters.size(); ++i) {
                const auto& [name, fallback] = macro->parameters[i];
                Value value;
                if (i < args.positional.size()) {
                    value = args.positional[i];
                } else {
                    bool given = false;
                    for (const auto& [key, v] : args.keyword)
                        if (key == name) {
                            value = v;
                            given = true;
                        }
                    if (!given && fallback) value = eval(*fallback);
                }
                set_local(name, std::move(value));
            }
            std::string result = capture(macro->body);
            std::swap(frames_, caller_frames);
            loops_ = caller_loops;
            --call_depth_;
            return Value(std::move(result));
        }));
    }

    // --- expressions ---

    Value eval(const Expr& e) {
        step();
        const FrameGuard guard(*this);
        using K = Expr::Kind;
        switch (e.kind) {
            case K::literal: return e.value;
            case K::name: return lookup(e.name);
            case K::list: {
                List list;
                for (const auto& operand : e.operands) list.push_back(eval(*operand));
                return Value(std::move(list));
            }
            case K::dict: {
                Dict dict;
                for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
                    const Value key = eval(*e.operands[i]);
                    if (!key.is_string()) render_error(e.line, "dict keys must be strings here");
                    dict.set(key.as_string(), eval(*e.operands[i + 1]));
                }
                return Value(std::move(dict));
            }
            case K::attribute: return attribute(e, eval(*e.operands[0]), e.name);
            case K::item: return item(e, eval(*e.operands[0]), eval(*e.operands[1]));
            case K::slice: return account(e, slice(e));
            case K::call: return account(e, call(e));
            case K::filter: {
                const Value value = eval(*e.operands[0]);
                Arguments args = arguments(e);
                return account(e, apply_filter(e.name, value, args));
            }
            case K::test: {
                const Value value = eval(*e.operands[0]);
                Arguments args = arguments(e);
                return Value(apply_test(e.name, value, args) != e.negated);
            }
            case K::logical_not: return Value(!eval(*e.operands[0]).truthy());
            case K::negate:
            case K::unary_plus: {
                const Value v = eval(*e.operands[0]);
                if (!v.is_number()) render_error(e.line, fmt::format("bad operand for unary {}: {}", e.kind == K::negate ? '-' : '+', v.type_name()));
                if (e.kind == K::unary_plus) return v.kind() == Value::Kind::boolean ? Value(v.as_int()) : v;
                if (v.kind() == Value::Kind::floating) return Value(-v.as_double());
                if (v.as_int() == INT64_MIN) render_error(e.line, "integer overflow");
                return Value(-v.as_int());
            }
            case K::binary: return account(e, binary(e, e.name, eval(*e.operands[0]), eval(*e.operands[1])));
            case K::compare: {
                Value left = eval(*e.operands[0]);
                for (size_t i = 0; i < e.ops.size(); ++i) {
                    Value right = eval(*e.operands[i + 1]);
                    if (!compare(e, e.ops[i], left, right)) return Value(false);
                    left = std::move(right);
                }
                return Value(true);
            }
            case K::logical_and: {
                Value left = eval(*e.operands[0]);
                return left.truthy() ? eval(*e.operands[1]) : left;
            }
            case K::logical_or: {
                Value left = eval(*e.operands[0]);
                return left.truthy() ? left : eval(*e.operands[1]);
            }
            case K::conditional:
                if (eval(*e.operands[0]).truthy()) return eval(*e.operands[1]);
                return e.operands[2] ? eval(*e.operands[2]) : Value();
        }
        return Value();
    }

    Arguments arguments(const Expr& e) {
        Arguments args;
        const size_t keyword_start = e.operands.size() - e.keywords.size();
        for (size_t i = 1; i < e.operands.size(); ++i) {
            Value v = eval(*e.operands[i]);
            if (i < keyword_start) args.positional.push_back(std::move(v));
            else args.keyword.emplace_back(e.keywords[i - keyword_start], std::move(v));
        }
        return args;
    }

    Value call(const Expr& e) {
        const Expr& callee = *e.operands[0];
        if (callee.kind == Expr::Kind::attribute) {
            const Value object = eval(*callee.operands[0]);
            if (object.is_undefined()) undefined_error(callee, object);
            if (has_method(object, callee.name)) {
                Arguments args = arguments(e);
                return call_method(object, callee.name, args);
            }
            const Value function = attribute(callee, object, callee.name);
            return invoke(e, function, callee.name);
        }
        return invoke(e, eval(callee), callee.kind == Expr::Kind::name ? callee.name : "expression");
    }

    Value invoke(const Expr& e, const Value& function, const std::string& name) {
        if (function.kind() != Value::Kind::callable)
            render_error(e.line, function.is_undefined() ? fmt::format("'{}' is undefined", name)
                                                         : fmt::format("a {} is not callable", function.type_name()));
        Arguments args = arguments(e);
        return function.call(args);
    }

    [[noreturn]] void undefined_error(const Expr& e, const Value&) {
        const Expr& target = *e.operands[0];
        render_error(e.line, target.kind == Expr::Kind::name ? fmt::format("'{}' is undefined", target.name)
                                                              : std::string("an undefined value has no attributes or items"));
    }

    Value attribute(const Expr& e, const Value& object, const std::string& name) {
        if (object.is_undefined()) undefined_error(e, object);
        if (object.is_dict() || object.kind() == Value::Kind::name_space) {
            const Value* found = object.dict().find(name);
            return found ? *found : Value();
        }
        return Value();
    }

    Value item(const Expr& e, const Value& object, const Value& key) {
        if (object.is_undefined()) undefined_error(e, object);
        if (object.is_dict() || object.kind() == Value::Kind::name_space) {
            if (!key.is_string()) return Value();
            const Value* found = object.dict().find(key.as_string());
            return found ? *found : Value();
        }
        if ((object.is_list() || object.is_string()) && (key.kind() == Value::Kind::integer || key.kind() == Value::Kind::boolean)) {
            int64_t i = key.as_int();
            if (object.is_list()) {
                const int64_t n = int64_t(object.list().size());
                if (i < 0) i += n;
                return i >= 0 && i < n ? object.list()[size_t(i)] : Value();
            }
            const std::string& s = object.as_string();
            steps_ += s.size() / 64;  // a scan of the string
            if (i < 0) i += int64_t(code_point_count(s));
            return i >= 0 ? code_point_at(s, size_t(i)) : Value();
        }
        return Value();
    }

    Value slice(const Expr& e) {
        const Value object = eval(*e.operands[0]);
        const Value start = e.operands[1] ? eval(*e.operands[1]) : Value::none();
        const Value stop = e.operands[2] ? eval(*e.operands[2]) : Value::none();
        const Value step_value = e.operands[3] ? eval(*e.operands[3]) : Value::none();
        if (object.is_list()) {
            List out;
            for (const size_t i : slice_positions(object.list().size(), start, stop, step_value)) out.push_back(object.list()[i]);
            return Value(std::move(out));
        }
        if (object.is_string()) {
            const std::vector<std::string> points = code_points(object.as_string());
            std::string out;
            for (const size_t i : slice_positions(points.size(), start, stop, step_value)) out += points[i];
            return Value(std::move(out));
        }
        if (object.is_undefined()) undefined_error(e, object);
        render_error(e.line, fmt::format("a {} cannot be sliced", object.type_name()));
    }

    bool compare(const Expr& e, const std::string& op, const Value& a, const Value& b) {
        if (op == "==") return equal(a, b);
        if (op == "!=") return !equal(a, b);
        if (op == "in" || op == "not in") {
            bool found = false;
            if (b.is_string()) {
                if (!a.is_string()) render_error(e.line, fmt::format("'in <string>' requires a string, not a {}", a.type_name()));
                found = b.as_string().find(a.as_string()) != std::string::npos;
            } else if (b.is_list()) {
                for (const Value& item : b.list()) found = found || equal(item, a);
            } else if (b.is_dict()) {
                found = a.is_string() && b.dict().find(a.as_string()) != nullptr;
            } else if (!b.is_undefined()) {
                render_error(e.line, fmt::format("a {} is not a container", b.type_name()));
            }
            return found == (op == "in");
        }
        const int order = three_way(e, a, b);
        if (op == "<") return order < 0;
        if (op == ">") return order > 0;
        if (op == "<=") return order <= 0;
        return order >= 0;
    }

    int three_way(const Expr& e, const Value& a, const Value& b) {
        if (a.is_number() && b.is_number()) {
            if (a.kind() != Value::Kind::floating && b.kind() != Value::Kind::floating) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
            return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double();
        }
        if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() > b.as_string();
        if (a.is_list() && b.is_list()) {
            const List& x = a.list();
            const List& y = b.list();
            for (size_t i = 0; i < std::min(x.size(), y.size()); ++i)
                if (!equal(x[i], y[i])) return three_way(e, x[i], y[i]);
            return x.size() < y.size() ? -1 : x.size() > y.size();
        }
        render_error(e.line, fmt::format("cannot order a {} and a {}", a.type_name(), b.type_name()));
    }

    Value binary(const Expr& e, const std::string& op, const Value& a, const Value& b) {
        if (op == "~") return bounded(e, a.str() + b.str());
        auto type_error = [&]() -> Value {
            render_error(e.line, fmt::format("unsupported operands for {}: {} and {}", op, a.type_name(), b.type_name()));
        };
        if (op == "+") {
            if (a.is_string() && b.is_string()) return bounded(e, a.as_string() + b.as_string());
            if (a.is_list() && b.is_list()) {
                if (a.list().size() + b.list().size() > max_list_items)
                    render_error(e.line, fmt::format("a list of more than {} items", max_list_items));
                List out = a.list();
                out.insert(out.end(), b.list().begin(), b.list().end());
                return Value(std::move(out));
            }
        }
        if (op == "*" && (a.is_string() || a.is_list() || b.is_string() || b.is_list())) {
            const Value& sequence = a.is_string() || a.is_list() ? a : b;
            const Value& count = &sequence == &a ? b : a;
            if (count.kind() != Value::Kind::integer && count.kind() != Value::Kind::boolean) return type_error();
            const int64_t n = std::max<int64_t>(0, count.as_int());
            const size_t unit = sequence.is_string() ? sequence.as_string().size() : sequence.list().size();
            const uint64_t limit = sequence.is_string() ? limits_.max_output_bytes : max_list_items;
            // An empty sequence repeats to an empty one whatever the count: no loop over the count.
            const int64_t copies = unit ? n : 0;
            if (uint64_t(copies) > limit / std::max<size_t>(unit, 1)) render_error(e.line, "a repetition larger than the size limit");
            if (sequence.is_string()) {
                std::string out;
                out.reserve(size_t(copies) * unit);
                for (int64_t i = 0; i < copies; ++i) out += sequence.as_string();
                return Value(std::move(out));
            }
            List out;
            out.reserve(size_t(copies) * unit);
            for (int64_t i = 0; i < copies; ++i) out.insert(out.end(), sequence.list().begin(), sequence.list().end());
            return Value(std::move(out));
        }
        if (!a.is_number() || !b.is_number()) return type_error();
        const bool floating = a.kind() == Value::Kind::floating || b.kind() == Value::Kind::floating;
        if (op == "/") {
            if (b.as_double() == 0) render_error(e.line, "division by zero");
            return Value(a.as_double() / b.as_double());
        }
        if (floating) {
            const double x = a.as_double(), y = b.as_double();
            if (op == "+") return Value(x + y);
            if (op == "-") return Value(x - y);
            if (op == "*") return Value(x * y);
            if (op == "**") return Value(std::pow(x, y));
            if (y == 0) render_error(e.line, "division by zero");
            if (op == "//") return Value(std::floor(x / y));
            double r = std::fmod(x, y);
            if (r != 0 && ((r < 0) != (y < 0))) r += y;
            return Value(r);
        }
        const int64_t x = a.as_int(), y = b.as_int();
        int64_t r = 0;
        bool overflow = false;
        if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
        else if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
        else if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
        else if (op == "**") {
            if (y < 0) return Value(std::pow(double(x), double(y)));
            r = 1;
            for (int64_t i = 0; i < y && !overflow; ++i) {
                step();
                overflow = __builtin_mul_overflow(r, x, &r);
            }
        } else {
            if (y == 0) render_error(e.line, "division by zero");
            if (x == INT64_MIN && y == -1) overflow = true;
            else {
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) {
                    --q;
                    m += y;
                }
                r = op == "//" ? q : m;
            }
        }
        if (overflow) render_error(e.line, "integer overflow");
        return Value(r);
    }

    // Work in proportion to what a result holds (copying a list or a long string is not one
    // step), and the size limits of one value.
    Value account(const Expr& e, Value value) {
        size_t units = 0;
        if (value.is_string()) {
            if (value.as_string().size() > max_string_bytes) render_error(e.line, "a string larger than the output limit");
            units = value.as_string().size() / 64;
        } else if (value.is_list()) {
            if (value.list().size() > max_list_items)
                render_error(e.line, fmt::format("a list of more than {} items", max_list_items));
            units = value.list().size();
        }
        steps_ += units;
        step();
        return value;
    }

    Value bounded(const Expr& e, std::string text) const {
        if (text.size() > limits_.max_output_bytes) render_error(e.line, "a string larger than the output limit");
        return Value(std::move(text));
    }

    void emit(std::string_view text) {
        written_ += text.size();
        if (written_ > limits_.max_output_bytes)
            fail(Status::invalid_argument, "chat template: the output passed its limit of {} bytes", limits_.max_output_bytes);
        out_->append(text);
    }

    void step() {
        if (++steps_ > limits_.max_steps)
            fail(Status::invalid_argument, "chat template: rendering passed its limit of {} steps", limits_.max_steps);
    }

    const RenderLimits& limits_;
    Dict globals_;
    Frame root_;
    std::vector<Frame*> frames_;
    std::string* out_ = nullptr;
    size_t written_ = 0;
    uint64_t steps_ = 0;
    int loops_ = 0;
    int call_depth_ = 0;
    int frames_deep_ = 0;
};

}  // namespace

Template::Template(std::string_view source) {
    if (source.size() > max_source_bytes)
        fail(Status::invalid_argument, "chat template: {} bytes; templates are limited to {}", source.size(), max_source_bytes);
    // Strings are text, as in Python: every operation on them may assume valid UTF-8.
    if (const auto bad = find_invalid_utf8(source))
        fail(Status::invalid_argument, "chat template: not valid UTF-8 (byte {})", *bad);
    body_ = parse(source);
}

std::string Template::render(const Dict& variables, const RenderLimits& limits) const {
    return Renderer(variables, limits).run(body_);
}

}  // namespace unmask::jinja
