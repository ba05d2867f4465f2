#include "backend/placement.hpp"

#include "backend/device.hpp"
#include "core/error.hpp"

#ifdef UNMASK_WITH_CUDA
#include "backend/cuda/cuda_backend.hpp"
#endif

namespace unmask {
namespace {

class CpuPlacement final : public DevicePlacement {
public:
    BackendKind kind() const noexcept override { return BackendKind::cpu; }
    std::unique_ptr<Backend> make_backend(int threads, MemoryLedger& scratch) const override {
        return make_cpu_backend(threads, scratch);
    }
};

#ifdef UNMASK_WITH_CUDA
class CudaPlacement final : public DevicePlacement {
public:
    CudaPlacement(std::shared_ptr<const CudaWeights> weights, bool graphs) : weights_(std::move(weights)), graphs_(graphs) {}
    BackendKind kind() const noexcept override { return BackendKind::cuda; }
    std::unique_ptr<Backend> make_backend(int, MemoryLedger& scratch) const override {
        return make_cuda_backend(weights_, scratch, {.graphs = graphs_});
    }

private:
    std::shared_ptr<const CudaWeights> weights_;
    bool graphs_;
};
#endif

}  // namespace

std::shared_ptr<const DevicePlacement> cpu_placement() {
    static const auto placement = std::make_shared<const CpuPlacement>();
    return placement;
}

std::shared_ptr<const DevicePlacement> place_weights(std::span<const Weight> weights, const PlacementOptions& options) {
    if (options.kind == BackendKind::cpu) return cpu_placement();
    require_device(options.kind, options.device);
#ifdef UNMASK_WITH_CUDA
    return std::make_shared<const CudaPlacement>(CudaWeights::upload(weights, options.device, nullptr),
                                                 options.cuda_graphs);
#else
    (void)weights;
    fail(Status::internal, "no placement for backend {}", static_cast<int>(options.kind));
#endif
}

}  // namespace unmask
