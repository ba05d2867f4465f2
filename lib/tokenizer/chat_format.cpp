#include "tokenizer/chat_format.hpp"

#include "core/error.hpp"
#include "format/strict_json.hpp"
#include "tokenizer/chat_template.hpp"

namespace unmask {
namespace {

enum class Builtin { none, chatml, llama3_headers, role_tokens };

Builtin builtin_format(const Tokenizer& tokenizer) {
    if (tokenizer.has_token("<|im_start|>") && tokenizer.has_token("<|im_end|>")) return Builtin::chatml;
    if (tokenizer.has_token("<|start_header_id|>") && tokenizer.has_token("<|end_header_id|>") && tokenizer.has_token("<|eot_id|>"))
        return Builtin::llama3_headers;
    // Phi-3's tokenizers have the same role tokens but end turns with <|end|>: not this format.
    if (tokenizer.has_token("<|user|>") && tokenizer.has_token("<|assistant|>") && !tokenizer.has_token("<|end|>"))
        return Builtin::role_tokens;
    return Builtin::none;
}

void check_messages(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools) {
    if (!messages.is_array()) fail(Status::invalid_argument, "chat messages must be a JSON array");
    for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            fail(Status::invalid_argument, "chat message {} has no \"role\" string", i);
        if (m.contains("content") && !m["content"].is_string() && !m["content"].is_null() && !m["content"].is_array())
            fail(Status::invalid_argument, "chat message {}: \"content\" must be a string, null or a list of parts", i);
        if (m.contains("tool_calls") && !m["tool_calls"].is_array() && !m["tool_calls"].is_null())
            fail(Status::invalid_argument, "chat message {}: \"tool_calls\" must be a list", i);
        if (m.contains("tool_calls") && m["tool_calls"].is_array())
            for (const auto& call : m["tool_calls"])
                if (!call.is_object()) fail(Status::invalid_argument, "chat message {}: each tool call must be an object", i);
    }
    if (!tools.is_null() && !tools.is_array()) fail(Status::invalid_argument, "chat tools must be a JSON array");
}

// An OpenAI tool call's (or tool's) function object: its "function" member, or the object itself
// when it is the function (as some clients send it).
template <typename Json>
Json& function_of(Json& call) {
    return call.contains("function") && call.at("function").is_object() ? call.at("function") : call;
}

// OpenAI sends a call's arguments as a JSON string; chat templates expect the object
// (transformers' documentation; Llama-3.1's template iterates it, Qwen's prints it with tojson).
// Arguments that are not a JSON object stay the string they were.
nlohmann::ordered_json with_argument_objects(nlohmann::ordered_json messages) {
    for (auto& message : messages) {
        if (!message.contains("tool_calls") || !message["tool_calls"].is_array()) continue;
        for (auto& call : message["tool_calls"]) {
            auto& function = function_of(call);
            if (!function.contains("arguments") || !function["arguments"].is_string()) continue;
            try {
                nlohmann::ordered_json parsed = parse_argument_json(function["arguments"].get<std::string>(), "arguments");
                if (parsed.is_object()) function["arguments"] = std::move(parsed);
            } catch (const Error&) {
            }
        }
    }
    return messages;
}

std::string text_of(const nlohmann::ordered_json& message) {
    const auto it = message.find("content");
    if (it == message.end() || it->is_null()) return "";
    if (it->is_string()) return it->get<std::string>();
    std::string text;  // a list of parts: the text ones
    for (const auto& part : *it)
        if (part.is_object() && part.value("type", "") == "text" && part.contains("text") && part["text"].is_string())
            text += part["text"].get<std::string>();
    return text;
}

std::string builtin_chat(const Tokenizer& tokenizer, Builtin format, nlohmann::ordered_json messages,
                         const nlohmann::ordered_json& tools, bool add_generation_prompt) {
    if (tools.is_array() && !tools.empty()) {
        const std::string description = describe_tools(tools);
        if (!messages.empty() && messages[0]["role"] == "system")
            messages[0]["content"] = text_of(messages[0]) + "\n\n" + description;
        else
            messages.insert(messages.begin(), nlohmann::ordered_json{{"role", "system"}, {"content", description}});
    }
    std::string out;
    if (format == Builtin::llama3_headers) out.append(tokenizer.bos_token());  // LLaDA's <|startoftext|>, Llama-3's <|begin_of_text|>
    for (const auto& message : messages) {
        const std::string role = message["role"].get<std::string>();
        std::string content = text_of(message);
        if (message.contains("tool_calls") && message["tool_calls"].is_array())
            for (const auto& call : message["tool_calls"]) {
                const auto& function = function_of(call);
                const nlohmann::ordered_json shown{{"name", function.value("name", "")},
                                                   {"arguments", function.value("arguments", nlohmann::ordered_json::object())}};
                content += (content.empty() ? "" : "\n") + shown.dump();
            }
        switch (format) {
            case Builtin::chatml: out.append("<|im_start|>").append(role).append("\n").append(content).append("<|im_end|>\n"); break;
            case Builtin::llama3_headers:
                out.append("<|start_header_id|>").append(role).append("<|end_header_id|>\n\n").append(content).append("<|eot_id|>");
                break;
            default:
                // The bundled model's: role tokens and no separators, as it was trained (training/train.py).
                if (role == "user") out.append("<|user|>").append(content);
                else if (role == "assistant") out.append("<|assistant|>").append(content).append("<|endoftext|>");
                else fail(Status::invalid_argument, "this model's chat format (<|user|>, <|assistant|>) has no {} role", role);
        }
    }
    if (add_generation_prompt) {
        switch (format) {
            case Builtin::chatml: out.append("<|im_start|>assistant\n"); break;
            case Builtin::llama3_headers: out.append("<|start_header_id|>assistant<|end_header_id|>\n\n"); break;
            default: out.append("<|assistant|>");
        }
    }
    return out;
}

}  // namespace

bool has_chat_format(const Tokenizer& tokenizer) {
    return tokenizer.chat_template() != nullptr || builtin_format(tokenizer) != Builtin::none;
}

std::string describe_tools(const nlohmann::ordered_json& tools) {
    std::string text =
        "You can call these tools. To call one, answer with only a JSON object "
        "{\"name\": <tool name>, \"arguments\": {<argument>: <value>, ...}}.\nTools:";
    for (const auto& tool : tools) text += "\n" + (tool.is_object() ? function_of(tool) : tool).dump();
    return text;
}

std::string format_chat(const Tokenizer& tokenizer, const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                        bool add_generation_prompt) {
    check_messages(messages, tools);
    const nlohmann::ordered_json conversation = with_argument_objects(messages);
    if (const ChatTemplate* chat_template = tokenizer.chat_template())
        return chat_template->render(conversation, tools, add_generation_prompt);
    const Builtin format = builtin_format(tokenizer);
    if (format == Builtin::none)
        fail(Status::unsupported,
             "the model has no chat template (tokenizer_config.json's chat_template) and none of the chat formats unmask "
             "knows (ChatML's <|im_start|>, LLaMA-3's <|start_header_id|>, <|user|> and <|assistant|>); format the prompt yourself");
    return builtin_chat(tokenizer, format, conversation, tools, add_generation_prompt);
}

std::string format_chat(const Tokenizer& tokenizer, std::string_view system, std::string_view user) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", std::string(system)}});
    messages.push_back({{"role", "user"}, {"content", std::string(user)}});
    return format_chat(tokenizer, messages, nullptr, true);
}

}  // namespace unmask
