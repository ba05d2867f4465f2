// The machine's measured floating-point peak: a loop that does nothing but independent fused
// multiply-adds. Matmul and forward-pass figures are reported against this number, so a GFLOP/s
// figure is never read alone. One benchmark per instruction set the CPU supports.
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include "cpu/matmul.hpp"
#include "peak.hpp"

namespace {

// 12 independent accumulators hide the FMA latency (4 cycles) on two FMA ports.
constexpr int accumulators = 12;
constexpr int64_t iterations_per_call = 1 << 14;

// noinline/noclone: the inputs must stay unknown to the compiler, or it folds the loop away.
__attribute__((target("avx2,fma"), noinline, noclone)) float fma_loop_avx2(int64_t iterations, float x, float y) {
    __m256 acc[accumulators];
    for (int i = 0; i < accumulators; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
    const __m256 a = _mm256_set1_ps(x), b = _mm256_set1_ps(y);
    for (int64_t n = 0; n < iterations; ++n)
        for (int i = 0; i < accumulators; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    __m256 sum = acc[0];
    for (int i = 1; i < accumulators; ++i) sum = _mm256_add_ps(sum, acc[i]);
    return _mm256_cvtss_f32(sum);
}

__attribute__((target("avx512f"), noinline, noclone)) float fma_loop_avx512(int64_t iterations, float x, float y) {
    __m512 acc[accumulators];
    for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
    const __m512 a = _mm512_set1_ps(x), b = _mm512_set1_ps(y);
    for (int64_t n = 0; n < iterations; ++n)
        for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __m512 sum = acc[0];
    for (int i = 1; i < accumulators; ++i) sum = _mm512_add_ps(sum, acc[i]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, sum);
    return lanes[0] + lanes[15];
}

// AVX512-BF16's dot product: each 32-bit lane adds the products of two bf16 pairs, 64 FLOP per
// instruction (what a bf16 matmul kernel could reach, against the fp32 FMA's 32).
__attribute__((target("avx512f,avx512bf16"), noinline, noclone)) float bf16_dot_loop_avx512(int64_t iterations, float x,
                                                                                             float y) {
    __m512 acc[accumulators];
    for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
    const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(x), _mm512_set1_ps(x));
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(y), _mm512_set1_ps(y));
    for (int64_t n = 0; n < iterations; ++n)
        for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    __m512 sum = acc[0];
    for (int i = 1; i < accumulators; ++i) sum = _mm512_add_ps(sum, acc[i]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, sum);
    return lanes[0] + lanes[15];
}

// AVX512-VNNI's dot product: each 32-bit lane adds the products of four u8 x s8 pairs, 128
// integer "FLOP" per instruction (what the int8 path for Q8_0 weights could reach).
__attribute__((target("avx512f,avx512vnni"), noinline, noclone)) float int8_dot_loop_avx512(int64_t iterations, float x,
                                                                                             float y) {
    __m512i acc[accumulators];
    for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_set1_epi32(i);
    const __m512i a = _mm512_set1_epi32(static_cast<int>(x * 1e6f)), b = _mm512_set1_epi32(static_cast<int>(y * 1e9f));
    for (int64_t n = 0; n < iterations; ++n)
        for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
    __m512i sum = acc[0];
    for (int i = 1; i < accumulators; ++i) sum = _mm512_add_epi32(sum, acc[i]);
    alignas(64) int32_t lanes[16];
    _mm512_store_si512(lanes, sum);
    return static_cast<float>(lanes[0] + lanes[15]);
}

// Lanes: the multiply-adds one instruction does (each two FLOP).
template <float (*Loop)(int64_t, float, float), int Lanes>
void run_fma_peak(benchmark::State& state, bool supported) {
    if (!supported) {
        state.SkipWithError("instruction set not supported by this CPU");
        return;
    }
    float x = 0.999999f, y = 1e-7f;
    int64_t iterations = iterations_per_call;
    benchmark::DoNotOptimize(x);
    benchmark::DoNotOptimize(y);
    benchmark::DoNotOptimize(iterations);
    for (auto _ : state) {
        benchmark::DoNotOptimize(x);  // x may have changed: the call cannot be hoisted out of the loop
        benchmark::DoNotOptimize(Loop(iterations, x, y));
    }
    const double flops_per_call = 2.0 * Lanes * accumulators * static_cast<double>(iterations_per_call);
    state.counters["FLOP/s"] = benchmark::Counter(flops_per_call * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}

void BM_fma_peak_avx2(benchmark::State& state) { run_fma_peak<fma_loop_avx2, 8>(state, __builtin_cpu_supports("fma")); }
void BM_fma_peak_avx512(benchmark::State& state) { run_fma_peak<fma_loop_avx512, 16>(state, __builtin_cpu_supports("avx512f")); }
void BM_bf16_dot_peak_avx512(benchmark::State& state) {
    run_fma_peak<bf16_dot_loop_avx512, 32>(state, __builtin_cpu_supports("avx512bf16"));
}
void BM_int8_dot_peak_avx512(benchmark::State& state) {
    run_fma_peak<int8_dot_loop_avx512, 64>(state, __builtin_cpu_supports("avx512vnni"));
}

}  // namespace

double measured_peak(int threads, bool bf16_dot) {
    static std::mutex mutex;
    static std::map<std::pair<int, bool>, double> cache;
    std::lock_guard lock(mutex);
    if (auto it = cache.find({threads, bf16_dot}); it != cache.end()) return it->second;
    const std::string isa = unmask::kernels::cpu::matmul_isa();
    enum class Loop { avx2, avx512, avx512_bf16 } loop = Loop::avx2;
    if (isa.rfind("avx512", 0) == 0) loop = Loop::avx512;
    if (isa == "avx512bf16" && bf16_dot) loop = Loop::avx512_bf16;
    const int lanes = loop == Loop::avx2 ? 8 : loop == Loop::avx512 ? 16 : 32;
    constexpr int64_t calls = 1000;  // ~0.25 s per thread
    const double flops_per_thread = 2.0 * lanes * accumulators * double(iterations_per_call) * double(calls);
    // Each thread times itself and the rates add up, so a late-starting thread does not count
    // as idle time.
    std::vector<double> rates(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            float x = 0.999999f, y = 1e-7f;
            const auto start = std::chrono::steady_clock::now();
            for (int64_t i = 0; i < calls; ++i) {
                benchmark::DoNotOptimize(x);
                benchmark::DoNotOptimize(loop == Loop::avx512_bf16 ? bf16_dot_loop_avx512(iterations_per_call, x, y)
                                         : loop == Loop::avx512 ? fma_loop_avx512(iterations_per_call, x, y)
                                                                : fma_loop_avx2(iterations_per_call, x, y));
            }
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            rates[static_cast<size_t>(t)] = flops_per_thread / seconds;
        });
    for (auto& w : workers) w.join();
    double total = 0;
    for (double r : rates) total += r;
    return cache[{threads, bf16_dot}] = total;
}

BENCHMARK(BM_fma_peak_avx2)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_fma_peak_avx512)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_bf16_dot_peak_avx512)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_int8_dot_peak_avx512)->Threads(1)->Threads(2)->UseRealTime();
