// The candidate parameters (and the CPU's Gumbel bounds) as the candidates kernel reads them: one place for the CUDA
// backend and for the host run of the kernel's logic (tests/unit), so the test checks the
// backend's flattening too. Host code only (C++20: CandidateParams holds a span).
#pragma once

#include <cstdint>

#include "candidate_params.hpp"
#include "cpu/candidates.hpp"
#include "cuda/row_candidate.hpp"

namespace unmask::kernels::cuda {

// `p` for the row at `position`, its banned tokens at `banned_begin` of the banned-token array.
inline CandidateRow candidate_row(const CandidateParams& p, uint32_t position, int32_t banned_begin) {
    return {p.distribution_temperature, p.top_p, p.noise_temperature, p.seed, p.top_k, p.step, position,
            banned_begin, static_cast<int32_t>(p.banned_tokens.size()), p.probability_excluded_token};
}

// The extreme Gumbel values of the CPU's uniform draws.
inline GumbelRange gumbel_range() { return {cpu::gumbel_noise_max(), cpu::gumbel_noise_min()}; }

}  // namespace unmask::kernels::cuda
