// `unmask generate`: diffusion generation from the command line, on the CPU.
#include <sys/ioctl.h>
#include <unistd.h>

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

// Draws the canvas after each step: redrawn in place on a terminal, one line per step otherwise.
struct StepView {
    FILE* stream;
    bool terminal;
    int32_t mask;
    int64_t first;       // first generated position
    int lines_drawn = 0;

    static int32_t draw(int64_t, int64_t step, int64_t committed, const int32_t* canvas, int64_t length, void* user) {
        auto* view = static_cast<StepView*>(user);
        std::string line = "step ";
        line.append(std::to_string(step + 1)).append(" (+").append(std::to_string(committed)).append("):");
        for (int64_t i = view->first; i < length; ++i) {
            line.push_back(' ');
            if (canvas[i] != view->mask) line.append(std::to_string(canvas[i]));
            else line.append(view->terminal ? "\u2592" : "_");
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
    if (args.has("prompt"))
        throw CommandError(UNMASK_ERR_UNSUPPORTED,
                           "UNSUPPORTED: text prompts need the tokenizer, which this version does not have yet; "
                           "use --prompt-ids");
    if (!args.has("prompt-ids")) throw UsageError("give the prompt with --prompt-ids 1,2,3");
    const std::vector<int32_t> prompt = parse_ids(*args.value("prompt-ids"));

    unmask_model_params model_params;
    check(unmask_model_params_init(&model_params));
    if (auto precision = args.value("precision")) model_params.precision = parse_precision(*precision);
    const ModelHandle model = load_model(*model_path, model_params);

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
    StepView view{args.has("json") ? stderr : stdout, false, info.mask_token_id, static_cast<int64_t>(prompt.size())};
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

    if (args.has("json")) {
        const nlohmann::json out = {{"tokens", tokens},
                                    {"steps", result.steps},
                                    {"forwards", result.forwards},
                                    {"finish_reason", finish_name(result.finish_reason)}};
        std::cout << out.dump() << "\n";
    } else {
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
     "Generate with a diffusion model on the CPU. Prompts are token ids for now (text needs the tokenizer).",
     "",
     0,
     0,
     {{"model", "DIR", "the Hugging Face model directory", 'm'},
      {"prompt-ids", "IDS", "comma-separated prompt token ids"},
      {"prompt", "TEXT", "a text prompt (needs the tokenizer: not in this version)"},
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
      {"show-steps", "", "draw the canvas after every step (masks as a glyph)"}}},
    run_generate};

}  // namespace unmask_cli
