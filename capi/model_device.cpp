#include "model_device.hpp"

#include "core/error.hpp"

#ifdef UNMASK_WITH_CUDA
#include <cstdlib>
#include <string_view>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_runtime_info.hpp"
#endif

namespace unmask::capi {

void require_device(BackendKind backend, int device) {
    if (backend == BackendKind::cpu) return;
#ifdef UNMASK_WITH_CUDA
    const int devices = cuda::device_count();
    if (device < 0 || device >= devices)
        fail(Status::unsupported, "CUDA device {} is not there ({} visible); load the model for the CPU", device, devices);
#else
    (void)device;
    fail(Status::unsupported, "this build of unmask has no CUDA backend; load the model for the CPU");
#endif
}

uint64_t device_memory_bytes(BackendKind backend, int device) {
#ifdef UNMASK_WITH_CUDA
    if (backend == BackendKind::cuda && device >= 0 && device < cuda::device_count())
        return cuda::device_memory(device).total_bytes;
#else
    (void)backend;
    (void)device;
#endif
    return 0;
}

void place_weights(unmask_model& model, int device) {
    if (model.backend == BackendKind::cpu || !model.model->has_data()) return;
#ifdef UNMASK_WITH_CUDA
    model.cuda_weights = CudaWeights::upload(*model.model, device, nullptr);
#else
    require_device(model.backend, device);
#endif
}

std::unique_ptr<Backend> make_model_backend(const unmask_model& model, int threads, MemoryLedger& scratch) {
    if (model.backend == BackendKind::cpu) return make_cpu_backend(threads, scratch);
#ifdef UNMASK_WITH_CUDA
    if (model.cuda_weights) {
        // UNMASK_CUDA_GRAPHS=0 runs every forward as it comes (to compare, or to rule graphs out).
        const char* graphs = std::getenv("UNMASK_CUDA_GRAPHS");
        const bool on = graphs == nullptr || std::string_view(graphs) != "0";
        return make_cuda_backend(model.cuda_weights, scratch, {.graphs = on});
    }
#endif
    fail(Status::internal, "the model's weights are not on its device");
}

}  // namespace unmask::capi
