// JSON from outside (HTTP bodies, stdin lines, files a user names) parsed with a bound on nesting.
// nlohmann's parser is iterative, but printing, copying or comparing a parsed value recurses once
// per level, so a value nested 100,000 deep overflows the stack wherever it goes next. The bound
// is checked on the text, before anything is built.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace unmask_examples {

// Deeper than any request or data line needs; a hundred thousand levels is an attack.
inline constexpr int max_json_nesting = 64;

// How deeply arrays and objects nest in a JSON text (strings skipped), without parsing it.
int json_nesting_depth(std::string_view text);

// The parsed value; nothing when the text is not JSON; throws JsonTooDeep when it nests deeper
// than `max_nesting`.
struct JsonTooDeep {
    int max_nesting;
};
std::optional<nlohmann::json> parse_bounded_json(std::string_view text, int max_nesting = max_json_nesting);

}  // namespace unmask_examples
