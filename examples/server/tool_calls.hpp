// Tool calls in a generated answer, checked before they are returned as OpenAI `tool_calls`.
// A call is a JSON object {"name": ..., "arguments": {...}} ("parameters" is read as
// "arguments", as Llama-3.1 writes it): the whole answer, or each <tool_call>...</tool_call>
// block (the Hermes and Qwen format) with the text before the first block as content. A call is
// valid when its tool was offered and its arguments satisfy the tool's parameters schema.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace unmask_server {

enum class ToolChoice { none, automatic, required, named };

struct ToolCall {
    std::string name;
    std::string arguments;  // JSON text, as OpenAI sends it
};

struct ToolCallReading {
    std::string content;          // the text that is not a call
    std::vector<ToolCall> calls;  // the calls, when every one of them is valid
    std::string error;            // why the answer is not the valid call(s) the choice asks for; "" when fine
};

// `tools`: the tools offered (OpenAI's {"type": "function", "function": {...}} objects).
// `named`: the tool a named tool_choice asks for.
ToolCallReading read_tool_calls(const std::string& text, const nlohmann::ordered_json& tools, ToolChoice choice,
                                const std::string& named);

}  // namespace unmask_server
