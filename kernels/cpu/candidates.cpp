#include "cpu/candidates.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>

#include "core/philox.hpp"
#include "cpu/vector_math.hpp"

namespace unmask::kernels::cpu {
namespace {

constexpr float negative_infinity = -std::numeric_limits<float>::infinity();

// v in 2^-38 units, rounded to the nearest (|v| < 2^13): v 2^38 + 1.5 2^52 is exact but for that
// rounding, and the integer sits in its low mantissa bits. Integer sums are associative, so a row's
// sums do not depend on how it is split (nor on the vector width that adds them). Terms are at
// most 1, so a row of the 2^24 tokens the loader allows sums below 2^62.
inline int64_t fixed_point(float v) {
    return std::bit_cast<int64_t>(double(v) * 0x1p38 + 0x1.8p52) - 0x4338000000000000;  // less 1.5 2^52's bits
}
constexpr double fixed_point_unit = 0x1p-38;

struct FixedMoments {
    int64_t total = 0;     // sum of e^(z - max)
    int64_t weighted = 0;  // sum of e^(z - max) * (z - max)
};

// One vectorised pass for the softmax normaliser and the entropy: with e_i = e^(z_i - max) and
// T = sum e_i, sum p log p = (sum e_i (z_i - max)) / T - log T. Each term is a float, rounded to
// fixed point; the sums are exact.
UNMASK_VECTOR_CLONES FixedMoments softmax_moments(const float* z, int64_t n, float max) {
    int64_t total = 0, weighted = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float shifted = z[i] - max;
        const float e = fast_exp(shifted);
        const float term = e * (shifted > -87.3f ? shifted : -87.3f);  // e is 0 below -87.3 (and for -inf)
        total += fixed_point(e);
        weighted += fixed_point(term);
    }
    return {total, weighted};
}

// The random bits of uniform_open01's token-noise draws for tokens first..first + count at
// (position, step): Philox over a block of tokens at once, which vectorises (integer work only,
// the same bits on every path).
constexpr int64_t noise_block = 64;
UNMASK_VECTOR_CLONES void token_noise_bits(uint64_t seed, uint32_t first, int64_t count, uint32_t position,
                                           uint32_t step, uint64_t* bits) {
    for (int64_t i = 0; i < count; ++i) {
        const auto words = philox4x32({first + static_cast<uint32_t>(i), position, step,
                                       static_cast<uint32_t>(RandomStream::token_noise)}, seed);
        bits[i] = ((uint64_t(words[0]) << 32) | words[1]) >> 11;
    }
}

// The Gumbel noise of a uniform draw u in (0, 1).
inline double gumbel_noise(double u) { return -std::log(-std::log(u)); }

// Noise levels g, lowest first, and the uniform draws at which the noise reaches them, e^(-e^(-g)).
struct NoiseLevel {
    double noise, uniform;
};
const std::array<NoiseLevel, 6>& noise_levels() {
    static const std::array<NoiseLevel, 6> levels = [] {
        std::array<NoiseLevel, 6> l{};
        const double noise[] = {1, 3, 5, 8, 12, 20};
        for (size_t i = 0; i < l.size(); ++i) l[i] = {noise[i], std::exp(-std::exp(-noise[i]))};
        return l;
    }();
    return levels;
}

// A uniform draw at most which the noise is certainly below `gap` (noise units): the draw of the
// highest level at least 1 below the gap (room for rounding); 0 (no draw) below every level.
// Selects, not branches: the gaps of a row's tokens come in no order.
inline double draw_below_gap(const std::array<NoiseLevel, 6>& levels, double gap) {
    double draw = 0;
    for (const NoiseLevel& level : levels) draw = gap >= level.noise + 1 ? level.uniform : draw;
    return draw;
}

}  // namespace

float filter_threshold(std::span<const float> z, int64_t top_k, double top_p, std::vector<float>& sorted) {
    // The values in descending order, as far as the nucleus needs them: sorted[0, ordered) are the
    // largest `ordered` in order, the rest in no order. Each extension selects the next largest
    // (linear) and sorts only them, so a small nucleus costs about one pass, not a sort of the row.
    if (z.empty()) return negative_infinity;
    const double max = *std::max_element(z.begin(), z.end());
    if (!std::isfinite(max)) return negative_infinity;  // every token -inf, or an infinite logit: no filter
    sorted.assign(z.begin(), z.end());
    const auto n = static_cast<int64_t>(sorted.size());
    int64_t ordered = 0;
    auto order_until = [&](int64_t count) {
        count = std::min(count, n);
        if (count <= ordered) return;
        const auto first = sorted.begin() + ordered, last = sorted.begin() + count;
        if (count < n) std::nth_element(first, last - 1, sorted.end(), std::greater<float>());
        std::sort(first, last, std::greater<float>());
        ordered = count;
    };
    float threshold = negative_infinity;
    if (top_p < 1.0) {
        double total = 0;
        for (float v : z) total += std::exp(double(v) - max);  // in token order
        double cumulative = 0;
        for (int64_t j = 0; j < n; ++j) {
            // Token j is removed when the cumulative probability before it already exceeds top_p.
            if (j > 0 && cumulative > top_p) break;
            if (j == ordered) order_until(std::max<int64_t>(64, 4 * ordered));
            threshold = sorted[size_t(j)];
            cumulative += std::exp(double(sorted[size_t(j)]) - max) / total;
        }
    }
    if (top_k > 0 && top_k < n) {
        // The k-th largest: past the ordered ones, a selection puts it in its place.
        const auto kth = sorted.begin() + (top_k - 1);
        if (top_k > ordered) std::nth_element(sorted.begin() + ordered, kth, sorted.end(), std::greater<float>());
        threshold = std::max(threshold, *kth);
    }
    return threshold;
}

double gumbel_noise_min() noexcept { return -std::log(-std::log(0x1.0p-54)); }
double gumbel_noise_max() noexcept { return -std::log(-std::log1p(-0x1.0p-54)); }

void scale_share(float* logits, int64_t first, int64_t count, const CandidateParams& params) {
    const std::span z(logits, size_t(count));
    for (float& v : z)
        if (std::isnan(v)) v = negative_infinity;  // never chosen; the filters' sort needs a total order
    for (int32_t banned : params.banned_tokens)
        if (banned >= first && banned - first < count) z[static_cast<size_t>(banned - first)] = negative_infinity;
    if (params.distribution_temperature != 1.0)
        for (float& v : z) v = static_cast<float>(v / params.distribution_temperature);
}

CandidatePeaks share_peaks(std::span<const float> z, int64_t first) {
    CandidatePeaks peaks;
    for (size_t i = 0; i < z.size(); ++i) {
        const float v = z[i];
        if (v > peaks.top1 || peaks.top1_token < 0) {
            peaks.second = peaks.top1;
            peaks.top1 = v;
            peaks.top1_token = static_cast<int32_t>(first + int64_t(i));
        } else if (v > peaks.second) {
            peaks.second = v;
        }
    }
    return peaks;
}

CandidatePeaks merge_peaks(const CandidatePeaks& earlier, const CandidatePeaks& later) {
    if (later.top1_token < 0) return earlier;
    if (earlier.top1_token < 0) return later;
    CandidatePeaks merged = later.top1 > earlier.top1 ? later : earlier;  // equal maxima: the earlier token
    const CandidatePeaks& other = later.top1 > earlier.top1 ? earlier : later;
    merged.second = std::max(merged.second, other.top1);
    return merged;
}

CandidateSums share_sums(std::span<const float> z, int64_t first, const CandidatePeaks& row, uint32_t position,
                         const CandidateParams& params) {
    CandidateSums sums;
    const int64_t excluded = params.probability_excluded_token - first;
    if (excluded >= 0 && excluded < int64_t(z.size())) {
        sums.holds_excluded = 1;
        sums.excluded_logit = z[size_t(excluded)];
    }
    const double max = row.top1;
    if (!std::isfinite(max)) return sums;  // nothing to choose: finish_candidate reports token 0
    const FixedMoments moments = softmax_moments(z.data(), int64_t(z.size()), row.top1);
    sums.total = moments.total;
    sums.weighted = moments.weighted;
    if (params.noise_temperature > 0) {
        // Gumbel-max over the tokens. The row's top token scores `bound` (in whichever share it
        // is), so the winner scores at least that: a token whose logit is more than the noise's
        // largest value below the bound cannot win (nor can one below the maximum by the noise's
        // range, the CUDA kernel's reach), so its noise need not be drawn; and a token `gap` noise
        // units below the bound can reach it only with noise above the gap, so where the draw is
        // at most a level's, the two logarithms need not be taken. Both keep a noise unit of room
        // for rounding.
        const double temperature = params.noise_temperature;
        static const double noise_range = gumbel_noise_max() - gumbel_noise_min();
        auto draw = [&](uint32_t token) {
            return uniform_open01(params.seed, token, position, params.step, RandomStream::token_noise);
        };
        const double bound = max + temperature * gumbel_noise(draw(static_cast<uint32_t>(row.top1_token)));
        const double reach = std::max(max - temperature * noise_range, bound - temperature * (gumbel_noise_max() + 1));
        const double per_noise_unit = 1.0 / temperature;
        const auto& levels = noise_levels();
        // The top token is never skipped: at temperatures below the logits' rounding its own gap
        // to the bound it sets can look like noise units.
        const int64_t top = row.top1_token - first;
        std::array<uint64_t, noise_block> bits;
        for (int64_t block = 0; block < int64_t(z.size()); block += noise_block) {
            const int64_t end = std::min(int64_t(z.size()), block + noise_block);
            if ((top < block || top >= end) &&
                std::all_of(z.begin() + block, z.begin() + end, [&](float v) { return v < reach; }))
                continue;
            token_noise_bits(params.seed, static_cast<uint32_t>(first + block), end - block, position, params.step,
                             bits.data());
            for (int64_t i = block; i < end; ++i) {
                const double v = z[size_t(i)];
                if (i != top && v < reach) continue;
                const double u = open01_of_bits(bits[size_t(i - block)]);  // uniform_open01's draw
                if (i != top && u <= draw_below_gap(levels, (bound - v) * per_noise_unit)) continue;
                const double s = v + temperature * gumbel_noise(u);
                if (s > sums.sample_score) {  // equal scores: the first token
                    sums.sample_score = s;
                    sums.sample_token = static_cast<int32_t>(first + i);
                    sums.sample_logit = z[size_t(i)];
                }
            }
        }
    }
    return sums;
}

CandidateSums merge_sums(const CandidateSums& earlier, const CandidateSums& later) {
    CandidateSums merged = earlier;
    merged.total += later.total;
    merged.weighted += later.weighted;
    if (later.sample_token >= 0 && (earlier.sample_token < 0 || later.sample_score > earlier.sample_score)) {
        merged.sample_score = later.sample_score;
        merged.sample_token = later.sample_token;
        merged.sample_logit = later.sample_logit;
    }
    if (later.holds_excluded != 0) {
        merged.holds_excluded = 1;
        merged.excluded_logit = later.excluded_logit;
    }
    return merged;
}

Candidate finish_candidate(const CandidatePeaks& row, const CandidateSums& sums, int64_t vocab,
                           const CandidateParams& params) {
    Candidate out;
    const double max = row.top1;
    if (row.top1_token < 0 || !std::isfinite(max)) return out;  // every token banned or -inf: token 0
    const double total = double(sums.total) * fixed_point_unit;
    const double log_total = std::log(total);
    auto probability = [&](double v) { return static_cast<float>(std::exp(v - max - log_total)); };
    out.top1_token = row.top1_token;
    out.top1_probability = probability(max);
    out.top2_probability = std::isfinite(row.second) ? probability(row.second) : 0.0f;
    out.negative_entropy = static_cast<float>(double(sums.weighted) * fixed_point_unit / total - log_total);
    const bool sampled = params.noise_temperature > 0 && sums.sample_token >= 0;
    out.token = sampled ? sums.sample_token : row.top1_token;
    out.probability = probability(sampled ? double(sums.sample_logit) : max);
    const int32_t excluded = params.probability_excluded_token;
    if (excluded >= 0 && excluded < vocab && sums.holds_excluded != 0) {
        const double excluded_mass = std::exp(double(sums.excluded_logit) - max - log_total);
        out.probability = out.token == excluded || excluded_mass >= 1.0
                              ? 0.0f
                              : static_cast<float>(double(out.probability) / (1.0 - excluded_mass));
    }
    return out;
}

Candidate logits_to_candidate(const float* logits, int64_t vocab, uint32_t position, const CandidateParams& params,
                              CandidateScratch& scratch) {
    std::vector<float>& z = scratch.scaled;
    z.assign(logits, logits + vocab);
    scale_share(z.data(), 0, vocab, params);
    if (params.top_k > 0 || params.top_p < 1.0) {
        const float threshold = filter_threshold(z, params.top_k, params.top_p, scratch.sorted);
        for (float& v : z)
            if (v < threshold) v = negative_infinity;
    }
    const CandidatePeaks peaks = share_peaks(z, 0);
    return finish_candidate(peaks, share_sums(z, 0, peaks, position, params), vocab, params);
}

}  // namespace unmask::kernels::cpu
