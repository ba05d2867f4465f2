// The CUDA backend's workspace sizes: host arithmetic only, compiled in every build so that memory
// plans for a GPU can be made anywhere.
#include <algorithm>

#include "backend/cuda/cuda_backend.hpp"

namespace unmask {

CudaWorkspace cuda_workspace(const WorkspaceLimits& limits) noexcept {
    const auto tokens = static_cast<uint64_t>(std::max<int64_t>(limits.tokens, 1));
    const auto rows = std::min<uint64_t>(tokens, max_candidate_rows);  // candidates per call
    CudaWorkspace w;
    w.rounded = static_cast<uint64_t>(std::max<int64_t>(limits.matmul_input, 1)) * 2;  // bf16/fp16 copies
    w.attention = tokens * CudaWorkspace::attention_sequence_bytes;
    // Per query row and head, up to attention_max_splits partial outputs with their maximum and total.
    const auto heads = static_cast<uint64_t>(limits.attention_heads);
    w.attention_partials = tokens * heads * CudaWorkspace::attention_max_splits *
                           static_cast<uint64_t>(limits.head_dim + 2) * sizeof(float);
    w.candidates = rows * (CudaWorkspace::candidate_row_bytes + CudaWorkspace::banned_per_row * sizeof(int32_t) +
                           sizeof(Candidate));
    const auto experts = static_cast<uint64_t>(limits.experts);
    if (experts > 0) {
        w.routing = experts * sizeof(int32_t);
        w.routing_fault = sizeof(int32_t);
        w.expert_tables = static_cast<uint64_t>(limits.expert_weight_lists) * allocation_bytes(experts * sizeof(void*));
    }
    w.graphs = CudaWorkspace::graph_bytes;
    return w;
}

uint64_t cuda_workspace_bytes(const WorkspaceLimits& limits) {
    const CudaWorkspace w = cuda_workspace(limits);
    return allocation_bytes(CudaWorkspace::matmul_bytes) + allocation_bytes(w.rounded) +
           allocation_bytes(w.attention) + allocation_bytes(w.attention_partials) + allocation_bytes(w.candidates) +
           (w.routing > 0 ? allocation_bytes(w.routing) + allocation_bytes(w.routing_fault) +
                                allocation_bytes(w.expert_tables)
                          : 0) +
           allocation_bytes(w.graphs);
}

}  // namespace unmask
