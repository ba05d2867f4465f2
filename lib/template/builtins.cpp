// Semantics follow Python 3 and Jinja2 3.1 (jinja2/filters.py, jinja2/tests.py, the str methods);
// tojson is Hugging Face's override (transformers' chat-template environment), not Jinja's
// HTML-escaping one. Case mapping (upper, lower, title, capitalize) covers ASCII only.
#include "template/builtins.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>

#include "core/error.hpp"
#include "core/utf8.hpp"

namespace unmask::jinja {
namespace {

[[noreturn]] void type_error(std::string_view what, const Value& value) {
    fail(Status::invalid_argument, "chat template: {} does not take a {}", what, value.type_name());
}

// Positional argument i, else keyword `name`, else `fallback`.
Value argument(Arguments& arguments, size_t i, std::string_view name, Value fallback = {}) {
    if (i < arguments.positional.size()) return arguments.positional[i];
    for (const auto& [key, value] : arguments.keyword)
        if (key == name) return value;
    return fallback;
}

const std::string& string_argument(const Value& value, std::string_view what) {
    if (!value.is_string()) type_error(what, value);
    return value.as_string();
}

// Python's str.isspace() code points.
bool is_python_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

uint32_t decode(std::string_view cp) {
    size_t i = 0;
    return next_code_point(cp, i);
}

// str.strip/lstrip/rstrip: `chars` None strips whitespace, else any of its code points.
std::string strip(const std::string& text, const Value& chars, bool left, bool right) {
    const std::vector<std::string> points = code_points(text);
    std::vector<std::string> set;
    if (!chars.is_none() && !chars.is_undefined()) set = code_points(string_argument(chars, "strip"));
    auto strippable = [&](const std::string& cp) {
        return chars.is_none() || chars.is_undefined() ? is_python_space(decode(cp))
                                                        : std::find(set.begin(), set.end(), cp) != set.end();
    };
    size_t begin = 0, end = points.size();
    if (left)
        while (begin < end && strippable(points[begin])) ++begin;
    if (right)
        while (end > begin && strippable(points[end - 1])) --end;
    std::string out;
    for (size_t i = begin; i < end; ++i) out += points[i];
    return out;
}

// str.split(sep=None, maxsplit=-1).
Value split(const std::string& text, const Value& separator, int64_t max_split) {
    List parts;
    if (separator.is_none() || separator.is_undefined()) {
        const std::vector<std::string> points = code_points(text);
        size_t i = 0;
        while (true) {
            while (i < points.size() && is_python_space(decode(points[i]))) ++i;
            if (i == points.size()) break;
            if (max_split >= 0 && int64_t(parts.size()) == max_split) {
                std::string rest;
                for (size_t k = i; k < points.size(); ++k) rest += points[k];
                // Python keeps the remainder as it is, trailing whitespace stripped.
                parts.emplace_back(strip(rest, Value::none(), false, true));
                break;
            }
            std::string word;
            while (i < points.size() && !is_python_space(decode(points[i]))) word += points[i++];
            parts.emplace_back(std::move(word));
        }
        return Value(std::move(parts));
    }
    const std::string& sep = string_argument(separator, "split");
    if (sep.empty()) fail(Status::invalid_argument, "chat template: split: empty separator");
    size_t from = 0;
    while (true) {
        const size_t at = (max_split < 0 || int64_t(parts.size()) < max_split) ? text.find(sep, from) : std::string::npos;
        if (at == std::string::npos) {
            parts.emplace_back(text.substr(from));
            break;
        }
        parts.emplace_back(text.substr(from, at - from));
        from = at + sep.size();
    }
    return Value(std::move(parts));
}

// Fails when a string being built passes max_string_bytes.
void check_size(const std::string& text, std::string_view what) {
    if (text.size() > max_string_bytes)
        fail(Status::invalid_argument, "chat template: {} makes a string larger than {} bytes", what, max_string_bytes);
}

std::string replace(const std::string& text, const std::string& old, const std::string& with, int64_t count) {
    std::string out;
    if (old.empty()) {  // Python inserts `with` around every code point
        const std::vector<std::string> points = code_points(text);
        int64_t done = 0;
        for (const std::string& cp : points) {
            if (count < 0 || done < count) {
                out += with;
                ++done;
            }
            out += cp;
            check_size(out, "replace");
        }
        if (count < 0 || done < count) out += with;
        return out;
    }
    size_t from = 0;
    for (int64_t done = 0; count < 0 || done < count; ++done) {
        const size_t at = text.find(old, from);
        if (at == std::string::npos) break;
        out.append(text, from, at - from).append(with);
        check_size(out, "replace");
        from = at + old.size();
    }
    return out.append(text, from);
}

std::string map_ascii(const std::string& text, int (*f)(int)) {
    std::string out = text;
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x80) c = char(f(static_cast<unsigned char>(c)));
    return out;
}

std::string capitalize(const std::string& text) {
    std::string out = map_ascii(text, [](int c) { return std::tolower(c); });
    if (!out.empty() && static_cast<unsigned char>(out[0]) < 0x80) out[0] = char(std::toupper(static_cast<unsigned char>(out[0])));
    return out;
}

std::string title(const std::string& text) {
    std::string out = text;
    bool previous_cased = false;
    for (char& c : out) {
        const unsigned char u = static_cast<unsigned char>(c);
        const bool alpha = u < 0x80 && std::isalpha(u);
        if (alpha) c = char(previous_cased ? std::tolower(u) : std::toupper(u));
        previous_cased = alpha;
    }
    return out;
}

bool starts_or_ends(const std::string& text, const Value& affix, bool start, std::string_view what) {
    if (affix.is_list()) {
        for (const Value& a : affix.list())
            if (starts_or_ends(text, a, start, what)) return true;
        return false;
    }
    const std::string& s = string_argument(affix, what);
    return start ? std::string_view(text).starts_with(s) : std::string_view(text).ends_with(s);
}

// Python's list(value) for what Jinja iterates.
List items_of(const Value& value, std::string_view what) {
    switch (value.kind()) {
        case Value::Kind::undefined: return {};
        case Value::Kind::list: return value.list();
        case Value::Kind::dict: {
            List keys;
            for (const auto& [key, _] : value.dict().items) keys.emplace_back(key);
            return keys;
        }
        case Value::Kind::string: {
            List chars;
            for (std::string& cp : code_points(value.as_string())) chars.emplace_back(std::move(cp));
            return chars;
        }
        default: type_error(what, value);
    }
}

// Jinja's attribute lookup for filter arguments like attribute="function.name".
Value attribute_path(const Value& value, const std::string& path) {
    Value current = value;
    size_t from = 0;
    while (from <= path.size()) {
        const size_t dot = path.find('.', from);
        const std::string part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
        if (current.is_dict()) {
            const Value* found = current.dict().find(part);
            current = found ? *found : Value();
        } else if (current.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
            const size_t i = std::stoul(part);
            current = i < current.list().size() ? current.list()[i] : Value();
        } else {
            current = Value();
        }
        if (dot == std::string::npos) break;
        from = dot + 1;
    }
    return current;
}

// Python's < for what sort compares.
bool less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
    fail(Status::invalid_argument, "chat template: cannot order {} and {}", a.type_name(), b.type_name());
}

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default: {
                const auto u = static_cast<unsigned char>(c);
                if (u >= 0x20 && (u < 0x80 || !ensure_ascii)) {
                    out += c;
                    break;
                }
                uint32_t code = u;
                if (u >= 0x80) {  // ensure_ascii: \uXXXX, as a surrogate pair above the BMP (valid UTF-8)
                    size_t next = i;
                    code = next_code_point(s, next);
                    i = std::max(next, i + 1) - 1;
                }
                char escape[16];
                if (code >= 0x10000)
                    std::snprintf(escape, sizeof escape, "\\u%04x\\u%04x", 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF));
                else
                    std::snprintf(escape, sizeof escape, "\\u%04x", code);
                out += escape;
            }
        }
    }
    out += '"';
}

void json_value(std::string& out, const Value& value, const JsonOptions& options, int level) {
    auto newline = [&](int at) {
        if (options.indent < 0) return;
        out += '\n';
        out.append(size_t(options.indent) * size_t(at), ' ');
        check_size(out, "tojson");
    };
    switch (value.kind()) {
        case Value::Kind::none: out += "null"; return;
        case Value::Kind::boolean: out += value.as_bool() ? "true" : "false"; return;
        case Value::Kind::integer: out += std::to_string(value.as_int()); return;
        case Value::Kind::floating: {
            const double d = value.as_double();
            out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : float_repr(d);
            return;
        }
        case Value::Kind::string: json_string(out, value.as_string(), options.ensure_ascii); return;
        case Value::Kind::list: {
            if (value.list().empty()) {
                out += "[]";
                return;
            }
            out += '[';
            bool first = true;
            for (const Value& element : value.list()) {
                if (!first) out += options.item_separator;
                first = false;
                newline(level + 1);
                json_value(out, element, options, level + 1);
                check_size(out, "tojson");
            }
            newline(level);
            out += ']';
            return;
        }
        case Value::Kind::dict: {
            if (value.dict().items.empty()) {
                out += "{}";
                return;
            }
            std::vector<const std::pair<std::string, Value>*> items;
            for (const auto& item : value.dict().items) items.push_back(&item);
            if (options.sort_keys)
                std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
            out += '{';
            bool first = true;
            for (const auto* item : items) {
                if (!first) out += options.item_separator;
                first = false;
                newline(level + 1);
                json_string(out, item->first, options.ensure_ascii);
                out += options.key_separator;
                json_value(out, item->second, options, level + 1);
                check_size(out, "tojson");
            }
            newline(level);
            out += '}';
            return;
        }
        default:
            fail(Status::invalid_argument, "chat template: tojson: a {} is not JSON serialisable", value.type_name());
    }
}

int64_t integer_argument(const Value& value, std::string_view what) {
    if (value.kind() != Value::Kind::integer && value.kind() != Value::Kind::boolean) type_error(what, value);
    return value.as_int();
}

std::string html_escape(const std::string& text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// Jinja's indent filter: every line but the first (unless `first`) gets `width` spaces; blank
// lines only when `blank`.
std::string indent_lines(const std::string& text, const Value& width, bool first, bool blank) {
    const int64_t spaces = width.is_string() ? 0 : std::clamp<int64_t>(integer_argument(width, "indent"), 0, int64_t(max_string_bytes));
    const std::string pad = width.is_string() ? width.as_string() : std::string(size_t(spaces), ' ');
    std::string out;
    size_t from = 0;
    bool first_line = true;
    while (true) {
        const size_t nl = text.find('\n', from);
        const std::string line = text.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
        if ((!first_line || first) && (blank || !line.empty())) out += pad;
        out += line;
        check_size(out, "indent");
        if (nl == std::string::npos) break;
        out += '\n';
        from = nl + 1;
        first_line = false;
    }
    return out;
}

}  // namespace

std::vector<std::string> code_points(std::string_view text) {
    std::vector<std::string> out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {  // valid UTF-8: continuation bytes follow their lead
        const size_t start = i++;
        while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
        out.emplace_back(text.substr(start, i - start));
    }
    return out;
}

size_t code_point_count(std::string_view text) {
    size_t n = 0;
    for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

Value code_point_at(const std::string& text, size_t index) {
    for (size_t i = 0, k = 0; i < text.size(); ++k) {
        size_t end = i + 1;
        while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
        if (k == index) return Value(text.substr(i, end - i));
        i = end;
    }
    return Value();
}

std::vector<size_t> slice_positions(size_t length, const Value& start, const Value& stop, const Value& step) {
    auto bound = [](const Value& v) { return v.is_none() || v.is_undefined(); };
    const int64_t n = int64_t(length);
    const int64_t s = bound(step) ? 1 : integer_argument(step, "a slice");
    if (s == 0) fail(Status::invalid_argument, "chat template: slice step cannot be zero");
    auto clamp = [&](const Value& v, int64_t fallback) {
        if (bound(v)) return fallback;
        int64_t i = integer_argument(v, "a slice");
        if (i < 0) i += n;
        if (s > 0) return std::clamp<int64_t>(i, 0, n);
        return std::clamp<int64_t>(i, -1, n - 1);
    };
    const int64_t first = clamp(start, s > 0 ? 0 : n - 1);
    const int64_t last = clamp(stop, s > 0 ? n : -1);
    std::vector<size_t> positions;
    // In __int128: a step near INT64_MAX must end the walk, not wrap around into the sequence.
    for (__int128 i = first; s > 0 ? i < last : i > last; i += s) positions.push_back(size_t(i));
    return positions;
}

std::string to_json(const Value& value, const JsonOptions& options) {
    std::string out;
    json_value(out, value, options, 0);
    return out;
}

Value apply_filter(std::string_view name, const Value& value, Arguments& args) {
    if (name == "length" || name == "count") {
        if (value.is_string()) return Value(int64_t(code_points(value.as_string()).size()));
        if (value.is_list()) return Value(int64_t(value.list().size()));
        if (value.is_dict()) return Value(int64_t(value.dict().items.size()));
        if (value.is_undefined()) return Value(int64_t(0));
        type_error("length", value);
    }
    if (name == "string") return Value(value.str());
    if (name == "safe") return value;
    if (name == "tojson") {  // Hugging Face's: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
        JsonOptions options;
        options.ensure_ascii = argument(args, 0, "ensure_ascii", Value(false)).truthy();
        const Value indent = argument(args, 1, "indent", Value::none());
        if (!indent.is_none()) {
            options.indent = int(std::clamp<int64_t>(integer_argument(indent, "tojson's indent"), 0, 1024));
            options.item_separator = ",";
        }
        const Value separators = argument(args, 2, "separators", Value::none());
        if (!separators.is_none()) {
            if (!separators.is_list() || separators.list().size() != 2)
                fail(Status::invalid_argument, "chat template: tojson's separators must be (item_separator, key_separator)");
            options.item_separator = string_argument(separators.list()[0], "tojson's separators");
            options.key_separator = string_argument(separators.list()[1], "tojson's separators");
        }
        options.sort_keys = argument(args, 3, "sort_keys", Value(false)).truthy();
        return Value(to_json(value, options));
    }
    if (name == "trim") return Value(strip(value.str(), argument(args, 0, "chars", Value::none()), true, true));
    if (name == "lower") return Value(map_ascii(value.str(), [](int c) { return std::tolower(c); }));
    if (name == "upper") return Value(map_ascii(value.str(), [](int c) { return std::toupper(c); }));
    if (name == "capitalize") return Value(capitalize(value.str()));
    if (name == "title") return Value(title(value.str()));
    if (name == "escape" || name == "e") return Value(html_escape(value.str()));
    if (name == "default" || name == "d") {
        const bool boolean = argument(args, 1, "boolean", Value(false)).truthy();
        const bool missing = boolean ? !value.truthy() : value.is_undefined();
        return missing ? argument(args, 0, "default_value", Value(std::string())) : value;
    }
    if (name == "first" || name == "last") {
        const List items = items_of(value, name);
        if (items.empty()) return Value();
        return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value(items_of(value, "list"));
    if (name == "reverse") {
        if (value.is_string()) {
            std::vector<std::string> points = code_points(value.as_string());
            std::string out;
            for (auto it = points.rbegin(); it != points.rend(); ++it) out += *it;
            return Value(std::move(out));
        }
        List items = items_of(value, "reverse");
        std::reverse(items.begin(), items.end());
        return Value(std::move(items));
    }
    if (name == "join") {
        const std::string separator = argument(args, 0, "d", Value(std::string())).str();
        const Value attribute = argument(args, 1, "attribute");
        std::string out;
        bool first = true;
        for (const Value& item : items_of(value, "join")) {
            if (!first) out += separator;
            first = false;
            out += (attribute.is_undefined() ? item : attribute_path(item, attribute.str())).str();
            check_size(out, "join");
        }
        return Value(std::move(out));
    }
    if (name == "replace") {
        const Value count = argument(args, 2, "count", Value::none());
        return Value(replace(value.str(), argument(args, 0, "old").str(), argument(args, 1, "new").str(),
                             count.is_none() ? -1 : integer_argument(count, "replace's count")));
    }
    if (name == "int") {
        // A float outside int64 (or NaN) has no int here; Python's would be a big integer.
        auto truncated = [&](double d) -> Value {
            if (!(d > -9.2e18 && d < 9.2e18)) return argument(args, 0, "default", Value(int64_t(0)));
            return Value(int64_t(d));
        };
        if (value.kind() == Value::Kind::floating) return truncated(value.as_double());
        if (value.is_number()) return Value(value.as_int());
        try {
            const std::string text = strip(value.str(), Value::none(), true, true);
            size_t used = 0;
            const long long i = std::stoll(text, &used, 10);
            if (used == text.size()) return Value(int64_t(i));
            return truncated(std::stod(text, &used));
        } catch (const std::exception&) {
            return argument(args, 0, "default", Value(int64_t(0)));
        }
    }
    if (name == "float") {
        if (value.is_number()) return Value(value.as_double());
        try {
            return Value(std::stod(value.str()));
        } catch (const std::exception&) {
            return argument(args, 0, "default", Value(0.0));
        }
    }
    if (name == "abs") {
        if (value.kind() == Value::Kind::floating) return Value(std::fabs(value.as_double()));
        if (value.is_number()) {
            if (value.as_int() == INT64_MIN) fail(Status::invalid_argument, "chat template: abs: integer overflow");
            return Value(value.as_int() < 0 ? -value.as_int() : value.as_int());
        }
        type_error("abs", value);
    }
    if (name == "round") {
        if (!value.is_number()) type_error("round", value);
        const int64_t precision = integer_argument(argument(args, 0, "precision", Value(int64_t(0))), "round");
        const std::string method = argument(args, 1, "method", Value("common")).str();
        const double scale = std::pow(10.0, double(precision));
        const double x = value.as_double() * scale;
        // "common" is Python's round(): halves to even, as nearbyint in the default rounding mode.
        const double r = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::nearbyint(x);
        return Value(r / scale);
    }
    if (name == "indent") {
        return Value(indent_lines(value.str(), argument(args, 0, "width", Value(int64_t(4))),
                                  argument(args, 1, "first", Value(false)).truthy(),
                                  argument(args, 2, "blank", Value(false)).truthy()));
    }
    if (name == "items") {
        if (value.is_undefined()) return Value(List{});
        if (!value.is_dict()) type_error("items", value);
        List pairs;
        for (const auto& [key, element] : value.dict().items) pairs.emplace_back(List{Value(key), element});
        return Value(std::move(pairs));
    }
    if (name == "map") {
        const Value attribute = argument(args, 99, "attribute");
        const Value fallback = argument(args, 99, "default");
        List out;
        for (const Value& item : items_of(value, "map")) {
            if (!attribute.is_undefined()) {
                Value v = attribute_path(item, attribute.str());
                out.push_back(v.is_undefined() && !fallback.is_undefined() ? fallback : v);
            } else {
                Arguments rest;
                rest.positional.assign(args.positional.begin() + std::min<size_t>(1, args.positional.size()), args.positional.end());
                const std::string& filter = string_argument(argument(args, 0, "filter"), "map");
                if (filter == "map") fail(Status::invalid_argument, "chat template: map cannot apply map");  // unbounded recursion
                out.push_back(apply_filter(filter, item, rest));
            }
        }
        return Value(std::move(out));
    }
    if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
        const bool by_attribute = name.ends_with("attr");
        const bool keep = name.starts_with("select");
        const size_t test_at = by_attribute ? 1 : 0;
        List out;
        for (const Value& item : items_of(value, name)) {
            const Value subject = by_attribute ? attribute_path(item, string_argument(argument(args, 0, "attribute"), name)) : item;
            bool passed;
            if (args.positional.size() <= test_at) {
                passed = subject.truthy();
            } else {
                Arguments rest;
                rest.positional.assign(args.positional.begin() + long(test_at) + 1, args.positional.end());
                passed = apply_test(string_argument(args.positional[test_at], name), subject, rest);
            }
            if (passed == keep) out.push_back(item);
        }
        return Value(std::move(out));
    }
    if (name == "sort") {
        List items = items_of(value, "sort");
        const bool reverse = argument(args, 0, "reverse", Value(false)).truthy();
        const bool case_sensitive = argument(args, 1, "case_sensitive", Value(false)).truthy();
        const Value attribute = argument(args, 2, "attribute");
        auto key = [&](const Value& v) {
            Value k = attribute.is_undefined() ? v : attribute_path(v, attribute.str());
            return k.is_string() && !case_sensitive ? Value(map_ascii(k.as_string(), [](int c) { return std::tolower(c); })) : k;
        };
        std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
            return reverse ? less(key(b), key(a)) : less(key(a), key(b));
        });
        return Value(std::move(items));
    }
    if (name == "unique") {
        List out;
        for (const Value& item : items_of(value, "unique")) {
            bool seen = false;
            for (const Value& kept : out) seen = seen || equal(kept, item);
            if (!seen) out.push_back(item);
        }
        return Value(std::move(out));
    }
    if (name == "sum") {
        bool floating = false;
        int64_t total = 0;
        double total_double = 0;
        for (const Value& item : items_of(value, "sum")) {
            if (!item.is_number()) type_error("sum", item);
            floating = floating || item.kind() == Value::Kind::floating;
            if (!floating && __builtin_add_overflow(total, item.as_int(), &total))
                fail(Status::invalid_argument, "chat template: sum: integer overflow");
            total_double += item.as_double();
        }
        return floating ? Value(total_double) : Value(total);
    }
    if (name == "min" || name == "max") {
        const List items = items_of(value, name);
        if (items.empty()) return Value();
        Value best = items.front();
        for (const Value& item : items)
            if (name == "min" ? less(item, best) : less(best, item)) best = item;
        return best;
    }
    fail(Status::invalid_argument, "chat template: no filter named '{}'", name);
}

bool apply_test(std::string_view name, const Value& value, Arguments& args) {
    using K = Value::Kind;
    if (name == "defined") return !value.is_undefined();
    if (name == "undefined") return value.is_undefined();
    if (name == "none") return value.is_none();
    if (name == "boolean") return value.kind() == K::boolean;
    if (name == "true") return value.kind() == K::boolean && value.as_bool();
    if (name == "false") return value.kind() == K::boolean && !value.as_bool();
    if (name == "integer") return value.kind() == K::integer;
    if (name == "float") return value.kind() == K::floating;
    if (name == "number") return value.is_number();
    if (name == "string") return value.is_string();
    if (name == "mapping") return value.is_dict();
    if (name == "iterable") return value.is_string() || value.is_list() || value.is_dict() || value.is_undefined();
    if (name == "sequence") return value.is_string() || value.is_list() || value.is_dict();
    if (name == "callable") return value.kind() == K::callable;
    if (name == "lower" || name == "upper") {
        const std::string s = value.str();
        bool cased = false;
        for (const char c : s) {
            if (name == "lower" ? std::isupper(static_cast<unsigned char>(c)) : std::islower(static_cast<unsigned char>(c))) return false;
            cased = cased || std::isalpha(static_cast<unsigned char>(c));
        }
        return cased;
    }
    const Value other = argument(args, 0, "value");
    if (name == "eq" || name == "equalto" || name == "==") return equal(value, other);
    if (name == "ne" || name == "!=") return !equal(value, other);
    if (name == "lt" || name == "<") return less(value, other);
    if (name == "gt" || name == ">") return less(other, value);
    if (name == "le" || name == "<=") return !less(other, value);
    if (name == "ge" || name == ">=") return !less(value, other);
    if (name == "sameas") return value.kind() == other.kind() && (value.identity() == other.identity() ? true : equal(value, other) && !value.is_list() && !value.is_dict());
    if (name == "odd" || name == "even") return (integer_argument(value, name) % 2 != 0) == (name == "odd");
    if (name == "divisibleby") {
        const int64_t d = integer_argument(other, "divisibleby");
        if (d == 0) fail(Status::invalid_argument, "chat template: divisibleby 0");
        return d == -1 || integer_argument(value, "divisibleby") % d == 0;  // INT64_MIN % -1 traps
    }
    if (name == "in") {
        if (other.is_string()) return other.as_string().find(value.str()) != std::string::npos;
        for (const Value& item : items_of(other, "in"))
            if (equal(item, value)) return true;
        return false;
    }
    fail(Status::invalid_argument, "chat template: no test named '{}'", name);
}

bool has_method(const Value& object, std::string_view name) {
    static constexpr std::string_view string_methods[] = {"strip", "lstrip", "rstrip", "split", "startswith", "endswith",
                                                         "upper", "lower", "title", "capitalize", "replace", "find",
                                                         "join", "count"};
    static constexpr std::string_view dict_methods[] = {"get", "items", "keys", "values"};
    if (object.is_string()) return std::find(std::begin(string_methods), std::end(string_methods), name) != std::end(string_methods);
    if (object.is_dict()) return std::find(std::begin(dict_methods), std::end(dict_methods), name) != std::end(dict_methods);
    return false;
}

Value call_method(const Value& object, std::string_view name, Arguments& args) {
    if (object.is_dict()) {
        const Dict& dict = object.dict();
        if (name == "get") {
            const Value* found = dict.find(argument(args, 0, "key").str());
            return found ? *found : argument(args, 1, "default", Value::none());
        }
        List out;
        for (const auto& [key, value] : dict.items) {
            if (name == "items") out.emplace_back(List{Value(key), value});
            else out.push_back(name == "keys" ? Value(key) : value);
        }
        return Value(std::move(out));
    }
    const std::string& s = object.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip")
        return Value(strip(s, argument(args, 0, "chars", Value::none()), name != "rstrip", name != "lstrip"));
    if (name == "split") {
        const Value max_split = argument(args, 1, "maxsplit", Value(int64_t(-1)));
        return split(s, argument(args, 0, "sep", Value::none()), integer_argument(max_split, "split's maxsplit"));
    }
    if (name == "startswith" || name == "endswith") return Value(starts_or_ends(s, argument(args, 0, "prefix"), name == "startswith", name));
    if (name == "upper") return Value(map_ascii(s, [](int c) { return std::toupper(c); }));
    if (name == "lower") return Value(map_ascii(s, [](int c) { return std::tolower(c); }));
    if (name == "title") return Value(title(s));
    if (name == "capitalize") return Value(capitalize(s));
    if (name == "replace") {
        const Value count = argument(args, 2, "count", Value(int64_t(-1)));
        return Value(replace(s, string_argument(argument(args, 0, "old"), "replace"), string_argument(argument(args, 1, "new"), "replace"),
                             integer_argument(count, "replace's count")));
    }
    if (name == "find") {
        const size_t at = s.find(string_argument(argument(args, 0, "sub"), "find"));
        return Value(at == std::string::npos ? int64_t(-1) : int64_t(code_points(s.substr(0, at)).size()));
    }
    if (name == "count") {
        const std::string& sub = string_argument(argument(args, 0, "sub"), "count");
        if (sub.empty()) return Value(int64_t(code_points(s).size() + 1));
        int64_t n = 0;
        for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
        return Value(n);
    }
    // join
    std::string out;
    bool first = true;
    for (const Value& item : items_of(argument(args, 0, "iterable"), "join")) {
        if (!first) out += s;
        first = false;
        out += string_argument(item, "join");
        check_size(out, "join");
    }
    return Value(std::move(out));
}

Dict global_functions() {
    Dict globals;
    globals.set("raise_exception", Value::callable("raise_exception", [](Arguments& args) -> Value {
        fail(Status::invalid_argument, "chat template: {}", argument(args, 0, "message").str());
    }));
    globals.set("range", Value::callable("range", [](Arguments& args) -> Value {
        int64_t start = 0, stop = 0, step = 1;
        const size_t n = args.positional.size();
        if (n == 1) {
            stop = integer_argument(args.positional[0], "range");
        } else if (n == 2 || n == 3) {
            start = integer_argument(args.positional[0], "range");
            stop = integer_argument(args.positional[1], "range");
            if (n == 3) step = integer_argument(args.positional[2], "range");
        } else {
            fail(Status::invalid_argument, "chat template: range takes 1 to 3 integers, given {}", n);
        }
        if (step == 0) fail(Status::invalid_argument, "chat template: range's step cannot be zero");
        // Jinja's sandbox refuses ranges above 100,000 items (MAX_RANGE); counted exactly, in __int128.
        const __int128 span = __int128(stop) - start;
        const __int128 length = (span == 0 || (span > 0) != (step > 0)) ? 0 : (span + step + (step > 0 ? -1 : 1)) / step;
        if (length > 100000)
            fail(Status::invalid_argument, "chat template: range too big ({} items; at most 100000)", int64_t(std::min<__int128>(length, INT64_MAX)));
        List out;
        for (__int128 k = 0; k < length; ++k) out.emplace_back(int64_t(start + k * step));
        return Value(std::move(out));
    }));
    auto keyword_dict = [](Arguments& args) {
        Dict d;
        for (const Value& positional : args.positional)
            if (positional.is_dict())
                for (const auto& [k, v] : positional.dict().items) d.set(k, v);
        for (auto& [k, v] : args.keyword) d.set(k, v);
        return d;
    };
    globals.set("namespace", Value::callable("namespace", [keyword_dict](Arguments& args) { return Value::name_space(keyword_dict(args)); }));
    globals.set("dict", Value::callable("dict", [keyword_dict](Arguments& args) { return Value(keyword_dict(args)); }));
    globals.set("strftime_now", Value::callable("strftime_now", [](Arguments& args) -> Value {
        const std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char buffer[256];
        const size_t n = std::strftime(buffer, sizeof buffer, string_argument(argument(args, 0, "format"), "strftime_now").c_str(), &local);
        return Value(std::string(buffer, n));
    }));
    return globals;
}

}  // namespace unmask::jinja
