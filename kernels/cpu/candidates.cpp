#include "cpu/candidates.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/philox.hpp"
#include "cpu/vector_math.hpp"

namespace unmask::kernels::cpu {
namespace {

constexpr float negative_infinity = -std::numeric_limits<float>::infinity();

struct Moments {
    double total = 0;             // sum of e^(z - max)
    double weighted_shift = 0;    // sum of e^(z - max) * (z - max)
};

// One vectorised pass for the softmax normaliser and the entropy: with e_i = e^(z_i - max) and
// T = sum e_i, sum p log p = (sum e_i (z_i - max)) / T - log T.
UNMASK_VECTOR_CLONES Moments softmax_moments(const float* z, int64_t n,
                                                                                     float max) {
    float total = 0, weighted = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float shifted = z[i] - max;
        const float e = fast_exp(shifted);
        total += e;
        weighted += shifted > -87.3f ? e * shifted : 0.0f;  // masked (-inf) logits contribute nothing
    }
    return {total, weighted};
}

}  // namespace

float filter_threshold(std::span<const float> z, int64_t top_k, double top_p, std::vector<float>& sorted) {
    sorted.assign(z.begin(), z.end());
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    float threshold = negative_infinity;
    if (top_p < 1.0) {
        const double max = sorted[0];
        double total = 0;
        for (float v : sorted) total += std::exp(double(v) - max);
        double cumulative = 0;
        for (size_t j = 0; j < sorted.size(); ++j) {
            // Token j is removed when the cumulative probability before it already exceeds top_p.
            if (j > 0 && cumulative > top_p) break;
            threshold = sorted[j];
            cumulative += std::exp(double(sorted[j]) - max) / total;
        }
    }
    if (top_k > 0 && top_k < static_cast<int64_t>(sorted.size()))
        threshold = std::max(threshold, sorted[static_cast<size_t>(top_k - 1)]);
    return threshold;
}

double gumbel_noise_min() noexcept { return -std::log(-std::log(0x1.0p-54)); }
double gumbel_noise_max() noexcept { return -std::log(-std::log1p(-0x1.0p-54)); }

Candidate logits_to_candidate(const float* logits, int64_t vocab, uint32_t position, const CandidateParams& params,
                              CandidateScratch& scratch) {
    std::vector<float>& z = scratch.scaled;
    z.assign(logits, logits + vocab);
    for (float& v : z)
        if (std::isnan(v)) v = negative_infinity;  // never chosen; the sort below needs a total order
    for (int32_t banned : params.banned_tokens)
        if (banned >= 0 && banned < vocab) z[static_cast<size_t>(banned)] = negative_infinity;
    if (params.distribution_temperature != 1.0)
        for (float& v : z) v = static_cast<float>(v / params.distribution_temperature);
    if (params.top_k > 0 || params.top_p < 1.0) {
        const float threshold = filter_threshold(z, params.top_k, params.top_p, scratch.sorted);
        for (float& v : z)
            if (v < threshold) v = negative_infinity;
    }

    // Softmax statistics: max, top-2, normaliser and negative entropy (float terms, float sums).
    int32_t top1 = 0;
    for (int64_t i = 1; i < vocab; ++i)
        if (z[static_cast<size_t>(i)] > z[static_cast<size_t>(top1)]) top1 = static_cast<int32_t>(i);
    const double max = z[static_cast<size_t>(top1)];
    Candidate out;
    if (!std::isfinite(max)) {  // every token banned or -inf: nothing to choose, report token 0
        return out;
    }
    double second = negative_infinity;
    for (int64_t i = 0; i < vocab; ++i) {
        const double v = z[static_cast<size_t>(i)];
        if (i != top1 && v > second) second = v;
    }
    const Moments moments = softmax_moments(z.data(), vocab, static_cast<float>(max));
    const double log_total = std::log(moments.total);
    const double negative_entropy = moments.weighted_shift / moments.total - log_total;
    auto probability = [&](double v) { return static_cast<float>(std::exp(v - max - log_total)); };
    out.top1_token = top1;
    out.top1_probability = probability(max);
    out.top2_probability = std::isfinite(second) ? probability(second) : 0.0f;
    out.negative_entropy = static_cast<float>(negative_entropy);

    out.token = top1;
    if (params.noise_temperature > 0) {
        // Gumbel-max: a token can win only if its logit is within noise_temperature times the
        // noise's range of the maximum, so the noise of the others need not be drawn.
        static const double noise_range = gumbel_noise_max() - gumbel_noise_min();
        const double reach = max - params.noise_temperature * noise_range;
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < vocab; ++i) {
            const double v = z[static_cast<size_t>(i)];
            if (v < reach) continue;
            const double u = uniform_open01(params.seed, static_cast<uint32_t>(i), position, params.step,
                                            RandomStream::token_noise);
            const double score = v + params.noise_temperature * -std::log(-std::log(u));
            if (score > best) {
                best = score;
                out.token = static_cast<int32_t>(i);
            }
        }
    }
    out.probability = probability(z[static_cast<size_t>(out.token)]);
    const int32_t excluded = params.probability_excluded_token;
    if (excluded >= 0 && excluded < vocab) {
        const double excluded_mass = std::exp(double(z[size_t(excluded)]) - max - log_total);
        out.probability = out.token == excluded || excluded_mass >= 1.0
                              ? 0.0f
                              : static_cast<float>(double(out.probability) / (1.0 - excluded_mass));
    }
    return out;
}

}  // namespace unmask::kernels::cpu
