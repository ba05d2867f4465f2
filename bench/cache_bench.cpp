// K/V cache modes on the ~110M-parameter LLaDA-shaped model (random weights): a 16-token prompt,
// gen_length 256 or 1024 in blocks of 32, 8 steps per block (steps = gen_length / 4), 2 threads,
// whole generations. Each block is a forward of the whole canvas, then 7 steps that feed the
// block (dual), everything from it (prefix) or the whole canvas (none). Reports steps/s and
// generated tokens/s; a mode's speed-up is its tokens/s over none's at the same length.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "synthetic_model.hpp"
#include "unmask.h"

namespace {

void BM_cache_mode(benchmark::State& state, int32_t mode) {
    unmask_model* model = unmask_bench::synthetic_llada_model();
    if (model == nullptr) {
        state.SkipWithError(unmask_last_error());
        return;
    }
    const int64_t gen_length = state.range(0);
    unmask_generate_params params;
    unmask_generate_params_init(&params);
    params.gen_length = gen_length;
    params.steps = gen_length / 4;
    params.block_length = 32;
    params.cache_mode = mode;
    params.threads = 2;
    std::vector<int32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(100 + 37 * i);
    std::vector<int32_t> tokens(static_cast<size_t>(gen_length));
    unmask_generation result{sizeof result, 0, tokens.data(), gen_length, 0, 0, 0};
    int64_t steps = 0;
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        if (unmask_generate(model, &params, prompt.data(), 16, &result) != UNMASK_OK) {
            state.SkipWithError(unmask_last_error());
            return;
        }
        steps += result.steps;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["steps/s"] = double(steps) / seconds;
    state.counters["tokens/s"] = double(gen_length) * double(state.iterations()) / seconds;
}

}  // namespace

BENCHMARK_CAPTURE(BM_cache_mode, none, UNMASK_CACHE_NONE)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_cache_mode, prefix, UNMASK_CACHE_PREFIX)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_cache_mode, dual, UNMASK_CACHE_DUAL)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
