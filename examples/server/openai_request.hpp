// The request bodies of POST /v1/completions and POST /v1/chat/completions: OpenAI's fields
// (prompt or messages, tools and tool_choice, max_tokens, temperature, top_p, seed, stop, stream) plus the diffusion
// parameters of unmask_generate_params by their C API names (steps, block_length, policy,
// threshold, cache_mode, ...). A pure function of the body, so it can be fuzzed: every problem is
// an ApiError (400) naming the field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api_error.hpp"
#include "tool_calls.hpp"
#include "unmask.hpp"

namespace unmask_server {

enum class Endpoint { completions, chat_completions };

struct CompletionRequest {
    Endpoint endpoint = Endpoint::completions;
    std::string model;                // "" when not given
    std::string prompt;               // completions: the text (empty with prompt_ids)
    std::vector<int32_t> prompt_ids;  // completions: a prompt given as token ids
    std::vector<unmask::api::ChatMessage> messages;  // chat: the conversation, for the chat template
    nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // chat: the tools offered, as sent
    ToolChoice tool_choice = ToolChoice::none;       // chat: auto when tools are offered, unless given
    std::string tool_name;                           // the tool a named tool_choice asks for
    unmask_generate_params params{};  // gen_length from max_tokens; steps default to gen_length
    bool stream = false;
    bool include_usage = false;       // stream_options.include_usage: a last chunk with usage
    std::vector<std::string> stop;    // the text ends before the first of these
    bool seed_given = false;          // OpenAI: without a seed, sampling differs per request
};

// The tool definitions the chat template sees, as a JSON array ("" for none): none for
// tool_choice "none", only the named tool for a named choice.
std::string template_tools(const CompletionRequest& request);

// Throws ApiError for malformed JSON, unknown fields, wrong types and impossible values.
CompletionRequest parse_completion_request(std::string_view body, Endpoint endpoint);

}  // namespace unmask_server
