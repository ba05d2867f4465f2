// What the attention kernels share: which sequence a block's query tile belongs to, how many keys
// a query sees under the mask, and the opt-in to more than 48 KiB of shared memory.
#pragma once

#include <atomic>
#include <cstdint>

#include "cuda/attention.hpp"

namespace unmask::kernels::cuda {

// The sequence holding query tile `tile`: the last starting at or before it.
__device__ __forceinline__ AttentionSequence sequence_of_tile(const AttentionSequence* sequences, int64_t count,
                                                              int64_t tile) {
    int64_t lo = 0, hi = count - 1;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (sequences[mid].first_tile <= tile) lo = mid;
        else hi = mid - 1;
    }
    return sequences[lo];
}

// How many of the keys the query at `index` within `seq` sees (block-causal masks: up to the end
// of its block; kernels/cpu/attention.hpp block_end).
__device__ __forceinline__ int64_t visible_keys(const AttentionSequence& seq, int64_t index, int64_t block_size,
                                                int64_t key_count) {
    if (block_size <= 0) return key_count;
    const int64_t position = seq.query_position + index;
    const int64_t end = position < seq.block_origin
                            ? seq.block_origin
                            : seq.block_origin + ((position - seq.block_origin) / block_size + 1) * block_size;
    return end < key_count ? end : key_count;
}

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
