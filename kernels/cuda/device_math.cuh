// Device helpers shared by the CUDA kernels: loads of stored element types, grid sizing and
// block-wide reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "cuda/filter_threshold.hpp"  // Best, better
#include "cuda/ops.hpp"

namespace unmask::kernels::cuda {

__device__ __forceinline__ float load(const void* data, ElementType type, int64_t i) {
    switch (type) {
        case ElementType::bf16: return __uint_as_float(uint32_t(static_cast<const uint16_t*>(data)[i]) << 16);
        case ElementType::f16: return __half2float(static_cast<const __half*>(data)[i]);
        default: return static_cast<const float*>(data)[i];
    }
}

// Blocks for a grid-stride loop over n items of `threads` each, capped so any n launches.
inline unsigned grid_for(int64_t n, int threads) {
    const int64_t wanted = (n + threads - 1) / threads;
    return static_cast<unsigned>(wanted < 1 ? 1 : wanted > 65535 ? 65535 : wanted);
}

__device__ __forceinline__ double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
    return v;
}

// The sum of v over the block, returned to every thread. Every thread of the block must call it.
__device__ inline double block_sum(double v) {
    __shared__ double partial[32];
    v = warp_sum(v);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    __syncthreads();  // an earlier call may still be reading partial
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = lane < warps ? partial[lane] : 0.0;
    return warp_sum(v);
}

// The best (value, index) over the warp, returned to every lane. Every lane must call it.
__device__ __forceinline__ Best warp_best(Best v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        const Best other{__shfl_xor_sync(0xFFFFFFFFu, v.value, offset),
                         static_cast<int64_t>(__shfl_xor_sync(0xFFFFFFFFu, static_cast<long long>(v.index), offset))};
        v = better(v, other);
    }
    return v;
}

// The best (value, index) over the block, returned to every thread. Every thread must call it.
__device__ inline Best block_best(Best v) {
    __shared__ Best partial[32];
    v = warp_best(v);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = lane < warps ? partial[lane] : Best{-INFINITY, INT64_MAX};
    return warp_best(v);
}

}  // namespace unmask::kernels::cuda
