#include "engine/latency_histogram.hpp"

#include <algorithm>
#include <cmath>

namespace unmask {

void LatencyHistogram::record(double seconds) {
    ++count_;
    sum_ += seconds;
    for (size_t i = 0; i < bounds.size(); ++i)
        if (seconds <= bounds[i]) ++cumulative_[i];
    if (latest_.size() < window) {
        latest_.push_back(seconds);
    } else {
        latest_[next_] = seconds;
        next_ = (next_ + 1) % window;
    }
}

double LatencyHistogram::quantile(double q) const {
    if (latest_.empty()) return 0.0;
    std::vector<double> sorted = latest_;
    const auto rank = static_cast<size_t>(std::ceil(q * double(sorted.size())));
    const size_t index = std::clamp<size_t>(rank, 1, sorted.size()) - 1;
    std::nth_element(sorted.begin(), sorted.begin() + long(index), sorted.end());
    return sorted[index];
}

}  // namespace unmask
