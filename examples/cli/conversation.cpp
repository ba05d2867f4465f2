#include "conversation.hpp"

#include "commands.hpp"

namespace unmask_cli {

bool has_chat_format(const unmask_tokenizer* tokenizer) {
    int32_t has = 0;
    check(unmask_tokenizer_has_chat_format(tokenizer, &has));
    return has == 1;
}

std::vector<int32_t> encode_chat(const unmask_tokenizer* tokenizer, const std::vector<ChatTurn>& turns) {
    std::vector<unmask_chat_message> messages(turns.size());
    for (size_t i = 0; i < turns.size(); ++i) {
        check(unmask_chat_message_init(&messages[i]));
        messages[i].role = turns[i].role.c_str();
        messages[i].content = turns[i].content.c_str();
    }
    const auto count = static_cast<int64_t>(messages.size());
    int64_t length = 0;
    check(unmask_tokenize_messages(tokenizer, messages.data(), count, nullptr, 1, nullptr, 0, &length));
    std::vector<int32_t> ids(static_cast<size_t>(length));
    check(unmask_tokenize_messages(tokenizer, messages.data(), count, nullptr, 1, ids.data(), length, &length));
    return ids;
}

}  // namespace unmask_cli
