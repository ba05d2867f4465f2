#include "model_options.hpp"

#include <cstdlib>
#include <filesystem>

#include "commands.hpp"
#include "text_format.hpp"

namespace unmask_cli {

int32_t parse_precision(const std::string& text) {
    if (text == "auto") return UNMASK_PRECISION_AUTO;
    if (text == "fp32") return UNMASK_PRECISION_FP32;
    if (text == "bf16") return UNMASK_PRECISION_BF16;
    if (text == "fp16") return UNMASK_PRECISION_FP16;
    throw UsageError("--precision must be auto, fp32, bf16 or fp16, got '" + text + "'");
}

const char* precision_name(int32_t precision) {
    switch (precision) {
        case UNMASK_PRECISION_FP32: return "fp32";
        case UNMASK_PRECISION_BF16: return "bf16";
        case UNMASK_PRECISION_FP16: return "fp16";
        default: return "mixed";
    }
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
    if (const char* chosen = std::getenv("UNMASK_MODEL"); chosen != nullptr && *chosen != '\0') return chosen;
    namespace fs = std::filesystem;
    std::vector<fs::path> places;
    std::error_code error;
    const fs::path executable = fs::read_symlink("/proc/self/exe", error);
    if (!error)
        places.push_back((executable.parent_path() / UNMASK_INSTALLED_MODELS_FROM_BIN / UNMASK_BUNDLED_MODEL_NAME).lexically_normal());
    places.emplace_back(UNMASK_SOURCE_MODELS_DIR "/" UNMASK_BUNDLED_MODEL_NAME);
    std::string tried;
    for (const fs::path& place : places) {
        if (fs::is_regular_file(place / "config.json", error)) return place.string();
        tried += (tried.empty() ? "" : ", ") + place.string();
    }
    throw UsageError("no model given (-m DIR, --config FILE or $UNMASK_MODEL) and the bundled model is not at " + tried);
}

ModelHandle load_model(const std::string& path, const unmask_model_params& params) {
    unmask_model* model = nullptr;
    check(unmask_model_load(path.c_str(), &params, &model));
    return ModelHandle(model);
}

}  // namespace unmask_cli
