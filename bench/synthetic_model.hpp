// Writes random models in Hugging Face layout for benchmarks: a config.json and one
// model.safetensors with the real LLaDA tensor names, so the whole loading path is exercised.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "unmask.h"

namespace unmask_bench {

struct LladaShape {
    int64_t hidden = 768;
    int64_t layers = 12;
    int64_t heads = 12;
    int64_t mlp = 2048;
    int64_t vocab = 16384;  // ~110M parameters with the defaults
};

// Writes (once; reused when already present) a bf16 LLaDA model of `shape` under the system's
// temporary directory and returns its path.
std::filesystem::path synthetic_llada(const LladaShape& shape);

// The default-shaped model loaded once through the C API in bf16 (null on failure, with
// unmask_last_error() saying why); shared by the generation and engine benchmarks.
unmask_model* synthetic_llada_model();

// Whole generations of `params` on that model from a fixed 16-token prompt, one per iteration of
// `state`; reports steps/s, generated tokens/s and forwards per generated token (NFE/token).
void run_generations(benchmark::State& state, const unmask_generate_params& params);

}  // namespace unmask_bench
