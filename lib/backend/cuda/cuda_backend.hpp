// The CUDA backend (built with UNMASK_CUDA): the Backend interface on one GPU. Activations are
// fp32 in device memory; matmuls run in the weights' precision through cuBLASLt (activations
// rounded to bf16/fp16 for bf16/fp16 weights, fp32 accumulation); everything else is a kernel of
// kernels/cuda. Every device allocation is charged to a ledger; a CUDA error becomes
// Error(DEVICE), a refused allocation Error(OUT_OF_BUDGET).
#pragma once

#include <bit>
#include <memory>
#include <span>
#include <unordered_map>

#include "backend/backend.hpp"

namespace unmask {

// A model's weights copied to one GPU, charged to a ledger until the last owner lets go. One copy
// serves every CUDA backend that runs the model on that device.
class CudaWeights {
public:
    // Copies every weight (each with data, all outliving the result) to `device`, charging
    // `ledger` (which must outlive the result), or nothing when it is null: a model loaded for the
    // CUDA backend has reserved its weights in the device's ledger already. Throws
    // Error(INVALID_ARGUMENT) for a weight without data, Error(OUT_OF_BUDGET) when they do not
    // fit, Error(DEVICE) on a CUDA error.
    static std::shared_ptr<const CudaWeights> upload(std::span<const Weight> weights, int device, MemoryLedger* ledger);

    // A weight on the device, in its stored precision except the MoE router's, which is widened
    // to fp32 (routing is a discrete choice: it should follow the CPU's as closely as it can), and
    // Weight::fp8_w8a8's on a device with block-scaled fp8 products: F8_E4M3 values, then their
    // tile scales (kernels/fp8_tiles.hpp) in the same buffer, of the planned F8_E4M3_B128 size.
    struct Copy {
        DeviceBuffer buffer;
        DType dtype = DType::f32;
        const float* tile_scales = nullptr;  // F8_E4M3 only
    };

    int device() const noexcept { return device_; }
    // The device copy of `weight`; throws Error(INTERNAL) for a weight not of the uploaded model.
    const Copy& find(const Weight& weight) const;

private:
    int device_ = 0;
    std::unordered_map<const Weight*, Copy> copies_;
};

// The device buffers of a CUDA backend for forwards up to `limits` (cuda_workspace_bytes is their
// sum in allocation granules): cuBLASLt's workspace, the activations rounded to bf16/fp16 for a
// matmul, the attention batch's description and its split sequences' partial softmaxes, and the
// candidates' parameters and results.
struct CudaWorkspace {
    static constexpr uint64_t matmul_bytes = uint64_t(32) << 20;  // cuBLASLt's recommendation for Hopper
    static constexpr uint64_t attention_sequence_bytes = 64;      // kernels::cuda::AttentionSequence
    static constexpr uint64_t attention_max_splits = 4;           // kernels::cuda::attention_max_splits
    static constexpr uint64_t candidate_row_bytes = 64;           // kernels::cuda::CandidateRow
    static constexpr uint64_t banned_per_row = 4;                 // room for this many banned tokens per row
    uint64_t rounded = 0, attention = 0, candidates = 0;
    uint64_t attention_partials = 0;  // split sequences' partial softmaxes (kernels/cuda/attention.hpp)
    uint64_t routing = 0;        // group_by_expert's per-expert counts
    uint64_t routing_fault = 0;  // its flag of a bad routing table
    uint64_t expert_tables = 0;  // grouped_matmuls: each list of expert weights' device pointers
    // CUDA graphs (Backend::run_replayable): this many kept, each with this many bytes of its
    // kernels' parameters (attention descriptors) of its own, planned; a capture that needs more
    // makes every graph's share the next power of two up to the largest, charged to the ledger.
    static constexpr uint64_t graph_slots = 8;
    static constexpr uint64_t graph_constant_bytes = uint64_t(64) << 10;
    static constexpr uint64_t max_graph_constant_bytes = uint64_t(4) << 20;
    static constexpr uint64_t graph_bytes = graph_slots * graph_constant_bytes;
    static_assert(std::has_single_bit(max_graph_constant_bytes));
    uint64_t graphs = 0;
};
CudaWorkspace cuda_workspace(const WorkspaceLimits& limits) noexcept;

// What a CUDA backend did with replayable work (Backend::run_replayable): graphs captured,
// launches of a captured graph, and captures given up (the work ran call by call).
struct CudaGraphStats {
    int64_t recorded = 0, replayed = 0, refused = 0;
};
// Throws Error(INVALID_ARGUMENT) for a backend that is not a CUDA backend.
CudaGraphStats cuda_graph_stats(const Backend& backend);

struct CudaBackendOptions {
    // Record replayable work (the embedding and layer stack of a forward) as a CUDA graph the
    // second time its shape comes, and launch the graph from then on.
    bool graphs = true;
};

// A CUDA backend on the weights' device, charging its activations and workspace to `memory`,
// which must outlive it and every buffer it allocates.
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const CudaWeights> weights, MemoryLedger& memory,
                                           CudaBackendOptions options = {});
// The same with a ledger of its own and no limit (tests, benchmarks).
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const CudaWeights> weights, CudaBackendOptions options = {});

}  // namespace unmask
