// The fused "logits -> candidates" step: for one position's logits, everything decoding needs
// (a sampled token and its probability, the top-1 and top-2 probabilities, the negative entropy),
// so the full logits never leave the backend.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "candidate.hpp"
#include "candidate_params.hpp"
#include "candidate_shares.hpp"

namespace unmask::kernels::cpu {

using kernels::Candidate;
using kernels::CandidateParams;
using kernels::CandidatePeaks;
using kernels::CandidateSums;

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
// k-th stay, 0 = off), as Dream applies them; -inf when neither filters or the maximum is not
// finite (every token -inf, or +inf among them). `z` holds no NaN; `sorted` is scratch.
float filter_threshold(std::span<const float> z, int64_t top_k, double top_p, std::vector<float>& sorted);

// One row of logits -> its candidate. A NaN logit counts as -inf. The same as the row's one share
// through share_peaks, share_sums and finish_candidate, after the filters.
Candidate logits_to_candidate(const float* logits, int64_t vocab, uint32_t position, const CandidateParams& params,
                              CandidateScratch& scratch);

// A share of a row (kernels/candidate_shares.hpp): tokens first..first + count, whose logits
// start at `logits`.
// The share's logits scaled in place: banned tokens and NaN -inf, then divided by the
// distribution temperature (no filters: top-k and top-p need the whole row).
void scale_share(float* logits, int64_t first, int64_t count, const CandidateParams& params);
CandidatePeaks share_peaks(std::span<const float> z, int64_t first);
// `row`: the row's peaks, every share merged.
CandidateSums share_sums(std::span<const float> z, int64_t first, const CandidatePeaks& row, uint32_t position,
                         const CandidateParams& params);
// Two shares of a row, `earlier`'s tokens before `later`'s, as one share.
CandidatePeaks merge_peaks(const CandidatePeaks& earlier, const CandidatePeaks& later);
CandidateSums merge_sums(const CandidateSums& earlier, const CandidateSums& later);
// The candidate of a row of `vocab` tokens from its merged peaks and sums.
Candidate finish_candidate(const CandidatePeaks& row, const CandidateSums& sums, int64_t vocab,
                           const CandidateParams& params);

}  // namespace unmask::kernels::cpu
