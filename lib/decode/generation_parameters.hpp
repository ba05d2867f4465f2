// The generation parameters by name: one table (name, type, range, default, doc line) that the C
// API's name-based access (unmask_generate_params_set/_get), the `unmask` command, serve-stdin,
// the HTTP server, the quality harness and the bindings all read, and that validate() checks
// single values against. The names are unmask_generate_params' field names: one spelling each.
// Also the names of the enumerated values (policies, cache modes, precisions, finish reasons).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace unmask {

// Far above any useful schedule; keeps per-step tables and step counters small. The most steps a
// generation takes (validate()) and the longest cache refresh period (the table's bound).
inline constexpr int64_t max_supported_steps = int64_t{1} << 20;

// One named value of an enumeration (a policy, a cache mode, ...), as the C constant's number.
struct NamedValue {
    std::string_view name;
    int32_t value;
};

enum class Enumeration : int32_t { policy = 0, cache_mode = 1, precision = 2, finish_reason = 3, eos_confidence = 4 };
inline constexpr int enumeration_count = 5;

// The names of `enumeration`'s values, in the order of their numbers.
std::span<const NamedValue> enumeration_values(Enumeration enumeration) noexcept;
// The name of `value`, or nullopt when it has none.
std::optional<std::string_view> enumeration_name(Enumeration enumeration, int32_t value) noexcept;
// The value named `name`, or nullopt.
std::optional<int32_t> enumeration_value(Enumeration enumeration, std::string_view name) noexcept;
// "a, b, c": the names of `values`, for messages.
std::string value_names(std::span<const NamedValue> values);

enum class ParameterType : int32_t {
    integer = 0,  // int64 within [minimum, maximum]
    number = 1,   // a finite double within the bounds (each inclusive or exclusive)
    flag = 2,     // 0 or 1; as text "true"/"false" (or "1"/"0")
    choice = 3,   // one of `choices`, by name or number
};

struct GenerationParameter {
    std::string_view name;
    ParameterType type;
    double minimum = 0, maximum = 0;  // integer and number; maximum = infinity: no upper bound
    bool minimum_exclusive = false, maximum_exclusive = false;
    std::span<const NamedValue> choices;  // choice: the accepted values
    double default_value = 0;
    std::string_view doc;
    bool unsigned_64 = false;  // an integer that takes any uint64 (the seed), held as its bits
};

// Every parameter that can be set by name, in unmask_generate_params' field order.
std::span<const GenerationParameter> generation_parameters() noexcept;
// The parameter called `name`; throws INVALID_ARGUMENT listing the names when there is none.
const GenerationParameter& generation_parameter(std::string_view name);

// A parameter's value: `integer` for integer, flag and choice parameters (an unsigned_64 one's
// bits), `number` for numbers.
struct ParameterValue {
    int64_t integer = 0;
    double number = 0;
};

// Throws INVALID_ARGUMENT naming the parameter, its range or its choices, and the value, unless
// `value` is one the parameter accepts.
void check_parameter(const GenerationParameter& parameter, const ParameterValue& value);
void check_parameter(std::string_view name, double value);   // a number parameter's value
void check_parameter(std::string_view name, int64_t value);  // an integer, flag or choice's value

// `text` as the parameter's value, checked: an integer, a number, true/false/1/0, or a choice's
// name or number. Throws INVALID_ARGUMENT naming the parameter for anything else.
ParameterValue parse_parameter(const GenerationParameter& parameter, std::string_view text);
// The value as text parse_parameter reads back: choices by name, flags as true/false, numbers
// with every digit that tells doubles apart.
std::string format_parameter(const GenerationParameter& parameter, const ParameterValue& value);

}  // namespace unmask
