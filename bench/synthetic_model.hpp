// Writes random models in Hugging Face layout for benchmarks: a config.json and one
// model.safetensors with the real tensor names, so the whole loading path is exercised.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "unmask.h"

namespace unmask_bench {

struct LladaShape {
    int64_t hidden = 768;
    int64_t layers = 12;
    int64_t heads = 12;
    int64_t mlp = 2048;
    int64_t vocab = 16384;  // ~110M parameters with the defaults
};

// Writes (once; reused when already present) a random bf16 model for `config` (config.json's
// contents: every tensor its architecture expects) under the system's temporary directory, in a
// folder named after `name`, and returns its path.
std::filesystem::path synthetic_model(const std::string& name, const nlohmann::json& config);

// A bf16 LLaDA model of `shape`.
std::filesystem::path synthetic_llada(const LladaShape& shape);

// A bf16 model of LLaDA-MoE-7B-A1B's shape (hidden 2048, 16 heads, 64 experts of width 1024, 8
// per token, vocab 157184) with `layers` of its 16 layers.
std::filesystem::path synthetic_llada_moe(int64_t layers);

// The default-shaped model loaded once through the C API in bf16 (null on failure, with
// unmask_last_error() saying why); shared by the generation and engine benchmarks.
unmask_model* synthetic_llada_model();

// Whole generations of `params` on that model from a fixed 16-token prompt, one per iteration of
// `state`; reports steps/s, generated tokens/s and forwards per generated token (NFE/token).
void run_generations(benchmark::State& state, const unmask_generate_params& params);

}  // namespace unmask_bench
