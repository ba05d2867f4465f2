// `unmask plan -m DIR`: what a deployment of the model needs per device (weights by component,
// sequence state, scratch) against a memory budget, and what would fit instead. Reads config.json
// (and the safetensors headers for automatic precision), never weight data.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "decoding_options.hpp"
#include "engine_session.hpp"
#include "model_options.hpp"
#include "text_format.hpp"

namespace unmask_cli {
namespace {

const char* const component_names[UNMASK_COMPONENT_COUNT] = {"embedding", "attention", "norm", "mlp",
                                                              "router",    "experts",   "shared_experts", "lm_head"};

nlohmann::json plan_json(const unmask_memory_plan& p, const std::string& backend) {
    nlohmann::json components = nlohmann::json::object();
    for (int c = 0; c < UNMASK_COMPONENT_COUNT; ++c) components[component_names[c]] = p.weights_by_component[c];
    return {{"fits", p.fits == 1},
            {"backend", backend},
            {"devices", p.devices},
            {"max_sequence_length", p.max_sequence_length},
            {"max_concurrent", p.max_concurrent},
            {"sequences_per_device", p.sequences_per_device},
            {"per_device",
             {{"device_memory", p.device_memory},
              {"budget", p.budget},
              {"margin", p.margin},
              {"usable", p.usable},
              {"weights", p.weights},
              {"weights_by_component", components},
              {"sequence_state", p.sequence_state},
              {"dynamic", p.dynamic},
              {"scratch", p.scratch},
              {"required", p.required}}},
            {"weights_total", p.weights_total},
            {"parameters_total", p.parameters_total},
            {"max_concurrent_at_length", p.max_concurrent_at_length},
            {"max_length_at_concurrency", p.max_length_at_concurrency}};
}

void print_text(const unmask_memory_plan& p, const std::string& backend) {
    auto row = [&](const std::string& name, uint64_t bytes) {
        const double share = p.usable > 0 ? 100.0 * double(bytes) / double(p.usable) : 0.0;
        std::printf("  %-26s %22s %12s %7.1f%%\n", name.c_str(), with_thousands(bytes).c_str(),
                    binary_size(bytes).c_str(), share);
    };
    std::printf("model: %s parameters, %s of weights in all\n", with_thousands(p.parameters_total).c_str(),
                binary_size(p.weights_total).c_str());
    std::printf("plan:  %d concurrent sequence(s) of %lld positions on %d %s device(s), %lld per device\n\n",
                p.max_concurrent, static_cast<long long>(p.max_sequence_length), p.devices, backend.c_str(),
                static_cast<long long>(p.sequences_per_device));
    std::printf("  %-26s %22s %12s %8s\n", "per device", "bytes", "", "of usable");
    if (p.device_memory > 0) row("device memory", p.device_memory);
    row("budget", p.budget);
    row("margin", p.margin);
    row("usable", p.usable);
    std::printf("\n");
    row("weights", p.weights);
    for (int c = 0; c < UNMASK_COMPONENT_COUNT; ++c)
        if (p.weights_by_component[c] > 0) row(std::string("  ") + component_names[c], p.weights_by_component[c]);
    row("sequence state x " + std::to_string(p.sequences_per_device), p.dynamic);
    row("scratch (largest forward)", p.scratch);
    row("required", p.required);
    std::printf("\n%s: %s\n", p.fits ? "fits" : "does NOT fit",
                p.fits ? (with_thousands(p.usable - p.required) + " bytes to spare").c_str()
                       : (with_thousands(p.required - p.usable) + " bytes over the usable budget").c_str());
    auto answer = [](int64_t value, const std::string& unit) {
        return value > 0 ? std::to_string(value) + unit : std::string("none, not even one");
    };
    std::printf("most sequences of %lld positions: %s\n", static_cast<long long>(p.max_sequence_length),
                answer(p.max_concurrent_at_length, "").c_str());
    std::printf("longest sequence at %d concurrent: %s\n", p.max_concurrent,
                answer(p.max_length_at_concurrency, " positions").c_str());
}

int run_plan(const ParsedArgs& args) {
    unmask_plan_params params;
    check(unmask_plan_params_init(&params));
    unmask_service_config config{};
    std::string backend = "cpu";
    std::optional<std::string> model_path = args.value("model");
    if (read_config_option(args, config)) {  // flags below override the file
        if (!model_path) model_path = config.weights_path;
        params.precision = config.precision;
        params.quantize_embeddings = config.quantize_embeddings;
        params.memory_fraction = config.memory_fraction;
        params.max_concurrent = config.max_concurrent_requests;
        params.max_sequence_length = config.max_sequence_length;
        if (config.gpu_device_count > 0) {
            backend = "cuda";
            params.devices = config.gpu_device_count;
        }
    }
    if (!model_path) model_path = default_model_path();
    if (auto v = args.value("precision")) params.precision = parse_precision(*v);
    if (args.has("quantize-embeddings")) params.quantize_embeddings = 1;
    backend = args.value("backend").value_or(backend);
    params.backend = parse_backend(backend);
    apply_memory_options(args, params);
    auto int32 = [&](const char* name, int32_t& field) {
        if (auto v = args.integer(name)) {
            if (*v < 0 || *v > INT32_MAX) throw UsageError(std::string("--") + name + " is out of range");
            field = static_cast<int32_t>(*v);
        }
    };
    int32("devices", params.devices);
    int32("concurrency", params.max_concurrent);
    int32("threads", params.threads);
    if (auto v = args.integer("max-seq-len")) params.max_sequence_length = *v;
    if (auto v = args.value("device-memory")) params.device_memory_bytes = parse_bytes(*v, "device-memory");
    params.kv_cache = args.has("kv-cache") || args.has("kv-cache-precision") ? 1 : 0;
    if (auto v = args.value("kv-cache-precision"))
        params.kv_cache_precision = named(UNMASK_ENUM_PRECISION, *v, "--kv-cache-precision");
    params.cfg = args.has("cfg") ? 1 : 0;
    unmask_memory_plan plan{};
    plan.struct_size = sizeof plan;
    check(unmask_plan(model_path->c_str(), &params, &plan));
    if (args.has("json"))
        std::cout << plan_json(plan, backend).dump() << "\n";
    else
        print_text(plan, backend);
    return 0;
}

}  // namespace

const Command plan_command{
    {"plan",
     "Plan memory for a model before loading it: weights by component, per-sequence state and scratch per\n"
     "device against a budget, whether it fits, and the most sequences and longest length that would.\n"
     "Reads config.json (and safetensors headers for --precision auto), never weight data.",
     "",
     0,
     0,
     with_memory_options({{"model", "PATH", "the Hugging Face model directory or GGUF file (default: $UNMASK_MODEL or the bundled model)", 'm'},
                          {"config", "FILE", "a service configuration (JSON or YAML); flags override its values"},
                          {"precision", "P", "auto (file dtypes), fp32, bf16, fp16, or int8, q4 or fp8 (matrices quantized at load)"},
                          quantize_embeddings_option,
                          {"max-seq-len", "N", "prompt + generation positions (default: the model's maximum)"},
                          {"concurrency", "N", "sequences running at once (default 1)"},
                          {"devices", "N", "devices sharing the model: heads, MLP widths, routed experts and the vocabulary divided (default 1)"},
                          {"backend", "B", "cpu (default) or cuda"},
                          {"device-memory", "BYTES", "plan for devices of this size instead of asking this machine"},
                          {"threads", "N", "CPU threads (default: all)"},
                          {"kv-cache", "", "a cache mode keeps K/V per sequence"},
                          {"kv-cache-precision", "P", "the cache's elements: fp32 (default) or bf16 (implies --kv-cache)"},
                          {"cfg", "", "classifier-free guidance (an unconditional twin per sequence)"}})},
    run_plan};

}  // namespace unmask_cli
