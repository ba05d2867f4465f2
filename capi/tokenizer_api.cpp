// unmask_tokenizer_*, unmask_tokenize, unmask_detokenize.
#include <algorithm>
#include <cstring>

#include "boundary.hpp"
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
        if (text_length < 0) fail(Status::invalid_argument, "text_length must not be negative, got {}", text_length);
        if (text_length > 0) require_not_null(text, "text");
        if (capacity < 0) fail(Status::invalid_argument, "capacity must not be negative, got {}", capacity);
        if (capacity > 0) require_not_null(ids, "ids");
        require_one_of(add_special_tokens, {0, 1}, "add_special_tokens");
        const auto encoded = tokenizer->tokenizer->encode(std::string_view(text, size_t(text_length)), add_special_tokens == 1);
        *count = static_cast<int64_t>(encoded.size());
        std::copy_n(encoded.begin(), std::min<int64_t>(capacity, *count), ids);
    });
}

extern "C" unmask_status unmask_tokenize_chat(const unmask_tokenizer* tokenizer, const char* system, const char* user,
                                              int32_t* ids, int64_t capacity, int64_t* count) {
    return guarded(__func__, [&] {
        require_not_null(tokenizer, "tokenizer");
        require_not_null(user, "user");
        require_not_null(count, "count");
        if (capacity < 0) fail(Status::invalid_argument, "capacity must not be negative, got {}", capacity);
        if (capacity > 0) require_not_null(ids, "ids");
        const std::string prompt = format_chat(*tokenizer->tokenizer, system ? system : "", user);
        const auto encoded = tokenizer->tokenizer->encode(prompt, false);
        *count = static_cast<int64_t>(encoded.size());
        std::copy_n(encoded.begin(), std::min<int64_t>(capacity, *count), ids);
    });
}

extern "C" unmask_status unmask_detokenize(const unmask_tokenizer* tokenizer, const int32_t* ids, int64_t count,
                                           int32_t skip_special_tokens, char* text, int64_t capacity, int64_t* length) {
    return guarded(__func__, [&] {
        require_not_null(tokenizer, "tokenizer");
        require_not_null(length, "length");
        if (count < 0) fail(Status::invalid_argument, "count must not be negative, got {}", count);
        if (count > 0) require_not_null(ids, "ids");
        if (capacity < 0) fail(Status::invalid_argument, "capacity must not be negative, got {}", capacity);
        if (capacity > 0) require_not_null(text, "text");
        require_one_of(skip_special_tokens, {0, 1}, "skip_special_tokens");
        const std::string decoded = tokenizer->tokenizer->decode(std::span(ids, size_t(count)), skip_special_tokens == 1);
        *length = static_cast<int64_t>(decoded.size());
        if (capacity > 0) std::memcpy(text, decoded.data(), size_t(std::min<int64_t>(capacity, *length)));
    });
}
