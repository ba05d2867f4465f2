// The CUDA backend's figures (built with UNMASK_CUDA; skipped without a device):
// - BM_cuda_forward: one forward over `tokens` positions of a model with LLaDA-8B's layer shape
//   (hidden 4096, 32 heads, MLP 12288, vocab 126464) but 4 of its 32 layers, random bf16 weights,
//   candidates at every position; model FLOPs per second against the H200's 790 TFLOP/s (dense bf16).
// - BM_cuda_generation_step: one denoising step with the dual cache at batch 1 on the whole
//   LLaDA-8B shape (32 layers, random bf16): the current block of 32 positions fed, every other
//   position read from the K/V cache, candidates for the block; its time against the
//   weight-streaming bound (the bytes of every weight but the embedding table, which is only
//   gathered from, over 4.3 TB/s, the achievable figure; the fp32 K/V cache adds about
//   0.5 GB of reads per step, 3.5% of the weights, which the bound leaves out).
// - BM_cuda_candidates: logits -> candidates over rows x 126464 fp32 logits; bytes read per second
//   against the H200's 4.3 TB/s.
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_runtime_info.hpp"
#include "format/dtype.hpp"
#include "model/forward.hpp"
#include "model/kv_cache.hpp"
#include "model/model.hpp"
#include "synthetic_model.hpp"

using namespace unmask;

namespace {

constexpr double h200_bf16_flops = 790e12;
constexpr double h200_bytes_per_second = 4.3e12;

bool have_device(benchmark::State& state) {
    if (cuda::device_count() > 0) return true;
    state.SkipWithError("no CUDA device");
    return false;
}

// A model with LLaDA-8B's shape but `layers` layers (random bf16 weights) on GPU 0, a backend
// for it, and `tokens` random token ids.
struct DeviceModel {
    explicit DeviceModel(int64_t layers, int64_t tokens) : shape{4096, layers, 32, 12288, 126464} {
        LoadOptions options;
        options.checksum_mode = ChecksumMode::skip;
        model = load_model(unmask_bench::synthetic_llada(shape), options);
        backend = make_cuda_backend(CudaWeights::upload(*model, 0, &ledger));
        std::mt19937 rng(5);
        ids.resize(static_cast<size_t>(tokens));
        for (auto& id : ids) id = static_cast<int32_t>(rng() % uint32_t(shape.vocab));
    }
    unmask_bench::LladaShape shape;
    MemoryLedger ledger{"cuda", UINT64_MAX};
    std::unique_ptr<Model> model;
    std::unique_ptr<Backend> backend;
    std::vector<int32_t> ids;
};

// One DeviceModel per (layers, tokens) for the whole run: Google Benchmark calls a benchmark
// several times, and uploading 15 GB each time would spend the device's time on copies. Never
// freed (a CUDA backend must not outlive the runtime at exit).
const DeviceModel& device_model(int64_t layers, int64_t tokens) {
    static auto* models = new std::map<std::pair<int64_t, int64_t>, std::unique_ptr<DeviceModel>>();
    std::unique_ptr<DeviceModel>& model = (*models)[{layers, tokens}];
    if (model == nullptr) model = std::make_unique<DeviceModel>(layers, tokens);
    return *model;
}

// args: tokens
void BM_cuda_forward(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t tokens = state.range(0);
    const DeviceModel& device = device_model(4, tokens);
    const unmask_bench::LladaShape& shape = device.shape;
    const std::vector<int32_t>& ids = device.ids;
    Forward forward(*device.model, *device.backend, {tokens, tokens});
    const CandidateParams greedy;
    const std::vector<ForwardSequence> batch = {{ids, {}, &greedy, {}, 0.0}};
    forward.run(batch, false);  // warm-up: cuBLASLt plans, staging buffers

    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) benchmark::DoNotOptimize(forward.run(batch, false));  // ends with a synchronising copy
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double d = double(shape.hidden), m = double(shape.mlp), t = double(tokens);
    const double flops = double(shape.layers) * (2.0 * t * (4.0 * d * d + 3.0 * d * m) + 4.0 * t * t * d) +
                         2.0 * t * d * double(shape.vocab);
    const double iterations = double(state.iterations());
    state.counters["tokens/s"] = t * iterations / seconds;
    state.counters["model_TFLOP/s"] = flops * iterations / seconds / 1e12;
    state.counters["peak_fraction"] = flops * iterations / seconds / h200_bf16_flops;
}

// args: layers, canvas, block
void BM_cuda_generation_step(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t layers = state.range(0), canvas = state.range(1), block = state.range(2);
    const DeviceModel& device = device_model(layers, canvas);
    const Model& model = *device.model;
    const std::vector<int32_t>& ids = device.ids;
    Forward forward(model, *device.backend, {canvas, canvas});
    KVCache cache(*device.backend, nullptr, model.spec(), canvas);
    const CandidateParams greedy;
    // The block's first step: the whole canvas fed, filling the cache.
    const std::vector<int32_t> first = {0};
    ForwardSequence refresh{ids, first, &greedy, {}, 0.0};
    refresh.cache = &cache;
    forward.run(std::span(&refresh, 1), false);
    // The steps after it: one block in the generated half fed, candidates at its positions.
    const int64_t begin = canvas / 2;
    std::vector<int32_t> outputs(static_cast<size_t>(block));
    for (int64_t i = 0; i < block; ++i) outputs[size_t(i)] = static_cast<int32_t>(begin + i);
    ForwardSequence step{ids, outputs, &greedy, {}, 0.0};
    step.cache = &cache;
    step.feed_begin = begin;
    step.feed_end = begin + block;
    forward.run(std::span(&step, 1), false);  // warm-up: cuBLASLt plans for these shapes

    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) benchmark::DoNotOptimize(forward.run(std::span(&step, 1), false));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                           double(state.iterations());
    double streamed = 0;
    for (const Weight& w : model.weights())
        if (w.role != Role::embedding) streamed += double(w.elements * dtype_size(w.dtype));
    const double bound = streamed / h200_bytes_per_second;
    state.counters["step_ms"] = seconds * 1e3;
    state.counters["bound_ms"] = bound * 1e3;
    state.counters["bound_ratio"] = seconds / bound;
}

// args: rows
void BM_cuda_candidates(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t rows = state.range(0), vocab = 126464;
    MemoryLedger ledger("cuda", UINT64_MAX);
    auto backend = make_cuda_backend(CudaWeights::upload(std::span<const Weight>{}, 0, &ledger));
    std::mt19937 rng(6);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(size_t(rows * vocab));
    for (float& v : logits) v = normal(rng);
    DeviceBuffer device_logits = backend->allocate(logits.size() * sizeof(float));
    backend->copy_to_device(device_logits, logits.data(), logits.size() * sizeof(float));
    CandidateParams sampling;
    sampling.noise_temperature = 1.0;
    std::vector<uint32_t> positions(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) positions[size_t(r)] = uint32_t(r);
    const std::vector<const CandidateParams*> params(size_t(rows), &sampling);
    std::vector<Candidate> out(static_cast<size_t>(rows));

    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) backend->candidates(device_logits.floats(), rows, vocab, positions.data(), params, out.data());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double bytes = double(rows * vocab) * sizeof(float) * double(state.iterations());
    state.counters["GB/s"] = bytes / seconds / 1e9;
    state.counters["bandwidth_fraction"] = bytes / seconds / h200_bytes_per_second;
}

}  // namespace

BENCHMARK(BM_cuda_forward)->Arg(512)->ArgNames({"tokens"})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_cuda_generation_step)
    ->Args({32, 512, 32})
    ->ArgNames({"layers", "canvas", "block"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_cuda_candidates)->Arg(512)->ArgNames({"rows"})->Unit(benchmark::kMillisecond)->UseRealTime();
