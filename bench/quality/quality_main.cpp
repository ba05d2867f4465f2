// `unmask-quality`: the accuracy-vs-speed table of decoding settings on held-out tool-call
// requests (exact match, JSON validity, forwards per sequence and per answer token, tokens/s).
//
// usage: unmask-quality [-m DIR] [--data FILE] [--limit N] [--gen-length N] [--batch N]
//                       [--threads N] [--setting KEY=VALUE,...]... [--json FILE]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "progress_meter.hpp"
#include "tool_call_eval.hpp"

namespace {

const unmask_cli::CommandSpec command{
    "",
    "The accuracy-vs-speed table of decoding settings on held-out tool-call requests.",
    "",
    0,
    0,
    {{"model", "DIR", "the model (default: the bundled model)", 'm'},
     {"precision", "P", "the weights in memory: auto (the file's), fp32, bf16, fp16, int8, q4 or fp8 (default auto)"},
     unmask_cli::quantize_embeddings_option,
     {"data", "FILE", "held-out requests, JSON lines (default: bench/data/tool_calls_heldout.jsonl)"},
     {"limit", "N", "the first N requests only"},
     {"gen-length", "N", "positions generated per request (default 128)"},
     {"batch", "N", "prompts per generate call (default 16)"},
     {"threads", "N", "CPU threads (default: all)"},
     {"setting", "S",
      "a decoding setting: generation parameters by name, e.g. policy=low_confidence,steps=24,block_length=16,"
      "threshold=0.9,cache_mode=dual,cache_precision=bf16; repeat for several (default: a grid)"},
     {"json", "FILE", "also write the results as JSON"}},
    false,
    "unmask-quality"};

struct Options {
    std::string model = UNMASK_SOURCE_MODELS_DIR "/" UNMASK_BUNDLED_MODEL_NAME;
    std::string data = UNMASK_QUALITY_DATA;
    std::string json_path;
    std::string precision = "auto";
    bool quantize_embeddings = false;
    int64_t limit = 0, gen_length = 128, batch = 16, threads = 0;
    std::vector<std::string> settings;
};

Options parse(const unmask_cli::ParsedArgs& args) {
    Options options;
    options.model = args.value("model").value_or(options.model);
    options.data = args.value("data").value_or(options.data);
    options.json_path = args.value("json").value_or("");
    options.precision = args.value("precision").value_or(options.precision);
    options.quantize_embeddings = args.has("quantize-embeddings");
    options.settings = args.all("setting");
    options.limit = args.integer("limit", 0, 0);
    options.gen_length = args.integer("gen-length", options.gen_length, 1);
    options.batch = args.integer("batch", options.batch, 1);
    options.threads = args.integer("threads", 0, 0);
    return options;
}

std::string percent(double fraction) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
    return text;
}

}  // namespace

int main(int argc, char** argv) try {
    Options options;
    try {
        const unmask_cli::ParsedArgs args =
            unmask_cli::parse_args(command, std::vector<std::string>(argv + 1, argv + argc));
        if (args.has("help")) {
            std::fputs(unmask_cli::help_text(command).c_str(), stdout);
            return 0;
        }
        options = parse(args);
    } catch (const unmask_cli::UsageError& e) {
        std::fprintf(stderr, "unmask-quality: %s (see 'unmask-quality --help')\n", e.what());
        return 2;
    }
    unmask_generate_params base;
    unmask_generate_params_init(&base);
    base.gen_length = options.gen_length;
    base.steps = options.gen_length;
    base.threads = static_cast<int32_t>(options.threads);
    std::vector<unmask_quality::Setting> settings;
    for (const std::string& text : options.settings) settings.push_back(unmask_quality::parse_setting(text, base));

    unmask_model_params model_params;
    unmask_model_params_init(&model_params);
    if (unmask_enum_value(UNMASK_ENUM_PRECISION, options.precision.c_str(), &model_params.precision) != UNMASK_OK) {
        std::fprintf(stderr, "unmask-quality: unknown --precision '%s'\n", options.precision.c_str());
        return 2;
    }
    model_params.quantize_embeddings = options.quantize_embeddings ? 1 : 0;
    unmask_model* loaded = nullptr;
    if (unmask_model_load(options.model.c_str(), &model_params, &loaded) != UNMASK_OK)
        throw std::runtime_error(std::string("loading the model: ") + unmask_last_error());
    const std::unique_ptr<unmask_model, void (*)(unmask_model*)> model(loaded, unmask_model_free);
    if (options.settings.empty()) {  // the default grid, for the model's kind of decoding
        unmask_model_description info{};
        info.struct_size = sizeof info;
        if (unmask_model_info(model.get(), &info) != UNMASK_OK) throw std::runtime_error(unmask_last_error());
        settings = unmask_quality::default_settings(base, info.diffusion_block_size);
    }
    const std::vector<unmask_quality::Example> examples = unmask_quality::read_examples(options.data, options.limit);

    std::printf("model %s (precision %s%s), %zu held-out requests, gen_length %lld\n\n", options.model.c_str(),
                options.precision.c_str(), options.quantize_embeddings ? ", embeddings quantized" : "", examples.size(),
                static_cast<long long>(options.gen_length));
    std::printf("| setting | cache | exact | tool calls | refusals | JSON valid | forwards/seq | NFE/token | tokens/s |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    nlohmann::json rows = nlohmann::json::array();
    for (const unmask_quality::Setting& setting : settings) {
        // On stderr: in place on a terminal, else a line per tenth of the requests.
        unmask_examples::ProgressMeter meter(setting.name, unmask_examples::ProgressMeter::Unit::items,
                                             unmask_examples::stderr_is_terminal() ? stderr : nullptr,
                                             [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
        const unmask_quality::Score s = unmask_quality::evaluate(
            model.get(), examples, setting, options.batch,
            [&](int64_t done, int64_t total) { meter.update(uint64_t(done), uint64_t(total)); });
        meter.finish();
        std::printf("| %s | %s | %s | %s | %s | %s | %.1f | %.2f | %.0f |\n", setting.name.c_str(),
                    setting.cache.c_str(), percent(s.exact_fraction()).c_str(), percent(s.tool_call_fraction()).c_str(),
                    percent(s.task_fraction("refusal")).c_str(),
                    percent(s.valid_fraction()).c_str(), s.forwards_per_sequence(), s.forwards_per_token(),
                    s.tokens_per_second());
        std::fflush(stdout);
        rows.push_back({{"setting", setting.name}, {"cache", setting.cache}, {"examples", s.examples},
                        {"exact", s.exact_fraction()}, {"tool_calls_exact", s.tool_call_fraction()},
                        {"refusals_exact", s.task_fraction("refusal")},
                        {"valid_json", s.valid_fraction()},
                        {"forwards_per_sequence", s.forwards_per_sequence()},
                        {"forwards_per_token", s.forwards_per_token()}, {"tokens_per_second", s.tokens_per_second()},
                        {"seconds", s.seconds}, {"sample_failures", s.sample_failures}});
        nlohmann::json& tasks = rows.back()["by_task"];
        for (const auto& [task, score] : s.by_task) tasks[task] = {{"examples", score.examples}, {"exact", score.exact}};
    }
    if (!options.json_path.empty()) {
        std::ofstream out(options.json_path);
        out << nlohmann::json{{"model", options.model}, {"examples", examples.size()},
                              {"gen_length", options.gen_length}, {"results", rows}}
                   .dump(1)
            << "\n";
        if (!out) throw std::runtime_error("cannot write " + options.json_path);
    }
    return 0;
} catch (const std::exception& error) {
    std::fprintf(stderr, "unmask-quality: %s\n", error.what());
    return 1;
}
