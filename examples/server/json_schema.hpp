// The JSON Schema keywords OpenAI function definitions use, checked against a generated call's
// arguments: type (one or a list), properties, required, additionalProperties, items, enum,
// const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems,
// maxItems, anyOf. Other keywords (format, pattern, $ref, ...) are not checked. The schema comes
// from a request body whose nesting is bounded, so the recursion is too.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace unmask_server {

// "" when `value` satisfies `schema`, else the first violation, naming where ("arguments.city:
// must be a string, got an integer").
std::string schema_violation(const nlohmann::ordered_json& value, const nlohmann::ordered_json& schema,
                             const std::string& where = "arguments");

}  // namespace unmask_server
