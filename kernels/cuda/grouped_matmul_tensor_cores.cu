// Grouped matmuls on tensor cores for groups of any size (the experts of a MoE layer over a
// prefill or a full canvas): one launch per output covers every group, the offsets read on the
// device, so nothing comes to the host and the step can be a CUDA graph. A block of four warps
// takes a tile of 64 of one group's rows by 64 output columns; per 32 of k, both tiles come into
// shared memory (16-byte loads, rows past the group's or columns past n as zeros) and each warp
// multiplies its 32 x 32 quarter as 2 x 2 WMMA 16x16x16 fragments with fp32 accumulation. The
// results go through shared memory, so only the tile's rows and columns within bounds are written.
#include "cuda/grouped_matmul.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "cuda/alignment.hpp"
#include "cuda/launch.cuh"

namespace unmask::kernels::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int warps = 4;
constexpr int tile_rows = 64, tile_columns = 64, tile_k = 32;
constexpr int run = 8;                     // elements of a 16-byte load
constexpr int input_stride = tile_k + 8;   // shared rows of the x and weight tiles (elements): 80 bytes
constexpr int output_stride = tile_columns + 4;  // shared rows of the results (floats)
static_assert(tile_rows == tile_columns && tile_rows == 2 * 32, "2 x 2 warps of 32 x 32");

// The rows of one group a block takes.
struct RowTile {
    int64_t group;  // -1: the block has no tile
    int64_t first;  // its first row among the slots
    int64_t rows;   // 1..tile_rows
};

// Group g's first row and row count, kept within the slots whatever the offsets say (rising
// offsets within the slots, as group_by_expert leaves them, are taken as they are).
struct GroupRows {
    int64_t first, rows;
};
__device__ __forceinline__ GroupRows group_rows(const int32_t* offsets, int64_t g, int64_t slots) {
    const int64_t first = min(max(int64_t(offsets[g]), int64_t(0)), slots);
    const int64_t end = min(max(int64_t(offsets[g + 1]), first), slots);
    return {first, end - first};
}

__device__ __forceinline__ int64_t tiles_of(int64_t rows) { return (rows + tile_rows - 1) / tile_rows; }

// Row tile `tile` when the tiles are numbered group by group, ceil(rows / tile_rows) each: each
// thread counts the tiles of a contiguous share of the groups, a block-wide scan of the counts
// places the shares, and the thread whose share holds the tile names it. Every thread of the
// block must call it; all get the same answer.
__device__ RowTile find_row_tile(const int32_t* offsets, int64_t groups, int64_t slots, int64_t tile) {
    __shared__ int64_t warp_totals[warps];
    __shared__ RowTile found;
    const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
    const int64_t share = (groups + warps * 32 - 1) / (warps * 32);
    const int64_t begin = min(groups, int64_t(threadIdx.x) * share), end = min(groups, begin + share);
    int64_t mine = 0;
    for (int64_t g = begin; g < end; ++g) mine += tiles_of(group_rows(offsets, g, slots).rows);
    int64_t inclusive = mine;  // the warp's inclusive scan
    for (int offset = 1; offset < 32; offset <<= 1) {
        const auto below = static_cast<int64_t>(__shfl_up_sync(0xFFFFFFFFu, static_cast<long long>(inclusive), offset));
        if (lane >= offset) inclusive += below;
    }
    if (lane == 31) warp_totals[warp] = inclusive;
    if (threadIdx.x == 0) found = RowTile{-1, 0, 0};
    __syncthreads();
    int64_t before = inclusive - mine;
    for (int w = 0; w < warp; ++w) before += warp_totals[w];
    if (tile >= before && tile < before + mine) {
        int64_t t = tile - before;
        for (int64_t g = begin; g < end; ++g) {
            const GroupRows group = group_rows(offsets, g, slots);
            const int64_t tiles = tiles_of(group.rows);
            if (t < tiles) {
                found = RowTile{g, group.first + t * tile_rows, min(int64_t(tile_rows), group.rows - t * tile_rows)};
                break;
            }
            t -= tiles;
        }
    }
    __syncthreads();
    return found;
}

template <typename Element>
__global__ void __launch_bounds__(warps * 32)
    grouped_matmul_tensor_cores_kernel(const Element* x, const void* const* weights, const int32_t* offsets,
                                       int64_t groups, int64_t slots, int64_t n, int64_t k, float* out) {
    __shared__ __align__(128) Element x_tile[tile_rows * input_stride];
    __shared__ __align__(128) Element w_tile[tile_columns * input_stride];
    __shared__ __align__(128) float results[tile_rows * output_stride];
    const RowTile tile = find_row_tile(offsets, groups, slots, blockIdx.y);
    if (tile.group < 0) return;  // the whole block: more tiles were launched than the groups have
    const auto* w = static_cast<const Element*>(weights[tile.group]);
    const int64_t column0 = int64_t(blockIdx.x) * tile_columns;
    const int warp = static_cast<int>(threadIdx.x >> 5);
    const int warp_row = (warp >> 1) * 32, warp_column = (warp & 1) * 32;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> sums[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(sums[i][j], 0.0f);

    for (int64_t k0 = 0; k0 < k; k0 += tile_k) {
        for (int i = threadIdx.x; i < tile_rows * tile_k / run; i += blockDim.x) {
            const int r = i / (tile_k / run), c = i % (tile_k / run) * run;
            const bool inside = k0 + c < k;  // k is a multiple of 8: a run is wholly in or out
            uint4 xs = make_uint4(0, 0, 0, 0), ws = xs;
            if (inside && r < tile.rows) xs = *reinterpret_cast<const uint4*>(x + (tile.first + r) * k + k0 + c);
            if (inside && column0 + r < n) ws = *reinterpret_cast<const uint4*>(w + (column0 + r) * k + k0 + c);
            *reinterpret_cast<uint4*>(x_tile + r * input_stride + c) = xs;
            *reinterpret_cast<uint4*>(w_tile + r * input_stride + c) = ws;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < tile_k; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, Element, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, Element, wmma::col_major> b[2];  // wᵀ: w's rows as columns
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                wmma::load_matrix_sync(a[i], x_tile + (warp_row + 16 * i) * input_stride + kk, input_stride);
                wmma::load_matrix_sync(b[i], w_tile + (warp_column + 16 * i) * input_stride + kk, input_stride);
            }
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(sums[i][j], a[i], b[j], sums[i][j]);
        }
        __syncthreads();  // the tiles are read before the next ones come
    }

#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(results + (warp_row + 16 * i) * output_stride + warp_column + 16 * j, sums[i][j],
                                    output_stride, wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < tile_rows * tile_columns; i += blockDim.x) {
        const int r = i / tile_columns, c = i % tile_columns;
        if (r < tile.rows && column0 + c < n) out[(tile.first + r) * n + column0 + c] = results[r * output_stride + c];
    }
}

// Every group's last tile may be partial: at most slots / tile_rows + groups tiles of rows.
int64_t row_tiles(int64_t slots, int64_t groups) noexcept { return slots / tile_rows + groups; }

}  // namespace

bool grouped_matmul_on_tensor_cores(ElementType type, int64_t slots, int64_t groups, int64_t k) noexcept {
    return (type == ElementType::bf16 || type == ElementType::f16) && k > 0 && k % run == 0 && slots >= 0 &&
           groups >= 0 && row_tiles(slots, groups) <= 65535;
}

cudaError_t grouped_matmul_tensor_cores(const void* x, int64_t slots, const void* const* weights,
                                        const int32_t* offsets, int64_t groups, ElementType type, int64_t n,
                                        int64_t k, float* out, cudaStream_t stream) {
    if (slots == 0 || groups == 0 || n == 0) return cudaSuccess;
    const int64_t column_tiles = (n + tile_columns - 1) / tile_columns;
    if (!grouped_matmul_on_tensor_cores(type, slots, groups, k) || n < 0 || column_tiles > INT32_MAX || !on_16_bytes(x))
        return cudaErrorInvalidValue;
    const dim3 grid(static_cast<unsigned>(column_tiles), static_cast<unsigned>(row_tiles(slots, groups)));
    if (type == ElementType::bf16)
        return launch_kernel(grouped_matmul_tensor_cores_kernel<__nv_bfloat16>, grid, warps * 32, 0, stream,
                             static_cast<const __nv_bfloat16*>(x), weights, offsets, groups, slots, n, k, out);
    return launch_kernel(grouped_matmul_tensor_cores_kernel<__half>, grid, warps * 32, 0, stream,
                         static_cast<const __half*>(x), weights, offsets, groups, slots, n, k, out);
}

}  // namespace unmask::kernels::cuda
