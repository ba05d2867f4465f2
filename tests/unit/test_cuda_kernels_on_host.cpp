// The CUDA candidates kernel's logic run on the host, where no GPU is needed: row_candidate and
// filter_threshold are host-device templates over a Block, and HostBlock runs them on several
// host threads whose block-wide sums and maxima meet at a barrier, as a thread block's do. Each
// must give the CPU backend's answer (kernels/cpu/candidates.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "cpu/candidates.hpp"
#include "cuda/candidate_rows.hpp"
#include "cuda/filter_threshold.hpp"
#include "cuda/row_candidate.hpp"

using namespace unmask;
namespace cuda = unmask::kernels::cuda;

namespace {

// `threads` host threads running one function, as a thread block runs a kernel: each thread
// takes its share of a row (thread(), threads()), and sum and best are block-wide, each thread's
// value posted, a barrier passed, the posts combined in thread order, a barrier passed again.
class HostBlock {
public:
    explicit HostBlock(int threads) : posts_(static_cast<size_t>(threads)), barrier_(threads) {}

    struct Thread {
        HostBlock* block;
        int64_t index;
        int64_t thread() const { return index; }
        int64_t threads() const { return static_cast<int64_t>(block->posts_.size()); }
        double sum(double v) const {
            double total = 0;
            block->exchange(index, cuda::Best{v, 0}, [&](const cuda::Best& post) { total += post.value; });
            return total;
        }
        cuda::Best best(cuda::Best v) const {
            cuda::Best found{-INFINITY, INT64_MAX};
            block->exchange(index, v, [&](const cuda::Best& post) { found = cuda::better(found, post); });
            return found;
        }
    };

    // Runs body(Thread) on every thread of the block and waits for them.
    template <typename Body>
    void run(const Body& body) {
        std::vector<std::thread> threads;
        for (size_t t = 0; t < posts_.size(); ++t) threads.emplace_back([&, t] { body(Thread{this, int64_t(t)}); });
        for (std::thread& t : threads) t.join();
    }

private:
    template <typename Combine>
    void exchange(int64_t index, cuda::Best post, const Combine& combine) {
        posts_[static_cast<size_t>(index)] = post;
        barrier_.arrive_and_wait();
        for (const cuda::Best& p : posts_) combine(p);
        barrier_.arrive_and_wait();  // nobody posts again before everyone has read
    }

    std::vector<cuda::Best> posts_;
    std::barrier<> barrier_;
};

// The CPU's candidate and the kernel's (on `threads` host threads) for one row under `params`.
std::pair<kernels::Candidate, kernels::Candidate> both(const std::vector<float>& logits, uint32_t position,
                                                       const kernels::cpu::CandidateParams& params, int threads) {
    kernels::cpu::CandidateScratch scratch;
    const kernels::Candidate cpu = kernels::cpu::logits_to_candidate(
        logits.data(), static_cast<int64_t>(logits.size()), position, params, scratch);
    const cuda::CandidateRow row = cuda::candidate_row(params, position, 0);  // as the CUDA backend flattens it
    const cuda::GumbelRange gumbel = cuda::gumbel_range();
    kernels::Candidate device{};
    HostBlock(threads).run([&](const HostBlock::Thread& thread) {
        cuda::row_candidate(thread, logits.data(), static_cast<int64_t>(logits.size()), row,
                            params.banned_tokens.data(), gumbel, &device);
    });
    return {cpu, device};
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

TEST_CASE("the CUDA candidates kernel, run by host threads, gives the CPU's candidates") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::mt19937 rng(23);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    const int32_t banned[] = {0, 5};

    // LLaDA's greedy and sampled rows, Dream's temperature with top-p and top-k, banned tokens,
    // the EOT exclusion of the reported probability.
    std::vector<kernels::cpu::CandidateParams> variants(6);
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

    int rows = 0, sampled_apart = 0;
    for (const int threads : {1, 3, 32}) {
        for (const int64_t vocab : {int64_t(1), int64_t(6), int64_t(97), int64_t(1000)}) {
            for (int shape = 0; shape < 4; ++shape) {
                std::vector<float> logits(static_cast<size_t>(vocab));
                for (float& v : logits) v = normal(rng);
                if (shape == 1)  // ties at the maximum, in different threads' shares
                    for (size_t i = 0; i < logits.size(); i += 3) logits[i] = 4.0f;
                if (shape == 2)  // NaN and -inf logits
                    for (size_t i = 0; i < logits.size(); i += 2) logits[i] = i % 4 == 0 ? nan : -inf;
                if (shape == 3 && vocab > 1) logits.back() = 30.0f;  // one token holds nearly all the mass
                for (size_t v = 0; v < variants.size(); ++v) {
                    for (uint32_t position : {0u, 17u}) {
                        CAPTURE(threads);
                        CAPTURE(vocab);
                        CAPTURE(shape);
                        CAPTURE(v);
                        CAPTURE(position);
                        const auto [cpu, device] = both(logits, position, variants[v], threads);
                        CHECK(device.token == cpu.token);
                        CHECK(device.top1_token == cpu.top1_token);
                        // float64 sums on the device, float sums on the CPU: within 1e-5
                        CHECK(device.probability == doctest::Approx(cpu.probability).epsilon(1e-5));
                        CHECK(device.top1_probability == doctest::Approx(cpu.top1_probability).epsilon(1e-5));
                        CHECK(device.top2_probability == doctest::Approx(cpu.top2_probability).epsilon(1e-5));
                        CHECK(device.negative_entropy == doctest::Approx(cpu.negative_entropy).epsilon(1e-5));
                        ++rows;
                        sampled_apart += cpu.token != cpu.top1_token ? 1 : 0;
                    }
                }
            }
        }
    }
    CHECK(rows == 3 * 4 * 4 * 6 * 2);
    CHECK(sampled_apart > 20);  // the noise chose tokens other than the top-1 often enough to matter
}
