// The fused "logits -> candidates" step on the device: one block per row of logits computes what
// kernels/cpu/candidates.hpp computes (filters, softmax statistics, float64 Gumbel-max with the
// same Philox stream), so only one Candidate per row crosses to the host.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "candidate.hpp"

namespace unmask::kernels::cuda {

using kernels::Candidate;

// One row's kernels::cpu::CandidateParams, flattened for the device.
struct CandidateRow {
    double distribution_temperature = 1.0;
    double top_p = 1.0;
    double noise_temperature = 0.0;
    uint64_t seed = 0;
    int64_t top_k = 0;
    uint32_t step = 0;
    uint32_t position = 0;
    int32_t banned_begin = 0;  // into the banned-token array
    int32_t banned_count = 0;
    int32_t probability_excluded_token = -1;
};

// The extreme Gumbel values the 53-bit uniform can give (kernels/cpu/candidates.cpp's reach).
struct GumbelRange {
    double max = 0, min = 0;
};

// rows x vocab logits -> rows candidates; `params`, `banned` and `out` are device memory.
cudaError_t candidates(const float* logits, int64_t rows, int64_t vocab, const CandidateRow* params,
                       const int32_t* banned, GumbelRange gumbel, Candidate* out, cudaStream_t stream);

}  // namespace unmask::kernels::cuda
