// K/V cache modes on the ~110M-parameter LLaDA-shaped model (random weights): a 16-token prompt,
// gen_length 256 or 1024 in blocks of 32, 8 steps per block (steps = gen_length / 4), 2 threads.
// Each run decodes the first two blocks (16 steps; the step callback then stops it): a block is a
// full forward then 7 steps that feed the block (dual), everything from it (prefix) or the whole
// canvas (none), so these steps are what the whole generation repeats. Reports steps/s and
// committed tokens/s; the speed-up of a mode is its tokens/s over none's at the same length.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "synthetic_model.hpp"
#include "unmask.h"

namespace {

constexpr int64_t measured_steps = 16;

int32_t stop_after_measured_steps(int64_t, int64_t step, int64_t, const int32_t*, int64_t, void*) {
    return step + 1 >= measured_steps ? 1 : 0;
}

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
    params.step_callback = stop_after_measured_steps;
    std::vector<int32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(100 + 37 * i);
    unmask_model_description info{};
    info.struct_size = sizeof info;
    unmask_model_info(model, &info);
    std::vector<int32_t> tokens(static_cast<size_t>(gen_length));
    unmask_generation result{sizeof result, 0, tokens.data(), gen_length, 0, 0, 0};
    int64_t steps = 0, committed = 0;
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        if (unmask_generate(model, &params, prompt.data(), 16, &result) != UNMASK_OK) {
            state.SkipWithError(unmask_last_error());
            return;
        }
        steps += result.steps;
        for (int32_t t : tokens) committed += t != info.mask_token_id ? 1 : 0;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["steps/s"] = double(steps) / seconds;
    state.counters["tokens/s"] = double(committed) / seconds;
}

}  // namespace

BENCHMARK_CAPTURE(BM_cache_mode, none, UNMASK_CACHE_NONE)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_cache_mode, prefix, UNMASK_CACHE_PREFIX)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_cache_mode, dual, UNMASK_CACHE_DUAL)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
