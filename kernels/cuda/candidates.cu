#include "cuda/candidates.hpp"

#include "core/philox.hpp"
#include "cuda/device_math.cuh"
#include "online_softmax.hpp"

namespace unmask::kernels::cuda {
namespace {

constexpr int threads = 256;

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

// The calling thread's block, for filter_threshold.
struct ThreadBlock {
    __device__ int64_t thread() const { return threadIdx.x; }
    __device__ int64_t threads() const { return blockDim.x; }
    __device__ double sum(double v) const { return block_sum(v); }
    __device__ Best best(Best v) const { return block_best(v); }
};

__global__ void candidates_kernel(const float* all_logits, int64_t vocab, const CandidateRow* params,
                                  const int32_t* banned, GumbelRange gumbel, Candidate* out) {
    const CandidateRow p = params[blockIdx.x];
    const float* logits = all_logits + blockIdx.x * vocab;
    auto z = [&](int64_t i) { return scaled_logit(logits, i, p, banned); };

    // Top-p, then top-k, over the unfiltered distribution: thresholds relative to the maximum,
    // found first.
    float threshold = -INFINITY;
    if (p.top_p < 1.0 || (p.top_k > 0 && p.top_k < vocab)) {
        Best peak{-INFINITY, INT64_MAX};
        for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) peak = better(peak, Best{z(i), i});
        peak = block_best(peak);
        if (isfinite(peak.value))  // the same in every thread
            threshold = filter_threshold(ThreadBlock{}, z, vocab, p.top_p, p.top_k, peak.value);
    }
    auto kept = [&](int64_t i) {
        const float v = z(i);
        return v < threshold ? -INFINITY : v;
    };

    // One pass over the kept logits: each thread's top-1 (the first of equal maxima) and runner-up,
    // and its softmax statistics, online; then the block's.
    Best top{-INFINITY, INT64_MAX}, runner{-INFINITY, INT64_MAX};
    OnlineSoftmax stats;
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
        const float v = kept(i);
        const Best b{v, i};
        if (better(top, b).index == i) {
            runner = better(runner, top);
            top = b;
        } else {
            runner = better(runner, b);
        }
        stats.add(v);
    }
    const Best first = block_best(top);
    Candidate result{};
    if (!isfinite(first.value)) {  // every token banned or -inf: report token 0, as the CPU does (the same
                                   // broadcast value in every thread, so the whole block returns)
        if (threadIdx.x == 0) out[blockIdx.x] = result;
        return;
    }
    // The runner-up: the best of every thread's best but the winner's, and the winner's runner-up.
    const Best second = block_best(top.index == first.index ? runner : top);
    const double max = first.value;
    stats.rescale(max);
    const double total = block_sum(stats.total), weighted = block_sum(stats.weighted);
    const double log_total = log(total);
    auto probability = [&](double v) { return static_cast<float>(exp(v - max - log_total)); };

    // Gumbel-max over the kept tokens within reach of the maximum (the others cannot win).
    int64_t token = first.index;
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
    result.top1_token = static_cast<int32_t>(first.index);
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
