// Random inputs for tests that compare kernels and backends.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

// n floats drawn from a normal distribution of mean 0 and standard deviation `scale`.
inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}
