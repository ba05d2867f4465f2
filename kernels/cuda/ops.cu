#include "cuda/ops.hpp"

#include <cfloat>

#include "cuda/alignment.hpp"
#include "cuda/device_math.cuh"
#include "cuda/launch.cuh"
#include "fp8_tiles.hpp"
#include "quantized_runs.hpp"

namespace unmask::kernels::cuda {
namespace {

constexpr int threads = 256;

#define UNMASK_GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

__global__ void embedding_kernel(WeightView table, int64_t cols, const int32_t* ids, int64_t rows, float* out) {
    UNMASK_GRID_STRIDE(i, rows * cols) {
        const int64_t r = i / cols, c = i % cols;
        out[i] = load(table.data, table.type, int64_t(ids[r]) * cols + c);
    }
}

// A block-type table: each thread decodes a run of 8 of a row's elements (cols whole blocks).
__global__ void quantized_embedding_kernel(WeightView table, int64_t cols, const int32_t* ids, int64_t rows, float* out) {
    const int64_t runs = cols / quantized_run;
    UNMASK_GRID_STRIDE(i, rows * runs) {
        const int64_t r = i / runs, at = i % runs * quantized_run;
        float values[quantized_run];
        decode_quantized_run(table.type, static_cast<const uint8_t*>(table.data) + int64_t(ids[r]) * row_bytes(table.type, cols),
                             at, values);
        for (int j = 0; j < quantized_run; ++j) out[r * cols + at + j] = values[j];
    }
}

// Element i of `rounded` (bf16 or f16) set to v rounded to nearest even, as round_to does.
__device__ __forceinline__ void store_rounded(const Rounded& rounded, int64_t i, float v) {
    if (rounded.type == ElementType::bf16) static_cast<__nv_bfloat16*>(rounded.data)[i] = __float2bfloat16_rn(v);
    else static_cast<__half*>(rounded.data)[i] = __float2half_rn(v);
}

// One block per row: the sum of squares in float64, as on the CPU. With `y` (rows of `dim`),
// x += y first: the residual add fused with the norm (each thread reads back only what it wrote).
// With Quads (dim a multiple of 4, every row on 16 bytes) in 16-byte loads and stores; with
// rounded.data, the output also rounded into rows of `dim` there.
template <bool Quads>
__global__ void rmsnorm_kernel(float* x, const float* y, int64_t dim, int64_t x_stride, WeightView w, double eps,
                               float* out, int64_t out_stride, Rounded rounded) {
    float* in = x + blockIdx.x * x_stride;
    float* dst = out + blockIdx.x * out_stride;
    const int64_t step = Quads ? 4 : 1, first = threadIdx.x * step, stride = blockDim.x * step;
    double sum = 0;
    for (int64_t i = first; i < dim; i += stride) {
        float value[step];
        if constexpr (Quads) {
            const float4 v = *reinterpret_cast<const float4*>(in + i);
            value[0] = v.x, value[1] = v.y, value[2] = v.z, value[3] = v.w;
        } else {
            value[0] = in[i];
        }
        if (y != nullptr) {
            for (int64_t j = 0; j < step; ++j) value[j] += y[blockIdx.x * dim + i + j];
            if constexpr (Quads) *reinterpret_cast<float4*>(in + i) = make_float4(value[0], value[1], value[2], value[3]);
            else in[i] = value[0];
        }
        for (int64_t j = 0; j < step; ++j) sum += double(value[j]) * value[j];
    }
    sum = block_sum(sum);
    const auto scale = static_cast<float>(1.0 / sqrt(sum / double(dim) + eps));
    for (int64_t i = first; i < dim; i += stride) {
        float value[step];
        for (int64_t j = 0; j < step; ++j) value[j] = in[i + j] * scale * load(w.data, w.type, i + j);
        if constexpr (Quads) *reinterpret_cast<float4*>(dst + i) = make_float4(value[0], value[1], value[2], value[3]);
        else dst[i] = value[0];
        if (rounded.data != nullptr)
            for (int64_t j = 0; j < step; ++j) store_rounded(rounded, blockIdx.x * dim + i + j, value[j]);
    }
}

__global__ void add_bias_kernel(float* x, int64_t rows, int64_t dim, WeightView bias) {
    UNMASK_GRID_STRIDE(i, rows * dim) x[i] += load(bias.data, bias.type, i % dim);
}

// One thread per (row, pair, group of rope_heads heads): the angle, its cosine and sine in float64,
// as on the CPU, then the pair of each of the group's heads loaded before any is stored (a warp's
// lanes take neighbouring pairs: coalesced).
constexpr int64_t rope_heads = 8;
__global__ void rope_kernel(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions,
                            double theta, int64_t rotary_dims, bool interleaved) {
    const int64_t half = rotary_dims / 2, groups = (heads + rope_heads - 1) / rope_heads;
    UNMASK_GRID_STRIDE(item, rows * groups * half) {
        const int64_t i = item % half, group = item / half % groups, t = item / (half * groups);
        const double angle = positions[t] * pow(theta, -2.0 * double(i) / double(rotary_dims));
        const auto c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
        const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
        float* first = x + (t * heads + group * rope_heads) * head_dim;
        const int64_t count = heads - group * rope_heads < rope_heads ? heads - group * rope_heads : rope_heads;
        float x1[rope_heads], x2[rope_heads];
        for (int64_t h = 0; h < rope_heads; ++h) {
            if (h >= count) break;
            x1[h] = first[h * head_dim + a];
            x2[h] = first[h * head_dim + b];
        }
        for (int64_t h = 0; h < rope_heads; ++h) {
            if (h >= count) break;
            first[h * head_dim + a] = x1[h] * c - x2[h] * s;
            first[h * head_dim + b] = x2[h] * c + x1[h] * s;
        }
    }
}

__global__ void swiglu_kernel(float* gate, const float* up, int64_t n, Rounded rounded) {
    UNMASK_GRID_STRIDE(i, n) {
        const float g = gate[i], value = g / (1.0f + expf(-g)) * up[i];
        gate[i] = value;
        if (rounded.data != nullptr) store_rounded(rounded, i, value);
    }
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
    UNMASK_GRID_STRIDE(i, n) x[i] += y[i];
}

__global__ void gather_rows_kernel(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out) {
    UNMASK_GRID_STRIDE(i, count * dim) out[i] = x[int64_t(rows[i / dim]) * dim + i % dim];
}

__global__ void combine_guidance_kernel(float* cond, const float* uncond, float factor, int64_t n) {
    UNMASK_GRID_STRIDE(i, n) cond[i] = uncond[i] + factor * (cond[i] - uncond[i]);
}

__global__ void round_to_kernel(const float* x, int64_t n, ElementType type, void* out) {
    UNMASK_GRID_STRIDE(i, n) {
        if (type == ElementType::bf16) static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(x[i]);
        else static_cast<__half*>(out)[i] = __float2half_rn(x[i]);
    }
}

// One warp per group of 128 values, 4 to a lane: the group's largest finite magnitude, then its
// codes (a magnitude of at most FLT_MAX is finite: NaN compares false).
__global__ void quantize_fp8_groups_kernel(const float* x, int64_t rows, int64_t k, uint8_t* values, float* scales) {
    const int64_t groups = k / fp8_group, warps = int64_t(gridDim.x) * blockDim.x / 32;
    const int lane = int(threadIdx.x % 32);
    for (int64_t group = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32; group < rows * groups; group += warps) {
        const int64_t r = group / groups, at = r * k + group % groups * fp8_group + lane * 4;
        float v[4];
        float amax = 0.0f;
        for (int j = 0; j < 4; ++j) {
            v[j] = x[at + j];
            if (fabsf(v[j]) <= FLT_MAX) amax = fmaxf(amax, fabsf(v[j]));
        }
        for (int offset = 16; offset > 0; offset >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
        const float scale = amax / 448.0f;
        uint32_t codes = 0;
        for (int j = 0; j < 4; ++j) codes |= uint32_t(quantized::fp8_group_code(v[j], scale)) << (8 * j);
        *reinterpret_cast<uint32_t*>(values + at) = codes;
        if (lane == 0) scales[r + group % groups * rows] = scale;
    }
}

constexpr int fp8_max_rows = 3;

__device__ __forceinline__ void fp8_quad(uint32_t codes, float* out) {
    for (int j = 0; j < 4; ++j) out[j] = quantized::fp8_value(uint8_t(codes >> (8 * j)));
}

// One warp per output: each lane takes 4 of every group of 128, its products summed per group and
// scaled, the lanes' sums added at the end.
__global__ void matmul_fp8_rows_kernel(const uint8_t* x, const float* x_scales, int64_t rows, const uint8_t* w,
                                       const float* w_tile_scales, int64_t n, int64_t k, float* out) {
    const int64_t groups = k / fp8_group, stride = fp8_tile_stride(k), warps = int64_t(gridDim.x) * blockDim.x / 32;
    const int lane = int(threadIdx.x % 32);
    for (int64_t o = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32; o < n; o += warps) {
        float sum[fp8_max_rows] = {};
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t at = g * fp8_group + lane * 4;
            float weights[4];
            fp8_quad(*reinterpret_cast<const uint32_t*>(w + o * k + at), weights);
            const float w_scale = w_tile_scales[o / fp8_group * stride + g];
            for (int r = 0; r < rows; ++r) {
                float inputs[4];
                fp8_quad(*reinterpret_cast<const uint32_t*>(x + r * k + at), inputs);
                float dot = 0.0f;
                for (int j = 0; j < 4; ++j) dot += weights[j] * inputs[j];
                sum[r] += w_scale * x_scales[r + g * rows] * dot;
            }
        }
        for (int r = 0; r < rows; ++r) {
            for (int offset = 16; offset > 0; offset >>= 1) sum[r] += __shfl_xor_sync(0xFFFFFFFFu, sum[r], offset);
            if (lane == 0) out[r * n + o] = sum[r];
        }
    }
}

#undef UNMASK_GRID_STRIDE

}  // namespace

cudaError_t embedding(WeightView table, int64_t cols, const int32_t* ids, int64_t rows, float* out,
                      cudaStream_t stream) {
    if (rows * cols == 0) return cudaSuccess;
    if (is_quantized(table.type)) {
        if (cols % block_elements(table.type) != 0) return cudaErrorInvalidValue;
        return launch_kernel(quantized_embedding_kernel, grid_for(rows * cols / quantized_run, threads), threads, 0, stream,
                             table, cols, ids, rows, out);
    }
    return launch_kernel(embedding_kernel, grid_for(rows * cols, threads), threads, 0, stream, table, cols, ids, rows,
                         out);
}

namespace {

cudaError_t launch_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, int64_t x_stride, WeightView w,
                           double eps, float* out, int64_t out_stride, Rounded rounded, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (rows > INT32_MAX || (rounded.data != nullptr && rounded.type == ElementType::f32)) return cudaErrorInvalidValue;
    const bool quads = dim % 4 == 0 && x_stride % 4 == 0 && out_stride % 4 == 0 && on_16_bytes(x) &&
                       on_16_bytes(out) && on_16_bytes(y);  // on_16_bytes(nullptr) holds
    const auto kernel = quads ? rmsnorm_kernel<true> : rmsnorm_kernel<false>;
    return launch_kernel(kernel, static_cast<unsigned>(rows), threads, 0, stream, x, y, dim, x_stride, w, eps, out,
                         out_stride, rounded);
}

}  // namespace

cudaError_t rmsnorm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, WeightView w, double eps, float* out,
                    int64_t out_stride, cudaStream_t stream, Rounded rounded) {
    // x is only read without y.
    return launch_rmsnorm(const_cast<float*>(x), nullptr, rows, dim, x_stride, w, eps, out, out_stride, rounded,
                          stream);
}

cudaError_t add_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, WeightView w, double eps, float* out,
                        cudaStream_t stream, Rounded rounded) {
    return launch_rmsnorm(x, y, rows, dim, dim, w, eps, out, dim, rounded, stream);
}

cudaError_t add_bias(float* x, int64_t rows, int64_t dim, WeightView bias, cudaStream_t stream) {
    if (rows * dim == 0) return cudaSuccess;
    return launch_kernel(add_bias_kernel, grid_for(rows * dim, threads), threads, 0, stream, x, rows, dim, bias);
}

cudaError_t rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions, double theta,
                 int64_t rotary_dims, bool interleaved, cudaStream_t stream) {
    const int64_t n = rows * ((heads + rope_heads - 1) / rope_heads) * (rotary_dims / 2);
    if (n == 0) return cudaSuccess;
    return launch_kernel(rope_kernel, grid_for(n, threads), threads, 0, stream, x, rows, heads, head_dim, positions,
                         theta, rotary_dims, interleaved);
}

cudaError_t swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream, Rounded rounded) {
    if (n == 0) return cudaSuccess;
    if (rounded.data != nullptr && rounded.type == ElementType::f32) return cudaErrorInvalidValue;
    return launch_kernel(swiglu_kernel, grid_for(n, threads), threads, 0, stream, gate, up, n, rounded);
}

cudaError_t add(float* x, const float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    return launch_kernel(add_kernel, grid_for(n, threads), threads, 0, stream, x, y, n);
}

cudaError_t gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out,
                        cudaStream_t stream) {
    if (count * dim == 0) return cudaSuccess;
    return launch_kernel(gather_rows_kernel, grid_for(count * dim, threads), threads, 0, stream, x, dim, rows, count,
                         out);
}

cudaError_t combine_guidance(float* cond, const float* uncond, float factor, int64_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    return launch_kernel(combine_guidance_kernel, grid_for(n, threads), threads, 0, stream, cond, uncond, factor, n);
}

cudaError_t round_to(const float* x, int64_t n, ElementType type, void* out, cudaStream_t stream) {
    if (type == ElementType::f32) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    return launch_kernel(round_to_kernel, grid_for(n, threads), threads, 0, stream, x, n, type, out);
}

cudaError_t quantize_fp8_groups(const float* x, int64_t rows, int64_t k, uint8_t* values, float* scales,
                                cudaStream_t stream) {
    if (k % fp8_group != 0 || rows < 0) return cudaErrorInvalidValue;
    if (rows * k == 0) return cudaSuccess;
    return launch_kernel(quantize_fp8_groups_kernel, grid_for(rows * k / 4, threads), threads, 0, stream, x, rows, k,
                         values, scales);
}

cudaError_t matmul_fp8_rows(const uint8_t* x, const float* x_scales, int64_t rows, const uint8_t* w,
                            const float* w_tile_scales, int64_t n, int64_t k, float* out, cudaStream_t stream) {
    if (k % fp8_group != 0 || rows < 0 || rows > fp8_max_rows || n < 0) return cudaErrorInvalidValue;
    if (rows * n == 0) return cudaSuccess;
    return launch_kernel(matmul_fp8_rows_kernel, grid_for(n * 32, threads), threads, 0, stream, x, x_scales, rows, w,
                         w_tile_scales, n, k, out);
}

}  // namespace unmask::kernels::cuda
