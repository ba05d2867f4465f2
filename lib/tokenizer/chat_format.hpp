// Chat prompts for the model families we know, chosen from the tokenizer's special tokens:
// ChatML (Qwen, Dream: <|im_start|>), the LLaMA-3 header format (LLaDA, Llama-3:
// <|start_header_id|>) and bare role tokens (the bundled model: <|user|>...<|assistant|>). A full Jinja engine for arbitrary chat_template strings is out of scope.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/tokenizer.hpp"

namespace unmask {

// The prompt text (special tokens spelled out) for one optional system message and one user
// message, ending where the assistant's answer begins. Throws UNSUPPORTED when the tokenizer has
// none of the families' tokens, INVALID_ARGUMENT for a system message the format has no role for.
std::string format_chat(const Tokenizer& tokenizer, std::string_view system, std::string_view user);

}  // namespace unmask
