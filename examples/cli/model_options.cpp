#include "model_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "bundled_model.hpp"
#include "progress_meter.hpp"
#include "commands.hpp"
#include "decoding_options.hpp"
#include "text_format.hpp"

namespace unmask_cli {

int32_t parse_precision(const std::string& text) { return named(UNMASK_ENUM_PRECISION, text, "--precision"); }

int32_t parse_backend(const std::string& text) {
    if (text == "cpu") return UNMASK_BACKEND_CPU;
    if (text == "cuda") return UNMASK_BACKEND_CUDA;
    throw UsageError("--backend must be cpu or cuda, got '" + text + "'");
}

const char* precision_name(int32_t precision) {
    const char* name = precision != UNMASK_PRECISION_AUTO ? unmask_enum_name(UNMASK_ENUM_PRECISION, precision) : nullptr;
    return name != nullptr ? name : "mixed";
}

std::vector<OptionSpec> with_memory_options(std::vector<OptionSpec> options) {
    options.push_back({"budget", "BYTES", "memory budget per device (e.g. 80GB, 24GiB); default: the whole device"});
    options.push_back({"memory-fraction", "F", "use at most this fraction of the device's memory, in (0, 1]"});
    options.push_back({"margin", "F", "fraction of the budget kept free (default 0.10)"});
    return options;
}

template <typename Params>
void apply_memory_options(const ParsedArgs& args, Params& params) {
    if (auto v = args.value("budget")) params.memory_budget_bytes = static_cast<int64_t>(parse_bytes(*v, "budget"));
    if (auto v = args.number("memory-fraction")) params.memory_fraction = *v;
    if (auto v = args.number("margin")) params.memory_margin = *v;
}
template void apply_memory_options(const ParsedArgs&, unmask_model_params&);
template void apply_memory_options(const ParsedArgs&, unmask_plan_params&);

std::string default_model_path() {
    try {
        return unmask_examples::default_model_path();
    } catch (const std::runtime_error& e) {
        throw UsageError(e.what());
    }
}

ModelHandle load_model(const std::string& path, unmask_model_params params, bool progress) {
    // Bytes verified and read: in place on a terminal, a line per tenth with --progress elsewhere.
    const bool terminal = unmask_examples::stderr_is_terminal();
    unmask_examples::ProgressMeter meter("loading " + path, unmask_examples::ProgressMeter::Unit::bytes,
                                         terminal ? stderr : nullptr,
                                         [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
    if (terminal || progress) {
        params.progress_callback = unmask_examples::ProgressMeter::callback;
        params.progress_user_data = &meter;
    }
    unmask_model* model = nullptr;
    const unmask_status status = unmask_model_load(path.c_str(), &params, &model);
    meter.finish();
    check(status);
    return ModelHandle(model);
}

}  // namespace unmask_cli
