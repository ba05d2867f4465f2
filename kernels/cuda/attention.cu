#include "cuda/attention.hpp"

#include "cuda/device_math.cuh"

namespace unmask::kernels::cuda {
namespace {

constexpr int warps_per_block = 4;
constexpr int max_per_lane = max_attention_head_dim / 32;

// One warp per (query row, head): lane l holds dimensions l, l + 32, ... of q and of the output.
__global__ void attention_kernel(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                                 int64_t sequence_count, int64_t tokens, AttentionDims dims, float* out) {
    const int64_t item = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (item >= tokens * dims.heads) return;  // whole warps only
    const int64_t row = item / dims.heads, head = item % dims.heads;

    // The sequence holding `row`: the last one starting at or before it.
    int64_t lo = 0, hi = sequence_count - 1;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (sequences[mid].first_row <= row) lo = mid;
        else hi = mid - 1;
    }
    const AttentionSequence seq = sequences[lo];
    if (row < seq.first_row || row >= seq.first_row + seq.rows) return;  // a row no sequence owns
    const int64_t d = dims.head_dim, q_stride = dims.heads * d, kv_stride = dims.kv_heads * d;
    const int64_t kv_head = head / (dims.heads / dims.kv_heads);
    const bool cached = seq.keys != nullptr;
    const float* keys = (cached ? seq.keys : k + seq.first_row * kv_stride) + kv_head * d;
    const float* values = (cached ? seq.values : v + seq.first_row * kv_stride) + kv_head * d;
    const int64_t key_count = cached ? seq.key_count : seq.rows;
    int64_t visible = key_count;
    if (dims.block_size > 0) {
        const int64_t position = seq.query_position + (row - seq.first_row);
        const int64_t end = position < seq.block_origin
                                ? seq.block_origin
                                : seq.block_origin + ((position - seq.block_origin) / dims.block_size + 1) * dims.block_size;
        visible = end < key_count ? end : key_count;
    }

    const float scale = static_cast<float>(1.0 / sqrt(double(d)));
    float query[max_per_lane], acc[max_per_lane];
    const float* q_row = q + row * q_stride + head * d;
#pragma unroll
    for (int j = 0; j < max_per_lane; ++j) {
        const int64_t c = lane + 32 * j;
        query[j] = c < d ? q_row[c] * scale : 0.0f;
        acc[j] = 0.0f;
    }
    float running_max = -INFINITY, total = 0.0f;
    for (int64_t key = 0; key < visible; ++key) {
        const float* key_row = keys + key * kv_stride;
        float partial = 0.0f;
#pragma unroll
        for (int j = 0; j < max_per_lane; ++j) {
            const int64_t c = lane + 32 * j;
            if (c < d) partial += query[j] * key_row[c];
        }
        const float score = warp_sum(partial);
        const float next_max = fmaxf(running_max, score);
        const float correction = expf(running_max - next_max);  // 0 for the first key
        const float weight = expf(score - next_max);
        total = total * correction + weight;
        const float* value_row = values + key * kv_stride;
#pragma unroll
        for (int j = 0; j < max_per_lane; ++j) {
            const int64_t c = lane + 32 * j;
            if (c < d) acc[j] = acc[j] * correction + weight * value_row[c];
        }
        running_max = next_max;
    }
    float* out_row = out + row * q_stride + head * d;
    const float inverse = total > 0.0f ? 1.0f / total : 0.0f;
#pragma unroll
    for (int j = 0; j < max_per_lane; ++j) {
        const int64_t c = lane + 32 * j;
        if (c < d) out_row[c] = acc[j] * inverse;
    }
}

}  // namespace

cudaError_t attention(const float* q, const float* k, const float* v, const AttentionSequence* sequences,
                      int64_t sequence_count, int64_t tokens, const AttentionDims& dims, float* out,
                      cudaStream_t stream) {
    const int64_t warps = tokens * dims.heads;
    if (warps == 0 || sequence_count == 0) return cudaSuccess;
    if (dims.head_dim <= 0 || dims.head_dim > max_attention_head_dim || dims.kv_heads <= 0 ||
        dims.heads % dims.kv_heads != 0 || sequence_count < 0)
        return cudaErrorInvalidValue;
    const int64_t blocks = (warps + warps_per_block - 1) / warps_per_block;
    if (blocks > INT32_MAX) return cudaErrorInvalidValue;
    attention_kernel<<<static_cast<unsigned>(blocks), warps_per_block * 32, 0, stream>>>(q, k, v, sequences,
                                                                                         sequence_count, tokens, dims, out);
    return cudaGetLastError();
}

}  // namespace unmask::kernels::cuda
