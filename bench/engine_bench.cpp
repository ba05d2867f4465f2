// The engine on the ~110M-parameter LLaDA-shaped model (random bf16 weights, 2 threads):
// - BM_engine_concurrency: the same requests served at 1, 4, 8 and 16 concurrent, reported
//   together from one run: generated tokens/s at each level and the ratio to concurrency 1;
//   exact (no cache) or with the dual cache and threshold decoding (blocks of 32, threshold 0.9:
//   the setting users run); at concurrency 1 also the milliseconds of one step;
// - BM_engine_latency: requests arriving at a fixed rate (open loop), latency percentiles from
//   the engine's own stats.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "synthetic_model.hpp"
#include "unmask.h"

namespace {

// Waits for every request's outcome and frees it.
void finish_all(const std::vector<unmask_request*>& requests) {
    for (auto* r : requests) {
        unmask_request_wait(r, -1);
        unmask_request_free(r);
    }
}

unmask_engine* start(unmask_model* model, int32_t concurrency) {
    unmask_engine_params params;
    unmask_engine_params_init(&params);
    params.max_concurrent_requests = concurrency;
    params.max_queued_requests = 1024;
    params.threads = 2;
    params.max_sequence_length = 256;
    unmask_engine* engine = nullptr;
    return unmask_engine_create(model, &params, &engine) == UNMASK_OK ? engine : nullptr;
}

std::vector<int32_t> prompt_of(int i) {
    std::vector<int32_t> prompt(16);
    for (size_t j = 0; j < prompt.size(); ++j) prompt[j] = static_cast<int32_t>(100 + 37 * j + 11 * size_t(i));
    return prompt;
}

struct Served {
    double seconds;     // until the last request finished
    uint64_t forwards;  // model evaluations, summed over requests (the engine's forwards_total)
};

// Serves `count` requests submitted together.
Served serve(unmask_engine* engine, int count, int64_t gen_length, int64_t steps, bool dual) {
    unmask_generate_params params;
    unmask_generate_params_init(&params);
    params.gen_length = gen_length;
    params.steps = steps;
    if (dual) {
        params.cache_mode = UNMASK_CACHE_DUAL;
        params.block_length = 32;
        params.threshold = 0.9;
    }
    std::vector<unmask_request*> requests;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
        const auto prompt = prompt_of(i);
        unmask_request* r = nullptr;
        if (unmask_engine_submit(engine, &params, prompt.data(), 16, 60.0, &r) == UNMASK_OK) requests.push_back(r);
    }
    finish_all(requests);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    unmask_engine_stats stats;
    stats.struct_size = sizeof stats;
    unmask_engine_stats_get(engine, &stats);
    return {seconds, stats.forwards_total};
}

// args: gen_length, steps, dual (1: dual cache and threshold 0.9 over blocks of 32; 0: exact).
// 16 requests at each concurrency level.
void BM_engine_concurrency(benchmark::State& state) {
    unmask_model* model = unmask_bench::synthetic_llada_model();
    if (model == nullptr) {
        state.SkipWithError(unmask_last_error());
        return;
    }
    const int64_t gen_length = state.range(0), steps = state.range(1);
    const bool dual = state.range(2) != 0;
    const int requests = 16;
    for (auto _ : state) {
        double baseline = 0;
        for (int32_t concurrency : {1, 4, 8, 16}) {
            unmask_engine* engine = start(model, concurrency);
            if (engine == nullptr) {
                state.SkipWithError(unmask_last_error());
                return;
            }
            const Served served = serve(engine, requests, gen_length, steps, dual);
            unmask_engine_free(engine);
            const double rate = double(requests) * double(gen_length) / served.seconds;
            if (concurrency == 1) baseline = rate;
            state.counters["tokens/s@" + std::to_string(concurrency)] = rate;
            state.counters["ratio@" + std::to_string(concurrency)] = rate / baseline;
            // At 1, the wall time of one request's step (its forward and all around it): batching
            // can at best bring 8 requests' steps down to one forward over their rows together.
            if (concurrency == 1) state.counters["ms/step@1"] = 1e3 * served.seconds / double(served.forwards);
        }
    }
}

// args: requests per second offered, requests.
void BM_engine_latency(benchmark::State& state) {
    unmask_model* model = unmask_bench::synthetic_llada_model();
    if (model == nullptr) {
        state.SkipWithError(unmask_last_error());
        return;
    }
    const double rate = double(state.range(0));
    const int count = static_cast<int>(state.range(1));
    for (auto _ : state) {
        unmask_engine* engine = start(model, 8);
        unmask_generate_params params;
        unmask_generate_params_init(&params);
        params.gen_length = 32;
        params.steps = 8;
        std::vector<unmask_request*> requests;
        const auto start_time = std::chrono::steady_clock::now();
        for (int i = 0; i < count; ++i) {
            std::this_thread::sleep_until(start_time + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                           std::chrono::duration<double>(double(i) / rate)));
            const auto prompt = prompt_of(i);
            unmask_request* r = nullptr;
            if (unmask_engine_submit(engine, &params, prompt.data(), 16, 60.0, &r) == UNMASK_OK) requests.push_back(r);
        }
        finish_all(requests);
        unmask_engine_stats stats{};
        stats.struct_size = sizeof stats;
        unmask_engine_stats_get(engine, &stats);
        state.counters["e2e_p50_s"] = stats.end_to_end_seconds_p50;
        state.counters["e2e_p95_s"] = stats.end_to_end_seconds_p95;
        state.counters["e2e_p99_s"] = stats.end_to_end_seconds_p99;
        state.counters["queue_p50_s"] = stats.queue_seconds_p50;
        state.counters["queue_p99_s"] = stats.queue_seconds_p99;
        state.counters["first_block_p50_s"] = stats.first_block_seconds_p50;
        unmask_engine_free(engine);
    }
}

}  // namespace

BENCHMARK(BM_engine_concurrency)->Args({64, 16, 0})->Args({16, 4, 0})->Args({128, 128, 1})
    ->ArgNames({"gen_length", "steps", "dual"})
    ->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_engine_latency)->Args({4, 40})->ArgNames({"rate", "requests"})->Iterations(1)
    ->Unit(benchmark::kSecond)->UseRealTime();
