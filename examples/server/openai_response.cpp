#include "openai_response.hpp"

#include <nlohmann/json.hpp>

#include "api_error.hpp"

namespace unmask_server {
namespace {

using nlohmann::json;

// Text from a tokenizer may hold invalid UTF-8 (a character cut by the generation's end): send
// U+FFFD for it rather than fail.
std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

const char* object_name(Endpoint endpoint, bool chunk) {
    if (endpoint == Endpoint::completions) return "text_completion";
    return chunk ? "chat.completion.chunk" : "chat.completion";
}

json usage(const CompletionOutcome& o) {
    return {{"prompt_tokens", o.prompt_tokens},
            {"completion_tokens", o.completion_tokens},
            {"total_tokens", o.prompt_tokens + o.completion_tokens}};
}

json envelope(Endpoint endpoint, const CompletionOutcome& o, bool chunk) {
    return {{"id", o.id}, {"object", object_name(endpoint, chunk)}, {"created", o.created}, {"model", o.model}};
}

json finish(const std::string& reason) { return reason.empty() ? json(nullptr) : json(reason); }

// OpenAI's shape of a call; its id is the completion's and the call's index.
json tool_call(const CompletionOutcome& o, size_t index) {
    const ToolCall& call = o.tool_calls[index];
    return {{"id", "call_" + o.id + "_" + std::to_string(index)},
            {"type", "function"},
            {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

// unmask's part of a response: the diffusion work done, and why a generated call was refused.
json extension(const CompletionOutcome& o) {
    json out = {{"steps", o.steps}, {"forwards", o.forwards}};
    if (!o.tool_call_error.empty()) out["tool_call_error"] = o.tool_call_error;
    return out;
}

}  // namespace

std::string error_body(const ApiError& error) {
    const char* type = error.status == 401   ? "authentication_error"
                       : error.status == 429 ? "rate_limit_error"
                       : error.status >= 500 ? "server_error"
                                             : "invalid_request_error";
    return dump({{"error",
                  {{"message", error.what()},
                   {"type", type},
                   {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                   {"code", error.code.empty() ? json(nullptr) : json(error.code)}}}});
}

std::string completion_body(Endpoint endpoint, const CompletionOutcome& o) {
    json body = envelope(endpoint, o, false);
    json choice = {{"index", 0}, {"finish_reason", o.finish_reason}};
    if (endpoint == Endpoint::completions) {
        choice["text"] = o.text;
        choice["logprobs"] = nullptr;
    } else if (o.tool_calls.empty()) {
        choice["message"] = {{"role", "assistant"}, {"content", o.text}};
    } else {
        json calls = json::array();
        for (size_t i = 0; i < o.tool_calls.size(); ++i) calls.push_back(tool_call(o, i));
        choice["message"] = {{"role", "assistant"}, {"content", o.text.empty() ? json(nullptr) : json(o.text)}, {"tool_calls", calls}};
    }
    body["choices"] = json::array({choice});
    body["usage"] = usage(o);
    body["unmask"] = extension(o);
    return dump(body);
}

std::string tool_call_chunk_body(const CompletionOutcome& o, size_t index) {
    json body = envelope(Endpoint::chat_completions, o, true);
    json call = tool_call(o, index);
    call["index"] = index;
    body["choices"] = json::array({{{"index", 0}, {"finish_reason", nullptr}, {"delta", {{"tool_calls", json::array({call})}}}}});
    return dump(body);
}

std::string chunk_body(Endpoint endpoint, const CompletionOutcome& o, const std::string& delta,
                       const std::string& finish_reason, bool first) {
    json body = envelope(endpoint, o, true);
    json choice = {{"index", 0}, {"finish_reason", finish(finish_reason)}};
    if (endpoint == Endpoint::completions) {
        choice["text"] = delta;
        choice["logprobs"] = nullptr;
    } else {
        json d = json::object();
        if (first) d["role"] = "assistant";
        if (!delta.empty() || !first) d["content"] = delta;
        choice["delta"] = d;
    }
    body["choices"] = json::array({choice});
    if (!finish_reason.empty() && !o.tool_call_error.empty()) body["unmask"] = extension(o);
    return dump(body);
}

std::string usage_chunk_body(Endpoint endpoint, const CompletionOutcome& o) {
    json body = envelope(endpoint, o, true);
    body["choices"] = json::array();
    body["usage"] = usage(o);
    body["unmask"] = extension(o);
    return dump(body);
}

std::string server_sent_event(const std::string& body) { return "data: " + body + "\n\n"; }

std::string models_body(const std::string& model, int64_t created, const ModelIdentity& identity) {
    const json unmask = {{"path", identity.path}, {"fingerprint", identity.fingerprint}, {"precision", identity.precision}};
    return dump({{"object", "list"},
                 {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "unmask"},
                                        {"unmask", unmask}}})}});
}

}  // namespace unmask_server
