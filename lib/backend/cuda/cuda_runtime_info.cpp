#include "backend/cuda/cuda_runtime_info.hpp"

#include <cuda_runtime_api.h>

#ifdef UNMASK_WITH_NCCL
#include <nccl.h>
#endif

#include "core/error.hpp"

namespace unmask::cuda {

int device_count() noexcept {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no driver" error so later calls start clean
        return 0;
    }
    return count;
}

DeviceMemory device_memory(int device) {
    const int count = device_count();
    if (device < 0 || device >= count)
        fail(Status::invalid_argument, "CUDA device {} does not exist ({} devices)", device, count);
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
        fail(Status::device, "cudaSetDevice({}) failed: {}", device, cudaGetErrorString(e));
    DeviceMemory memory;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes); e != cudaSuccess)
        fail(Status::device, "cudaMemGetInfo on device {} failed: {}", device, cudaGetErrorString(e));
    memory.free_bytes = free_bytes;
    memory.total_bytes = total_bytes;
    return memory;
}

std::string nccl_version() {
#ifdef UNMASK_WITH_NCCL
    int code = 0;
    if (ncclGetVersion(&code) != ncclSuccess) return "";
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
    return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
#else
    return "";
#endif
}

}  // namespace unmask::cuda
