#include "cuda/moe.hpp"

#include "cuda/device_math.cuh"
#include "cuda/launch.cuh"
#include "expert_groups.hpp"

namespace unmask::kernels::cuda {
namespace {

constexpr int threads = 256;
constexpr int route_per_lane = int(max_route_experts / 32);
static_assert(max_experts_per_token <= 32, "route keeps one chosen expert per lane");

// One warp per row; lane l holds experts l, l + 32, ... Scores in float64 as on the CPU (the sum
// of a softmax in the warp's order, not serially: the weights may differ in the last bits).
__global__ void route_kernel(const float* logits, int64_t rows, RouteParams p, int32_t* experts, float* weights) {
    const int lane = threadIdx.x & 31;
    const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;  // the whole warp: row is uniform within it
    const float* in = logits + row * p.experts;
    double score[route_per_lane], selection[route_per_lane];
    float max = -INFINITY;
#pragma unroll
    for (int i = 0; i < route_per_lane; ++i)
        if (lane + 32 * i < p.experts) max = fmaxf(max, in[lane + 32 * i]);
    for (int offset = 16; offset > 0; offset >>= 1) max = fmaxf(max, __shfl_xor_sync(0xFFFFFFFFu, max, offset));
    double total = 0;
#pragma unroll
    for (int i = 0; i < route_per_lane; ++i) {
        const int64_t e = lane + 32 * i;
        score[i] = 0;
        selection[i] = -INFINITY;
        if (e >= p.experts) continue;
        score[i] = p.sigmoid ? 1.0 / (1.0 + exp(-double(in[e]))) : exp(double(in[e]) - double(max));
        total += score[i];
    }
    if (!p.sigmoid) {
        total = warp_sum(total);
#pragma unroll
        for (int i = 0; i < route_per_lane; ++i) score[i] /= total;
    }
#pragma unroll
    for (int i = 0; i < route_per_lane; ++i) {
        const int64_t e = lane + 32 * i;
        if (e >= p.experts) continue;
        const double bias = p.expert_bias.data != nullptr ? load(p.expert_bias.data, p.expert_bias.type, e) : 0.0f;
        selection[i] = score[i] + bias;
        if (selection[i] != selection[i]) selection[i] = -INFINITY;  // NaN: last, yet still a valid choice
    }
    // experts_per_token rounds of a warp-wide arg max; lane j keeps the j-th choice.
    uint32_t taken = 0;  // bit i: expert lane + 32 i is chosen, or is outside the kept groups
    if (p.groups > 1) {
        // Each group's two highest selection scores over the warp, then the kept groups (the same
        // on every lane).
        const int64_t group_size = p.experts / p.groups;
        double group_scores[max_expert_groups];
        for (int64_t g = 0; g < p.groups; ++g) {
            double first = -INFINITY, second = -INFINITY;
#pragma unroll
            for (int i = 0; i < route_per_lane; ++i) {
                const int64_t e = lane + 32 * i;
                if (e < p.experts && e / group_size == g) keep_two_highest(first, second, selection[i]);
            }
            for (int offset = 16; offset > 0; offset >>= 1) {
                const double other_first = __shfl_xor_sync(0xFFFFFFFFu, first, offset);
                const double other_second = __shfl_xor_sync(0xFFFFFFFFu, second, offset);
                keep_two_highest(first, second, other_first);
                keep_two_highest(first, second, other_second);
            }
            group_scores[g] = first + second;
        }
        const uint64_t kept = kept_expert_groups(group_scores, p.groups, p.top_groups);
#pragma unroll
        for (int i = 0; i < route_per_lane; ++i) {
            const int64_t e = lane + 32 * i;
            if (e < p.experts && !(kept >> (e / group_size) & 1u)) taken |= 1u << i;
        }
    }
    double chosen_score = 0;
    int32_t chosen_expert = 0;
    for (int64_t j = 0; j < p.experts_per_token; ++j) {
        Best best{-INFINITY, INT64_MAX};
#pragma unroll
        for (int i = 0; i < route_per_lane; ++i)
            if (lane + 32 * i < p.experts && !(taken >> i & 1u)) best = better(best, {selection[i], lane + 32 * i});
        best = warp_best(best);
        const int owner = int(best.index & 31), slot = int(best.index >> 5);
        double owned = 0;
#pragma unroll
        for (int i = 0; i < route_per_lane; ++i)
            if (i == slot) owned = score[i];
        if (lane == owner) taken |= 1u << slot;
        owned = __shfl_sync(0xFFFFFFFFu, owned, owner);
        if (lane == j) {
            chosen_score = owned;
            chosen_expert = int32_t(best.index);
        }
    }
    double chosen_total = 0;  // in choice order, as on the CPU
    for (int64_t j = 0; j < p.experts_per_token; ++j) chosen_total += __shfl_sync(0xFFFFFFFFu, chosen_score, int(j));
    if (lane < p.experts_per_token) {
        const double w = p.normalize_top_k ? chosen_score / chosen_total : chosen_score;
        experts[row * p.experts_per_token + lane] = chosen_expert;
        weights[row * p.experts_per_token + lane] = static_cast<float>(w * p.scaling);
    }
}

// Block e counts the slots routed to expert e. Block 0 also points every slot at token 0 with
// scale 0, so that a table route could not have made leaves nothing unwritten for the steps after
// (place_kernel writes over it: it runs after this kernel on the stream).
__global__ void count_kernel(const int32_t* experts, int64_t slots, int32_t* counts, int32_t* slot_rows,
                             int32_t* token_slots, float* token_scales) {
    const auto e = int32_t(blockIdx.x);
    if (e == 0) {
        for (int64_t i = threadIdx.x; i < slots; i += blockDim.x) {
            slot_rows[i] = token_slots[i] = 0;
            token_scales[i] = 0;
        }
    }
    int32_t count = 0;
    for (int64_t base = 0; base < slots; base += blockDim.x) {
        const int64_t i = base + threadIdx.x;
        count += __syncthreads_count(i < slots && experts[i] == e);
    }
    if (threadIdx.x == 0) counts[e] = count;
}

// Block e writes expert e's slots, a stable compaction of the routing table in blocks of
// blockDim (a multiple of 32) entries: within a block, a slot's place is the count of earlier
// warps' and earlier lanes' entries for e. A bad table (slots naming no expert in range, a token
// naming one twice) sets *fault.
__global__ void place_kernel(const int32_t* experts, const float* weights, int64_t slots, int64_t k,
                             int64_t expert_count, const int32_t* counts, int32_t* offsets, int32_t* fault,
                             int32_t* slot_rows, int32_t* token_slots, float* token_scales) {
    __shared__ int32_t warp_counts[32];
    __shared__ int32_t start;
    const auto e = int32_t(blockIdx.x);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (threadIdx.x == 0) {
        int32_t sum = 0;
        for (int32_t other = 0; other < e; ++other) sum += counts[other];
        start = offsets[e] = sum;
        if (e == expert_count - 1) {
            offsets[expert_count] = sum + counts[e];
            if (sum + counts[e] != slots) *fault = 1;
        }
    }
    __syncthreads();
    int32_t next = start;
    for (int64_t base = 0; base < slots; base += blockDim.x) {
        const int64_t i = base + threadIdx.x;
        const bool mine = i < slots && experts[i] == e;
        const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, mine);
        if (lane == 0) warp_counts[warp] = __popc(ballot);
        __syncthreads();
        int32_t before = 0, total = 0;
        for (int w = 0; w < warps; ++w) {
            before += w < warp ? warp_counts[w] : 0;
            total += warp_counts[w];
        }
        if (mine) {
            const int32_t slot = next + before + __popc(ballot & ((1u << lane) - 1u));
            const int64_t t = i / k;
            slot_rows[slot] = int32_t(t);
            int64_t rank = 0;  // e's place among the token's experts in ascending order
            for (int64_t j = 0; j < k; ++j) {
                rank += experts[t * k + j] < e;
                if (experts[t * k + j] == e && t * k + j != i) *fault = 1;
            }
            token_slots[t * k + rank] = slot;
            token_scales[t * k + rank] = weights[i];
        }
        next += total;
        __syncthreads();  // warp_counts is rewritten by the next round
    }
}

__global__ void unpermute_add_kernel(float* x, int64_t rows, int64_t dim, int64_t k, const int32_t* token_slots,
                                     const float* token_scales, const float* y) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * dim;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t t = i / dim, c = i % dim;
        float sum = x[i];
        for (int64_t j = 0; j < k; ++j)
            sum = __fadd_rn(sum, __fmul_rn(token_scales[t * k + j], y[int64_t(token_slots[t * k + j]) * dim + c]));
        x[i] = sum;
    }
}

}  // namespace

cudaError_t route(const float* logits, int64_t rows, const RouteParams& params, int32_t* experts, float* weights,
                  cudaStream_t stream) {
    if (params.experts < 1 || params.experts > max_route_experts || params.experts_per_token < 1 ||
        params.experts_per_token > params.experts || params.experts_per_token > max_experts_per_token ||
        params.groups < 1 || params.groups > max_expert_groups || params.experts % params.groups != 0 ||
        params.top_groups < 1 || params.top_groups > params.groups ||
        params.top_groups * (params.experts / params.groups) < params.experts_per_token)
        return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    const int64_t rows_per_block = threads / 32;
    return launch_kernel(route_kernel, static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block), threads, 0,
                         stream, logits, rows, params, experts, weights);
}

cudaError_t group_by_expert(const int32_t* experts, const float* weights, int64_t rows, int64_t k,
                            int64_t expert_count, int32_t* counts, int32_t* offsets, int32_t* fault,
                            int32_t* slot_rows, int32_t* token_slots, float* token_scales, cudaStream_t stream) {
    if (expert_count < 1 || expert_count > INT32_MAX || k < 1 || rows < 0 || rows * k > INT32_MAX)
        return cudaErrorInvalidValue;
    const auto blocks = static_cast<unsigned>(expert_count);
    if (const cudaError_t e = launch_kernel(count_kernel, blocks, threads, 0, stream, experts, rows * k, counts,
                                            slot_rows, token_slots, token_scales);
        e != cudaSuccess)
        return e;
    return launch_kernel(place_kernel, blocks, threads, 0, stream, experts, weights, rows * k, k, expert_count, counts,
                         offsets, fault, slot_rows, token_slots, token_scales);
}

cudaError_t unpermute_add(float* x, int64_t rows, int64_t dim, int64_t k, const int32_t* token_slots,
                          const float* token_scales, const float* y, cudaStream_t stream) {
    if (rows * dim == 0) return cudaSuccess;
    return launch_kernel(unpermute_add_kernel, grid_for(rows * dim, threads), threads, 0, stream, x, rows, dim, k,
                         token_slots, token_scales, y);
}

}  // namespace unmask::kernels::cuda
