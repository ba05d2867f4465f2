// How one row of logits becomes its candidate: the distribution, the sample and the tokens left
// out. Host code (C++20) only: the CUDA kernels take these values unpacked.
#pragma once

#include <cstdint>
#include <span>

namespace unmask::kernels {

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

}  // namespace unmask::kernels
