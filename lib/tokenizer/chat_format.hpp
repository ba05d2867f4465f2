// Chat prompts: the model's own chat template (tokenizer/chat_template.hpp) when it has one, as
// Hugging Face's apply_chat_template renders it; otherwise a built-in format chosen from the
// tokenizer's special tokens: ChatML (<|im_start|>), the LLaMA-3 headers (<|start_header_id|>)
// or bare role tokens (<|user|>...<|assistant|>).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.hpp"

namespace unmask {

// Whether the tokenizer has a chat template or one of the built-in formats.
bool has_chat_format(const Tokenizer& tokenizer);

// The prompt text (special tokens spelled out) of `messages`, a JSON array of OpenAI-style
// messages ({"role", "content", optional "tool_calls", "tool_call_id", "name"}), with `tools`
// (null, or an array of OpenAI tool definitions) and, when `add_generation_prompt`, ending where
// the assistant's answer begins. Without a template, tools are described in a system message
// (docs/tokenizers.md). Throws INVALID_ARGUMENT for malformed messages or a template's error
// (its raise_exception message), UNSUPPORTED when the tokenizer has no chat format or its
// template could not be parsed.
std::string format_chat(const Tokenizer& tokenizer, const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                        bool add_generation_prompt);

// One optional system message (empty for none) and one user message.
std::string format_chat(const Tokenizer& tokenizer, std::string_view system, std::string_view user);

// The system text that describes `tools` to a model without a chat template.
std::string describe_tools(const nlohmann::ordered_json& tools);

}  // namespace unmask
