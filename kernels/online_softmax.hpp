// Softmax statistics in one pass over a row of logits (online, as flash attention keeps its
// softmax), for the host and the CUDA kernels alike (C++17).
#pragma once

#include <cmath>

#include "host_device.hpp"

namespace unmask::kernels {

// Over the logits added so far: their maximum m, total = sum e^(v - m) and
// weighted = sum e^(v - m) (v - m), so that log sum e^v = m + log total and the negative entropy
// sum p log p = weighted / total - log total. Each term is a float exp, the sums float64 (the
// CPU's candidates add float terms in float: the two agree to about 1e-6). A larger logit
// rescales what came before; -inf adds nothing.
// Partial statistics of disjoint shares of a row combine exactly (up to rounding): rescale each
// to the row's maximum, then add their totals and their weighted sums.
struct OnlineSoftmax {
    double max = -INFINITY;
    double total = 0;
    double weighted = 0;

    UNMASK_HOST_DEVICE void add(float v) {
        if (!(v > -INFINITY)) return;  // -inf (and NaN) weighs nothing
        if (v > max) rescale(v);
        const float shifted = v - static_cast<float>(max);
        const float e = expf(shifted);
        total += e;
        weighted += double(e) * double(shifted);
    }

    // The same statistics relative to `new_max`, which is at least max.
    UNMASK_HOST_DEVICE void rescale(double new_max) {
        if (max == -INFINITY) {  // nothing added yet: no terms to rescale
            max = new_max;
            return;
        }
        const double shift = max - new_max;
        const double factor = exp(shift);
        weighted = factor * (weighted + total * shift);
        total *= factor;
        max = new_max;
    }
};

}  // namespace unmask::kernels
