// Generation with each commit policy on the ~110M-parameter LLaDA-shaped model (random weights):
// 16-token prompt, 64 generated positions, 2 threads. Reports steps/s, generated tokens/s and
// forwards per generated token (NFE/token). On random weights the model is never confident, so
// threshold and factor decoding fall back to about one commit per step; their speed-ups show on
// a trained model (the bundled model's quality harness).
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "synthetic_model.hpp"
#include "unmask.h"

namespace {

struct Case {
    int32_t policy;
    int64_t steps;
    int64_t block_length;
    double threshold, factor;
};

void BM_generate(benchmark::State& state, Case c) {
    unmask_model* model = unmask_bench::synthetic_llada_model();
    if (model == nullptr) {
        state.SkipWithError(unmask_last_error());
        return;
    }
    unmask_generate_params params;
    unmask_generate_params_init(&params);
    params.policy = c.policy;
    params.gen_length = 64;
    params.steps = c.steps;
    params.block_length = c.block_length;
    params.threshold = c.threshold;
    params.factor = c.factor;
    params.threads = 2;
    std::vector<int32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(100 + 37 * i);
    std::vector<int32_t> tokens(64);
    unmask_generation result{sizeof result, 0, tokens.data(), 64, 0, 0, 0};
    int64_t steps = 0, forwards = 0;
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        if (unmask_generate(model, &params, prompt.data(), 16, &result) != UNMASK_OK) {
            state.SkipWithError(unmask_last_error());
            return;
        }
        steps += result.steps;
        forwards += result.forwards;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double generated = 64.0 * static_cast<double>(state.iterations());
    state.counters["steps/s"] = double(steps) / seconds;
    state.counters["tokens/s"] = generated / seconds;
    state.counters["NFE/token"] = double(forwards) / generated;
}

}  // namespace

BENCHMARK_CAPTURE(BM_generate, low_confidence_64_steps, Case{UNMASK_POLICY_LOW_CONFIDENCE, 64, 0, 0, 0});
BENCHMARK_CAPTURE(BM_generate, low_confidence_16_steps, Case{UNMASK_POLICY_LOW_CONFIDENCE, 16, 0, 0, 0});
BENCHMARK_CAPTURE(BM_generate, low_confidence_blocks_32_16_steps, Case{UNMASK_POLICY_LOW_CONFIDENCE, 16, 32, 0, 0});
BENCHMARK_CAPTURE(BM_generate, random_16_steps, Case{UNMASK_POLICY_RANDOM, 16, 0, 0, 0});
BENCHMARK_CAPTURE(BM_generate, maskgit_plus_16_steps, Case{UNMASK_POLICY_MASKGIT_PLUS, 16, 0, 0, 0});
BENCHMARK_CAPTURE(BM_generate, entropy_16_steps, Case{UNMASK_POLICY_ENTROPY, 16, 0, 0, 0});
BENCHMARK_CAPTURE(BM_generate, threshold_0_9_blocks_32, Case{UNMASK_POLICY_LOW_CONFIDENCE, 64, 32, 0.9, 0});
BENCHMARK_CAPTURE(BM_generate, factor_1_blocks_32, Case{UNMASK_POLICY_LOW_CONFIDENCE, 64, 32, 0, 1.0});
