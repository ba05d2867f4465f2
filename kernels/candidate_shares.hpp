// The candidates step over a vocabulary split among devices (tensor parallelism's LM head): each
// device reduces its share of a row (tokens first..first + count) to a few numbers, the shares of
// a row merge in token order, and the merged numbers finish into the row's Candidate. The CPU's
// whole-row step is the same computation over one share, so a split row gives the same bits as
// the whole row, at any number of devices (kernels/cpu/candidates.hpp). Host code (C++20);
// trivially copyable, 8-byte multiples, so that collectives move them as raw words.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

namespace unmask::kernels {

// The first pass: the largest scaled logit and the largest of the rest, which fix the softmax's
// shift and the Gumbel sample's reach.
struct CandidatePeaks {
    float top1 = -std::numeric_limits<float>::infinity();   // the largest (its first token, if equal)
    float second = -std::numeric_limits<float>::infinity();  // the largest of the other tokens
    int32_t top1_token = -1;                                   // -1: an empty share
    int32_t padding = 0;
};

// The second pass, relative to the row's top1: the softmax normaliser and the entropy's sum, in
// fixed point (2^-38 units) so that integer sums of shares give the same bits however the row is
// split; the share's Gumbel-max winner; the logit of the token whose probability is left out.
struct CandidateSums {
    int64_t total = 0;     // sum of e^(z - top1)
    int64_t weighted = 0;  // sum of e^(z - top1) (z - top1)
    double sample_score = -std::numeric_limits<double>::infinity();
    int32_t sample_token = -1;  // -1: no token of the share within the noise's reach
    float sample_logit = 0;
    float excluded_logit = 0;
    int32_t holds_excluded = 0;  // whether the share holds CandidateParams::probability_excluded_token
};

static_assert(std::is_trivially_copyable_v<CandidatePeaks> && std::is_trivially_copyable_v<CandidateSums>);
static_assert(sizeof(CandidatePeaks) % 8 == 0 && sizeof(CandidateSums) % 8 == 0);

}  // namespace unmask::kernels
