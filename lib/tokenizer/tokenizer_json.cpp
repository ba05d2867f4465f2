#include "tokenizer/tokenizer_json.hpp"

#include "core/error.hpp"

namespace unmask {

std::string json_string(const nlohmann::json& object, const char* key, std::string_view where) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string())
        fail(Status::model_format, "tokenizer.json: {} needs a string '{}'", where, key);
    return it->get<std::string>();
}

const nlohmann::json& json_array(const nlohmann::json& object, const char* key, std::string_view where) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_array())
        fail(Status::model_format, "tokenizer.json: {} needs an array '{}'", where, key);
    return *it;
}

int32_t json_token_id(const nlohmann::json& value, std::string_view where) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > INT32_MAX)
        fail(Status::model_format, "tokenizer.json: {} is not a token id (an integer from 0): {}", where,
             value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return static_cast<int32_t>(value.get<int64_t>());
}

std::string pattern_regex(const nlohmann::json& pattern, std::string_view where) {
    if (pattern.is_object()) {
        if (auto it = pattern.find("String"); it != pattern.end() && it->is_string())
            return Regex::escape(it->get<std::string>());
        if (auto it = pattern.find("Regex"); it != pattern.end() && it->is_string()) return it->get<std::string>();
    }
    fail(Status::model_format, "tokenizer.json: {} pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}", where);
}

std::string replace_all(const Regex& regex, std::string_view text, std::string_view content) {
    std::string out;
    size_t last = 0;
    for (const auto& [begin, end] : regex.find_all(text)) {
        out.append(text.substr(last, begin - last)).append(content);
        last = end;
    }
    out.append(text.substr(last));
    return out;
}

}  // namespace unmask
