// The candidates step split among devices (kernels/candidate_shares.hpp): a row cut into shares
// anywhere, reduced share by share and merged, gives the bits of the whole row's step, with
// banned and excluded tokens, temperatures, Gumbel samples, ties, -inf and NaN logits; the CPU
// backend's three calls do the same over strided shares; the fixed-point sums stay as close to
// float64 as the float terms allow.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/backend.hpp"
#include "core/philox.hpp"
#include "core/error.hpp"
#include "cpu/candidates.hpp"

using namespace unmask;
namespace k = unmask::kernels::cpu;

namespace {

bool same_bits(const Candidate& a, const Candidate& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A row of `vocab` logits with repeated maxima, -inf and NaN sprinkled in (from `rng`).
std::vector<float> row_of(int64_t vocab, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 4.0f);
    std::vector<float> row(static_cast<size_t>(vocab));
    for (float& v : row) v = normal(rng);
    const float peak = *std::max_element(row.begin(), row.end()) + 1.0f;
    std::uniform_int_distribution<int64_t> at(0, vocab - 1);
    for (int i = 0; i < 3; ++i) row[size_t(at(rng))] = peak;  // ties of the maximum
    row[size_t(at(rng))] = -std::numeric_limits<float>::infinity();
    row[size_t(at(rng))] = std::numeric_limits<float>::quiet_NaN();
    return row;
}

// The row's candidate from `cuts` (share boundaries, ascending, within 0..vocab): shares reduced
// apart, then merged in token order.
Candidate through_shares(const std::vector<float>& row, const std::vector<int64_t>& cuts, uint32_t position,
                         const CandidateParams& params) {
    const auto vocab = int64_t(row.size());
    std::vector<int64_t> bounds = {0};
    bounds.insert(bounds.end(), cuts.begin(), cuts.end());
    bounds.push_back(vocab);
    std::vector<std::vector<float>> z(bounds.size() - 1);
    CandidatePeaks peaks;
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
        z[s].assign(row.begin() + bounds[s], row.begin() + bounds[s + 1]);
        k::scale_share(z[s].data(), bounds[s], bounds[s + 1] - bounds[s], params);
        peaks = k::merge_peaks(peaks, k::share_peaks(z[s], bounds[s]));
    }
    CandidateSums sums;
    for (size_t s = 0; s + 1 < bounds.size(); ++s)
        sums = k::merge_sums(sums, k::share_sums(z[s], bounds[s], peaks, position, params));
    return k::finish_candidate(peaks, sums, vocab, params);
}

}  // namespace

TEST_CASE("a row cut into shares anywhere gives the whole row's candidate, bit for bit") {
    std::mt19937 rng(2026);
    const int32_t banned[] = {0, 5};
    std::vector<CandidateParams> variants(5);
    variants[1].noise_temperature = 1.0;
    variants[1].seed = 99;
    variants[2].noise_temperature = 0.3;
    variants[2].distribution_temperature = 0.7;
    variants[2].banned_tokens = banned;
    variants[3].probability_excluded_token = 3;
    variants[3].noise_temperature = 2.0;
    variants[4].probability_excluded_token = 1;
    variants[4].distribution_temperature = 1.5;
    k::CandidateScratch scratch;
    int compared = 0, sampled_elsewhere = 0;
    for (const int64_t vocab : {1, 2, 7, 64, 945, 5003}) {
        for (int trial = 0; trial < 6; ++trial) {
            const std::vector<float> row = row_of(vocab, rng);
            for (const CandidateParams& params : variants) {
                for (uint32_t position = 0; position < 4; ++position) {
                    const Candidate whole = k::logits_to_candidate(row.data(), vocab, position, params, scratch);
                    // Even splits as the devices make them, and random cuts (empty shares included).
                    for (const int shares : {2, 3, 4, 5}) {
                        std::vector<int64_t> even, random;
                        std::uniform_int_distribution<int64_t> at(0, vocab);
                        for (int s = 1; s < shares; ++s) {
                            even.push_back(std::min(vocab, s * ((vocab + shares - 1) / shares)));
                            random.push_back(at(rng));
                        }
                        std::sort(random.begin(), random.end());
                        for (const auto* cuts : {&even, &random}) {
                            CAPTURE(vocab);
                            CAPTURE(shares);
                            CAPTURE(position);
                            CHECK(same_bits(through_shares(row, *cuts, position, params), whole));
                            ++compared;
                        }
                    }
                    sampled_elsewhere += whole.token != whole.top1_token;
                }
            }
        }
    }
    CHECK(compared > 5000);
    CHECK(sampled_elsewhere > 50);  // the samples are not all the argmax: the Gumbel merge is exercised
}

TEST_CASE("rows of nothing but -inf or NaN, or with +inf, split, give the whole row's bits") {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    CandidateParams params;
    params.noise_temperature = 1.0;
    k::CandidateScratch scratch;
    for (const std::vector<float>& row : {std::vector<float>(9, -inf), std::vector<float>(9, nan),
                                          std::vector<float>{-inf, nan, -inf, nan, -inf, nan, -inf, nan, -inf}}) {
        const Candidate whole = k::logits_to_candidate(row.data(), 9, 0, params, scratch);
        CHECK(whole.token == 0);
        CHECK(whole.probability == 0.0f);
        CHECK(same_bits(through_shares(row, {2, 2, 7}, 0, params), whole));
    }
    // A +inf logit (an overflowing model) leaves nothing to normalise: token 0, split or not,
    // wherever the +inf falls and however many there are.
    for (const std::vector<float>& row : {std::vector<float>{1, 2, 3, 4, 5, 6, 7, inf, 8},
                                          std::vector<float>{inf, 2, 3, 4, 5, 6, 7, inf, nan}}) {
        const Candidate whole = k::logits_to_candidate(row.data(), 9, 0, params, scratch);
        CHECK(whole.token == 0);
        CHECK(same_bits(through_shares(row, {3, 6}, 0, params), whole));
        CHECK(same_bits(through_shares(row, {8}, 0, params), whole));
    }
}

TEST_CASE("the CPU backend's split candidates over strided shares equal its whole-row candidates") {
    const auto backend = make_cpu_backend(2);
    constexpr int64_t rows = 5, vocab = 262, devices = 4;
    const int64_t slice = (vocab + devices - 1) / devices;  // 66, the last device 64
    WorkspaceLimits limits;
    limits.vocab = vocab;
    limits.tokens = rows;
    backend->reserve_workspace(limits);
    std::mt19937 rng(7);
    std::vector<float> logits;
    for (int64_t r = 0; r < rows; ++r) {
        const std::vector<float> row = row_of(vocab, rng);
        logits.insert(logits.end(), row.begin(), row.end());
    }
    std::vector<CandidateParams> params(rows);
    for (int64_t r = 0; r < rows; ++r) {
        params[size_t(r)].noise_temperature = 0.5 * double(r);
        params[size_t(r)].seed = 11;
        params[size_t(r)].probability_excluded_token = int32_t(r * 60);
    }
    std::vector<const CandidateParams*> pointers;
    for (const CandidateParams& p : params) pointers.push_back(&p);
    const std::vector<uint32_t> positions = {3, 1, 4, 1, 5};
    std::vector<Candidate> whole(rows), split(rows);
    backend->candidates(logits.data(), rows, vocab, positions.data(), pointers, whole.data());

    // Each device's share of every row, `slice` floats apart, as its LM head writes them.
    std::vector<std::vector<float>> shares(devices, std::vector<float>(size_t(rows * slice)));
    std::vector<LogitShare> views;
    for (int64_t d = 0; d < devices; ++d) {
        const int64_t first = d * slice, count = std::min(vocab, first + slice) - first;
        for (int64_t r = 0; r < rows; ++r)
            std::copy_n(logits.begin() + r * vocab + first, count, shares[size_t(d)].begin() + r * slice);
        views.push_back({shares[size_t(d)].data(), rows, slice, first, count});
    }
    std::vector<CandidatePeaks> peaks(size_t(devices * rows));
    std::vector<CandidateSums> sums(size_t(devices * rows));
    for (int64_t d = 0; d < devices; ++d) backend->candidate_peaks(views[size_t(d)], pointers, peaks.data() + d * rows);
    for (int64_t d = 0; d < devices; ++d)
        backend->candidate_sums(views[size_t(d)], positions.data(), pointers, peaks.data(), int(devices),
                                sums.data() + d * rows);
    backend->merge_candidates(peaks.data(), sums.data(), int(devices), rows, vocab, pointers, split.data());
    for (int64_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        CHECK(same_bits(split[size_t(r)], whole[size_t(r)]));
    }
    // A share wider than its row spacing is a caller's bug, refused.
    LogitShare bad = views[0];
    bad.count = slice + 1;
    CHECK_THROWS_AS(backend->candidate_peaks(bad, pointers, peaks.data()), Error);
}

TEST_CASE("the fixed-point sums keep the softmax statistics as close to float64 as the float terms") {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (const int64_t vocab : {945, 126464}) {
        std::vector<float> row(static_cast<size_t>(vocab));
        for (float& v : row) v = normal(rng);
        const double max = *std::max_element(row.begin(), row.end());
        double total = 0, entropy = 0;
        for (float v : row) total += std::exp(double(v) - max);
        for (float v : row) {
            const double p = std::exp(double(v) - max) / total;
            entropy += p * std::log(p);
        }
        k::CandidateScratch scratch;
        const Candidate c = k::logits_to_candidate(row.data(), vocab, 0, {}, scratch);
        CAPTURE(vocab);
        CHECK(c.top1_probability == doctest::Approx(1.0 / total).epsilon(1e-6));
        CHECK(c.negative_entropy == doctest::Approx(entropy).epsilon(1e-6));
    }
}

TEST_CASE("the Gumbel sample is the argmax of every token's noisy score, whatever the step skips") {
    // The step draws no noise for tokens that cannot reach the top token's score and takes no
    // logarithms where the draw is too small; this is the definition it must agree with.
    std::mt19937 rng(17);
    k::CandidateScratch scratch;
    int compared = 0, not_argmax = 0;
    for (const float spread : {0.5f, 4.0f, 20.0f}) {
        std::normal_distribution<float> normal(0.0f, spread);
        std::vector<float> row(5003);
        // Down to temperatures below the logits' rounding (1e-300), where only equal maxima
        // compete, and up to noise that swamps them.
        for (const double temperature : {1e-300, 1e-15, 1e-12, 0.05, 0.3, 1.0, 5.0, 1e6}) {
            for (uint32_t position = 0; position < 30; ++position) {
                for (float& v : row) v = normal(rng);
                if (position % 2 == 1) {  // large logits with a tied maximum, the later ones in other blocks
                    for (float& v : row) v += 32.0f;
                    const float top = *std::max_element(row.begin(), row.end());
                    for (const size_t at : {size_t(7), size_t(700), size_t(4999)}) row[at] = top;
                }
                CandidateParams params;
                params.noise_temperature = temperature;
                params.seed = 4242;
                params.step = position % 3;
                int32_t best = -1;
                double best_score = -std::numeric_limits<double>::infinity();
                for (size_t i = 0; i < row.size(); ++i) {
                    const double u = uniform_open01(params.seed, uint32_t(i), position, params.step,
                                                    RandomStream::token_noise);
                    const double score = double(row[i]) + temperature * -std::log(-std::log(u));
                    if (score > best_score) best_score = score, best = int32_t(i);
                }
                const Candidate c = k::logits_to_candidate(row.data(), int64_t(row.size()), position, params, scratch);
                CAPTURE(spread);
                CAPTURE(temperature);
                CAPTURE(position);
                CHECK(c.token == best);
                ++compared;
                not_argmax += c.token != c.top1_token;
            }
        }
    }
    CHECK(compared == 720);
    CHECK(not_argmax > 100);  // the noise decides often: the comparison is not with the argmax alone
}

TEST_CASE("at temperatures below the logits' rounding, equal logits still go to the first token") {
    // Every logit 1, noise temperature 2e-17 (a tenth of 1's ulp in float64): a score is 1, or
    // 1 + ulp where the noise reaches 5.5. Token 0's score is the bound the step prunes against;
    // when its own noise is between 5.5 and 8, its gap to that bound (11 noise units) looks like
    // a token the level-8 noise cannot lift, and the later tokens scoring 1 + ulp tie with it.
    const std::vector<float> row(5003, 1.0f);
    CandidateParams params;
    params.noise_temperature = 2e-17;
    params.seed = 3;
    k::CandidateScratch scratch;
    int rows = 0;
    for (uint32_t position = 0; position < 4000 && rows < 3; ++position) {
        const double noise =
            -std::log(-std::log(uniform_open01(params.seed, 0, position, params.step, RandomStream::token_noise)));
        if (noise < 5.5 || noise > 8) continue;
        CAPTURE(position);
        CHECK(k::logits_to_candidate(row.data(), 5003, position, params, scratch).token == 0);
        ++rows;
    }
    CHECK(rows == 3);
}
