// How far a result is from its reference, for tests comparing kernels, backends and forwards.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

// max |actual - expected| / max |expected| over n values: the error relative to the reference's
// scale (its finite values'). Infinite where one holds a NaN and the other does not (std::max
// would pass over it), where one is infinite and the other not, or where the reference is all
// zeros and the result is not.
template <typename A, typename E>
double relative_error(const A* actual, const E* expected, size_t n) {
    const double inf = std::numeric_limits<double>::infinity();
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; ++i) {
        const double a = double(actual[i]), e = double(expected[i]);
        if (std::isnan(a) || std::isnan(e)) {
            if (std::isnan(a) != std::isnan(e)) return inf;
            continue;
        }
        worst = std::max(worst, a == e ? 0.0 : std::abs(a - e));  // equal infinities: no error
        if (std::isfinite(e)) scale = std::max(scale, std::abs(e));  // an infinity would hide the rest
    }
    if (worst == 0) return 0;
    return scale > 0 && worst < inf ? worst / scale : inf;
}

template <typename A, typename E>
double relative_error(const std::vector<A>& actual, const std::vector<E>& expected) {
    REQUIRE(actual.size() == expected.size());
    return relative_error(actual.data(), expected.data(), expected.size());
}
