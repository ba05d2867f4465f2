// The fused "logits -> candidates" step: for one position's logits, everything decoding needs
// (a sampled token and its probability, the top-1 and top-2 probabilities, the negative entropy),
// so the full logits never leave the backend.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "candidate.hpp"

namespace unmask::kernels::cpu {

struct CandidateParams {
    // The distribution: p = softmax(filter(logits / distribution_temperature)), where filter keeps
    // the top_p nucleus (1 = off) and then the top_k tokens (0 = off), as Dream does. LLaDA uses
    // distribution_temperature 1 and no filters.
    double distribution_temperature = 1.0;
    int64_t top_k = 0;
    double top_p = 1.0;
    // The sample: argmax over kept tokens of z + noise_temperature * Gumbel, in float64 (0: argmax).
    double noise_temperature = 0.0;
    uint64_t seed = 0;
    uint32_t step = 0;
    std::span<const int32_t> banned_tokens;  // logits forced to -inf first (e.g. EOS)
    // A token left out of the distribution `probability` is reported under (not of sampling, nor of
    // the top-1/top-2/entropy statistics): LLaDA's reference does this to EOT (see DecodeSequence).
    int32_t probability_excluded_token = -1;
};

using kernels::Candidate;

// Buffers one thread reuses across calls.
struct CandidateScratch {
    std::vector<float> scaled;
    std::vector<float> sorted;
};

// Bounds of the Gumbel noise -log(-log u) over the draws of uniform_open01 (u from 2^-54 to
// 1 - 2^-53; the upper bound takes 1 - 2^-54, a margin for the last bit of log): a token whose
// logit is more than noise_temperature times their difference below the maximum cannot win, so
// its noise need not be drawn.
double gumbel_noise_min() noexcept;
double gumbel_noise_max() noexcept;

// The smallest of the scaled logits `z` that survives top-p (the nucleus: the fewest tokens whose
// probability reaches top_p, 1 = off; the first token always stays) and then top-k (ties with the
// k-th stay, 0 = off), as Dream applies them; -inf when neither filters. `z` holds no NaN and a
// finite maximum; `sorted` is scratch.
float filter_threshold(std::span<const float> z, int64_t top_k, double top_p, std::vector<float>& sorted);

// One row of logits -> its candidate. A NaN logit counts as -inf.
Candidate logits_to_candidate(const float* logits, int64_t vocab, uint32_t position, const CandidateParams& params,
                              CandidateScratch& scratch);

}  // namespace unmask::kernels::cpu
