#include "cuda/candidates.hpp"

#include "core/philox.hpp"
#include "cuda/device_math.cuh"

namespace unmask::kernels::cuda {
namespace {

constexpr int threads = 256;

// A float's bits mapped so that unsigned order is numeric order (-inf lowest).
__device__ __forceinline__ uint32_t ordered_key(float v) {
    const uint32_t bits = __float_as_uint(v);
    return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}

// Logit i after the banned tokens and the distribution temperature (as the CPU computes it). A NaN
// logit counts as -inf: the block's reductions need a total order to agree on one answer.
__device__ __forceinline__ float scaled_logit(const float* logits, int64_t i, const CandidateRow& p,
                                              const int32_t* banned) {
    for (int32_t b = 0; b < p.banned_count; ++b)
        if (banned[p.banned_begin + b] == i) return -INFINITY;
    const float v = logits[i];
    if (isnan(v)) return -INFINITY;
    return p.distribution_temperature != 1.0 ? static_cast<float>(v / p.distribution_temperature) : v;
}

// The smallest ordered key x for which `holds(x)` is true, given that holds is monotone (false
// then true) and true at the largest key. Every thread of the block must call it.
template <typename Holds>
__device__ uint32_t smallest_key(Holds holds) {
    uint32_t lo = 0, hi = 0xFFFFFFFFu;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (holds(mid)) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

__global__ void candidates_kernel(const float* all_logits, int64_t vocab, const CandidateRow* params,
                                  const int32_t* banned, GumbelRange gumbel, Candidate* out) {
    const CandidateRow p = params[blockIdx.x];
    const float* logits = all_logits + blockIdx.x * vocab;
    auto z = [&](int64_t i) { return scaled_logit(logits, i, p, banned); };

    // The maximum (top-1: the first of equal maxima).
    Best top{-INFINITY, INT64_MAX};
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) top = better(top, Best{z(i), i});
    top = block_best(top);
    Candidate result{};
    if (!isfinite(top.value)) {  // every token banned or -inf: report token 0, as the CPU does (the same
                                 // broadcast value in every thread, so the whole block returns)
        if (threadIdx.x == 0) out[blockIdx.x] = result;
        return;
    }
    const double max = top.value;

    // Top-p, then top-k, over the unfiltered distribution, as thresholds on the scaled logits:
    // the nucleus keeps the values v with mass(z > v) <= top_p, top-k the k largest (and ties).
    float threshold = -INFINITY;
    auto smallest_value_from = [&](uint32_t key) {
        Best lowest{-INFINITY, INT64_MAX};  // the largest -v, i.e. the smallest v with key >= `key`
        for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
            const float v = z(i);
            if (ordered_key(v) >= key) lowest = better(lowest, Best{-double(v), i});
        }
        return static_cast<float>(-block_best(lowest).value);
    };
    if (p.top_p < 1.0) {
        double total = 0;
        for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) total += exp(double(z(i)) - max);
        total = block_sum(total);
        const uint32_t key = smallest_key([&](uint32_t x) {
            double mass = 0;
            for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
                const float v = z(i);
                if (ordered_key(v) > x) mass += exp(double(v) - max);
            }
            return block_sum(mass) / total <= p.top_p;
        });
        threshold = smallest_value_from(key);
    }
    if (p.top_k > 0 && p.top_k < vocab) {
        const uint32_t key = smallest_key([&](uint32_t x) {
            double count = 0;
            for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) count += ordered_key(z(i)) > x ? 1.0 : 0.0;
            return block_sum(count) < double(p.top_k);
        });
        threshold = fmaxf(threshold, smallest_value_from(key));
    }
    auto kept = [&](int64_t i) {
        const float v = z(i);
        return v < threshold ? -INFINITY : v;
    };

    // The runner-up, the softmax normaliser and the negative entropy, in float64.
    Best second{-INFINITY, INT64_MAX};
    double total = 0, weighted = 0;
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
        const float v = kept(i);
        if (i != top.index) second = better(second, Best{v, i});
        const double shifted = double(v) - max;
        const double e = exp(shifted);
        total += e;
        if (e > 0) weighted += e * shifted;
    }
    second = block_best(second);
    total = block_sum(total);
    weighted = block_sum(weighted);
    const double log_total = log(total);
    auto probability = [&](double v) { return static_cast<float>(exp(v - max - log_total)); };

    // Gumbel-max over the kept tokens within reach of the maximum (the others cannot win).
    int64_t token = top.index;
    if (p.noise_temperature > 0) {
        // Products and sums rounded one at a time, as the CPU's compiler does (nvcc would fuse
        // them); the device's log may still differ from glibc's in the last bit.
        const double reach = __dsub_rn(max, __dmul_rn(p.noise_temperature, gumbel.max - gumbel.min));
        Best sample{-INFINITY, INT64_MAX};
        for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
            const double v = kept(i);
            if (v < reach) continue;
            const double u = uniform_open01(p.seed, static_cast<uint32_t>(i), p.position, p.step,
                                            RandomStream::token_noise);
            sample = better(sample, Best{__dadd_rn(v, __dmul_rn(p.noise_temperature, -log(-log(u)))), i});
        }
        sample = block_best(sample);
        if (sample.index != INT64_MAX) token = sample.index;
    }
    if (threadIdx.x != 0) return;
    result.top1_token = static_cast<int32_t>(top.index);
    result.top1_probability = probability(max);
    result.top2_probability = isfinite(second.value) ? probability(second.value) : 0.0f;
    result.negative_entropy = static_cast<float>(weighted / total - log_total);
    result.token = static_cast<int32_t>(token);
    result.probability = probability(kept(token));
    const int32_t excluded = p.probability_excluded_token;
    if (excluded >= 0 && excluded < vocab) {
        const double excluded_mass = exp(double(kept(excluded)) - max - log_total);
        result.probability = token == excluded || excluded_mass >= 1.0
                                 ? 0.0f
                                 : static_cast<float>(double(result.probability) / (1.0 - excluded_mass));
    }
    out[blockIdx.x] = result;
}

}  // namespace

cudaError_t candidates(const float* logits, int64_t rows, int64_t vocab, const CandidateRow* params,
                       const int32_t* banned, GumbelRange gumbel, Candidate* out, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (rows > INT32_MAX || vocab <= 0) return cudaErrorInvalidValue;
    candidates_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(logits, vocab, params, banned, gumbel, out);
    return cudaGetLastError();
}

}  // namespace unmask::kernels::cuda
