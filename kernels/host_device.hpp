// UNMASK_HOST_DEVICE: for functions that serve the CPU and the CUDA kernels alike (compiled as
// __host__ __device__ by nvcc, as plain functions otherwise).
#pragma once

#ifndef UNMASK_HOST_DEVICE
#if defined(__CUDACC__)
#define UNMASK_HOST_DEVICE __host__ __device__
#else
#define UNMASK_HOST_DEVICE
#endif
#endif
