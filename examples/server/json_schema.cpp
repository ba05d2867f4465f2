#include "json_schema.hpp"

#include <cmath>
#include <cstdint>

namespace unmask_server {
namespace {

using json = nlohmann::ordered_json;

const char* kind_of(const json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "a boolean";
    if (v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::isfinite(v.get<double>())))
        return "an integer";
    if (v.is_number()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_array()) return "an array";
    return "an object";
}

// JSON equality: objects regardless of key order.
bool same(const json& a, const json& b) { return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump()); }

bool has_type(const json& v, const std::string& type) {
    if (type == "null") return v.is_null();
    if (type == "boolean") return v.is_boolean();
    if (type == "integer") return std::string(kind_of(v)) == "an integer";
    if (type == "number") return v.is_number();
    if (type == "string") return v.is_string();
    if (type == "array") return v.is_array();
    if (type == "object") return v.is_object();
    return true;  // an unknown type name constrains nothing
}

size_t code_points(const std::string& s) {
    size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

}  // namespace

std::string schema_violation(const json& value, const json& schema, const std::string& where) {
    if (!schema.is_object()) return "";  // true, {} or a malformed schema: nothing to check
    if (const auto type = schema.find("type"); type != schema.end()) {
        bool ok = false;
        std::string wanted;
        if (type->is_string()) {
            ok = has_type(value, type->get<std::string>());
            wanted = type->get<std::string>();
        } else if (type->is_array()) {
            for (const json& t : *type)
                if (t.is_string()) {
                    ok = ok || has_type(value, t.get<std::string>());
                    wanted += (wanted.empty() ? "" : " or ") + t.get<std::string>();
                }
        } else {
            ok = true;
        }
        if (!ok) return where + ": must be " + wanted + ", got " + kind_of(value);
    }
    if (const auto options = schema.find("enum"); options != schema.end() && options->is_array()) {
        bool found = false;
        for (const json& option : *options) found = found || same(option, value);
        if (!found) return where + ": must be one of " + options->dump() + ", got " + value.dump();
    }
    if (const auto constant = schema.find("const"); constant != schema.end() && !same(*constant, value))
        return where + ": must be " + constant->dump() + ", got " + value.dump();
    if (const auto any = schema.find("anyOf"); any != schema.end() && any->is_array() && !any->empty()) {
        std::string first;
        for (const json& option : *any) {
            const std::string why = schema_violation(value, option, where);
            if (why.empty()) {
                first.clear();
                break;
            }
            if (first.empty()) first = why;
        }
        if (!first.empty()) return first + " (and no other anyOf choice fits)";
    }
    if (value.is_number()) {
        const double x = value.get<double>();
        auto bound = [&](const char* key, bool ok, const char* relation) -> std::string {
            const auto b = schema.find(key);
            if (b == schema.end() || !b->is_number() || ok) return "";
            return where + ": must be " + relation + " " + b->dump() + ", got " + value.dump();
        };
        auto at = [&](const char* key) { const auto b = schema.find(key); return b != schema.end() && b->is_number() ? b->get<double>() : 0.0; };
        for (const std::string& why : {bound("minimum", x >= at("minimum"), ">="), bound("maximum", x <= at("maximum"), "<="),
                                        bound("exclusiveMinimum", x > at("exclusiveMinimum"), ">"),
                                        bound("exclusiveMaximum", x < at("exclusiveMaximum"), "<")})
            if (!why.empty()) return why;
    }
    auto limit = [&](const char* key) -> int64_t {
        const auto b = schema.find(key);
        return b != schema.end() && b->is_number_unsigned() ? b->get<int64_t>() : -1;
    };
    if (value.is_string()) {
        const auto n = static_cast<int64_t>(code_points(value.get<std::string>()));
        if (limit("minLength") >= 0 && n < limit("minLength")) return where + ": must have at least " + std::to_string(limit("minLength")) + " characters";
        if (limit("maxLength") >= 0 && n > limit("maxLength")) return where + ": must have at most " + std::to_string(limit("maxLength")) + " characters";
    }
    if (value.is_array()) {
        const auto n = static_cast<int64_t>(value.size());
        if (limit("minItems") >= 0 && n < limit("minItems")) return where + ": must have at least " + std::to_string(limit("minItems")) + " items";
        if (limit("maxItems") >= 0 && n > limit("maxItems")) return where + ": must have at most " + std::to_string(limit("maxItems")) + " items";
        if (const auto items = schema.find("items"); items != schema.end())
            for (size_t i = 0; i < value.size(); ++i)
                if (std::string why = schema_violation(value[i], *items, where + "[" + std::to_string(i) + "]"); !why.empty()) return why;
    }
    if (value.is_object()) {
        const auto properties = schema.find("properties");
        if (const auto required = schema.find("required"); required != schema.end() && required->is_array())
            for (const json& name : *required)
                if (name.is_string() && !value.contains(name.get<std::string>()))
                    return where + "." + name.get<std::string>() + ": is required";
        const auto additional = schema.find("additionalProperties");
        for (const auto& [key, element] : value.items()) {
            const bool declared = properties != schema.end() && properties->is_object() && properties->contains(key);
            if (declared) {
                if (std::string why = schema_violation(element, (*properties)[key], where + "." + key); !why.empty()) return why;
            } else if (additional != schema.end()) {
                if (additional->is_boolean() && !additional->get<bool>()) return where + "." + key + ": is not a property the tool takes";
                if (std::string why = schema_violation(element, *additional, where + "." + key); !why.empty()) return why;
            }
        }
    }
    return "";
}

}  // namespace unmask_server
