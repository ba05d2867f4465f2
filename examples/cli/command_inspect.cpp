// `unmask inspect DIR`: what a model directory holds, read from its headers only (no weight data
// is touched), optionally verifying its checksum manifest.
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "engine_session.hpp"
#include "model_options.hpp"
#include "text_format.hpp"

namespace unmask_cli {
namespace {

const char* dtype_name(int32_t dtype) {
    switch (dtype) {
        case UNMASK_DTYPE_BF16: return "BF16";
        case UNMASK_DTYPE_F16: return "F16";
        case UNMASK_DTYPE_Q8_0: return "Q8_0";
        case UNMASK_DTYPE_Q4_0: return "Q4_0";
        case UNMASK_DTYPE_Q4_K: return "Q4_K";
        case UNMASK_DTYPE_Q5_K: return "Q5_K";
        case UNMASK_DTYPE_Q6_K: return "Q6_K";
        case UNMASK_DTYPE_F8_E4M3: return "F8_E4M3";
        default: return "F32";
    }
}

// Loads the model's description and tensor table into one JSON object.
nlohmann::json describe(unmask_model* model) {
    unmask_model_description info{};
    info.struct_size = sizeof info;
    check(unmask_model_info(model, &info));
    nlohmann::json out = {{"architecture", info.architecture},
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
                          {"eos_token_id", info.eos_token_id},
                          {"max_sequence_length", info.max_sequence_length},
                          {"diffusion_block_size", info.diffusion_block_size},
                          {"checksums", info.checksums_verified ? "verified" : "not_checked"},
                          {"fingerprint", info.fingerprint}};
    std::map<std::string, uint64_t> by_component;
    nlohmann::json tensors = nlohmann::json::array();
    for (int64_t i = 0; i < info.tensor_count; ++i) {
        unmask_tensor_description t{};
        t.struct_size = sizeof t;
        check(unmask_model_tensor(model, i, &t));
        by_component[t.component] += t.bytes;
        tensors.push_back({{"name", t.name},
                           {"dtype", dtype_name(t.dtype)},
                           {"file_dtype", dtype_name(t.file_dtype)},
                           {"shape", std::vector<int64_t>(t.shape, t.shape + t.dims)},
                           {"component", t.component},
                           {"bytes", t.bytes}});
    }
    out["bytes_by_component"] = by_component;
    out["tensors"] = tensors;
    return out;
}

void print_text(const nlohmann::json& d) {
    auto row = [](const char* key, const std::string& value) { std::printf("%-22s %s\n", key, value.c_str()); };
    row("architecture", d["architecture"].get<std::string>());
    row("precision", d["precision"].get<std::string>());
    row("parameters", with_thousands(d["parameters_total"]) + " total, " + with_thousands(d["parameters_active"]) +
                          " active per token");
    row("weight bytes", with_thousands(d["weight_bytes"]));
    row("layers", std::to_string(d["layers"].get<int>()));
    row("hidden size", std::to_string(d["hidden_size"].get<int>()));
    row("heads (kv) x head dim", std::to_string(d["attention_heads"].get<int>()) + " (" +
                                     std::to_string(d["kv_heads"].get<int>()) + ") x " +
                                     std::to_string(d["head_dim"].get<int>()));
    if (d["experts"].get<int>() > 0)
        row("experts", std::to_string(d["experts"].get<int>()) + ", top " +
                           std::to_string(d["experts_per_token"].get<int>()) + " per token");
    row("vocab size", std::to_string(d["vocab_size"].get<int64_t>()));
    row("mask / eos token", std::to_string(d["mask_token_id"].get<int>()) + " / " +
                                std::to_string(d["eos_token_id"].get<int>()));
    row("max sequence length", std::to_string(d["max_sequence_length"].get<int64_t>()));
    if (d["diffusion_block_size"].get<int64_t>() > 0)
        row("block diffusion", "blocks of " + std::to_string(d["diffusion_block_size"].get<int64_t>()) +
                                   " (block-causal attention)");
    row("checksums", d["checksums"] == "verified" ? "verified against SHA256SUMS" : "not checked (use --verify)");
    row("fingerprint", d["fingerprint"].get<std::string>());
    std::printf("\nbytes by component:\n");
    for (const auto& [component, bytes] : d["bytes_by_component"].items())
        std::printf("  %-18s %s\n", component.c_str(), with_thousands(bytes.get<uint64_t>()).c_str());
    std::printf("\ntensors (%zu):\n", d["tensors"].size());
    for (const auto& t : d["tensors"]) {
        std::printf("  %-56s %-7s %-18s %s\n", t["name"].get<std::string>().c_str(),
                    t["dtype"].get<std::string>().c_str(), t["shape"].dump().c_str(),
                    with_thousands(t["bytes"].get<uint64_t>()).c_str());
    }
}

int run_inspect(const ParsedArgs& args) {
    unmask_model_params params;
    check(unmask_model_params_init(&params));
    params.checksum_mode = args.has("verify") ? UNMASK_CHECKSUM_REQUIRE : UNMASK_CHECKSUM_SKIP;
    params.metadata_only = 1;
    if (auto precision = args.value("precision")) params.precision = parse_precision(*precision);
    if (args.has("quantize-embeddings")) params.quantize_embeddings = 1;
    unmask_service_config config{};
    std::string path = args.positional.empty() ? std::string() : args.positional.front();
    if (path.empty() && read_config_option(args, config)) path = config.weights_path;
    if (path.empty()) path = default_model_path();
    const ModelHandle model = load_model(path, params, args.has("progress"));
    const nlohmann::json description = describe(model.get());
    if (args.has("json"))
        std::cout << description.dump() << "\n";
    else
        print_text(description);
    return 0;
}

}  // namespace

const Command inspect_command{
    {"inspect",
     "Describe a Hugging Face model directory or a GGUF file from its headers: architecture, parameter counts, bytes by\n"
     "component, every tensor with its dtype and shape. No weight data is read unless --verify is given.",
     "DIR",
     0,
     1,
     {{"verify", "", "verify the SHA256SUMS checksum manifest (it must exist)"},
      {"config", "FILE", "a service configuration: inspect its model"},
      {"precision", "P", "report bytes as loaded at auto (file dtypes), fp32, bf16, fp16, int8, q4 or fp8"},
      quantize_embeddings_option,
      {"progress", "", "report --verify's progress on stderr (a line per tenth) even when it is not a terminal"}}},
    run_inspect};

}  // namespace unmask_cli
