// libFuzzer target: the request bodies of unmask-server's OpenAI endpoints. Any input either
// parses or throws ApiError (400); what parses renders back into response bodies, and the input
// read as a generated answer goes through the tool-call reader against the request's tools.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "openai_request.hpp"
#include "openai_response.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    for (const auto endpoint : {unmask_server::Endpoint::completions, unmask_server::Endpoint::chat_completions}) {
        try {
            const auto request = unmask_server::parse_completion_request(body, endpoint);
            unmask_server::CompletionOutcome outcome;
            outcome.id = "cmpl-1";
            outcome.model = request.model;
            outcome.text = request.prompt;
            for (const auto& message : request.messages) outcome.text += message.content;
            outcome.finish_reason = "stop";
            (void)unmask_server::template_tools(request);
            const auto reading = unmask_server::read_tool_calls(std::string(body), request.tools, request.tool_choice,
                                                                request.tool_name);
            outcome.tool_calls = reading.calls;
            outcome.tool_call_error = reading.error;
            (void)unmask_server::completion_body(endpoint, outcome);
            for (const auto& stop : request.stop) (void)unmask_server::chunk_body(endpoint, outcome, stop, "", false);
        } catch (const unmask_server::ApiError& error) {
            if (error.status != 400 && error.status != 404) __builtin_trap();
            (void)unmask_server::error_body(error);
        }
    }
    return 0;
}
