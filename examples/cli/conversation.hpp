// A conversation as the model's chat format encodes it (unmask_tokenize_messages), for
// `generate` and `chat`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "unmask.h"

namespace unmask_cli {

struct ChatTurn {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

// Whether the model has a chat template or a built-in chat format.
bool has_chat_format(const unmask_tokenizer* tokenizer);

// The prompt ids of `turns`, ending where the assistant's answer begins.
std::vector<int32_t> encode_chat(const unmask_tokenizer* tokenizer, const std::vector<ChatTurn>& turns);

}  // namespace unmask_cli
