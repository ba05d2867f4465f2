// libFuzzer target: the input is a chat template, parsed and rendered with a conversation that has
// a system message, tool definitions, a tool call and its result. Anything may fail with
// unmask::Error; nothing may crash, hang, recurse without bound or leak. Limits are lowered so a
// template that loops stops quickly.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "template/template.hpp"

namespace {

const unmask::jinja::Dict& conversation() {
    static const unmask::jinja::Value context = unmask::jinja::Value::from_json(nlohmann::ordered_json::parse(R"({
      "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true, "documents": null,
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
                 "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
      "messages": [{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": "Weather in Porto? 東京 👋"},
                   {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Porto"}}}]},
                   {"role": "tool", "tool_call_id": "1", "content": "21"},
                   {"role": "assistant", "content": "<think>\nok\n</think>\n\nIt is 21."}]})"));
    return context.dict();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    try {
        const unmask::jinja::Template chat_template(source);
        (void)chat_template.render(conversation(), {.max_output_bytes = size_t{1} << 20, .max_steps = 200'000, .max_call_depth = 16});
    } catch (const unmask::Error&) {
    }
    return 0;
}
