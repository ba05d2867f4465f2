// One way to launch a kernel: on the device (nvcc), or on host threads when the kernels are
// compiled by the host compiler for their tests (tests/cuda_on_host stands in for the toolkit).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

namespace unmask::kernels::cuda {

// Launches `kernel` over `grid` blocks of `block` threads with `shared_bytes` of dynamic shared
// memory on `stream`, and returns the launch's status.
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                          Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "one argument per kernel parameter");
    static_assert((std::is_convertible_v<Args&&, Params> && ...), "arguments convert to the parameters implicitly");
#if defined(__CUDACC__)
    kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
    return cudaGetLastError();
#else
    return cuda_on_host::launch(kernel, grid, block, shared_bytes, stream, std::forward<Args>(args)...);
#endif
}

}  // namespace unmask::kernels::cuda
