// What a chat template can call: Jinja's filters and tests, the Python str and dict methods
// templates use, and Hugging Face's globals (raise_exception, strftime_now) and tojson.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "template/value.hpp"

namespace unmask::jinja {

// What one value may hold: strings up to the default output limit, lists up to Jinja's sandbox
// range limit. Builtins that build a string or list check as they build; the renderer checks
// every result.
inline constexpr size_t max_string_bytes = size_t{8} << 20;
inline constexpr size_t max_list_items = 100000;

// Each throws Error(INVALID_ARGUMENT) naming the filter, test or method on an unknown name or an
// argument of the wrong type, as Jinja raises.
Value apply_filter(std::string_view name, const Value& value, Arguments& arguments);
bool apply_test(std::string_view name, const Value& value, Arguments& arguments);
// Whether `object` (a str, dict or list) has a method `name`; calling one.
bool has_method(const Value& object, std::string_view name);
Value call_method(const Value& object, std::string_view name, Arguments& arguments);
// range, namespace, dict, raise_exception and strftime_now.
Dict global_functions();

// Hugging Face's tojson: json.dumps(value, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False) with Python's defaults (", " and ": ", "," between items when indenting; keys in
// insertion order); Undefined, namespaces and functions are an error.
struct JsonOptions {
    bool ensure_ascii = false;
    int indent = -1;  // none
    std::string item_separator = ", ", key_separator = ": ";
    bool sort_keys = false;
};
std::string to_json(const Value& value, const JsonOptions& options = {});

// The positions Python's sequence[start:stop:step] takes from a sequence of `length` (bounds
// None or Undefined when absent); a zero or non-integer step is an error.
std::vector<size_t> slice_positions(size_t length, const Value& start, const Value& stop, const Value& step);
// A str's code points (Python indexes, slices and counts them, not bytes).
std::vector<std::string> code_points(std::string_view text);
size_t code_point_count(std::string_view text);
// The code point at `index`, or Undefined beyond the end.
Value code_point_at(const std::string& text, size_t index);

}  // namespace unmask::jinja
