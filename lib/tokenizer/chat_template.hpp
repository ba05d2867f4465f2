// A model's chat template as Hugging Face ships it: a chat_template.jinja beside the tokenizer, or
// else tokenizer_config.json's `chat_template` (one string, or named templates of which "default"
// and "tool_use" are used), rendered with the special tokens of tokenizer_config.json, as apply_chat_template
// does (transformers: messages, tools, documents, add_generation_prompt, **special_tokens_map).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "template/template.hpp"

namespace unmask {

class ChatTemplate {
public:
    // The template of the tokenizer directory `directory` whose parsed tokenizer_config.json is
    // `config` (null when there is none); nullptr when the model has no chat template. A template
    // that is malformed or does not parse (or is beyond the size limit) is kept with its error:
    // loading the model succeeds, chatting fails with UNSUPPORTED naming the problem.
    static std::unique_ptr<ChatTemplate> load(const std::filesystem::path& directory, const nlohmann::json& config);
    // From a template's text, or (nullopt) from config's chat_template; config gives the special tokens.
    static std::unique_ptr<ChatTemplate> parse(const std::optional<std::string>& source, const nlohmann::json& config);

    // The prompt text for `messages` (a JSON array of {role, content, tool_calls?, ...}) and
    // `tools` (null, or an array of OpenAI tool definitions). Throws Error(UNSUPPORTED) when the
    // template could not be parsed, Error(INVALID_ARGUMENT) when rendering fails.
    std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                       bool add_generation_prompt) const;

private:
    ChatTemplate() = default;
    void add(const std::string& name, const std::string& source);

    std::unique_ptr<jinja::Template> default_, tool_use_;
    std::string error_;  // why a template did not parse
    jinja::Dict special_tokens_;
};

}  // namespace unmask
