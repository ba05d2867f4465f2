// Latency distributions for the engine's stats: cumulative buckets for Prometheus (every sample
// since start) and a window of the latest samples for percentiles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace unmask {

class LatencyHistogram {
public:
    // Upper bounds in seconds, as vLLM's request latency histograms.
    static constexpr std::array<double, 18> bounds = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75,
                                                      1.0,   2.5,  5.0,   7.5,  10.0,  20.0, 40.0, 80.0, 160.0};
    static constexpr size_t window = 10000;

    void record(double seconds);
    uint64_t count() const noexcept { return count_; }
    double sum() const noexcept { return sum_; }
    // Samples <= bounds[i] (cumulative).
    uint64_t cumulative(size_t i) const noexcept { return cumulative_[i]; }
    // The q-quantile (0..1) of the latest `window` samples, nearest rank; 0 without samples.
    double quantile(double q) const;

private:
    std::array<uint64_t, bounds.size()> cumulative_{};
    uint64_t count_ = 0;
    double sum_ = 0;
    std::vector<double> latest_;  // ring buffer
    size_t next_ = 0;
};

}  // namespace unmask
