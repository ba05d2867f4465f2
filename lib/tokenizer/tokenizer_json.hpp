// Small helpers for reading tokenizer.json: typed fields with errors that name them, and the
// {"String": ...} / {"Regex": ...} patterns several components share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/regex.hpp"

namespace unmask {

std::string json_string(const nlohmann::json& object, const char* key, std::string_view where);
const nlohmann::json& json_array(const nlohmann::json& object, const char* key, std::string_view where);

// `value` as a token id: an integer from 0 to INT32_MAX. A float, however whole, is refused (a
// cast of 1e30 to an integer would be undefined behaviour).
int32_t json_token_id(const nlohmann::json& value, std::string_view where);

// A pattern object as a regex source: {"String": s} matches s literally, {"Regex": r} is r.
std::string pattern_regex(const nlohmann::json& pattern, std::string_view where);

// `text` with every match of `regex` replaced by `content`.
std::string replace_all(const Regex& regex, std::string_view text, std::string_view content);

}  // namespace unmask
