// unmask_tokenizer_*, unmask_tokenize, unmask_detokenize.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "abi_sizes.hpp"
#include "boundary.hpp"
#include "core/utf8.hpp"
#include "format/strict_json.hpp"
#include "handles.hpp"
#include "tokenizer/chat_format.hpp"

using namespace unmask;
using namespace unmask::capi;


extern "C" unmask_status unmask_tokenizer_load(const char* path, unmask_tokenizer** out_tokenizer) {
    return guarded(__func__, [&] {
        require_not_null(out_tokenizer, "out_tokenizer");
        *out_tokenizer = nullptr;
        require_not_null(path, "path");
        auto tokenizer = Tokenizer::load(path);
        *out_tokenizer = new unmask_tokenizer{std::move(tokenizer)};
    });
}

extern "C" void unmask_tokenizer_free(unmask_tokenizer* tokenizer) { delete tokenizer; }

extern "C" unmask_status unmask_model_tokenizer(const unmask_model* model, const unmask_tokenizer** out_tokenizer) {
    return guarded(__func__, [&] {
        require_not_null(model, "model");
        require_not_null(out_tokenizer, "out_tokenizer");
        *out_tokenizer = model->tokenizer.tokenizer ? &model->tokenizer : nullptr;
    });
}

extern "C" unmask_status unmask_tokenize(const unmask_tokenizer* tokenizer, const char* text, int64_t text_length,
                                         int32_t add_special_tokens, int32_t* ids, int64_t capacity, int64_t* count) {
    return guarded(__func__, [&] {
        require_not_null(tokenizer, "tokenizer");
        require_not_null(count, "count");
        require_array(text, text_length, "text", "text_length");
        require_array(ids, capacity, "ids", "capacity");
        require_one_of(add_special_tokens, {0, 1}, "add_special_tokens");
        const auto encoded = tokenizer->tokenizer->encode(std::string_view(text, size_t(text_length)), add_special_tokens == 1);
        write_sized(encoded.data(), encoded.size(), ids, capacity, count);
    });
}

extern "C" unmask_status unmask_tokenize_chat(const unmask_tokenizer* tokenizer, const char* system, const char* user,
                                              int32_t* ids, int64_t capacity, int64_t* count) {
    return guarded(__func__, [&] {
        require_not_null(tokenizer, "tokenizer");
        require_not_null(user, "user");
        require_not_null(count, "count");
        require_array(ids, capacity, "ids", "capacity");
        const std::string prompt = format_chat(*tokenizer->tokenizer, system ? system : "", user);
        const auto encoded = tokenizer->tokenizer->encode(prompt, false);
        write_sized(encoded.data(), encoded.size(), ids, capacity, count);
    });
}

namespace {

// The caller's messages as the JSON array chat templates read (OpenAI's message shape).
nlohmann::ordered_json messages_json(const unmask_chat_message* messages, int64_t count) {
    require_array(messages, count, "messages", "count");
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    if (count == 0) return out;
    const size_t stride = messages[0].struct_size;
    if (stride < chat_message_v1_size || stride > sizeof(unmask_chat_message))
        fail(Status::invalid_argument, "messages[0].struct_size is {}, expected between {} and {} (initialise it with "
             "unmask_chat_message_init)", stride, chat_message_v1_size, sizeof(unmask_chat_message));
    const auto* base = reinterpret_cast<const unsigned char*>(messages);
    for (int64_t i = 0; i < count; ++i) {
        unmask_chat_message m{};
        std::memcpy(&m, base + size_t(i) * stride, stride);
        if (m.struct_size != stride)
            fail(Status::invalid_argument, "messages[{}].struct_size is {}, but messages[0]'s is {}", i, m.struct_size, stride);
        if (!m.role) fail(Status::invalid_argument, "messages[{}].role is NULL", i);
        for (const auto& [field, text] : {std::pair{"role", m.role}, std::pair{"content", m.content},
                                          std::pair{"tool_call_id", m.tool_call_id}, std::pair{"name", m.name}})
            if (text)
                if (const auto bad = find_invalid_utf8(text))
                    fail(Status::invalid_argument, "messages[{}].{} is not valid UTF-8 (byte {})", i, field, *bad);
        nlohmann::ordered_json message{{"role", m.role}, {"content", m.content ? nlohmann::ordered_json(m.content) : nullptr}};
        if (m.tool_calls) {
            message["tool_calls"] = parse_argument_json(m.tool_calls, fmt::format("messages[{}].tool_calls", i));
            if (!message["tool_calls"].is_array()) fail(Status::invalid_argument, "messages[{}].tool_calls is not a JSON array", i);
        }
        if (m.tool_call_id) message["tool_call_id"] = m.tool_call_id;
        if (m.name) message["name"] = m.name;
        out.push_back(std::move(message));
    }
    return out;
}

std::string chat_prompt(const unmask_tokenizer* tokenizer, const unmask_chat_message* messages, int64_t count,
                        const char* tools_json, int32_t add_generation_prompt) {
    require_not_null(tokenizer, "tokenizer");
    require_one_of(add_generation_prompt, {0, 1}, "add_generation_prompt");
    const nlohmann::ordered_json tools = tools_json ? parse_argument_json(tools_json, "tools_json") : nlohmann::ordered_json();
    return format_chat(*tokenizer->tokenizer, messages_json(messages, count), tools, add_generation_prompt == 1);
}

}  // namespace

extern "C" unmask_status unmask_chat_message_init_sized(unmask_chat_message* message, size_t size) {
    return guarded(__func__, [&] { write_defaults(message, size, unmask_chat_message{}, chat_message_v1_size); });
}

extern "C" unmask_status unmask_tokenizer_has_chat_format(const unmask_tokenizer* tokenizer, int32_t* has) {
    return guarded(__func__, [&] {
        require_not_null(tokenizer, "tokenizer");
        require_not_null(has, "has");
        *has = has_chat_format(*tokenizer->tokenizer) ? 1 : 0;
    });
}

extern "C" unmask_status unmask_apply_chat_template(const unmask_tokenizer* tokenizer, const unmask_chat_message* messages,
                                                    int64_t count, const char* tools_json, int32_t add_generation_prompt,
                                                    char* text, int64_t capacity, int64_t* length) {
    return guarded(__func__, [&] {
        require_not_null(length, "length");
        require_array(text, capacity, "text", "capacity");
        const std::string prompt = chat_prompt(tokenizer, messages, count, tools_json, add_generation_prompt);
        write_sized(prompt.data(), prompt.size(), text, capacity, length);
    });
}

extern "C" unmask_status unmask_tokenize_messages(const unmask_tokenizer* tokenizer, const unmask_chat_message* messages,
                                                  int64_t count, const char* tools_json, int32_t add_generation_prompt,
                                                  int32_t* ids, int64_t capacity, int64_t* ids_count) {
    return guarded(__func__, [&] {
        require_not_null(ids_count, "ids_count");
        require_array(ids, capacity, "ids", "capacity");
        const std::string prompt = chat_prompt(tokenizer, messages, count, tools_json, add_generation_prompt);
        const auto encoded = tokenizer->tokenizer->encode(prompt, false);
        write_sized(encoded.data(), encoded.size(), ids, capacity, ids_count);
    });
}

extern "C" unmask_status unmask_tokenizer_vocab_size(const unmask_tokenizer* tokenizer, int64_t* size) {
    return guarded(__func__, [&] {
        require_not_null(tokenizer, "tokenizer");
        require_not_null(size, "size");
        *size = tokenizer->tokenizer->vocab_size();
    });
}

extern "C" unmask_status unmask_detokenize(const unmask_tokenizer* tokenizer, const int32_t* ids, int64_t count,
                                           int32_t skip_special_tokens, char* text, int64_t capacity, int64_t* length) {
    return guarded(__func__, [&] {
        require_not_null(tokenizer, "tokenizer");
        require_not_null(length, "length");
        require_array(ids, count, "ids", "count");
        require_array(text, capacity, "text", "capacity");
        require_one_of(skip_special_tokens, {0, 1}, "skip_special_tokens");
        const std::string decoded = tokenizer->tokenizer->decode(std::span(ids, size_t(count)), skip_special_tokens == 1);
        write_sized(decoded.data(), decoded.size(), text, capacity, length);
    });
}
