// Loading a ~110M-parameter LLaDA-shaped bf16 model: time, and what it costs in resident memory.
// Kept in the file's dtype, the weights are used from the mmap: loading reads only the headers and
// neither anonymous nor file-backed resident memory grows (pages come in as a forward pass reads
// them, from the page cache, shared, never copied). Converting to fp32 reads every page and
// allocates the converted copy. Counters: anon_growth_MiB and file_growth_MiB are the growth of
// anonymous and file-backed resident memory across one load.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "synthetic_model.hpp"
#include "unmask.h"

namespace {

struct Resident {
    double anon_mib = 0, file_mib = 0;
};

Resident resident() {
    std::ifstream status("/proc/self/status");
    Resident r;
    std::string key;
    double kib = 0;
    std::string unit;
    while (status >> key) {
        if (key == "RssAnon:" && status >> kib >> unit) r.anon_mib = kib / 1024;
        else if (key == "RssFile:" && status >> kib >> unit) r.file_mib = kib / 1024;
        else status.ignore(1 << 12, '\n');
    }
    return r;
}

void load_model(benchmark::State& state, int32_t precision) {
    const auto dir = unmask_bench::synthetic_llada({});
    unmask_model_params params;
    unmask_model_params_init(&params);
    params.precision = precision;
    params.checksum_mode = UNMASK_CHECKSUM_SKIP;
    Resident before{}, after{};
    double weight_mib = 0, parameters = 0;
    for (auto _ : state) {
        before = resident();
        unmask_model* model = nullptr;
        if (unmask_model_load(dir.c_str(), &params, &model) != UNMASK_OK) {
            state.SkipWithError(unmask_last_error());
            return;
        }
        state.PauseTiming();
        after = resident();
        unmask_model_description info{};
        info.struct_size = sizeof info;
        unmask_model_info(model, &info);
        weight_mib = static_cast<double>(info.weight_bytes) / (1 << 20);
        parameters = static_cast<double>(info.parameters_total);
        unmask_model_free(model);
        state.ResumeTiming();
    }
    state.counters["parameters_M"] = parameters / 1e6;
    state.counters["weights_MiB"] = weight_mib;
    state.counters["anon_growth_MiB"] = after.anon_mib - before.anon_mib;
    state.counters["file_growth_MiB"] = after.file_mib - before.file_mib;
}

void BM_model_load_bf16_zero_copy(benchmark::State& state) { load_model(state, UNMASK_PRECISION_AUTO); }
void BM_model_load_bf16_to_fp32(benchmark::State& state) { load_model(state, UNMASK_PRECISION_FP32); }

}  // namespace

BENCHMARK(BM_model_load_bf16_zero_copy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_model_load_bf16_to_fp32)->Unit(benchmark::kMillisecond)->UseRealTime();
