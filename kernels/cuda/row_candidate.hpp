// One row of logits -> its candidate, as the candidates kernel computes it (the same as
// kernels/cpu/candidates.hpp: filters, softmax statistics, float64 Gumbel-max with the same Philox
// stream), written over a `Block` of threads that share the row: the kernel passes its thread
// block; the host passes threads of its own (tests/unit), so the kernel's logic, the merging of
// the threads' shares included, is checked against the CPU without a GPU.
//
// A Block gives: thread() and threads() (the calling thread's share of the row is thread(),
// thread() + threads(), ...), and sum(double) and best(Best) over the block, returned to every
// thread (every thread must call them, in the same order).
#pragma once

#include <cmath>
#include <cstdint>

#include <cuda_runtime_api.h>  // float4

#include "candidate.hpp"
#include "core/philox.hpp"
#include "cuda/filter_threshold.hpp"
#include "host_device.hpp"
#include "online_softmax.hpp"

namespace unmask::kernels::cuda {

using kernels::Candidate;

// One row's kernels::CandidateParams, flattened for the device.
struct CandidateRow {
    double distribution_temperature = 1.0;
    double top_p = 1.0;
    double noise_temperature = 0.0;
    uint64_t seed = 0;
    int64_t top_k = 0;
    uint32_t step = 0;
    uint32_t position = 0;
    int32_t banned_begin = 0;  // into the banned-token array
    int32_t banned_count = 0;
    int32_t probability_excluded_token = -1;
};

// The extreme Gumbel values the 53-bit uniform can give (kernels/cpu/candidates.cpp's reach).
struct GumbelRange {
    double max = 0, min = 0;
};

// a * b rounded on its own, never fused with an addition after it into an fma (as nvcc would):
// the CPU's compiler rounds the two apart (ISO C++, no contraction).
UNMASK_HOST_DEVICE inline double multiply_rounded(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

// Logit i (of value v) after the banned tokens and the distribution temperature (as the CPU
// computes it). A NaN logit counts as -inf: the block's reductions need a total order to agree on
// one answer.
UNMASK_HOST_DEVICE inline float scaled_logit(float v, int64_t i, const CandidateRow& p, const int32_t* banned) {
    for (int32_t b = 0; b < p.banned_count; ++b)
        if (banned[p.banned_begin + b] == i) return -INFINITY;
    if (std::isnan(v)) return -INFINITY;
    return p.distribution_temperature != 1.0 ? static_cast<float>(v / p.distribution_temperature) : v;
}

// Calls visit(i, logits[i]) for the calling thread's share of the row's vocab logits. Where every
// row of the batch starts on 16 bytes (vocab a multiple of 4, the first row on 16 bytes) the row
// is read in 16-byte loads of four logits, `batch` of them issued before any is used, so that each
// thread keeps several loads in flight; otherwise one logit at a time. Either way a row's share per
// thread is the same in every row and every batch, so its sums are too.
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <typename Block, typename Visit>
UNMASK_HOST_DEVICE void for_each_logit(const Block& block, const float* logits, int64_t vocab, Visit&& visit) {
    constexpr int batch = 4;
    const int64_t thread = block.thread(), threads = block.threads();
    if (reinterpret_cast<uintptr_t>(logits) % 16 != 0 || vocab % 4 != 0) {
        for (int64_t i = thread; i < vocab; i += threads) visit(i, logits[i]);
        return;
    }
    const int64_t quads = vocab / 4;
    const auto* row = reinterpret_cast<const float4*>(logits);
    auto visit4 = [&](int64_t q, const float4& v) {
        visit(4 * q, v.x);
        visit(4 * q + 1, v.y);
        visit(4 * q + 2, v.z);
        visit(4 * q + 3, v.w);
    };
    int64_t q = thread;
    for (; q + (batch - 1) * threads < quads; q += batch * threads) {
        float4 v[batch];  // constant trip counts: unrolled, the loads in registers
        for (int b = 0; b < batch; ++b) v[b] = row[q + b * threads];
        for (int b = 0; b < batch; ++b) visit4(q + b * threads, v[b]);
    }
    for (; q < quads; q += threads) visit4(q, row[q]);
}

// The candidate of `logits` (vocab of them) under `p`, written to `out` by thread 0. `banned`:
// the banned-token array p.banned_begin indexes.
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <typename Block>
UNMASK_HOST_DEVICE void row_candidate(const Block& block, const float* logits, int64_t vocab, const CandidateRow& p,
                                      const int32_t* banned, GumbelRange gumbel, Candidate* out) {
    auto z = [&](int64_t i) { return scaled_logit(logits[i], i, p, banned); };

    // Top-p, then top-k, over the unfiltered distribution: thresholds relative to the maximum,
    // found first.
    float threshold = -INFINITY;
    if (p.top_p < 1.0 || (p.top_k > 0 && p.top_k < vocab)) {
        Best peak{-INFINITY, INT64_MAX};
        for_each_logit(block, logits, vocab,
                       [&](int64_t i, float v) { peak = better(peak, Best{scaled_logit(v, i, p, banned), i}); });
        peak = block.best(peak);
        if (std::isfinite(peak.value))  // the same in every thread
            threshold = filter_threshold(block, z, vocab, p.top_p, p.top_k, peak.value);
    }
    auto kept_value = [&](int64_t i, float raw) {
        const float v = scaled_logit(raw, i, p, banned);
        return v < threshold ? -INFINITY : v;
    };
    auto kept = [&](int64_t i) { return kept_value(i, logits[i]); };

    // One pass over the kept logits: each thread's top-1 (the first of equal maxima) and runner-up,
    // and its softmax statistics, online; then the block's.
    Best top{-INFINITY, INT64_MAX}, runner{-INFINITY, INT64_MAX};
    OnlineSoftmax stats;
    for_each_logit(block, logits, vocab, [&](int64_t i, float raw) {
        const float v = kept_value(i, raw);
        const Best b{v, i};
        if (better(top, b).index == i) {
            runner = better(runner, top);
            top = b;
        } else {
            runner = better(runner, b);
        }
        stats.add(v);
    });
    const Best first = block.best(top);
    Candidate result{};
    if (!std::isfinite(first.value)) {  // every token banned or -inf: report token 0, as the CPU does
                                        // (the same value in every thread, so the whole block returns)
        if (block.thread() == 0) *out = result;
        return;
    }
    // The runner-up: the best of every thread's best but the winner's, and the winner's runner-up.
    const Best second = block.best(top.index == first.index ? runner : top);
    const double max = first.value;
    stats.rescale(max);
    const double total = block.sum(stats.total), weighted = block.sum(stats.weighted);
    const double log_total = std::log(total);
    auto probability = [&](double v) { return static_cast<float>(std::exp(v - max - log_total)); };

    // Gumbel-max over the kept tokens within reach of the maximum (the others cannot win). The
    // device's log may differ from glibc's in the last bit.
    int64_t token = first.index;
    if (p.noise_temperature > 0) {
        const double reach = max - multiply_rounded(p.noise_temperature, gumbel.max - gumbel.min);
        Best sample{-INFINITY, INT64_MAX};
        for (int64_t i = block.thread(); i < vocab; i += block.threads()) {
            const double v = kept(i);
            if (v < reach) continue;
            const double u = uniform_open01(p.seed, static_cast<uint32_t>(i), p.position, p.step,
                                            RandomStream::token_noise);
            const double noise = -std::log(-std::log(u));
            sample = better(sample, Best{v + multiply_rounded(p.noise_temperature, noise), i});
        }
        sample = block.best(sample);
        if (sample.index != INT64_MAX) token = sample.index;
    }
    if (block.thread() != 0) return;
    result.top1_token = static_cast<int32_t>(first.index);
    result.top1_probability = probability(max);
    result.top2_probability = std::isfinite(second.value) ? probability(second.value) : 0.0f;
    result.negative_entropy = static_cast<float>(weighted / total - log_total);
    result.token = static_cast<int32_t>(token);
    result.probability = probability(kept(token));
    const int32_t excluded = p.probability_excluded_token;
    if (excluded >= 0 && excluded < vocab) {
        const double excluded_mass = std::exp(double(kept(excluded)) - max - log_total);
        result.probability = token == excluded || excluded_mass >= 1.0
                                 ? 0.0f
                                 : static_cast<float>(double(result.probability) / (1.0 - excluded_mass));
    }
    *out = result;
}

}  // namespace unmask::kernels::cuda
