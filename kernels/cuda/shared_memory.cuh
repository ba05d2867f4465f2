// A kernel's dynamic shared memory, and the opt-in to more than 48 KiB of it, once per kernel and
// device.
#pragma once

#include <atomic>
#include <cstdint>

#include <cuda_runtime_api.h>

// Declares the kernel's dynamic shared memory as `type name[]`, on 128 bytes (on host threads,
// tests/cuda_on_host: the block's buffer).
#if defined(__CUDACC__)
#define UNMASK_DYNAMIC_SHARED(type, name) extern __shared__ __align__(128) type name[]
#else
#define UNMASK_DYNAMIC_SHARED(type, name) type* const name = cuda_on_host::dynamic_shared<type>()
#endif

namespace unmask::kernels::cuda {

// Lets `kernel` take `bytes` of dynamic shared memory on the current device (beyond 48 KiB needs
// the opt-in), once per device: `done` holds a bit per device for this kernel.
template <typename Kernel>
cudaError_t allow_shared_memory(Kernel kernel, size_t bytes, std::atomic<uint64_t>& done) {
    int device = 0;
    if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    const uint64_t bit = device < 64 ? uint64_t(1) << device : 0;
    if (bit != 0 && (done.load(std::memory_order_acquire) & bit) != 0) return cudaSuccess;
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
    if (e != cudaSuccess) {
        cudaGetLastError();  // reported here: do not leave it to the next launch's check
        return e;
    }
    done.fetch_or(bit, std::memory_order_acq_rel);
    return cudaSuccess;
}

}  // namespace unmask::kernels::cuda
