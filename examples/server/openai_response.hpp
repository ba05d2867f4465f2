// The response bodies of the OpenAI-compatible endpoints: whole completions, the chunks of a
// stream (sent as server-sent events), the model list and errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "openai_request.hpp"

namespace unmask_server {

struct CompletionOutcome {
    std::string id;             // "cmpl-..." or "chatcmpl-..."
    std::string model;
    int64_t created = 0;        // Unix seconds
    std::string text;
    std::string finish_reason;  // "stop", "length" or "tool_calls"
    std::vector<ToolCall> tool_calls;  // chat: the answer's valid tool calls (then `text` is the rest)
    std::string tool_call_error;       // chat: why a generated call was not returned as one
    int64_t prompt_tokens = 0, completion_tokens = 0;
    int64_t steps = 0, forwards = 0;  // unmask's extension: the diffusion work done
};

std::string completion_body(Endpoint endpoint, const CompletionOutcome& outcome);

// One chunk of a stream: `delta` text, and once the answer ends its finish_reason ("" before).
// The chat endpoint's first chunk carries the assistant role (`first`).
std::string chunk_body(Endpoint endpoint, const CompletionOutcome& outcome, const std::string& delta,
                       const std::string& finish_reason, bool first);
// A stream's tool call: the whole call as one delta, at `index`.
std::string tool_call_chunk_body(const CompletionOutcome& outcome, size_t index);
// The last chunk with usage (stream_options.include_usage).
std::string usage_chunk_body(Endpoint endpoint, const CompletionOutcome& outcome);

// "data: BODY\n\n"
std::string server_sent_event(const std::string& body);

// Which files a replica serves, so that an operator tells versions apart during a rollout: the
// model's path, its fingerprint (unmask_model_description.fingerprint) and precision. Empty
// before the model is loaded.
struct ModelIdentity {
    std::string path, fingerprint, precision;
};

// The one model, with its identity under "unmask" (clients of OpenAI's API ignore the field).
std::string models_body(const std::string& model, int64_t created, const ModelIdentity& identity);

}  // namespace unmask_server
