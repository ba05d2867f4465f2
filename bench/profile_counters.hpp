// A forward's time by kind of backend call (lib/backend/profiled_backend.hpp) as benchmark
// counters: <kind>_share, each kind's fraction of the profiled time, and profiled_ms, that time per
// iteration (more than an unprofiled forward takes: the profiler waits for the device after every
// call, and CUDA graphs are off through it).
#pragma once

#include <benchmark/benchmark.h>

#include "backend/profiled_backend.hpp"

namespace unmask_bench {

inline void report_profile(benchmark::State& state, const unmask::ProfiledBackend& profiled) {
    const double total = profiled.total_seconds();
    for (const auto& [kind, time] : profiled.times())
        state.counters[kind + "_share"] = total > 0 ? time.seconds / total : 0;
    state.counters["profiled_ms"] = state.iterations() > 0 ? total * 1e3 / double(state.iterations()) : 0;
}

}  // namespace unmask_bench
