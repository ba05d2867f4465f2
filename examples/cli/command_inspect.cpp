#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"

namespace unmask_cli {
namespace {

const char* precision_name(int32_t precision) {
    switch (precision) {
        case UNMASK_PRECISION_FP32: return "fp32";
        case UNMASK_PRECISION_BF16: return "bf16";
        case UNMASK_PRECISION_FP16: return "fp16";
        default: return "mixed";
    }
}

int run_inspect(const ParsedArgs& args) {
    unmask_model_params params;
    check(unmask_model_params_init(&params));
    params.checksum_mode = args.has("verify") ? UNMASK_CHECKSUM_REQUIRE : UNMASK_CHECKSUM_SKIP;
    unmask_model* model = nullptr;
    check(unmask_model_load(args.positional.at(0).c_str(), &params, &model));

    unmask_model_description info{};
    info.struct_size = sizeof info;
    const unmask_status status = unmask_model_info(model, &info);
    if (status != UNMASK_OK) unmask_model_free(model);
    check(status);

    const nlohmann::json out = {{"architecture", info.architecture},
                                {"precision", precision_name(info.precision)},
                                {"parameters_total", info.parameters_total},
                                {"parameters_active", info.parameters_active},
                                {"weight_bytes", info.weight_bytes},
                                {"vocab_size", info.vocab_size},
                                {"layers", info.layers},
                                {"hidden_size", info.hidden_size},
                                {"attention_heads", info.attention_heads},
                                {"kv_heads", info.kv_heads},
                                {"head_dim", info.head_dim},
                                {"experts", info.experts},
                                {"experts_per_token", info.experts_per_token},
                                {"mask_token_id", info.mask_token_id},
                                {"max_sequence_length", info.max_sequence_length}};
    unmask_model_free(model);
    if (args.has("json")) {
        std::cout << out.dump() << "\n";
    } else {
        for (const auto& [key, value] : out.items()) std::cout << key << ": " << value.dump() << "\n";
    }
    return 0;
}

}  // namespace

const Command inspect_command{{"inspect",
                               "Describe a Hugging Face model directory: architecture, sizes, parameter counts.",
                               "DIR",
                               1,
                               1,
                               {{"verify", "", "verify the SHA256SUMS checksum manifest (it must exist)"}}},
                              run_inspect};

}  // namespace unmask_cli
