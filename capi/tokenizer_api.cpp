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
