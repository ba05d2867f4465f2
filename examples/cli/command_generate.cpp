// `unmask generate`: one diffusion generation from the command line, on the engine.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "conversation.hpp"
#include "decoding_options.hpp"
#include "engine_session.hpp"
#include "model_options.hpp"
#include "step_view.hpp"

namespace unmask_cli {
namespace {

std::vector<int32_t> parse_ids(const std::string& text) {
    std::vector<int32_t> ids;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) {
        try {
            size_t used = 0;
            const long v = std::stol(item, &used);
            if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
            ids.push_back(static_cast<int32_t>(v));
        } catch (const std::exception&) {
            throw UsageError("--prompt-ids needs comma-separated token ids, got '" + item + "'");
        }
    }
    return ids;
}

// --prompt as ids: in the model's chat format (its chat template) unless --raw, or unless the
// model has none and no chat option asks for one.
std::vector<int32_t> tokenize_prompt(const unmask_tokenizer* tokenizer, const ParsedArgs& args) {
    const std::string prompt = *args.value("prompt");
    const bool chat = !args.has("raw") && (args.has("chat") || args.has("system") || has_chat_format(tokenizer));
    if (chat) {
        std::vector<ChatTurn> turns;
        if (args.has("system")) turns.push_back({"system", *args.value("system")});
        turns.push_back({"user", prompt});
        return encode_chat(tokenizer, turns);
    }
    int64_t count = 0;
    check(unmask_tokenize(tokenizer, prompt.data(), static_cast<int64_t>(prompt.size()), 1, nullptr, 0, &count));
    std::vector<int32_t> ids(static_cast<size_t>(count));
    check(unmask_tokenize(tokenizer, prompt.data(), static_cast<int64_t>(prompt.size()), 1, ids.data(), count, &count));
    return ids;
}

int run_generate(const ParsedArgs& args) {
    if (args.has("prompt") == args.has("prompt-ids")) throw UsageError("give the prompt with either --prompt TEXT or --prompt-ids 1,2,3");
    if ((args.has("chat") || args.has("raw") || args.has("system")) && !args.has("prompt"))
        throw UsageError("--chat, --raw and --system say how to read a --prompt TEXT");
    if (args.has("raw") && (args.has("chat") || args.has("system")))
        throw UsageError("--raw sends the prompt as it is: it takes no --chat or --system");
    // As the server: a generation needs something to continue (--prompt-ids names its ids).
    if (args.has("prompt") && args.value("prompt")->empty()) throw UsageError("--prompt must not be empty");
    unmask_generate_params params;
    check(unmask_generate_params_init(&params));
    apply_decoding_options(args, params);

    EngineSession session = load_session_model(args, 1);
    const unmask_tokenizer* tokenizer = session.tokenizer;
    if (args.has("prompt") && tokenizer == nullptr)
        throw CommandError(UNMASK_ERR_UNSUPPORTED,
                           "UNSUPPORTED: the model has no tokenizer (no tokenizer.json, or a GGUF file without one); give --prompt-ids instead");
    const std::vector<int32_t> prompt =
        args.has("prompt") ? tokenize_prompt(tokenizer, args) : parse_ids(*args.value("prompt-ids"));
    // An engine for this one request: sized for its length, unless that is beyond the model.
    const int64_t positions = static_cast<int64_t>(prompt.size()) + params.gen_length;
    if (session.engine_params.max_sequence_length == 0 && params.gen_length > 0 &&
        positions <= session.info.max_sequence_length)
        session.engine_params.max_sequence_length = positions;
    start_engine(session);

    StepView view{args.has("json") ? stderr : stdout, false, session.info.mask_token_id, tokenizer};
    if (args.has("show-steps")) {
        view.terminal = isatty(fileno(view.stream)) != 0;
        params.stream_callback = StepView::draw;
        params.stream_user_data = &view;
        params.stream_steps = 1;
    }
    unmask_request* submitted = nullptr;
    check(unmask_engine_submit(session.engine.get(), &params, prompt.data(), static_cast<int64_t>(prompt.size()), 0,
                               &submitted));
    const std::unique_ptr<unmask_request, void (*)(unmask_request*)> request(submitted, unmask_request_free);
    check(unmask_request_wait(request.get(), -1));
    view.finish();
    unmask_request_info info{};
    info.struct_size = sizeof info;
    check(unmask_request_info_get(request.get(), &info));
    if (info.finish_reason == UNMASK_FINISH_ERROR || info.finish_reason == UNMASK_FINISH_TIMEOUT)
        throw CommandError(info.finish_reason == UNMASK_FINISH_TIMEOUT ? UNMASK_ERR_TIMEOUT : info.error_status,
                           info.finish_reason == UNMASK_FINISH_TIMEOUT
                               ? "TIMEOUT: the request's deadline passed"
                               : std::string(unmask_status_string(info.error_status)) +
                                     ": the generation failed (the log has the details)");
    int64_t count = 0;
    check(unmask_request_tokens(request.get(), nullptr, 0, &count));
    std::vector<int32_t> tokens(static_cast<size_t>(count));
    check(unmask_request_tokens(request.get(), tokens.data(), count, &count));
    std::string text;
    if (tokenizer != nullptr) {
        int64_t length = 0;
        check(unmask_request_text(request.get(), nullptr, 0, &length));
        text.resize(static_cast<size_t>(length));
        check(unmask_request_text(request.get(), text.data(), length, &length));
    }
    if (args.has("json")) {
        nlohmann::json out = {{"tokens", tokens},
                              {"steps", info.steps},
                              {"forwards", info.forwards},
                              {"finish_reason", finish_name(info.finish_reason)}};
        if (tokenizer != nullptr) out["text"] = text;
        std::cout << out.dump() << "\n";
    } else {
        if (tokenizer != nullptr) std::cout << text;
        else
            for (size_t i = 0; i < tokens.size(); ++i) std::cout << (i ? " " : "") << tokens[i];
        std::cout << std::endl;  // flushed before the summary on stderr
        std::cerr << "steps " << info.steps << ", forwards " << info.forwards << ", finish "
                  << finish_name(info.finish_reason) << "\n";
    }
    return 0;
}

}  // namespace

const Command generate_command{
    {"generate",
     "Generate with a diffusion model on the CPU, from a text prompt (the model's tokenizer) or token ids.",
     "",
     0,
     0,
     with_decoding_options(with_engine_options({
         {"prompt-ids", "IDS", "comma-separated prompt token ids"},
         {"prompt", "TEXT", "a text prompt (needs the model's tokenizer.json)"},
         {"chat", "", "format --prompt with the model's chat template (the default when the model has one)"},
         {"raw", "", "send --prompt as it is, without the chat template"},
         {"system", "TEXT", "a system message before --prompt (in the chat format)"},
         {"show-steps", "", "draw the canvas after every step (masks as a glyph)"}}))},
    run_generate};

}  // namespace unmask_cli
