// One full forward pass of the ~110M-parameter LLaDA-shaped model (random bf16 weights, loaded
// as bf16 or converted to fp32) over one sequence, with candidates at every position (the worst
// case of a diffusion step: every position masked). tokens/s, and the model FLOPs as a fraction
// of the FMA peak measured in the same run; BM_forward_profile, each kind of backend call's share
// of the time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.hpp"
#include "backend/profiled_backend.hpp"
#include "cpu/matmul.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "peak.hpp"
#include "profile_counters.hpp"
#include "synthetic_model.hpp"

using namespace unmask;

namespace {

// 2 FLOPs per weight per token in the linear layers, plus attention's q kᵀ and p v.
double forward_flops(const ModelSpec& spec, int64_t tokens) {
    const double d = double(spec.hidden_size), i = double(spec.intermediate_size), t = double(tokens);
    const double per_layer = 2.0 * t * (4.0 * d * d + 3.0 * d * i) + 4.0 * t * t * d;
    return double(spec.layers) * per_layer + 2.0 * t * d * double(spec.embedding_rows);
}

std::unique_ptr<Model> load_bench_model(const benchmark::State& state) {
    LoadOptions options;
    options.precision = state.range(2) ? Precision::bf16 : Precision::fp32;
    options.checksum_mode = ChecksumMode::skip;
    options.cpu_panels = true;  // as a model loaded for one host device is
    return load_model(unmask_bench::synthetic_llada({}), options);
}

std::vector<int32_t> random_ids(const Model& model, int64_t tokens) {
    std::mt19937 rng(5);
    std::vector<int32_t> ids(static_cast<size_t>(tokens));
    for (auto& id : ids) id = static_cast<int32_t>(rng() % uint32_t(model.spec().vocab_size));
    return ids;
}

// args: tokens, threads, bf16 (1) or fp32 (0)
void BM_forward(benchmark::State& state) {
    const int64_t tokens = state.range(0);
    const int threads = static_cast<int>(state.range(1));
    const auto model = load_bench_model(state);
    auto backend = make_cpu_backend(threads);
    Forward forward(*model, *backend, {tokens, tokens});
    const std::vector<int32_t> ids = random_ids(*model, tokens);
    const CandidateParams greedy;
    const std::vector<ForwardSequence> batch = {{ids, {}, &greedy, {}, 0.0}};

    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) benchmark::DoNotOptimize(forward.run(batch, false));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double iterations = static_cast<double>(state.iterations());
    state.counters["tokens/s"] = double(tokens) * iterations / seconds;
    state.counters["model_GFLOP/s"] = forward_flops(model->spec(), tokens) * iterations / seconds / 1e9;
    state.counters["peak_fraction"] = forward_flops(model->spec(), tokens) * iterations / seconds / measured_peak(threads, state.range(2) != 0);
    state.SetLabel(kernels::cpu::matmul_isa());
}

// The same forward through the profiling backend: each kind of call's share of the time.
// args: tokens, threads, bf16 (1) or fp32 (0)
void BM_forward_profile(benchmark::State& state) {
    const int64_t tokens = state.range(0);
    const auto model = load_bench_model(state);
    auto backend = make_cpu_backend(static_cast<int>(state.range(1)));
    ProfiledBackend profiled(*backend);
    Forward forward(*model, profiled, {tokens, tokens});
    const std::vector<int32_t> ids = random_ids(*model, tokens);
    const CandidateParams greedy;
    const std::vector<ForwardSequence> batch = {{ids, {}, &greedy, {}, 0.0}};
    forward.run(batch, false);  // warm-up: the workspace's first use
    profiled.reset();
    for (auto _ : state) benchmark::DoNotOptimize(forward.run(batch, false));
    unmask_bench::report_profile(state, profiled);
}

// The same forward over host devices sharing the model (docs/parallel.md), the threads divided
// among them: what tensor parallelism costs (collectives, the split LM head) against one device
// with every thread. args: tokens, devices, threads (all of them), bf16 (1) or fp32 (0)
void BM_forward_devices(benchmark::State& state) {
    const int64_t tokens = state.range(0);
    const auto devices = static_cast<int>(state.range(1)), threads = static_cast<int>(state.range(2));
    LoadOptions options;
    options.precision = state.range(3) ? Precision::bf16 : Precision::fp32;
    options.checksum_mode = ChecksumMode::skip;
    const auto model = load_model(unmask_bench::synthetic_llada({}), options);
    std::vector<std::unique_ptr<Backend>> owned;
    std::vector<Backend*> backends;
    for (int d = 0; d < devices; ++d) {
        owned.push_back(make_cpu_backend(std::max(1, threads / devices)));
        backends.push_back(owned.back().get());
    }
    Forward forward(*model, backends, {tokens, tokens});
    const std::vector<int32_t> ids = random_ids(*model, tokens);
    const CandidateParams greedy;
    const std::vector<ForwardSequence> batch = {{ids, {}, &greedy, {}, 0.0}};
    for (auto _ : state) benchmark::DoNotOptimize(forward.run(batch, false));
    state.counters["tokens/s"] = benchmark::Counter(double(tokens), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_forward_devices)->ArgsProduct({{256}, {1, 2}, {2}, {1}})->ArgNames({"tokens", "devices", "threads", "bf16"})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_forward)->ArgsProduct({{32, 256, 1024}, {1, 2}, {1, 0}})->ArgNames({"tokens", "threads", "bf16"})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_forward_profile)->Args({256, 2, 1})->ArgNames({"tokens", "threads", "bf16"})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
