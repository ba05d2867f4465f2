// `unmask chat`: an interactive conversation in the terminal. Each line is a user turn; the
// history goes through the model's chat template, and the answer streams as its blocks commit
// (or, with --show-steps, the canvas is drawn filling in). /reset forgets the history, /exit or
// the end of input ends the session.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "answer_text.hpp"
#include "commands.hpp"
#include "conversation.hpp"
#include "decoding_options.hpp"
#include "engine_session.hpp"
#include "step_view.hpp"

namespace unmask_cli {
namespace {

using unmask_examples::AnswerText;

// One answer being generated: its text printed as blocks commit, or the canvas drawn per step.
struct TurnStream {
    AnswerText answer;
    StepView* steps;  // null: stream the text

    static int32_t on_event(const unmask_stream_event* event, void* user) {
        auto* turn = static_cast<TurnStream*>(user);
        if (turn->steps) return StepView::draw(event, turn->steps);
        if (event->kind == UNMASK_STREAM_BLOCK) {
            std::fputs(turn->answer.advance(event->tokens, event->token_count, false).c_str(), stdout);
            std::fflush(stdout);
        }
        return 0;
    }
};

std::string trimmed(const std::string& line) {
    const size_t first = line.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return "";
    return line.substr(first, line.find_last_not_of(" \t\r\n") - first + 1);
}

// Generates the answer to `prompt`, printing it as it comes; returns its text, or throws
// CommandError when the generation fails.
std::string answer(EngineSession& session, unmask_generate_params params, const std::vector<int32_t>& prompt,
                   StepView* steps) {
    TurnStream turn{AnswerText(session.tokenizer, session.info.mask_token_id, session.info.eos_token_id, {}), steps};
    params.stream_callback = TurnStream::on_event;
    params.stream_user_data = &turn;
    params.stream_steps = steps ? 1 : 0;
    unmask_request* submitted = nullptr;
    check(unmask_engine_submit(session.engine.get(), &params, prompt.data(), static_cast<int64_t>(prompt.size()), 0, &submitted));
    const std::unique_ptr<unmask_request, void (*)(unmask_request*)> request(submitted, unmask_request_free);
    check(unmask_request_wait(request.get(), -1));
    if (steps) steps->finish();
    unmask_request_info info{};
    info.struct_size = sizeof info;
    check(unmask_request_info_get(request.get(), &info));
    if (info.finish_reason == UNMASK_FINISH_ERROR || info.finish_reason == UNMASK_FINISH_TIMEOUT)
        throw CommandError(info.error_status, std::string(unmask_status_string(info.error_status)) +
                                                  ": the generation failed (the log has the details)");
    int64_t count = 0;
    check(unmask_request_tokens(request.get(), nullptr, 0, &count));
    std::vector<int32_t> tokens(static_cast<size_t>(count));
    check(unmask_request_tokens(request.get(), tokens.data(), count, &count));
    if (steps) turn.answer.advance(tokens.data(), count, true);  // printed whole below
    else std::fputs(turn.answer.advance(tokens.data(), count, true).c_str(), stdout);
    if (steps) std::fputs(turn.answer.text().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    return turn.answer.text();
}

int run_chat(const ParsedArgs& args) {
    unmask_generate_params params;
    check(unmask_generate_params_init(&params));
    apply_decoding_options(args, params);
    EngineSession session = load_session_model(args, 1);
    if (session.tokenizer == nullptr)
        throw CommandError(UNMASK_ERR_UNSUPPORTED, "UNSUPPORTED: the model has no tokenizer (no tokenizer.json, or a GGUF file without tokenizer.ggml.*)");
    if (!has_chat_format(session.tokenizer))
        throw CommandError(UNMASK_ERR_UNSUPPORTED,
                           "UNSUPPORTED: the model has no chat template (tokenizer_config.json) or chat format unmask "
                           "knows; use 'unmask generate --raw --prompt TEXT'");
    // Room for a conversation: the model's whole context unless --max-seq-len (or --config) says less.
    if (session.engine_params.max_sequence_length == 0)
        session.engine_params.max_sequence_length = session.info.max_sequence_length;
    start_engine(session);

    const bool terminal = isatty(fileno(stdin)) != 0 && isatty(fileno(stdout)) != 0;
    StepView view{stdout, terminal, session.info.mask_token_id, session.tokenizer};
    StepView* steps = args.has("show-steps") ? &view : nullptr;
    std::vector<ChatTurn> history;
    if (args.has("system")) history.push_back({"system", *args.value("system")});
    const size_t kept = history.size();
    if (terminal) std::cout << "Type a message. /reset forgets the conversation, /exit (or Ctrl-D) ends it.\n";
    std::string line;
    while (true) {
        if (terminal) std::cout << "> " << std::flush;
        if (!std::getline(std::cin, line)) break;
        const std::string text = trimmed(line);
        if (text.empty()) continue;
        if (text == "/exit" || text == "/quit") break;
        if (text == "/reset") {
            history.resize(kept);
            std::cout << "(conversation reset)" << std::endl;
            continue;
        }
        if (text[0] == '/') {
            std::cout << "(unknown command " << text << ": /reset or /exit)" << std::endl;
            continue;
        }
        history.push_back({"user", text});
        try {
            const std::vector<int32_t> prompt = encode_chat(session.tokenizer, history);
            const int64_t needed = static_cast<int64_t>(prompt.size()) + params.gen_length;
            if (needed > session.engine_params.max_sequence_length)
                throw CommandError(UNMASK_ERR_TOO_LONG, "TOO_LONG: the conversation needs " + std::to_string(needed) +
                                                            " positions, beyond this engine's " +
                                                            std::to_string(session.engine_params.max_sequence_length) +
                                                            "; /reset starts a new one");
            history.push_back({"assistant", answer(session, params, prompt, steps)});
        } catch (const CommandError& e) {
            history.pop_back();  // the turn did not happen
            std::cout << "(error: " << e.what() << ")" << std::endl;
        }
    }
    if (terminal) std::cout << "\n";
    return 0;
}

}  // namespace

const Command chat_command{
    {"chat",
     "Chat with a model in the terminal: the model's chat template, the history kept, answers streamed.\n"
     "Each line of input is a message. /reset forgets the conversation; /exit or the end of input ends it.",
     "",
     0,
     0,
     with_decoding_options(with_engine_options({{"system", "TEXT", "a system message that starts the conversation"},
                                                {"show-steps", "", "draw the canvas filling in, step by step"}})),
     false},
    run_chat};

}  // namespace unmask_cli
