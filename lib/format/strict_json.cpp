#include "format/strict_json.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace unmask {

namespace {

template <typename json>
json parse_strictly(std::string_view text, std::string_view label, Status status, size_t max_keys) {
    std::vector<std::set<std::string>> keys_per_object;  // one set per open object
    std::string duplicate;
    bool too_deep = false, too_many_keys = false;
    const typename json::parser_callback_t on_event = [&](int depth, typename json::parse_event_t event, json& parsed) {
        if (depth > max_json_depth) too_deep = true;
        switch (event) {
            case json::parse_event_t::object_start: keys_per_object.emplace_back(); break;
            case json::parse_event_t::object_end: keys_per_object.pop_back(); break;
            case json::parse_event_t::key:
                if (!keys_per_object.back().insert(parsed.template get<std::string>()).second && duplicate.empty())
                    duplicate = parsed.template get<std::string>();
                if (keys_per_object.back().size() > max_keys) {
                    too_many_keys = true;
                    return false;  // skipped, not inserted: the parse stays linear
                }
                break;
            default: break;
        }
        return true;
    };
    json root;
    try {
        root = json::parse(text.begin(), text.end(), on_event);
    } catch (const typename json::exception& e) {
        fail(status, "{}: invalid JSON: {}", label, e.what());
    }
    if (too_deep) fail(status, "{}: nested deeper than {} levels", label, max_json_depth);
    if (too_many_keys) fail(status, "{}: an object with more than {} keys", label, max_keys);
    if (!duplicate.empty()) fail(status, "{}: duplicate key '{}'", label, duplicate);
    return root;
}

}  // namespace

nlohmann::json parse_json_rejecting_duplicates(std::string_view text, std::string_view label) {
    return parse_strictly<nlohmann::json>(text, label, Status::model_format, SIZE_MAX);
}

nlohmann::ordered_json parse_argument_json(std::string_view text, std::string_view label) {
    return parse_strictly<nlohmann::ordered_json>(text, label, Status::invalid_argument, max_argument_object_keys);
}

}  // namespace unmask
