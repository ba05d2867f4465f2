#include "cuda/convert.hpp"

namespace unmask::kernels::cuda {
namespace {

__global__ void bf16_to_fp32_kernel(const uint16_t* __restrict__ source, float* __restrict__ destination,
                                    size_t n) {
    // A grid-stride loop, so any n works with a bounded grid.
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        destination[i] = __uint_as_float(uint32_t(source[i]) << 16);
}

}  // namespace

cudaError_t bf16_to_fp32(const uint16_t* source, float* destination, size_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    constexpr int threads = 256;
    const size_t wanted = (n + threads - 1) / threads;
    const int blocks = static_cast<int>(wanted < 65535 ? wanted : 65535);
    bf16_to_fp32_kernel<<<blocks, threads, 0, stream>>>(source, destination, n);
    return cudaGetLastError();
}

}  // namespace unmask::kernels::cuda
