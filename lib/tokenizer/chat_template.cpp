#include "tokenizer/chat_template.hpp"

#include <fstream>
#include <system_error>

#include "core/error.hpp"

namespace unmask {
namespace {

// tokenizer_config.json spells a special token as a string or as an AddedToken ({"content": ...}).
std::optional<std::string> token_text(const nlohmann::json& token) {
    if (token.is_string()) return token.get<std::string>();
    if (token.is_object() && token.contains("content") && token["content"].is_string()) return token["content"].get<std::string>();
    return std::nullopt;
}

}  // namespace

std::unique_ptr<ChatTemplate> ChatTemplate::load(const std::filesystem::path& directory, const nlohmann::json& config) {
    // Newer transformers save the template beside the config, and that file wins over the
    // config's chat_template, as transformers reads them.
    const auto file = directory / "chat_template.jinja";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
        const bool declared = config.is_object() && config.contains("chat_template") && !config["chat_template"].is_null();
        return declared ? parse(std::nullopt, config) : nullptr;
    }
    // At most one byte past the limit: the Template refuses it, without a huge file read whole.
    std::ifstream in(file, std::ios::binary);
    std::string source(jinja::Template::max_source_bytes + 1, '\0');
    in.read(source.data(), static_cast<std::streamsize>(source.size()));
    source.resize(static_cast<size_t>(in.gcount()));
    return parse(source, config);
}

std::unique_ptr<ChatTemplate> ChatTemplate::parse(const std::optional<std::string>& source, const nlohmann::json& config) {
    auto chat = std::unique_ptr<ChatTemplate>(new ChatTemplate());
    const nlohmann::json none;
    const nlohmann::json& declared = config.is_object() && config.contains("chat_template") ? config["chat_template"] : none;
    // A malformed template is kept as an error: the model loads, chatting with it is UNSUPPORTED.
    if (source) {
        chat->add("default", *source);
    } else if (declared.is_string()) {
        chat->add("default", declared.get<std::string>());
    } else if (declared.is_array()) {
        for (const auto& entry : declared) {
            if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
                !entry["template"].is_string()) {
                chat->error_ = "tokenizer_config.json: chat_template entries must be {\"name\": ..., \"template\": ...}";
                return chat;
            }
            chat->add(entry["name"].get<std::string>(), entry["template"].get<std::string>());
        }
        if (!chat->default_ && chat->error_.empty())
            chat->error_ = "tokenizer_config.json: chat_template lists no template named \"default\"";
    } else {
        chat->error_ = "tokenizer_config.json: chat_template is neither a string nor a list of named templates";
    }
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"})
        if (config.is_object() && config.contains(key))
            if (const auto text = token_text(config[key])) chat->special_tokens_.set(key, jinja::Value(*text));
    return chat;
}

void ChatTemplate::add(const std::string& name, const std::string& source) {
    if (name != "default" && name != "tool_use") return;
    try {
        (name == "default" ? default_ : tool_use_) = std::make_unique<jinja::Template>(source);
    } catch (const Error& error) {
        error_ = fmt::format("the model's chat template \"{}\" cannot be used: {}", name, error.what());
    }
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                 bool add_generation_prompt) const {
    const bool with_tools = tools.is_array() && !tools.empty();
    const jinja::Template* chosen = with_tools && tool_use_ ? tool_use_.get() : default_.get();
    if (!chosen) fail(Status::unsupported, "{}", error_);
    if (!messages.is_array()) fail(Status::invalid_argument, "chat messages must be a JSON array");
    jinja::Dict variables = special_tokens_;
    variables.set("messages", jinja::Value::from_json(messages));
    variables.set("tools", with_tools ? jinja::Value::from_json(tools) : jinja::Value::none());
    variables.set("documents", jinja::Value::none());
    variables.set("add_generation_prompt", jinja::Value(add_generation_prompt));
    return chosen->render(variables);
}

}  // namespace unmask
