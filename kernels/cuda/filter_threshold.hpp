// The top-p then top-k threshold of the candidates kernel, written once for a thread block and
// for one host thread (`Block`), so that the host checks it against the CPU's sort-based
// filter_threshold: the same threshold from bisections over the ordered float keys, without
// sorting or storing the row.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "host_device.hpp"

namespace unmask::kernels::cuda {

// A value and the index it came from; the larger value wins, ties go to the lower index.
struct Best {
    double value;
    int64_t index;
};

UNMASK_HOST_DEVICE inline Best better(Best a, Best b) {
    return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
}

// A float's bits mapped so that unsigned order is numeric order (-inf lowest).
UNMASK_HOST_DEVICE inline uint32_t ordered_key(float v) {
#ifdef __CUDA_ARCH__
    const uint32_t bits = __float_as_uint(v);
#else
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
#endif
    return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}

// The smallest ordered key x for which `holds(x)` is true, given that holds is monotone (false
// then true) and true at the largest key. Every thread of the block must call it.
template <typename Holds>
UNMASK_HOST_DEVICE uint32_t smallest_key(Holds holds) {
    uint32_t lo = 0, hi = 0xFFFFFFFFu;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (holds(mid)) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// The smallest value Dream's top-p then top-k keep (as kernels/cpu filter_threshold) among the
// values z(0..vocab), whose maximum is `max` (finite): the nucleus keeps the values v with
// mass(z > v) <= top_p of the total (1: off), top-k the k largest and their ties (0: off).
// `block` gives the calling thread its share of 0..vocab (thread(), threads()) and block-wide
// sum(double) and best(Best), each returned to every thread. Every thread of the block must call
// it; each gets the same threshold.
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <typename Block, typename Logit>
UNMASK_HOST_DEVICE float filter_threshold(const Block& block, Logit z, int64_t vocab, double top_p, int64_t top_k,
                                          double max) {
    float threshold = -INFINITY;
    auto smallest_value_from = [&](uint32_t key) {
        Best lowest{-INFINITY, INT64_MAX};  // the largest -v, i.e. the smallest v with key >= `key`
        for (int64_t i = block.thread(); i < vocab; i += block.threads()) {
            const float v = z(i);
            if (ordered_key(v) >= key) lowest = better(lowest, Best{-double(v), i});
        }
        return static_cast<float>(-block.best(lowest).value);
    };
    if (top_p < 1.0) {
        double total = 0;
        for (int64_t i = block.thread(); i < vocab; i += block.threads()) total += std::exp(double(z(i)) - max);
        total = block.sum(total);
        const uint32_t key = smallest_key([&](uint32_t x) {
            double mass = 0;
            for (int64_t i = block.thread(); i < vocab; i += block.threads()) {
                const float v = z(i);
                if (ordered_key(v) > x) mass += std::exp(double(v) - max);
            }
            return block.sum(mass) / total <= top_p;
        });
        threshold = smallest_value_from(key);
    }
    if (top_k > 0 && top_k < vocab) {
        const uint32_t key = smallest_key([&](uint32_t x) {
            double count = 0;
            for (int64_t i = block.thread(); i < vocab; i += block.threads()) count += ordered_key(z(i)) > x ? 1.0 : 0.0;
            return block.sum(count) < double(top_k);
        });
        const float kth = smallest_value_from(key);
        threshold = threshold > kth ? threshold : kth;
    }
    return threshold;
}

}  // namespace unmask::kernels::cuda
