// Generation with each commit policy on the ~110M-parameter LLaDA-shaped model (random weights):
// 16-token prompt, 64 generated positions, 2 threads. Reports steps/s, generated tokens/s and
// forwards per generated token (NFE/token). On random weights the model is never confident, so
// threshold and factor decoding fall back to about one commit per step; their speed-ups show on
// a trained model (the bundled model's quality harness).
#include <benchmark/benchmark.h>

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
    unmask_generate_params params;
    unmask_generate_params_init(&params);
    params.policy = c.policy;
    params.gen_length = 64;
    params.steps = c.steps;
    params.block_length = c.block_length;
    params.threshold = c.threshold;
    params.factor = c.factor;
    params.threads = 2;
    unmask_bench::run_generations(state, params);
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
