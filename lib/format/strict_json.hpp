// JSON parsing for files we do not trust: duplicate object keys are an error (a JSON parser
// would silently keep the last one, hiding a second definition of a tensor or a config field).
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

namespace unmask {

// Far deeper than any real model file; a hostile file nested deeper would overflow the stack of
// the recursive code that walks parsed JSON.
inline constexpr int max_json_depth = 128;

// Throws Error(MODEL_FORMAT) prefixed with `label` on invalid JSON, a duplicate key or nesting
// deeper than max_json_depth.
nlohmann::json parse_json_rejecting_duplicates(std::string_view text, std::string_view label);

// The same for JSON a caller passes in (chat messages, tool definitions): object keys keep their
// order (templates print them), objects have at most max_argument_object_keys keys (an ordered
// object's insertion scans its keys: a hostile object of a million keys would take quadratic
// time), and errors are INVALID_ARGUMENT.
inline constexpr size_t max_argument_object_keys = 4096;
nlohmann::ordered_json parse_argument_json(std::string_view text, std::string_view label);

}  // namespace unmask
