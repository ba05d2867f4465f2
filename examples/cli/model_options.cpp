#include "model_options.hpp"

#include "commands.hpp"

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

ModelHandle load_model(const std::string& path, const unmask_model_params& params) {
    unmask_model* model = nullptr;
    check(unmask_model_load(path.c_str(), &params, &model));
    return ModelHandle(model);
}

}  // namespace unmask_cli
