// Mixture-of-experts kernels: the router's choice per token, the (token, expert) pairs grouped by
// expert for grouped matmuls, and the weighted sum of each token's expert outputs. Each mirrors
// the CPU backend's operation of the same name (lib/backend/cpu): float64 scores in route, slots in
// row order within each expert, additions in ascending expert order in unpermute_add. Pointers are
// device memory; every function launches on `stream` and returns the launch status.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/ops.hpp"
#include "route_params.hpp"

namespace unmask::kernels::cuda {

// route takes one warp per token, each lane holding experts lane, lane + 32, ...
inline constexpr int64_t max_route_experts = 512;
inline constexpr int64_t max_experts_per_token = 32;  // one chosen expert per lane

using RouteParams = kernels::RouteParams<WeightView>;

// For every row of `logits` ([rows, experts]): the experts_per_token highest-scoring experts
// (ties to the lower index) and their weights ([rows, experts_per_token] each).
cudaError_t route(const float* logits, int64_t rows, const RouteParams& params, int32_t* experts, float* weights,
                  cudaStream_t stream);

// Groups route's output by expert (backend.hpp's group_by_expert). `counts` holds expert_count
// ints of scratch; `offsets` receives expert_count + 1 (the last: the slots naming an expert in
// range, rows * k for a valid table). A table route could not have made (an expert out of range,
// or twice for a token) sets `*fault` to 1 (never to 0: the caller clears it) and leaves every
// slot and token entry naming a row in range, so the steps after it read nothing out of bounds.
cudaError_t group_by_expert(const int32_t* experts, const float* weights, int64_t rows, int64_t k,
                            int64_t expert_count, int32_t* counts, int32_t* offsets, int32_t* fault,
                            int32_t* slot_rows, int32_t* token_slots, float* token_scales, cudaStream_t stream);

// x[t] += token_scales[t * k + i] * y[token_slots[t * k + i]] for i = 0 .. k - 1 in turn, each
// product and sum rounded on its own as on the CPU (no fused multiply-add).
cudaError_t unpermute_add(float* x, int64_t rows, int64_t dim, int64_t k, const int32_t* token_slots,
                          const float* token_scales, const float* y, cudaStream_t stream);

}  // namespace unmask::kernels::cuda
