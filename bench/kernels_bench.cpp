// The CPU kernels at the shapes one diffusion step of the ~110M-parameter LLaDA-shaped model uses
// (hidden 768, MLP 2048, vocab 16384; 256 or 1024 tokens), through the CPU backend with 1 and 2
// threads. Every figure is printed beside the FMA peak measured in the same run
// (peak_fraction = achieved FLOP/s / peak FLOP/s at that thread count).
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <vector>

#include "backend/backend.hpp"
#include "core/float_convert.hpp"
#include "cpu/matmul.hpp"
#include "cpu/quantize.hpp"
#include "peak.hpp"

using namespace unmask;

namespace {

struct RandomWeight {
    std::vector<uint16_t> bf16;
    std::vector<float> f32;
    std::vector<uint8_t> blocks;
    Weight weight;

    RandomWeight(int64_t rows, int64_t cols, DType dtype) {
        std::mt19937 rng(7);
        std::normal_distribution<float> normal(0.0f, 0.05f);
        weight.name = "bench";
        weight.dtype = weight.file_dtype = dtype;
        weight.shape = {rows, cols};
        weight.elements = static_cast<uint64_t>(rows * cols);
        if (dtype == DType::bf16) {
            bf16.resize(weight.elements);
            for (auto& v : bf16) v = float_to_bf16(normal(rng));
            weight.data = bf16.data();
        } else if (dtype == DType::q8_0 || dtype == DType::q4_0) {
            const auto type = element_type(dtype);
            std::vector<float> values(weight.elements);
            for (auto& v : values) v = normal(rng);
            blocks.resize(size_t(kernels::row_bytes(type, int64_t(weight.elements))));
            for (int64_t r = 0; r < rows; ++r)
                kernels::cpu::quantize_row(type, values.data() + r * cols, cols,
                                           blocks.data() + kernels::row_bytes(type, r * cols));
            weight.data = blocks.data();
        } else {
            f32.resize(weight.elements);
            for (auto& v : f32) v = normal(rng);
            weight.data = f32.data();
        }
    }
};

std::vector<float> random_activations(int64_t n) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = normal(rng);
    return x;
}

// Runs `body` for the benchmark's iterations and reports FLOP/s and its fraction of the peak.
template <typename Body>
void measure(benchmark::State& state, double flops_per_iteration, int threads, bool bf16_dot, const Body& body) {
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) body();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = flops_per_iteration * static_cast<double>(state.iterations()) / seconds;
    const double peak = measured_peak(threads, bf16_dot);
    state.counters["GFLOP/s"] = rate / 1e9;
    state.counters["peak_GFLOP/s"] = peak / 1e9;
    state.counters["peak_fraction"] = rate / peak;
    state.SetLabel(kernels::cpu::matmul_isa());
}

// args: tokens, n (out features), k (in features), threads, weights: fp32 (0), bf16 (1), Q8_0 (2)
// or Q4_0 (3); the last two take int8 products where the CPU has AVX512-VNNI, and their
// peak_fraction is of the bf16 dot-product peak (BM_int8_dot_peak_avx512 is twice that)
void BM_matmul(benchmark::State& state) {
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    const int threads = static_cast<int>(state.range(3));
    const DType types[] = {DType::f32, DType::bf16, DType::q8_0, DType::q4_0};
    const RandomWeight w(n, k, types[state.range(4)]);
    const auto x = random_activations(m * k);
    std::vector<float> out(static_cast<size_t>(m * n));
    auto backend = make_cpu_backend(threads);
    WorkspaceLimits limits;  // as a forward reserves it: room to round the input once (bf16 products)
    limits.tokens = m;
    limits.matmul_input = m * k;
    backend->reserve_workspace(limits);
    measure(state, 2.0 * double(m) * double(n) * double(k), threads, state.range(4) != 0, [&] {
        backend->matmul(x.data(), m, w.weight, nullptr, out.data());
        benchmark::DoNotOptimize(out.data());
    });
}

void matmul_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t tokens : {256, 1024})
        for (auto [n, k] : {std::pair<int64_t, int64_t>{768, 768}, {2048, 768}, {768, 2048}, {16384, 768}})
            for (int64_t threads : {1, 2})
                for (int64_t type : {1, 0, 2, 3}) b->Args({tokens, n, k, threads, type});
    b->ArgNames({"tokens", "n", "k", "threads", "weights"});
}

// LLaDA-8B's shapes (hidden 4096, MLP 12288, vocabulary 126464) over one block of 32 positions
// (a cached step) and a 256-position canvas, 2 threads: q/k/v/o, gate/up, down, and the LM head
// (bf16 only: its Q8_0 copy would take 2 GB of fp32 to make).
void real_model_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t tokens : {32, 256}) {
        for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {12288, 4096}, {4096, 12288}})
            for (int64_t type : {1, 2}) b->Args({tokens, n, k, 2, type});
        b->Args({tokens, 126464, 4096, 2, 1});
    }
    b->ArgNames({"tokens", "n", "k", "threads", "weights"});
}

// One MoE layer's expert products as LLaDA2.0-mini's (hidden 2048, 256 experts of 512, top 8),
// 64 of its experts on this device (as with 4 devices): each token's 8 slots spread evenly over
// them, gate and up from the slots' rows, bf16 weights, 2 threads. args: tokens, mode: 0 each
// expert's matmuls in turn (Backend's default), 1 the CPU backend's one loop over experts and
// columns together.
void BM_moe_experts(benchmark::State& state) {
    constexpr int64_t hidden = 2048, width = 512, experts = 64, top = 8;
    const int64_t tokens = state.range(0), slots = tokens * top;
    std::vector<RandomWeight> gate, up;
    std::vector<const Weight*> gate_list, up_list;
    gate.reserve(experts);
    up.reserve(experts);
    for (int64_t e = 0; e < experts; ++e) {
        gate.emplace_back(width, hidden, DType::bf16);
        up.emplace_back(width, hidden, DType::bf16);
    }
    for (int64_t e = 0; e < experts; ++e) {
        gate_list.push_back(&gate[size_t(e)].weight);
        up_list.push_back(&up[size_t(e)].weight);
    }
    std::vector<int32_t> offsets(experts + 1);
    for (int64_t e = 0; e <= experts; ++e) offsets[size_t(e)] = static_cast<int32_t>(slots * e / experts);
    const auto x = random_activations(slots * hidden);
    std::vector<float> gate_out(size_t(slots * width)), up_out(size_t(slots * width));
    auto backend = make_cpu_backend(2);
    WorkspaceLimits limits;
    limits.tokens = slots;
    limits.matmul_input = slots * hidden;
    backend->reserve_workspace(limits);
    const GroupedMatmulOutput outputs[] = {{gate_list, gate_out.data()}, {up_list, up_out.data()}};
    measure(state, 2.0 * 2.0 * double(slots) * double(width) * double(hidden), 2, true, [&] {
        if (state.range(1) == 0)
            backend->Backend::grouped_matmuls(x.data(), slots, offsets.data(), outputs);
        else
            backend->grouped_matmuls(x.data(), slots, offsets.data(), outputs);
        benchmark::DoNotOptimize(gate_out.data());
    });
}

// args: tokens, threads. 12 heads of 64, bidirectional over the whole sequence.
void BM_attention(benchmark::State& state) {
    const int64_t t = state.range(0), heads = 12, hd = 64;
    const int threads = static_cast<int>(state.range(1));
    const auto q = random_activations(t * heads * hd), k = random_activations(t * heads * hd),
               v = random_activations(t * heads * hd);
    std::vector<float> out(q.size());
    auto backend = make_cpu_backend(threads);
    backend->reserve_workspace({t, 0});
    const SequenceRows rows{0, t};
    const AttentionParams params{heads, heads, hd, 0};
    const double flops = 4.0 * double(t) * double(t) * double(hd) * double(heads);  // q kᵀ and p v
    measure(state, flops, threads, false, [&] {
        backend->attention(q.data(), k.data(), v.data(), std::span(&rows, 1), params, out.data());
        benchmark::DoNotOptimize(out.data());
    });
}

// The fused candidates step over LLaDA's vocabulary (126,464): the softmax statistics, top-2 and
// the sample of 32 rows. args: threads, mode: 0 greedy, 1 LLaDA's sampling (Gumbel noise at
// temperature 1), 2 Dream's (distribution temperature 0.2, top-p 0.95, Gumbel noise 1).
void BM_candidates(benchmark::State& state) {
    constexpr int64_t rows = 32, vocab = 126464;
    const int threads = static_cast<int>(state.range(0));
    const auto logits = random_activations(rows * vocab);
    CandidateParams params;
    params.noise_temperature = state.range(1) > 0 ? 1.0 : 0.0;
    if (state.range(1) == 2) {
        params.distribution_temperature = 0.2;
        params.top_p = 0.95;
    }
    const std::vector<const CandidateParams*> per_row(rows, &params);
    const std::vector<uint32_t> positions(rows, 7);
    std::vector<Candidate> out(rows);
    auto backend = make_cpu_backend(threads);
    WorkspaceLimits limits;
    limits.vocab = vocab;
    backend->reserve_workspace(limits);
    for (auto _ : state) {
        backend->candidates(logits.data(), rows, vocab, positions.data(), per_row, out.data());
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["rows/s"] = benchmark::Counter(double(rows), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_matmul)->Apply(matmul_shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_matmul)->Name("BM_matmul_llada8b")->Apply(real_model_shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_moe_experts)->ArgsProduct({{32, 256}, {0, 1}})->ArgNames({"tokens", "mode"})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_attention)->ArgsProduct({{256, 1024}, {1, 2}})->ArgNames({"tokens", "threads"})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_candidates)->ArgsProduct({{1, 2}, {0, 1, 2}})->ArgNames({"threads", "mode"})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
