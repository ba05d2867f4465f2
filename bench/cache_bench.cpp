// K/V cache modes on the ~110M-parameter LLaDA-shaped model (random weights): a 16-token prompt,
// gen_length 256 or 1024 in blocks of 32, 8 steps per block (steps = gen_length / 4), 2 threads,
// whole generations. Each block is a forward of the whole canvas, then 7 steps that feed the
// block (dual), everything from it (prefix) or the whole canvas (none). Reports steps/s,
// generated tokens/s and NFE/token; a mode's speed-up is its tokens/s over none's at the same length.
// The bf16 variants keep the cache in bf16 (half the bytes): their cost is their tokens/s over the
// fp32 cache's.
#include <benchmark/benchmark.h>

#include "synthetic_model.hpp"
#include "unmask.h"

namespace {

void BM_cache_mode(benchmark::State& state, int32_t mode, int32_t precision) {
    unmask_generate_params params;
    unmask_generate_params_init(&params);
    params.gen_length = state.range(0);
    params.steps = params.gen_length / 4;
    params.block_length = 32;
    params.cache_mode = mode;
    params.cache_precision = precision;
    params.threads = 2;
    unmask_bench::run_generations(state, params);
}

}  // namespace

constexpr int32_t fp32 = UNMASK_PRECISION_FP32, bf16 = UNMASK_PRECISION_BF16;
BENCHMARK_CAPTURE(BM_cache_mode, none, UNMASK_CACHE_NONE, fp32)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_cache_mode, prefix, UNMASK_CACHE_PREFIX, fp32)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_cache_mode, dual, UNMASK_CACHE_DUAL, fp32)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_cache_mode, prefix_bf16, UNMASK_CACHE_PREFIX, bf16)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_cache_mode, dual_bf16, UNMASK_CACHE_DUAL, bf16)->Arg(256)->Arg(1024)->Unit(benchmark::kSecond);
