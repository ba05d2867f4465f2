#include "template/value.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"

namespace unmask::jinja {

const Value* Dict::find(std::string_view key) const {
    for (const auto& [name, value] : items)
        if (name == key) return &value;
    return nullptr;
}

void Dict::set(std::string key, Value value) {
    for (auto& [name, existing] : items)
        if (name == key) {
            existing = std::move(value);
            return;
        }
    items.emplace_back(std::move(key), std::move(value));
}

Value Value::none() {
    Value v;
    v.kind_ = Kind::none;
    return v;
}
Value::Value(bool b) : kind_(Kind::boolean), boolean_(b) {}
Value::Value(int64_t i) : kind_(Kind::integer), integer_(i) {}
Value::Value(double d) : kind_(Kind::floating), floating_(d) {}
Value::Value(std::string s) : kind_(Kind::string), string_(std::make_shared<const std::string>(std::move(s))) {}
Value::Value(List list) : kind_(Kind::list) {
    for (const Value& element : list) depth_ = std::max(depth_, element.depth_ + 1);
    check_depth();
    list_ = std::make_shared<List>(std::move(list));
}
Value::Value(Dict dict) : kind_(Kind::dict) {
    for (const auto& [key, element] : dict.items) depth_ = std::max(depth_, element.depth_ + 1);
    check_depth();
    dict_ = std::make_shared<Dict>(std::move(dict));
}

void Value::check_depth() const {
    if (depth_ > max_depth)
        fail(Status::invalid_argument, "chat template: a value nests lists and dicts deeper than {} levels", max_depth);
}

const void* Value::identity() const noexcept {
    if (dict_) return dict_.get();
    if (list_) return list_.get();
    if (function_) return function_.get();
    return string_.get();
}

Value Value::name_space(Dict attributes) {
    Value v(std::move(attributes));
    v.kind_ = Kind::name_space;
    return v;
}

Value Value::callable(std::string name, Function function) {
    Value v;
    v.kind_ = Kind::callable;
    v.string_ = std::make_shared<const std::string>(std::move(name));
    v.function_ = std::make_shared<const Function>(std::move(function));
    return v;
}

Value Value::from_json(const nlohmann::ordered_json& json) {
    switch (json.type()) {
        case nlohmann::ordered_json::value_t::null: return none();
        case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const uint64_t u = json.get<uint64_t>();
            return u <= uint64_t(INT64_MAX) ? Value(int64_t(u)) : Value(double(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            List list;
            list.reserve(json.size());
            for (const auto& element : json) list.push_back(from_json(element));
            return Value(std::move(list));
        }
        case nlohmann::ordered_json::value_t::object: {
            Dict dict;
            // A JSON object's keys are unique: appended without Dict::set's scan (quadratic in keys).
            dict.items.reserve(json.size());
            for (const auto& [key, element] : json.items()) dict.items.emplace_back(key, from_json(element));
            return Value(std::move(dict));
        }
        default: return none();  // binary and discarded values do not come from a JSON parser
    }
}

double Value::as_double() const noexcept {
    switch (kind_) {
        case Kind::floating: return floating_;
        case Kind::integer: return double(integer_);
        case Kind::boolean: return boolean_ ? 1.0 : 0.0;
        default: return 0;
    }
}

bool Value::truthy() const noexcept {
    switch (kind_) {
        case Kind::undefined:
        case Kind::none: return false;
        case Kind::boolean: return boolean_;
        case Kind::integer: return integer_ != 0;
        case Kind::floating: return floating_ != 0;
        case Kind::string: return !string_->empty();
        case Kind::list: return !list_->empty();
        case Kind::dict: return !dict_->items.empty();
        default: return true;
    }
}

const char* Value::type_name() const noexcept {
    switch (kind_) {
        case Kind::undefined: return "undefined";
        case Kind::none: return "NoneType";
        case Kind::boolean: return "bool";
        case Kind::integer: return "int";
        case Kind::floating: return "float";
        case Kind::string: return "str";
        case Kind::list: return "list";
        case Kind::dict: return "dict";
        case Kind::name_space: return "Namespace";
        default: return "function";
    }
}

std::string float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    char buffer[32];
    int precision = 1;
    for (; precision <= 17; ++precision) {
        std::snprintf(buffer, sizeof buffer, "%.*e", precision - 1, value);
        if (std::strtod(buffer, nullptr) == value) break;
    }
    // buffer holds d.ddde±XX with `precision` significant digits: lay it out as Python does, in
    // positional notation for exponents in [-4, 16) and scientific otherwise.
    std::string text(buffer);
    const bool negative = text[0] == '-';
    if (negative) text.erase(0, 1);
    const size_t e = text.find('e');
    const int exponent = std::atoi(text.c_str() + e + 1);
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (text[i] != '.') digits += text[i];
    std::string out = negative ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
        if (exponent < 0) {
            out += "0." + std::string(size_t(-exponent - 1), '0') + digits;
        } else if (size_t(exponent) + 1 >= digits.size()) {
            out += digits + std::string(size_t(exponent) + 1 - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, size_t(exponent) + 1) + "." + digits.substr(size_t(exponent) + 1);
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exponent_text[16];
    std::snprintf(exponent_text, sizeof exponent_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exponent_text;
}

namespace {

// Python's repr of a str: single quotes unless the text holds ' and no ".
std::string string_repr(const std::string& s) {
    const char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
    std::string out(1, quote);
    for (const unsigned char c : s) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c == static_cast<unsigned char>(quote)) {
                    out += '\\';
                    out += char(c);
                } else if (c < 0x20 || c == 0x7f) {
                    char hex[8];
                    std::snprintf(hex, sizeof hex, "\\x%02x", c);
                    out += hex;
                } else {
                    out += char(c);
                }
        }
    }
    return out + quote;
}

}  // namespace

std::string Value::str() const {
    switch (kind_) {
        case Kind::undefined: return "";
        case Kind::string: return *string_;
        default: return repr();
    }
}

std::string Value::repr() const {
    switch (kind_) {
        case Kind::undefined: return "";
        case Kind::none: return "None";
        case Kind::boolean: return boolean_ ? "True" : "False";
        case Kind::integer: return std::to_string(integer_);
        case Kind::floating: return float_repr(floating_);
        case Kind::string: return string_repr(*string_);
        case Kind::list: {
            std::string out = "[";
            for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
            return out + "]";
        }
        case Kind::dict: {
            std::string out = "{";
            bool first = true;
            for (const auto& [key, value] : dict_->items) {
                out += (first ? "" : ", ") + string_repr(key) + ": " + value.repr();
                first = false;
            }
            return out + "}";
        }
        case Kind::name_space: return "<Namespace>";
        default: return "<function " + *string_ + ">";
    }
}

bool equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.kind() == Value::Kind::floating || b.kind() == Value::Kind::floating) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::undefined:
        case Value::Kind::none: return true;
        case Value::Kind::string: return a.as_string() == b.as_string();
        case Value::Kind::list: {
            if (a.list().size() != b.list().size()) return false;
            for (size_t i = 0; i < a.list().size(); ++i)
                if (!equal(a.list()[i], b.list()[i])) return false;
            return true;
        }
        case Value::Kind::dict: {
            if (a.dict().items.size() != b.dict().items.size()) return false;
            for (const auto& [key, value] : a.dict().items) {
                const Value* other = b.dict().find(key);
                if (!other || !equal(value, *other)) return false;
            }
            return true;
        }
        default: return a.identity() == b.identity();  // namespaces and callables
    }
}

}  // namespace unmask::jinja
