// CUDA's execution model on the host, so that the kernels of kernels/cuda run in the tests of
// every build, GPU or not. This folder stands in for the toolkit's headers (cuda_runtime_api.h,
// cuda_bf16.h, cuda_fp16.h, mma.h) when kernels/cuda/*.cu are compiled by the host compiler: a
// launch runs the grid's blocks one after another, each block's threads as fibers on the launching
// thread (runtime.cpp), with the dynamic shared memory in a buffer and __shared__ variables as
// thread-local statics; barriers, warp shuffles, votes and WMMA are collectives the threads meet
// at. Kernels read and write host memory, so AddressSanitizer checks their accesses (not
// ThreadSanitizer: the fibers share one thread, and the tests are not built with it).
//
// What breaks CUDA's rules fails the launch with cudaErrorLaunchFailure, and last_fault() says
// why: a barrier some thread never reaches (a deadlock), lanes of a warp at different collectives,
// a full-mask collective with a lane that has left, a shuffle from a lane outside the warp, a WMMA
// pointer or stride the hardware refuses or that differs between lanes.
// A launch configuration a device refuses (threads, grid, shared memory) is an error as on a GPU.
// Not modelled: memory fences between blocks (blocks run in turn), atomics, streams (launches
// run at once), partial masks, __launch_bounds__, static shared memory's size and contents (it is
// not refilled per block: a kernel reading static shared memory it never wrote can pass), lanes
// at different call sites of the same kind of collective, and which lane holds which element of
// WMMA inputs (each lane holds them whole).
#pragma once

#include <bit>
#include <cmath>  // the math a kernel calls unqualified (expf, fmaxf, sqrt, INFINITY), as CUDA's headers give it
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/float_convert.hpp"

// Qualifiers: functions are plain functions; __shared__ variables are statics, one per block
// because blocks run one at a time, and one per launching thread.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))

// Runtime types and the calls the kernels' launchers make.
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorLaunchFailure = 719,
};
struct CUstream_st;
using cudaStream_t = CUstream_st*;
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

// The running thread's place, as the kernel sees it.
inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

namespace cuda_on_host {

// What a collective is: lanes (or threads) meeting at one must all be at the same kind.
enum class Collective { sync_threads, count_threads, sync_warp, shuffle, ballot, wmma_load, wmma_mma, wmma_store };

// Breaks CUDA's rules: the launch fails with `what`.
[[noreturn]] void fault(const std::string& what);
// Why the calling thread's last launch failed ("" if it did not).
const std::string& last_fault();

// Block-wide: waits for every thread of the block that has not returned; returns how many passed
// `true` (count_threads) or 0.
int block_collective(Collective kind, bool predicate);
// Warp-wide (every lane must take part): returns the value lane `source` brought (its own when
// `source` is outside the warp), or, for ballot, a bit per lane that brought a nonzero value.
uint64_t warp_collective(Collective kind, uint64_t value, int source);
// The calling thread's lane (0..31) within its warp.
int lane();

// The block's dynamic shared memory (filled with 0xFF bytes, NaN as floats, at each block's start).
void* dynamic_shared_bytes();
template <typename T>
T* dynamic_shared() {
    return static_cast<T*>(dynamic_shared_bytes());
}

// The dynamic shared memory `kernel` may take (cudaFuncSetAttribute's opt-in, else 48 KiB).
void set_shared_limit(void (*kernel)(), int bytes);
size_t shared_limit(void (*kernel)());

// Runs `thread(context)` (the kernel with its arguments) for every thread of every block.
cudaError_t run_threads(void (*kernel)(), dim3 grid, dim3 block, size_t shared_bytes, void (*thread)(const void*),
                        const void* context);

template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t,
                   Args&&... args) {
    const std::tuple<std::decay_t<Params>...> arguments(std::forward<Args>(args)...);  // as a launch converts them
    struct Context {
        void (*kernel)(Params...);
        const std::tuple<std::decay_t<Params>...>* arguments;
    } context{kernel, &arguments};
    auto thread = [](const void* c) {
        const auto* self = static_cast<const Context*>(c);
        std::apply(self->kernel, *self->arguments);  // each thread its own copy, as kernel parameters are
    };
    return run_threads(reinterpret_cast<void (*)()>(kernel), grid, block, shared_bytes, thread, &context);
}

template <typename T>
uint64_t to_bits(T value) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    return bits;
}
template <typename T>
T from_bits(uint64_t bits) {
    T value;
    std::memcpy(&value, &bits, sizeof(T));
    return value;
}
inline void full_mask(unsigned mask) {
    if (mask != 0xFFFFFFFFu) fault("only full-mask warp collectives are modelled");
}

}  // namespace cuda_on_host

inline cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
inline cudaError_t cudaGetLastError() { return cudaSuccess; }  // launches return their own status here
template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel* kernel, cudaFuncAttribute attribute, int value) {
    constexpr int most = 227 * 1024;  // an H100's or H200's opt-in limit per block
    if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > most)
        return cudaErrorInvalidValue;
    cuda_on_host::set_shared_limit(reinterpret_cast<void (*)()>(kernel), value);
    return cudaSuccess;
}

// Synchronisation and warp intrinsics.
inline void __syncthreads() { cuda_on_host::block_collective(cuda_on_host::Collective::sync_threads, false); }
inline int __syncthreads_count(int predicate) {
    return cuda_on_host::block_collective(cuda_on_host::Collective::count_threads, predicate != 0);
}
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
    cuda_on_host::full_mask(mask);
    cuda_on_host::warp_collective(cuda_on_host::Collective::sync_warp, 0, 0);
}
template <typename T>
T __shfl_sync(unsigned mask, T value, int source) {
    cuda_on_host::full_mask(mask);
    return cuda_on_host::from_bits<T>(cuda_on_host::warp_collective(
        cuda_on_host::Collective::shuffle, cuda_on_host::to_bits(value), source & 31));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
    return __shfl_sync(mask, value, cuda_on_host::lane() ^ lane_mask);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta) {
    cuda_on_host::full_mask(mask);
    return cuda_on_host::from_bits<T>(cuda_on_host::warp_collective(
        cuda_on_host::Collective::shuffle, cuda_on_host::to_bits(value), cuda_on_host::lane() - int(delta)));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
    cuda_on_host::full_mask(mask);
    return unsigned(cuda_on_host::warp_collective(cuda_on_host::Collective::ballot, predicate != 0, 0));
}

// Arithmetic intrinsics: host arithmetic is IEEE with round to nearest (these files are compiled
// without contraction into fused multiply-adds).
inline int __popc(unsigned x) { return std::popcount(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }

// bf16 and fp16, rounded to nearest even.
struct __nv_bfloat16 {
    uint16_t bits;
};
struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
struct __half {
    uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 h) { return unmask::bf16_to_float(h.bits); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return {unmask::float_to_bf16(f)}; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)};
}
inline float __half2float(__half h) { return unmask::fp16_to_float(h.bits); }
inline __half __float2half_rn(float f) { return {unmask::float_to_fp16(f)}; }
inline __half __ushort_as_half(unsigned short bits) { return {bits}; }
