// The values a chat template computes with: Python's, as Jinja2 (and so Hugging Face's
// apply_chat_template) sees them. None, booleans, 64-bit integers, floats, UTF-8 strings, lists and
// insertion-ordered dicts, Jinja's Undefined (a missing variable, key or attribute), mutable
// namespaces and callables (macros and the globals). Lists and dicts are shared, as in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace unmask::jinja {

class Value;
using List = std::vector<Value>;

// A Python dict: keys in insertion order (json.dumps and iteration keep it); chat-template dicts
// are small, so lookup is a scan.
struct Dict {
    std::vector<std::pair<std::string, Value>> items;
    const Value* find(std::string_view key) const;
    void set(std::string key, Value value);
};

// Positional and keyword arguments of a call.
struct Arguments {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};
using Function = std::function<Value(Arguments&)>;

class Value {
public:
    enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, name_space, callable };

    Value() = default;  // Undefined
    static Value none();
    Value(bool b);
    Value(int64_t i);
    Value(int i) : Value(static_cast<int64_t>(i)) {}
    Value(double d);
    Value(std::string s);
    Value(const char* s) : Value(std::string(s)) {}
    Value(List list);
    Value(Dict dict);
    static Value name_space(Dict attributes);
    static Value callable(std::string name, Function function);

    // The JSON value as Python's json.loads gives it (objects keep their key order).
    static Value from_json(const nlohmann::ordered_json& json);

    Kind kind() const noexcept { return kind_; }
    bool is_undefined() const noexcept { return kind_ == Kind::undefined; }
    bool is_none() const noexcept { return kind_ == Kind::none; }
    bool is_string() const noexcept { return kind_ == Kind::string; }
    bool is_number() const noexcept { return kind_ == Kind::integer || kind_ == Kind::floating || kind_ == Kind::boolean; }
    bool is_list() const noexcept { return kind_ == Kind::list; }
    bool is_dict() const noexcept { return kind_ == Kind::dict; }

    bool as_bool() const noexcept { return boolean_; }
    int64_t as_int() const noexcept { return kind_ == Kind::boolean ? int64_t{boolean_} : integer_; }
    double as_double() const noexcept;
    const std::string& as_string() const noexcept { return *string_; }
    List& list() const noexcept { return *list_; }
    Dict& dict() const noexcept { return *dict_; }  // a dict's or a namespace's
    const std::string& callable_name() const noexcept { return *string_; }
    Value call(Arguments& arguments) const { return (*function_)(arguments); }

    // Python's truth value (Undefined is false).
    bool truthy() const noexcept;
    // Python's str() (Undefined is "") and repr().
    std::string str() const;
    std::string repr() const;
    // What `is` compares: the shared list, dict, namespace or function.
    const void* identity() const noexcept;
    // Lists and dicts nest at most this deep, so printing, comparing and serialising them (which
    // recurse) stay bounded whatever a template or its input builds.
    static constexpr int max_depth = 128;

    // The Python type name, for error messages ("str", "dict", "undefined").
    const char* type_name() const noexcept;

private:
    void check_depth() const;

    Kind kind_ = Kind::undefined;
    int depth_ = 0;
    bool boolean_ = false;
    int64_t integer_ = 0;
    double floating_ = 0;
    std::shared_ptr<const std::string> string_;
    std::shared_ptr<List> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<const Function> function_;
};

// Python's == (1 == 1.0 == True; lists and dicts by content; Undefined equals only Undefined).
bool equal(const Value& a, const Value& b);

// Python's float repr: the shortest text that reads back the same double ("0.1", "1e-05", "1.0").
std::string float_repr(double value);

}  // namespace unmask::jinja
