// The CUDA candidates kernel (kernels/cuda/candidates.cu, its body row_candidate.hpp) run on host
// threads (cuda_on_host.hpp), and its top-p/top-k thresholds on their own: each must give the CPU
// backend's answer (kernels/cpu/candidates.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "cpu/candidates.hpp"
#include "cuda/candidate_rows.hpp"
#include "cuda/candidates.hpp"
#include "cuda/filter_threshold.hpp"
#include "cuda_on_host.hpp"
#include "require_launched.hpp"

using namespace unmask;
namespace cuda = unmask::kernels::cuda;

namespace {

// The CPU's candidates and the kernel's for rows of `vocab` logits, row r under params[r] at
// positions[r]: the kernel launched as the CUDA backend launches it (its parameters flattened by
// candidate_row, every row's banned tokens in one array).
std::vector<std::pair<kernels::Candidate, kernels::Candidate>> both(
    const std::vector<float>& logits, int64_t vocab, const std::vector<kernels::CandidateParams>& params,
    const std::vector<uint32_t>& positions) {
    const auto rows = static_cast<int64_t>(params.size());
    std::vector<cuda::CandidateRow> flat;
    std::vector<int32_t> banned;
    for (int64_t r = 0; r < rows; ++r) {
        const kernels::CandidateParams& p = params[size_t(r)];
        flat.push_back(cuda::candidate_row(p, positions[size_t(r)], static_cast<int32_t>(banned.size())));
        banned.insert(banned.end(), p.banned_tokens.begin(), p.banned_tokens.end());
    }
    std::vector<kernels::Candidate> device(static_cast<size_t>(rows));
    REQUIRE_LAUNCHED(cuda::candidates(logits.data(), rows, vocab, flat.data(), banned.data(), cuda::gumbel_range(),
                                      device.data(), nullptr));
    std::vector<std::pair<kernels::Candidate, kernels::Candidate>> out;
    kernels::cpu::CandidateScratch scratch;
    for (int64_t r = 0; r < rows; ++r)
        out.emplace_back(kernels::cpu::logits_to_candidate(logits.data() + r * vocab, vocab, positions[size_t(r)],
                                                           params[size_t(r)], scratch),
                         device[size_t(r)]);
    return out;
}

// Equal, or within 1e-4 of the larger, however small they are: the CPU sums a row's masses in
// float (4,099 of them here), the device in float64.
bool relatively_close(double a, double b) {
    return a == b || std::abs(a - b) <= 1e-4 * std::max(std::abs(a), std::abs(b));
}

// The kernel's candidate (device) against the CPU's: the same tokens, and within float64-against-
// float rounding of the probabilities and the entropy.
void check_close(const kernels::Candidate& cpu, const kernels::Candidate& device) {
    CHECK(device.token == cpu.token);
    CHECK(device.top1_token == cpu.top1_token);
    // float64 sums on the device, float sums on the CPU: within 1e-4 of each probability however
    // small, and 1e-5 of the entropy's scale
    CHECK(relatively_close(device.probability, cpu.probability));
    CHECK(relatively_close(device.top1_probability, cpu.top1_probability));
    CHECK(relatively_close(device.top2_probability, cpu.top2_probability));
    CHECK(device.negative_entropy == doctest::Approx(cpu.negative_entropy).epsilon(1e-5));
}

}  // namespace

TEST_CASE("the CUDA kernel's top-p and top-k bisections give the CPU's sorted thresholds") {
    // On a block of one thread: its block-wide sums and maxima are the thread's own.
    struct OneThread {
        int64_t thread() const { return 0; }
        int64_t threads() const { return 1; }
        double sum(double v) const { return v; }
        cuda::Best best(cuda::Best v) const { return v; }
    };
    const float inf = std::numeric_limits<float>::infinity();
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> sorted;
    int filtered = 0;
    for (int trial = 0; trial < 120; ++trial) {
        const auto vocab = static_cast<int64_t>(1 + rng() % 200);
        std::vector<float> z(static_cast<size_t>(vocab));
        for (float& v : z) {
            switch (trial % 4) {
                case 0: v = 3.0f * normal(rng); break;
                case 1: v = static_cast<float>(rng() % 7); break;  // many ties
                case 2: v = rng() % 4 == 0 ? -inf : normal(rng); break;
                default: v = 40.0f * normal(rng); break;  // most masses underflow next to the maximum
            }
        }
        z[rng() % z.size()] = 0.5f;  // a finite maximum
        const double max = *std::max_element(z.begin(), z.end());
        for (const double top_p : {0.05, 0.3, 0.77, 0.95, 1.0})
            for (const int64_t top_k : {int64_t(0), int64_t(1), int64_t(2), int64_t(5), vocab - 1, vocab}) {
                CAPTURE(trial);
                CAPTURE(top_p);
                CAPTURE(top_k);
                const float expected = kernels::cpu::filter_threshold(z, top_k, top_p, sorted);
                const float got = cuda::filter_threshold(
                    OneThread{}, [&](int64_t i) { return z[static_cast<size_t>(i)]; }, vocab, top_p, top_k, max);
                CHECK(got == expected);
                filtered += expected > -inf ? 1 : 0;
            }
    }
    CHECK(filtered > 1000);  // most cases filter something
}

TEST_CASE("the candidates kernel gives the CPU's candidates") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::mt19937 rng(23);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    const int32_t banned[] = {0, 5};

    // LLaDA's greedy and sampled rows, Dream's temperature with top-p and top-k, banned tokens,
    // the EOT exclusion of the reported probability.
    std::vector<kernels::CandidateParams> variants(6);
    variants[1].noise_temperature = 1.0;
    variants[1].seed = 42;
    variants[2].distribution_temperature = 0.7;
    variants[2].top_p = 0.9;
    variants[2].noise_temperature = 1.0;
    variants[2].seed = 7;
    variants[3].top_k = 3;
    variants[3].noise_temperature = 0.5;
    variants[3].step = 9;
    variants[4].banned_tokens = banned;
    variants[4].noise_temperature = 2.0;
    variants[5].probability_excluded_token = 2;
    variants[5].top_p = 0.5;

    // Vocabularies under one element per thread of the block (256), and of several per thread.
    int rows = 0, sampled_apart = 0;
    for (const int64_t vocab : {int64_t(1), int64_t(6), int64_t(97), int64_t(1000), int64_t(4099)}) {
        std::vector<float> logits;
        std::vector<kernels::CandidateParams> params;
        std::vector<uint32_t> positions;
        for (int shape = 0; shape < 4; ++shape) {
            std::vector<float> row(static_cast<size_t>(vocab));
            for (float& v : row) v = normal(rng);
            if (shape == 1)  // ties at the maximum, in different threads' shares
                for (size_t i = 0; i < row.size(); i += 3) row[i] = 4.0f;
            if (shape == 2)  // NaN and -inf logits
                for (size_t i = 0; i < row.size(); i += 2) row[i] = i % 4 == 0 ? nan : -inf;
            if (shape == 3 && vocab > 1) row.back() = 30.0f;  // one token holds nearly all the mass
            for (const kernels::CandidateParams& variant : variants)
                for (uint32_t position : {0u, 17u}) {
                    logits.insert(logits.end(), row.begin(), row.end());
                    params.push_back(variant);
                    positions.push_back(position);
                }
        }
        const auto results = both(logits, vocab, params, positions);
        for (size_t r = 0; r < results.size(); ++r) {
            CAPTURE(vocab);
            CAPTURE(r / (2 * variants.size()));  // the shape
            CAPTURE(r / 2 % variants.size());    // the variant
            const auto& [cpu, device] = results[r];
            check_close(cpu, device);
            ++rows;
            sampled_apart += cpu.token != cpu.top1_token ? 1 : 0;
        }
    }
    CHECK(rows == 5 * 4 * 6 * 2);
    CHECK(sampled_apart > 20);  // the noise chose tokens other than the top-1 often enough to matter
}

TEST_CASE("the candidates kernel reads every logit, in 16-byte loads or one at a time, in any batch") {
    // Rows of 1,000 logits (every row on 16 bytes: loads of four, in batches of four and the
    // remainder) and of 1,001 (one at a time). Each row's maximum and runner-up sit in a different
    // part of it, so a logit left unread changes the top-1 or top-2. The first 60 rows alone give
    // the same candidates, bit for bit, as within the 200: a row's sums never depend on its batch.
    for (const int64_t vocab : {int64_t(1000), int64_t(1001)}) {
        CAPTURE(vocab);
        std::mt19937 rng(29);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> logits(size_t(200 * vocab));
        for (float& v : logits) v = normal(rng);
        std::vector<kernels::CandidateParams> params(200);
        std::vector<uint32_t> positions(200);
        for (size_t r = 0; r < 200; ++r) {
            positions[r] = uint32_t(r);
            const int64_t top = int64_t(r * 37 % size_t(vocab)), second = (top + 1 + int64_t(r) * 11) % vocab;
            logits[r * size_t(vocab) + size_t(top)] = 9.0f;
            logits[r * size_t(vocab) + size_t(second)] = 8.5f;
        }
        const auto all = both(logits, vocab, params, positions);
        const std::vector<float> first(logits.begin(), logits.begin() + 60 * vocab);
        const auto alone = both(first, vocab, std::vector(params.begin(), params.begin() + 60),
                                std::vector(positions.begin(), positions.begin() + 60));
        for (size_t r = 0; r < all.size(); ++r) {
            CAPTURE(r);
            CHECK(all[r].first.top1_token == int32_t(r * 37 % size_t(vocab)));
            check_close(all[r].first, all[r].second);
            if (r < alone.size()) CHECK(std::memcmp(&alone[r].second, &all[r].second, sizeof(kernels::Candidate)) == 0);
        }
    }
}
