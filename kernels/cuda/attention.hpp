// Attention on the device: softmax(q kᵀ / sqrt(d) + mask) v for every query row and head of a
// packed batch, bidirectional or block-causal, with grouped K/V heads and cache views; the same
// contract as kernels/cpu/attention.hpp, computed with an online softmax (keys streamed once,
// no score matrix).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace unmask::kernels::cuda {

// One sequence of the batch (device-visible copy). keys == nullptr: its own rows of k and v.
struct AttentionSequence {
    int64_t first_row = 0;
    int64_t rows = 0;
    const float* keys = nullptr;
    const float* values = nullptr;
    int64_t key_count = 0;       // with a cache view
    int64_t query_position = 0;  // position of the first query (block-causal masks)
    int64_t block_origin = 0;
};

struct AttentionDims {
    int64_t heads = 0, kv_heads = 0, head_dim = 0;
    int64_t block_size = 0;  // 0: bidirectional
};

// The largest head_dim the kernel takes (each lane of a warp holds head_dim / 32 values).
inline constexpr int64_t max_attention_head_dim = 256;

// `sequences` (device memory, ordered by first_row, covering rows [0, tokens)).
cudaError_t attention(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                      int64_t sequence_count, int64_t tokens, const AttentionDims& dims, float* out,
                      cudaStream_t stream);

}  // namespace unmask::kernels::cuda
