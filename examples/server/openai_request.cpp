#include "openai_request.hpp"

#include <algorithm>
#include <cctype>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "bounded_json.hpp"
#include "generation_parameters.hpp"
#include "unmask.h"

namespace unmask_server {
namespace {

using nlohmann::json;

// A value for an error message: scalars as JSON, short; containers by their kind.
std::string shown(const nlohmann::json& v) {
    if (v.is_structured()) return v.is_array() ? "a list" : "an object";
    std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return text.size() > 64 ? text.substr(0, 64) + "..." : text;
}

std::string type_name(const json& v) {
    if (v.is_number_integer()) return "an integer";
    if (v.is_number()) return "a number";
    return std::string("a ") + v.type_name();
}

// Typed access to the fields of the body, each failure naming its field.
class Fields {
public:
    explicit Fields(const json& body) : body_(body) {}

    const json* find(const char* key) const {
        const auto it = body_.find(key);
        return it == body_.end() || it->is_null() ? nullptr : &*it;
    }
    bool given(const char* key) const { return find(key) != nullptr; }

    int64_t integer(const char* key, int64_t min, int64_t max, int64_t otherwise) const {
        const json* v = find(key);
        if (v == nullptr) return otherwise;
        if (!v->is_number_integer()) throw invalid_field(key, "must be an integer, got " + type_name(*v));
        if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
            throw invalid_field(key, "must be within " + std::to_string(min) + ".." + std::to_string(max));
        const auto value = v->get<int64_t>();
        if (value < min || value > max)
            throw invalid_field(key, "must be within " + std::to_string(min) + ".." + std::to_string(max) + ", got " +
                                         std::to_string(value));
        return value;
    }
    double number(const char* key, double min, double max, double otherwise) const {
        const json* v = find(key);
        if (v == nullptr) return otherwise;
        if (!v->is_number()) throw invalid_field(key, "must be a number, got " + type_name(*v));
        const auto value = v->get<double>();
        if (!std::isfinite(value) || value < min || value > max)
            throw invalid_field(key, "must be within [" + json(min).dump() + ", " + json(max).dump() + "], got " +
                                         json(value).dump());
        return value;
    }
    bool boolean(const char* key, bool otherwise) const {
        const json* v = find(key);
        if (v == nullptr) return otherwise;
        if (!v->is_boolean()) throw invalid_field(key, "must be true or false, got " + type_name(*v));
        return v->get<bool>();
    }
    std::string string(const char* key) const {
        const json* v = find(key);
        if (v == nullptr) return {};
        if (!v->is_string()) throw invalid_field(key, "must be a string, got " + type_name(*v));
        return v->get<std::string>();
    }
    // Sets generation parameter `name` (the library's table: its type, range and choices) from the
    // field `key` when given; a failure names the field.
    void parameter(const char* key, const char* name, unmask_generate_params& params) const {
        const json* v = find(key);
        if (v == nullptr) return;
        const unmask_parameter_info* found = unmask_examples::find_generation_parameter(name);
        if (found == nullptr) throw std::logic_error(std::string("the library has no parameter ") + name);
        const unmask_parameter_info& info = *found;
        const bool fits = info.type == UNMASK_PARAM_INTEGER ? v->is_number_integer()
                          : info.type == UNMASK_PARAM_NUMBER ? v->is_number()
                          : info.type == UNMASK_PARAM_FLAG   ? v->is_boolean()
                                                             : v->is_string() || v->is_number_integer();
        if (!fits) {
            const std::string wanted = info.type == UNMASK_PARAM_INTEGER ? "an integer"
                                       : info.type == UNMASK_PARAM_NUMBER ? "a number"
                                       : info.type == UNMASK_PARAM_FLAG   ? "true or false"
                                                                          : "one of " + std::string(info.choices);
            throw invalid_field(key, "must be " + wanted + ", got " + shown(*v));
        }
        const std::string text = v->is_string() ? v->get<std::string>() : v->dump();
        if (unmask_generate_params_set(&params, name, text.c_str()) != UNMASK_OK) {
            std::string message = unmask_last_error();
            const std::string prefix = "unmask_generate_params_set: ";
            if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
            throw ApiError(400, std::string(key) == name ? message : "'" + std::string(key) + "': " + message, key,
                           "invalid_value");
        }
    }
    // OpenAI fields unmask does not implement, accepted at the value that asks for nothing.
    void only_neutral(const char* key, const std::vector<json>& neutral) const {
        const json* v = find(key);
        if (v == nullptr) return;
        for (const json& n : neutral)
            if (*v == n) return;
        throw invalid_field(key, "is not supported (only " + json(neutral).dump() + ", got " + shown(*v) + ")");
    }

private:
    const json& body_;
};

using ordered_json = nlohmann::ordered_json;

// The text of a chat message: a string, or a list of {"type": "text", "text": ...} parts.
std::string message_text(const ordered_json& content, const std::string& field) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) throw invalid_field(field, "must be a string or a list of text parts");
    std::string text;
    for (const ordered_json& part : content) {
        const auto type = part.is_object() ? part.find("type") : part.end();
        const auto value = part.is_object() ? part.find("text") : part.end();
        if (!part.is_object() || type == part.end() || *type != "text" || value == part.end() || !value->is_string())
            throw invalid_field(field, "parts must be {\"type\": \"text\", \"text\": ...}; only text is supported");
        text += value->get<std::string>();
    }
    return text;
}

const ordered_json* member(const ordered_json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string string_member(const ordered_json& object, const char* key, const std::string& field) {
    const ordered_json* v = member(object, key);
    if (v == nullptr || !v->is_string()) throw invalid_field(field + "." + key, "must be a string");
    return v->get<std::string>();
}

// An assistant message's tool calls: [{"id", "type": "function", "function": {"name", "arguments"}}].
void check_tool_calls(const ordered_json& calls, const std::string& field) {
    if (!calls.is_array()) throw invalid_field(field, "must be a list of tool calls");
    for (size_t k = 0; k < calls.size(); ++k) {
        const std::string at = field + "[" + std::to_string(k) + "]";
        const ordered_json& call = calls[k];
        if (!call.is_object() || !member(call, "function") || !call["function"].is_object())
            throw invalid_field(at, "must be {\"type\": \"function\", \"function\": {\"name\": ..., \"arguments\": ...}}");
        if (const ordered_json* type = member(call, "type"); type && *type != "function") throw invalid_field(at + ".type", "must be \"function\"");
        string_member(call["function"], "name", at + ".function");
        const ordered_json* arguments = member(call["function"], "arguments");
        if (arguments && !arguments->is_string() && !arguments->is_object())
            throw invalid_field(at + ".function.arguments", "must be a JSON string or an object");
    }
}

void read_messages(const ordered_json& messages, CompletionRequest& out) {
    if (!messages.is_array() || messages.empty()) throw invalid_field("messages", "must be a non-empty list");
    static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
    static const std::set<std::string> keys = {"role", "content", "name", "tool_calls", "tool_call_id", "refusal"};
    bool have_user = false;
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string field = "messages[" + std::to_string(i) + "]";
        const ordered_json& m = messages[i];
        if (!m.is_object() || !m.contains("role") || !m.at("role").is_string())
            throw invalid_field(field, "must be an object with a string 'role'");
        for (const auto& item : m.items())
            if (keys.count(item.key()) == 0) throw invalid_field(field + "." + item.key(), "is not a known field");
        unmask::api::ChatMessage message;
        message.role = m.at("role").get<std::string>();
        if (roles.count(message.role) == 0)
            throw invalid_field(field + ".role", "must be system, developer, user, assistant or tool, got '" + message.role + "'");
        if (message.role == "developer") message.role = "system";  // OpenAI's newer name for it
        const ordered_json* calls = member(m, "tool_calls");
        if (calls) {
            if (message.role != "assistant") throw invalid_field(field + ".tool_calls", "belongs to assistant messages");
            check_tool_calls(*calls, field + ".tool_calls");
            message.tool_calls = calls->dump();
        }
        if (const ordered_json* content = member(m, "content")) {
            message.content = message_text(*content, field + ".content");
            if (message.content.find('\0') != std::string::npos)
                throw invalid_field(field + ".content", "must not contain NUL characters");
        } else if (calls) {
            message.has_content = false;
        } else {
            throw invalid_field(field + ".content", "is required (only an assistant message with tool_calls may omit it)");
        }
        if (message.role == "tool") message.tool_call_id = string_member(m, "tool_call_id", field);
        if (member(m, "name")) message.name = string_member(m, "name", field);
        have_user = have_user || message.role == "user";
        out.messages.push_back(std::move(message));
    }
    if (!have_user) throw invalid_field("messages", "must contain a user message");
}

constexpr size_t max_object_keys = 4096;

// The most keys of any object in `value` (nesting is bounded by the body's parse).
size_t largest_object(const json& value) {
    size_t most = value.is_object() ? value.size() : 0;
    if (value.is_structured())
        for (const json& element : value) most = std::max(most, largest_object(element));
    return most;
}

bool valid_tool_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (const char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
    return true;
}

// tools: [{"type": "function", "function": {"name", "description", "parameters", "strict"}}];
// tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name": ...}}.
void read_tools(const ordered_json* tools, const ordered_json* choice, CompletionRequest& out) {
    std::set<std::string> names;
    if (tools) {
        if (!tools->is_array() || tools->size() > 128) throw invalid_field("tools", "must be a list of at most 128 tools");
        static const std::set<std::string> function_keys = {"name", "description", "parameters", "strict"};
        for (size_t i = 0; i < tools->size(); ++i) {
            const std::string field = "tools[" + std::to_string(i) + "]";
            const ordered_json& tool = (*tools)[i];
            if (!tool.is_object() || tool.size() != 2 || !tool.contains("type") || tool["type"] != "function" ||
                !tool.contains("function") || !tool["function"].is_object())
                throw invalid_field(field, "must be {\"type\": \"function\", \"function\": {...}}");
            const ordered_json& function = tool["function"];
            for (const auto& item : function.items())
                if (function_keys.count(item.key()) == 0) throw invalid_field(field + ".function." + item.key(), "is not a known field");
            const std::string name = string_member(function, "name", field + ".function");
            if (!valid_tool_name(name)) throw invalid_field(field + ".function.name", "must be 1 to 64 letters, digits, _ or -");
            if (!names.insert(name).second) throw invalid_field(field + ".function.name", "names a tool twice: " + name);
            if (const ordered_json* d = member(function, "description"); d && !d->is_string())
                throw invalid_field(field + ".function.description", "must be a string");
            if (const ordered_json* p = member(function, "parameters"); p && !p->is_object())
                throw invalid_field(field + ".function.parameters", "must be a JSON Schema object");
            if (const ordered_json* strict = member(function, "strict"); strict && !strict->is_boolean())
                throw invalid_field(field + ".function.strict", "must be true or false");
        }
        out.tools = *tools;
    }
    out.tool_choice = names.empty() ? ToolChoice::none : ToolChoice::automatic;
    if (!choice) return;
    if (choice->is_string()) {
        const std::string c = choice->get<std::string>();
        if (c == "none") out.tool_choice = ToolChoice::none;
        else if (c == "auto") out.tool_choice = ToolChoice::automatic;
        else if (c == "required") out.tool_choice = ToolChoice::required;
        else throw invalid_field("tool_choice", "must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    } else if (choice->is_object() && choice->contains("function") && (*choice)["function"].is_object()) {
        out.tool_name = string_member((*choice)["function"], "name", "tool_choice.function");
        if (names.count(out.tool_name) == 0) throw invalid_field("tool_choice.function.name", "names no tool of 'tools': " + out.tool_name);
        out.tool_choice = ToolChoice::named;
    } else {
        throw invalid_field("tool_choice", "must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    if (out.tool_choice != ToolChoice::none && names.empty()) throw invalid_field("tool_choice", "asks for a tool call, but no tools are given");
}

void read_prompt(const json& prompt, CompletionRequest& out) {
    if (prompt.is_string()) {
        out.prompt = prompt.get<std::string>();
        return;
    }
    if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) {
        out.prompt = prompt[0].get<std::string>();
        return;
    }
    if (prompt.is_array() && !prompt.empty() && prompt[0].is_number_integer()) {
        for (const json& id : prompt) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
                throw invalid_field("prompt", "token ids must be integers from 0");
            out.prompt_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
        }
        return;
    }
    throw invalid_field("prompt", "must be a string, a list of one string or a list of token ids");
}

std::vector<std::string> read_stop(const json* stop) {
    if (stop == nullptr) return {};
    std::vector<std::string> out;
    if (stop->is_string()) {
        out.push_back(stop->get<std::string>());
    } else if (stop->is_array() && stop->size() <= 4) {
        for (const json& s : *stop) {
            if (!s.is_string()) throw invalid_field("stop", "must be a string or a list of up to 4 strings");
            out.push_back(s.get<std::string>());
        }
    } else {
        throw invalid_field("stop", "must be a string or a list of up to 4 strings");
    }
    for (const auto& s : out)
        if (s.empty()) throw invalid_field("stop", "must not contain empty strings");
    return out;
}

// The generation parameters a request may set, by their names in the library's table (the
// OpenAI ones among them too; gen_length comes from max_tokens).
constexpr std::array diffusion_fields = {"temperature", "top_p", "seed", "steps", "block_length", "min_steps",
                                         "max_steps", "policy", "threshold", "factor", "alg_temp", "top_k",
                                         "cfg_scale", "cache_mode", "cache_refresh_steps", "cache_vicinity",
                                         "cache_precision", "early_stop", "logits_eos_inf", "timeout_seconds",
                                         "edit_threshold", "max_post_edit_steps"};

const std::set<std::string>& known_fields(Endpoint endpoint) {
    static const std::set<std::string> common = [] {
        std::set<std::string> s = {
        "model", "max_tokens", "temperature", "top_p", "seed", "stop", "stream", "stream_options", "n", "user",
        "logprobs", "frequency_penalty", "presence_penalty"};
        s.insert(diffusion_fields.begin(), diffusion_fields.end());
        return s;
    }();
    static const std::set<std::string> completions = [] {
        auto s = common;
        s.insert({"prompt", "echo", "best_of", "suffix"});
        return s;
    }();
    static const std::set<std::string> chat = [] {
        auto s = common;
        s.insert({"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice", "parallel_tool_calls"});
        return s;
    }();
    return endpoint == Endpoint::completions ? completions : chat;
}

}  // namespace

std::string template_tools(const CompletionRequest& request) {
    if (request.tool_choice == ToolChoice::none) return "";
    if (request.tool_choice != ToolChoice::named) return request.tools.dump();
    ordered_json chosen = ordered_json::array();
    for (const ordered_json& tool : request.tools)
        if (tool["function"]["name"] == request.tool_name) chosen.push_back(tool);
    return chosen.dump();
}

CompletionRequest parse_completion_request(std::string_view body, Endpoint endpoint) {
    std::optional<json> parsed;
    try {
        parsed = unmask_examples::parse_bounded_json(body);
    } catch (const unmask_examples::JsonTooDeep& e) {
        throw ApiError(400, "the request body nests deeper than " + std::to_string(e.max_nesting) + " levels", "",
                       "invalid_json");
    }
    if (!parsed) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
    const json& root = *parsed;
    if (!root.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_json");
    const auto& known = known_fields(endpoint);
    for (const auto& item : root.items())
        if (known.count(item.key()) == 0) throw invalid_field(item.key(), "is not a known field");

    const Fields f(root);
    CompletionRequest out;
    out.endpoint = endpoint;
    out.model = f.string("model");
    if (endpoint == Endpoint::completions) {
        const json* prompt = f.find("prompt");
        if (prompt == nullptr) throw invalid_field("prompt", "is required");
        read_prompt(*prompt, out);
        f.only_neutral("echo", {false});
        f.only_neutral("best_of", {1});
        f.only_neutral("suffix", {""});
        f.only_neutral("logprobs", {false, 0});
    } else {
        // Messages and tools reach the chat template, which prints objects in the order sent. An
        // ordered object's insertion scans its keys: bounded first, so the parse stays cheap.
        if (largest_object(root) > max_object_keys)
            throw ApiError(400, "the request body has an object with more than " + std::to_string(max_object_keys) + " keys", "",
                           "invalid_json");
        const ordered_json ordered = ordered_json::parse(body);
        const ordered_json* messages = member(ordered, "messages");
        if (messages == nullptr) throw invalid_field("messages", "is required");
        read_messages(*messages, out);
        read_tools(member(ordered, "tools"), member(ordered, "tool_choice"), out);
        f.boolean("parallel_tool_calls", true);
        f.only_neutral("logprobs", {false});
        f.only_neutral("top_logprobs", {0});
    }
    f.only_neutral("n", {1});
    f.only_neutral("frequency_penalty", {0});
    f.only_neutral("presence_penalty", {0});
    f.string("user");

    unmask_generate_params& p = out.params;
    unmask_generate_params_init(&p);
    const char* length_field =
        endpoint == Endpoint::chat_completions && f.given("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    f.parameter(length_field, "gen_length", p);
    p.steps = p.gen_length;  // unless given
    // unmask's diffusion parameters, by their names in the library's table.
    for (const char* name : diffusion_fields) f.parameter(name, name, p);
    out.seed_given = f.given("seed");
    out.stop = read_stop(f.find("stop"));
    out.stream = f.boolean("stream", false);
    if (const json* options = f.find("stream_options")) {
        if (!options->is_object()) throw invalid_field("stream_options", "must be an object");
        for (const auto& item : options->items())
            if (item.key() != "include_usage") throw invalid_field("stream_options." + item.key(), "is not a known field");
        out.include_usage = Fields(*options).boolean("include_usage", false);
    }
    return out;
}

}  // namespace unmask_server
