// The fused "logits -> candidates" step on the device: one block per row of logits computes what
// kernels/cpu/candidates.hpp computes (row_candidate.hpp), so only one Candidate per row crosses
// to the host.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/row_candidate.hpp"  // CandidateRow, GumbelRange

namespace unmask::kernels::cuda {

// rows x vocab logits -> rows candidates; `params`, `banned` and `out` are device memory.
cudaError_t candidates(const float* logits, int64_t rows, int64_t vocab, const CandidateRow* params,
                       const int32_t* banned, GumbelRange gumbel, Candidate* out, cudaStream_t stream);

}  // namespace unmask::kernels::cuda
