#include "tool_calls.hpp"

#include "bounded_json.hpp"
#include "json_schema.hpp"

namespace unmask_server {
namespace {

using json = nlohmann::ordered_json;

std::string trimmed(const std::string& s) {
    const size_t first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return "";
    return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// The call in `text`, or why it is not one.
std::string read_call(const std::string& text, const json& tools, ToolCall& call) {
    // Printing and checking a parsed value recurse per level: bounded as request bodies are.
    if (unmask_examples::json_nesting_depth(text) > unmask_examples::max_json_nesting)
        return "the tool call nests deeper than " + std::to_string(unmask_examples::max_json_nesting) + " levels";
    const json parsed = json::parse(text, nullptr, false);
    if (parsed.is_discarded()) return "the tool call is not valid JSON";
    if (!parsed.is_object() || !parsed.contains("name") || !parsed["name"].is_string())
        return "the tool call is not an object with a \"name\" string";
    const json* arguments = parsed.contains("arguments") ? &parsed["arguments"] : parsed.contains("parameters") ? &parsed["parameters"] : nullptr;
    json decoded;
    if (arguments && arguments->is_string()) {  // arguments written as a JSON string
        if (unmask_examples::json_nesting_depth(arguments->get<std::string>()) > unmask_examples::max_json_nesting)
            return "the arguments of the tool call nest deeper than " + std::to_string(unmask_examples::max_json_nesting) + " levels";
        decoded = json::parse(arguments->get<std::string>(), nullptr, false);
        if (decoded.is_discarded()) return "the arguments of the tool call are not valid JSON";
        arguments = &decoded;
    }
    const json empty = json::object();
    if (!arguments) arguments = &empty;
    if (!arguments->is_object()) return "the arguments of the tool call are not a JSON object";
    call.name = parsed["name"].get<std::string>();
    call.arguments = arguments->dump(-1, ' ', false, json::error_handler_t::replace);
    for (const json& tool : tools) {
        const json& function = tool["function"];
        if (function["name"] != call.name) continue;
        const std::string why = function.contains("parameters") ? schema_violation(*arguments, function["parameters"]) : "";
        return why.empty() ? "" : "the call of " + call.name + " does not fit its parameters: " + why;
    }
    return "the answer calls " + call.name + ", a tool the request did not offer";
}

}  // namespace

ToolCallReading read_tool_calls(const std::string& text, const json& tools, ToolChoice choice, const std::string& named) {
    ToolCallReading out;
    std::vector<std::string> bodies;
    const std::string open = "<tool_call>", close = "</tool_call>";
    const size_t first = text.find(open);
    if (first != std::string::npos) {
        out.content = trimmed(text.substr(0, first));
        for (size_t at = first; at != std::string::npos; at = text.find(open, at)) {
            const size_t end = text.find(close, at + open.size());
            bodies.push_back(trimmed(text.substr(at + open.size(), end == std::string::npos ? std::string::npos : end - at - open.size())));
            if (end == std::string::npos) break;
            at = end + close.size();
        }
    } else if (const std::string whole = trimmed(text); !whole.empty() && whole.front() == '{') {
        bodies.push_back(whole);
    } else {
        out.content = text;
    }
    for (const std::string& body : bodies) {
        ToolCall call;
        if (std::string why = read_call(body, tools, call); !why.empty()) {
            out.error = why;
            break;
        }
        if (choice == ToolChoice::named && call.name != named) {
            out.error = "tool_choice asks for " + named + ", but the answer calls " + call.name;
            break;
        }
        out.calls.push_back(std::move(call));
    }
    if (out.error.empty() && out.calls.empty() && (choice == ToolChoice::required || choice == ToolChoice::named))
        out.error = "tool_choice asks for a tool call, but the answer is text";
    if (!out.error.empty()) {  // the text goes back as it is, the calls are not passed on
        out.calls.clear();
        out.content = text;
    }
    return out;
}

}  // namespace unmask_server
