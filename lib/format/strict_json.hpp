// JSON parsing for files we do not trust: duplicate object keys are an error (a JSON parser
// would silently keep the last one, hiding a second definition of a tensor or a config field).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace unmask {

// Throws Error(MODEL_FORMAT) prefixed with `label` on invalid JSON or a duplicate key.
nlohmann::json parse_json_rejecting_duplicates(std::string_view text, std::string_view label);

}  // namespace unmask
