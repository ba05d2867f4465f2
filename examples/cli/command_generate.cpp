// `unmask generate`: diffusion generation from the command line, on the CPU.
#include <sys/ioctl.h>
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
#include "model_options.hpp"

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

int32_t parse_policy(const std::string& text) {
    static const std::map<std::string, int32_t> policies = {
        {"low_confidence", UNMASK_POLICY_LOW_CONFIDENCE}, {"random", UNMASK_POLICY_RANDOM},
        {"origin", UNMASK_POLICY_ORIGIN},                 {"maskgit_plus", UNMASK_POLICY_MASKGIT_PLUS},
        {"topk_margin", UNMASK_POLICY_TOPK_MARGIN},       {"entropy", UNMASK_POLICY_ENTROPY}};
    const auto it = policies.find(text);
    if (it == policies.end())
        throw UsageError("--policy must be low_confidence, random, origin, maskgit_plus, topk_margin or entropy, got '" +
                         text + "'");
    return it->second;
}

const char* finish_name(int32_t reason) {
    switch (reason) {
        case UNMASK_FINISH_EOS: return "eos";
        case UNMASK_FINISH_CANCELLED: return "cancelled";
        default: return "length";
    }
}

std::string detokenize(const unmask_tokenizer* tokenizer, const int32_t* ids, int64_t count, bool skip_special) {
    int64_t length = 0;
    check(unmask_detokenize(tokenizer, ids, count, skip_special ? 1 : 0, nullptr, 0, &length));
    std::string text(static_cast<size_t>(length), '\0');
    check(unmask_detokenize(tokenizer, ids, count, skip_special ? 1 : 0, text.data(), length, &length));
    return text;
}

std::vector<int32_t> tokenize_prompt(const unmask_tokenizer* tokenizer, const ParsedArgs& args) {
    const std::string prompt = *args.value("prompt");
    const std::string system = args.value("system").value_or("");
    int64_t count = 0;
    auto encode = [&](int32_t* ids, int64_t capacity) {
        if (args.has("chat")) check(unmask_tokenize_chat(tokenizer, system.c_str(), prompt.c_str(), ids, capacity, &count));
        else check(unmask_tokenize(tokenizer, prompt.data(), static_cast<int64_t>(prompt.size()), 1, ids, capacity, &count));
    };
    encode(nullptr, 0);
    std::vector<int32_t> ids(static_cast<size_t>(count));
    encode(ids.data(), count);
    return ids;
}

// Draws the canvas after each step: redrawn in place on a terminal, one line per step otherwise.
// With a tokenizer the committed runs show as text, else as ids; masks as a glyph.
struct StepView {
    FILE* stream;
    bool terminal;
    int32_t mask;
    int64_t first;       // first generated position
    const unmask_tokenizer* tokenizer;
    int lines_drawn = 0;

    static int32_t draw(int64_t, int64_t step, int64_t committed, const int32_t* canvas, int64_t length, void* user) {
        auto* view = static_cast<StepView*>(user);
        const char* glyph = view->terminal ? "\u2592" : "_";
        std::string line = "step ";
        line.append(std::to_string(step + 1)).append(" (+").append(std::to_string(committed)).append("): ");
        for (int64_t i = view->first; i < length;) {
            if (canvas[i] == view->mask) {
                line.append(glyph);
                ++i;
                continue;
            }
            int64_t end = i;
            while (end < length && canvas[end] != view->mask) ++end;
            if (view->tokenizer != nullptr) {
                std::string text = detokenize(view->tokenizer, canvas + i, end - i, false);
                for (char& c : text)  // control characters would move the cursor
                    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
                line.append(text);
            } else {
                for (int64_t j = i; j < end; ++j) line.append(j > i ? " " : "").append(std::to_string(canvas[j]));
                if (end < length) line.push_back(' ');
            }
            i = end;
        }
        if (view->terminal) {
            winsize size{};
            const int columns = ioctl(fileno(view->stream), TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col : 80;
            if (view->lines_drawn > 1) std::fprintf(view->stream, "\033[%dA", view->lines_drawn - 1);
            std::fprintf(view->stream, "\r\033[J%s", line.c_str());
            view->lines_drawn = static_cast<int>((line.size() + size_t(columns) - 1) / size_t(columns));
        } else {
            std::fprintf(view->stream, "%s\n", line.c_str());
        }
        std::fflush(view->stream);
        return 0;
    }
};

int run_generate(const ParsedArgs& args) {
    const auto model_path = args.value("model");
    if (!model_path) throw UsageError("missing -m/--model DIR");
    if (args.has("prompt") == args.has("prompt-ids")) throw UsageError("give the prompt with either --prompt TEXT or --prompt-ids 1,2,3");
    if (args.has("chat") && !args.has("prompt")) throw UsageError("--chat formats a --prompt TEXT");

    unmask_model_params model_params;
    check(unmask_model_params_init(&model_params));
    if (auto precision = args.value("precision")) model_params.precision = parse_precision(*precision);
    apply_memory_options(args, model_params);
    const ModelHandle model = load_model(*model_path, model_params);
    const unmask_tokenizer* tokenizer = nullptr;
    check(unmask_model_tokenizer(model.get(), &tokenizer));
    if (args.has("prompt") && tokenizer == nullptr)
        throw CommandError(UNMASK_ERR_UNSUPPORTED,
                           "UNSUPPORTED: the model directory has no tokenizer.json; give --prompt-ids instead");
    const std::vector<int32_t> prompt =
        args.has("prompt") ? tokenize_prompt(tokenizer, args) : parse_ids(*args.value("prompt-ids"));

    unmask_generate_params params;
    check(unmask_generate_params_init(&params));
    if (auto v = args.value("policy")) params.policy = parse_policy(*v);
    if (auto v = args.integer("gen-length")) params.gen_length = *v;
    if (auto v = args.integer("steps")) params.steps = *v;
    else params.steps = params.gen_length;
    if (auto v = args.integer("block-length")) params.block_length = *v;
    if (auto v = args.integer("min-steps")) params.min_steps = *v;
    if (auto v = args.integer("max-steps")) params.max_steps = *v;
    if (auto v = args.number("temperature")) params.temperature = *v;
    if (auto v = args.integer("top-k")) params.top_k = *v;
    if (auto v = args.number("top-p")) params.top_p = *v;
    if (auto v = args.number("threshold")) params.threshold = *v;
    if (auto v = args.number("factor")) params.factor = *v;
    if (auto v = args.number("cfg")) params.cfg_scale = *v;
    if (auto v = args.number("alg-temp")) params.alg_temp = *v;
    if (auto v = args.integer("seed")) params.seed = static_cast<uint64_t>(*v);
    if (auto v = args.integer("threads")) params.threads = static_cast<int32_t>(*v);
    if (args.has("no-eos")) params.logits_eos_inf = 1;
    if (args.has("early-stop")) params.early_stop = 1;

    unmask_model_description info{};
    info.struct_size = sizeof info;
    check(unmask_model_info(model.get(), &info));
    StepView view{args.has("json") ? stderr : stdout, false, info.mask_token_id, static_cast<int64_t>(prompt.size()),
                  tokenizer};
    if (args.has("show-steps")) {
        view.terminal = isatty(fileno(view.stream)) != 0;
        params.step_callback = StepView::draw;
        params.step_user_data = &view;
    }

    std::vector<int32_t> tokens(static_cast<size_t>(std::max<int64_t>(params.gen_length, 1)));
    unmask_generation result{};
    result.struct_size = sizeof result;
    result.tokens = tokens.data();
    result.tokens_capacity = static_cast<int64_t>(tokens.size());
    check(unmask_generate(model.get(), &params, prompt.data(), static_cast<int64_t>(prompt.size()), &result));
    if (view.terminal) std::fprintf(view.stream, "\n");
    tokens.resize(static_cast<size_t>(result.token_count));

    // The answer's text ends at the first EOS (what follows is padding the model wrote).
    std::string text;
    if (tokenizer != nullptr) {
        size_t answer = tokens.size();
        if (info.eos_token_id >= 0)
            answer = static_cast<size_t>(std::find(tokens.begin(), tokens.end(), info.eos_token_id) - tokens.begin());
        text = detokenize(tokenizer, tokens.data(), static_cast<int64_t>(answer), true);
    }
    if (args.has("json")) {
        nlohmann::json out = {{"tokens", tokens},
                              {"steps", result.steps},
                              {"forwards", result.forwards},
                              {"finish_reason", finish_name(result.finish_reason)}};
        if (tokenizer != nullptr) out["text"] = text;
        std::cout << out.dump() << "\n";
    } else {
        if (tokenizer != nullptr) std::cout << text;
        else
            for (size_t i = 0; i < tokens.size(); ++i) std::cout << (i ? " " : "") << tokens[i];
        std::cout << std::endl;  // flushed before the summary on stderr
        std::cerr << "steps " << result.steps << ", forwards " << result.forwards << ", finish "
                  << finish_name(result.finish_reason) << "\n";
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
     with_memory_options({{"model", "DIR", "the Hugging Face model directory", 'm'},
      {"prompt-ids", "IDS", "comma-separated prompt token ids"},
      {"prompt", "TEXT", "a text prompt (needs the model's tokenizer.json)"},
      {"chat", "", "format --prompt as a chat user message (ChatML or LLaMA-3 headers)"},
      {"system", "TEXT", "with --chat: a system message"},
      {"precision", "P", "auto (file dtypes), fp32, bf16 or fp16"},
      {"gen-length", "N", "positions to generate (default 128)"},
      {"steps", "N", "denoising steps (default: gen-length)"},
      {"block-length", "N", "semi-autoregressive block length (default: gen-length)"},
      {"min-steps", "N", "lower bound on steps (0: none)"},
      {"max-steps", "N", "upper bound on steps (0: none)"},
      {"policy", "P", "low_confidence, random, origin, maskgit_plus, topk_margin, entropy"},
      {"temperature", "T", "0 = greedy (default)"},
      {"top-k", "K", "Dream policies: keep the K most likely tokens"},
      {"top-p", "P", "Dream policies: nucleus sampling"},
      {"threshold", "TAU", "parallel decoding: commit every position with confidence >= TAU"},
      {"factor", "F", "parallel decoding with Fast-dLLM's factor rule"},
      {"cfg", "S", "classifier-free guidance scale (0: off)"},
      {"alg-temp", "T", "Dream: sample the committed positions at this temperature"},
      {"seed", "N", "random seed (default 0)"},
      {"threads", "N", "CPU threads (default: all)"},
      {"no-eos", "", "never sample EOS (LLaDA's logits_eos_inf)"},
      {"early-stop", "", "stop once the answer has ended with EOS"},
      {"show-steps", "", "draw the canvas after every step (masks as a glyph)"}})},
    run_generate};

}  // namespace unmask_cli
