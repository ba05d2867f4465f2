// unmask.hpp: a header-only C++20 wrapper over the C ABI (unmask.h). Handles are RAII objects,
// failures are unmask::Error exceptions carrying the status and the library's message, inputs are
// spans and string_views, outputs vectors and strings, and a stream callback can be any callable.
// Nothing here adds behaviour: every call is one C call (or a few, to size a buffer).
// The namespace is unmask::api: the library's own C++ internals live in namespace unmask (in the
// static library too), and the wrapper's Model, Engine, Error... must never share their names.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "unmask.h"

namespace unmask::api {

// A failed call: what() is "<function>: <STATUS>: <message>".
class Error : public std::runtime_error {
public:
    // After a failed call: the message is the library's last error on this thread.
    Error(unmask_status status, const std::string& what) : Error(status, what, unmask_last_error()) {}
    Error(unmask_status status, const std::string& what, const std::string& message)
        : std::runtime_error(what + ": " + unmask_status_string(status) + ": " + message), status_(status) {}
    unmask_status status() const noexcept { return status_; }

private:
    unmask_status status_;
};

inline void check(unmask_status status, const char* what) {
    if (status != UNMASK_OK) throw Error(status, what);
}

// Parameter structs with their defaults filled in (struct_size included).
struct ModelParams : unmask_model_params {
    ModelParams() {
        check(unmask_model_params_init(static_cast<unmask_model_params*>(this)), "unmask_model_params_init");
    }
};
struct PlanParams : unmask_plan_params {
    PlanParams() {
        check(unmask_plan_params_init(static_cast<unmask_plan_params*>(this)), "unmask_plan_params_init");
    }
};
struct GenerateParams : unmask_generate_params {
    GenerateParams() {
        check(unmask_generate_params_init(static_cast<unmask_generate_params*>(this)), "unmask_generate_params_init");
    }
};
struct EngineParams : unmask_engine_params {
    EngineParams() {
        check(unmask_engine_params_init(static_cast<unmask_engine_params*>(this)), "unmask_engine_params_init");
    }
};

// Output structs the caller sizes.
template <typename T>
T sized() {
    T value{};
    value.struct_size = sizeof(T);
    return value;
}

// Memory needed by a deployment of the model at `path`, before anything is loaded.
inline unmask_memory_plan plan(const std::string& path, const PlanParams& params = {}) {
    auto out = sized<unmask_memory_plan>();
    check(unmask_plan(path.c_str(), &params, &out), "unmask_plan");
    return out;
}

// One message of a conversation, owning its text: unmask_chat_message's fields, where an empty
// string is absent (content too, unless has_content: an assistant turn that only calls tools
// has none).
struct ChatMessage {
    std::string role, content;
    std::string tool_calls;  // an assistant's calls: a JSON array of OpenAI tool calls
    std::string tool_call_id, name;
    bool has_content = true;

    ChatMessage() = default;
    ChatMessage(std::string role_, std::string content_) : role(std::move(role_)), content(std::move(content_)) {}
    // An assistant turn that only calls tools.
    static ChatMessage calls(std::string tool_calls_json) {
        ChatMessage m("assistant", "");
        m.tool_calls = std::move(tool_calls_json);
        m.has_content = false;
        return m;
    }
    // A tool's result, answering the call `tool_call_id`.
    static ChatMessage tool_result(std::string tool_call_id_, std::string content_) {
        ChatMessage m("tool", std::move(content_));
        m.tool_call_id = std::move(tool_call_id_);
        return m;
    }
};

// A tokenizer: the model's (a view, owned by the model) or one loaded from a file (owned).
class Tokenizer {
public:
    static Tokenizer load(const std::string& path) {
        unmask_tokenizer* tokenizer = nullptr;
        check(unmask_tokenizer_load(path.c_str(), &tokenizer), "unmask_tokenizer_load");
        return Tokenizer(tokenizer, Owned{tokenizer, unmask_tokenizer_free});
    }
    explicit Tokenizer(const unmask_tokenizer* view) : tokenizer_(view) {}

    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const {
        return read_ids([&](int32_t* ids, int64_t capacity, int64_t* count) {
            return unmask_tokenize(tokenizer_, text.data(), static_cast<int64_t>(text.size()), add_special_tokens ? 1 : 0,
                                   ids, capacity, count);
        }, "unmask_tokenize");
    }
    // A chat prompt in the tokenizer's format, ending where the assistant's answer begins.
    std::vector<int32_t> encode_chat(const std::string& user, const std::string& system = {}) const {
        return read_ids([&](int32_t* ids, int64_t capacity, int64_t* count) {
            return unmask_tokenize_chat(tokenizer_, system.empty() ? nullptr : system.c_str(), user.c_str(), ids,
                                        capacity, count);
        }, "unmask_tokenize_chat");
    }
    // A conversation through the model's chat template (tool definitions as a JSON array, or
    // empty for none): its text, or its ids; has_chat_format() says whether the model has one.
    std::string apply_chat_template(const std::vector<ChatMessage>& messages, const std::string& tools_json = {},
                                    bool add_generation_prompt = true) const {
        const auto c = c_messages(messages);
        return read_text([&](char* text, int64_t capacity, int64_t* length) {
            return unmask_apply_chat_template(tokenizer_, c.data(), static_cast<int64_t>(c.size()),
                                              tools_json.empty() ? nullptr : tools_json.c_str(), add_generation_prompt ? 1 : 0,
                                              text, capacity, length);
        }, "unmask_apply_chat_template");
    }
    std::vector<int32_t> encode_messages(const std::vector<ChatMessage>& messages, const std::string& tools_json = {},
                                         bool add_generation_prompt = true) const {
        const auto c = c_messages(messages);
        return read_ids([&](int32_t* ids, int64_t capacity, int64_t* count) {
            return unmask_tokenize_messages(tokenizer_, c.data(), static_cast<int64_t>(c.size()),
                                            tools_json.empty() ? nullptr : tools_json.c_str(), add_generation_prompt ? 1 : 0,
                                            ids, capacity, count);
        }, "unmask_tokenize_messages");
    }
    bool has_chat_format() const {
        int32_t has = 0;
        check(unmask_tokenizer_has_chat_format(tokenizer_, &has), "unmask_tokenizer_has_chat_format");
        return has == 1;
    }
    // One past the highest id it knows; decode() skips ids beyond.
    int64_t vocab_size() const {
        int64_t size = 0;
        check(unmask_tokenizer_vocab_size(tokenizer_, &size), "unmask_tokenizer_vocab_size");
        return size;
    }
    std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const {
        return read_text([&](char* text, int64_t capacity, int64_t* length) {
            return unmask_detokenize(tokenizer_, ids.data(), static_cast<int64_t>(ids.size()), skip_special_tokens ? 1 : 0,
                                     text, capacity, length);
        }, "unmask_detokenize");
    }
    const unmask_tokenizer* get() const noexcept { return tokenizer_; }

    // The C structs of `messages`, pointing into them.
    static std::vector<unmask_chat_message> c_messages(const std::vector<ChatMessage>& messages) {
        std::vector<unmask_chat_message> out(messages.size());
        auto optional = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
        for (size_t i = 0; i < messages.size(); ++i) {
            check(unmask_chat_message_init(&out[i]), "unmask_chat_message_init");
            out[i].role = messages[i].role.c_str();
            out[i].content = messages[i].has_content ? messages[i].content.c_str() : nullptr;
            out[i].tool_calls = optional(messages[i].tool_calls);
            out[i].tool_call_id = optional(messages[i].tool_call_id);
            out[i].name = optional(messages[i].name);
        }
        return out;
    }

    // Calls `fill(buffer, capacity, &count)` until the buffer held everything (outputs such as
    // the metrics may grow between calls).
    template <typename Fill>
    static std::vector<int32_t> read_ids(const Fill& fill, const char* what) {
        std::vector<int32_t> ids(256);
        for (int64_t count = 0;;) {
            check(fill(ids.data(), static_cast<int64_t>(ids.size()), &count), what);
            const bool complete = count <= static_cast<int64_t>(ids.size());
            ids.resize(static_cast<size_t>(count));
            if (complete) return ids;
        }
    }
    template <typename Fill>
    static std::string read_text(const Fill& fill, const char* what) {
        std::string text(1024, '\0');
        for (int64_t length = 0;;) {
            check(fill(text.data(), static_cast<int64_t>(text.size()), &length), what);
            const bool complete = length <= static_cast<int64_t>(text.size());
            text.resize(static_cast<size_t>(length));
            if (complete) return text;
        }
    }

private:
    using Owned = std::shared_ptr<unmask_tokenizer>;
    Tokenizer(const unmask_tokenizer* tokenizer, Owned owned) : tokenizer_(tokenizer), owned_(std::move(owned)) {}
    const unmask_tokenizer* tokenizer_ = nullptr;
    Owned owned_;
};

// The result of a synchronous generation.
struct Generation {
    std::vector<int32_t> tokens;  // the generated ids (prompt excluded)
    int32_t finish_reason = 0;    // UNMASK_FINISH_*
    int64_t steps = 0, forwards = 0;
};

// A loaded model: immutable and thread-safe. Its engines, their requests (for text()) and its
// tokenizer views point into it, so it must outlive them.
class Model {
public:
    static Model load(const std::string& path, const ModelParams& params = {}) {
        unmask_model* model = nullptr;
        check(unmask_model_load(path.c_str(), &params, &model), "unmask_model_load");
        return Model(model);
    }

    unmask_model_description info() const {
        auto out = sized<unmask_model_description>();
        check(unmask_model_info(get(), &out), "unmask_model_info");
        return out;
    }
    unmask_memory_usage memory() const {
        auto out = sized<unmask_memory_usage>();
        check(unmask_model_memory(get(), &out), "unmask_model_memory");
        return out;
    }
    // The tokenizer of the model's directory; UNSUPPORTED when it has none.
    Tokenizer tokenizer() const {
        const unmask_tokenizer* tokenizer = nullptr;
        check(unmask_model_tokenizer(get(), &tokenizer), "unmask_model_tokenizer");
        if (tokenizer == nullptr)
            throw Error(UNMASK_ERR_UNSUPPORTED, "unmask_model_tokenizer", "the model directory has no tokenizer.json");
        return Tokenizer(tokenizer);
    }

    // Generates for one prompt, synchronously.
    Generation generate(std::span<const int32_t> prompt, const GenerateParams& params = {}) const {
        Generation g;
        g.tokens.resize(static_cast<size_t>(params.gen_length > 0 ? params.gen_length : 0));
        unmask_generation result{sizeof(unmask_generation), 0, g.tokens.data(), static_cast<int64_t>(g.tokens.size()),
                                 0, 0, 0};
        check(unmask_generate(get(), &params, prompt.data(), static_cast<int64_t>(prompt.size()), &result),
              "unmask_generate");
        g.tokens.resize(static_cast<size_t>(result.token_count));
        g.finish_reason = result.finish_reason;
        g.steps = result.steps;
        g.forwards = result.forwards;
        return g;
    }

    const unmask_model* get() const noexcept { return model_.get(); }

private:
    explicit Model(unmask_model* model) : model_(model, unmask_model_free) {}
    std::unique_ptr<unmask_model, void (*)(unmask_model*)> model_;
};

// What a stream callback sees: the event of the C API (tokens valid during the call only).
using StreamCallback = std::function<bool(const unmask_stream_event&)>;  // false cancels

// A submitted request. Destroying it cancels it if it is still running.
class Request {
public:
    // Waits for the outcome; false when `timeout_seconds` (< 0: forever) passed first.
    bool wait(double timeout_seconds = -1) const {
        const unmask_status status = unmask_request_wait(get(), timeout_seconds);
        if (status == UNMASK_ERR_TIMEOUT) return false;
        check(status, "unmask_request_wait");
        return true;
    }
    void cancel() { check(unmask_request_cancel(request_.get()), "unmask_request_cancel"); }
    void stop() { check(unmask_request_stop(request_.get()), "unmask_request_stop"); }
    unmask_request_info info() const {
        auto out = sized<unmask_request_info>();
        check(unmask_request_info_get(get(), &out), "unmask_request_info_get");
        return out;
    }
    std::vector<int32_t> tokens() const {
        return Tokenizer::read_ids([&](int32_t* ids, int64_t capacity, int64_t* count) {
            return unmask_request_tokens(get(), ids, capacity, count);
        }, "unmask_request_tokens");
    }
    // The answer as text (up to the first EOS, special tokens skipped).
    std::string text() const {
        return Tokenizer::read_text([&](char* text, int64_t capacity, int64_t* length) {
            return unmask_request_text(get(), text, capacity, length);
        }, "unmask_request_text");
    }
    const unmask_request* get() const noexcept { return request_.get(); }

    Request() = default;
    Request(Request&&) noexcept = default;
    // The old request goes before its callback (the default would free the callback first).
    Request& operator=(Request&& other) noexcept {
        if (this != &other) {
            request_.reset();
            callback_ = std::move(other.callback_);
            request_ = std::move(other.request_);
        }
        return *this;
    }

private:
    friend class Engine;
    // The callback is freed after the request (declared first): unmask_request_free guarantees
    // no call once it returns.
    std::unique_ptr<StreamCallback> callback_;
    std::unique_ptr<unmask_request, void (*)(unmask_request*)> request_{nullptr, unmask_request_free};
};

// An engine over a model: submit from any thread; requests are batched per step.
class Engine {
public:
    explicit Engine(const Model& model, const EngineParams& params = {}) {
        unmask_engine* engine = nullptr;
        check(unmask_engine_create(model.get(), &params, &engine), "unmask_engine_create");
        engine_.reset(engine);
    }

    // Queues a prompt. `on_event` (optional) runs on the engine's thread after each committed
    // block (and step, with params.stream_steps); returning false or throwing cancels the request.
    // `wait_seconds` > 0 waits that long for room in a full queue (else QUEUE_FULL at once).
    Request submit(std::span<const int32_t> prompt, GenerateParams params = {}, StreamCallback on_event = {},
                   double wait_seconds = 0) {
        Request request;
        if (on_event) {
            request.callback_ = std::make_unique<StreamCallback>(std::move(on_event));
            params.stream_callback = [](const unmask_stream_event* event, void* user_data) -> int32_t {
                try {
                    return (*static_cast<StreamCallback*>(user_data))(*event) ? 0 : 1;
                } catch (...) {
                    return 1;  // an exception must not cross the C boundary: cancel instead
                }
            };
            params.stream_user_data = request.callback_.get();
        }
        unmask_request* handle = nullptr;
        check(unmask_engine_submit(engine_.get(), &params, prompt.data(), static_cast<int64_t>(prompt.size()),
                                   wait_seconds, &handle),
              "unmask_engine_submit");
        request.request_.reset(handle);
        return request;
    }

    unmask_engine_stats stats() const {
        auto out = sized<unmask_engine_stats>();
        check(unmask_engine_stats_get(engine_.get(), &out), "unmask_engine_stats_get");
        return out;
    }
    // The stats in the Prometheus text format.
    std::string metrics() const {
        return Tokenizer::read_text([&](char* text, int64_t capacity, int64_t* length) {
            return unmask_engine_metrics(engine_.get(), text, capacity, length);
        }, "unmask_engine_metrics");
    }
    // UNMASK_SHUTDOWN_* mode; see unmask_engine_shutdown.
    void shutdown(int32_t mode, double timeout_seconds) {
        check(unmask_engine_shutdown(engine_.get(), mode, timeout_seconds), "unmask_engine_shutdown");
    }
    const unmask_engine* get() const noexcept { return engine_.get(); }

private:
    std::unique_ptr<unmask_engine, void (*)(unmask_engine*)> engine_{nullptr, unmask_engine_free};
};

}  // namespace unmask::api
