// The CUDA kernels of kernels/cuda, launched through their own launch functions and run on the
// host (cuda_on_host.hpp), against the CPU kernels (kernels/cpu) or the arithmetic written out:
// what a GPU run of tests/gpu checks of each kernel's results, in every build. First, that the
// stand-in runtime itself gives CUDA's answers and refuses what CUDA refuses.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <mma.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../unit/compare.hpp"
#include "../unit/random_values.hpp"
#include "core/float_convert.hpp"
#include "cpu/attention.hpp"
#include "cpu/dequantize.hpp"
#include "cpu/ops.hpp"
#include "cpu/quantize.hpp"
#include "cpu/route.hpp"
#include "cuda/attention.hpp"
#include "cuda/grouped_matmul.hpp"
#include "cuda/launch.cuh"
#include "cuda/moe.hpp"
#include "cuda/ops.hpp"
#include "cuda/query_tiles.hpp"
#include "fp8_tiles.hpp"
#include "cuda_on_host.hpp"
#include "require_launched.hpp"

using namespace unmask;
namespace cuda = unmask::kernels::cuda;
namespace cpu = unmask::kernels::cpu;
using kernels::ElementType;

namespace {

std::vector<uint16_t> to_half(const std::vector<float>& v, ElementType type) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i)
        out[i] = type == ElementType::bf16 ? float_to_bf16(v[i]) : float_to_fp16(v[i]);
    return out;
}

float from_half(uint16_t h, ElementType type) {
    return type == ElementType::bf16 ? bf16_to_float(h) : fp16_to_float(h);
}

// Equal, or NaN in both.
bool same_values(const std::vector<float>& a, const std::vector<float>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); });
}

// Kernels for the runtime's own checks.
__global__ void collectives_kernel(int* out) {
    const int t = int(threadIdx.x), lane = t & 31;
    int sum = t;
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
    int inclusive = t;
    for (int offset = 1; offset < 32; offset <<= 1) {
        const int below = __shfl_up_sync(0xFFFFFFFFu, inclusive, unsigned(offset));
        if (lane >= offset) inclusive += below;
    }
    const unsigned odd = __ballot_sync(0xFFFFFFFFu, t % 2);
    const int small = __syncthreads_count(t < 40);
    out[t * 4 + 0] = sum;
    out[t * 4 + 1] = inclusive;
    out[t * 4 + 2] = int(odd);
    out[t * 4 + 3] = small + __shfl_sync(0xFFFFFFFFu, int(blockIdx.x), 5);
}

__global__ void shared_sum_kernel(float* out) {  // dynamic shared memory between warps
    float* shared = cuda_on_host::dynamic_shared<float>();
    shared[threadIdx.x] = float(threadIdx.x);
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = shared[blockDim.x - 1 - threadIdx.x] + float(blockIdx.x);
}

__global__ void mismatched_barrier_kernel() {
    if (threadIdx.x == 0) __syncwarp();  // its warp waits at __syncthreads: nobody can go on
    else __syncthreads();
}

__global__ void shuffle_after_return_kernel(int lane, float* out) {
    if (int(threadIdx.x) == lane) return;
    out[threadIdx.x] = __shfl_xor_sync(0xFFFFFFFFu, 1.0f, 1);
}

__global__ void mismatched_warp_collectives_kernel() {
    if (threadIdx.x == 0) __syncwarp();
    else __ballot_sync(0xFFFFFFFFu, 1);
}

__global__ void lane_own_wmma_pointer_kernel(const __nv_bfloat16* a) {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> f;
    nvcuda::wmma::load_matrix_sync(f, a + 16 * (threadIdx.x % 2), 16);
}

__global__ void bad_wmma_stride_kernel(const __nv_bfloat16* a) {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> f;
    nvcuda::wmma::load_matrix_sync(f, a, 20);  // 40 bytes between rows
}

__global__ void misaligned_wmma_kernel(const __nv_bfloat16* a) {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> f;
    nvcuda::wmma::load_matrix_sync(f, a + 1, 16);
}

__global__ void wmma_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c) {
    namespace wmma = nvcuda::wmma;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// Stores a WMMA tile of ones, then each lane sums the whole tile, after __syncwarp or not.
__global__ void store_then_read_kernel(bool synchronise, float* out) {
    alignas(32) static float tile[256];
    if (threadIdx.x == 0) std::fill(tile, tile + 256, 0.0f);
    __syncwarp();
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> f;
    nvcuda::wmma::fill_fragment(f, 1.0f);
    nvcuda::wmma::store_matrix_sync(tile, f, 16, nvcuda::wmma::mem_row_major);
    if (synchronise) __syncwarp();
    float sum = 0;
    for (float v : tile) sum += v;
    out[threadIdx.x] = sum;
}

}  // namespace

TEST_CASE("the host runtime gives CUDA's shuffles, votes, barriers, shared memory and WMMA products") {
    const int threads = 64, blocks = 3;
    std::vector<int> out(size_t(threads) * 4);
    REQUIRE_LAUNCHED(cuda::launch_kernel(collectives_kernel, blocks, threads, 0, nullptr, out.data()));
    for (int t = 0; t < threads; ++t) {
        const int warp_first = t / 32 * 32, lane = t % 32;
        CHECK(out[size_t(t) * 4] == 32 * warp_first + 31 * 32 / 2);              // the warp's sum
        CHECK(out[size_t(t) * 4 + 1] == (lane + 1) * (2 * warp_first + lane) / 2);  // its inclusive scan
        CHECK(unsigned(out[size_t(t) * 4 + 2]) == 0xAAAAAAAAu);                     // odd lanes
        CHECK(out[size_t(t) * 4 + 3] == 40 + blocks - 1);                           // the last block wrote last
    }

    std::vector<float> sums(size_t(threads) * blocks);
    REQUIRE_LAUNCHED(cuda::launch_kernel(shared_sum_kernel, blocks, threads, threads * sizeof(float), nullptr,
                                         sums.data()));
    for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < threads; ++t) CHECK(sums[size_t(b * threads + t)] == float(threads - 1 - t + b));

    // One 16 x 16 x 16 product: c += a · bᵀ (b's rows as columns), against the sums written out.
    std::mt19937 rng(1);
    alignas(32) __nv_bfloat16 a[256], b[256];
    alignas(32) float c[256];
    for (int i = 0; i < 256; ++i) {
        a[i] = __float2bfloat16_rn(float(int(rng() % 9) - 4) / 4.0f);
        b[i] = __float2bfloat16_rn(float(int(rng() % 9) - 4) / 4.0f);
        c[i] = float(i);
    }
    REQUIRE_LAUNCHED(cuda::launch_kernel(wmma_kernel, 1, 32, 0, nullptr, a, b, c));
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            float expected = float(i * 16 + j);
            for (int k = 0; k < 16; ++k) expected += __bfloat162float(a[i * 16 + k]) * __bfloat162float(b[j * 16 + k]);
            CHECK(c[i * 16 + j] == expected);
        }
}

TEST_CASE("the host runtime fails launches that break CUDA's rules, and says why") {
    // Each lane stores its own share of a WMMA tile: another lane's share is there only after
    // __syncwarp (without it, the first lane to go on reads before the others have written).
    for (bool synchronise : {true, false}) {
        std::vector<float> sums(32);
        REQUIRE_LAUNCHED(cuda::launch_kernel(store_then_read_kernel, 1, 32, 0, nullptr, synchronise, sums.data()));
        CHECK((std::count(sums.begin(), sums.end(), 256.0f) == 32) == synchronise);
    }

    CHECK(cuda::launch_kernel(mismatched_barrier_kernel, 2, 64, 0, nullptr) == cudaErrorLaunchFailure);
    CHECK(cuda_on_host::last_fault().find("deadlock") != std::string::npos);

    // A shuffle of every lane when one has returned: before the others arrive (lane 0 runs first
    // in block 0), or while they wait.
    std::vector<float> out(32);
    CHECK(cuda::launch_kernel(shuffle_after_return_kernel, 1, 32, 0, nullptr, 0, out.data()) ==
          cudaErrorLaunchFailure);
    CHECK(cuda_on_host::last_fault().find("after some of its lanes returned") != std::string::npos);
    CHECK(cuda::launch_kernel(shuffle_after_return_kernel, 1, 32, 0, nullptr, 3, out.data()) ==
          cudaErrorLaunchFailure);
    CHECK(cuda_on_host::last_fault().find("returned while its warp waits") != std::string::npos);

    CHECK(cuda::launch_kernel(mismatched_warp_collectives_kernel, 1, 32, 0, nullptr) == cudaErrorLaunchFailure);
    CHECK(cuda_on_host::last_fault().find("__syncwarp and at __ballot_sync") != std::string::npos);

    alignas(32) __nv_bfloat16 a[400] = {};
    CHECK(cuda::launch_kernel(misaligned_wmma_kernel, 1, 32, 0, nullptr, +a) == cudaErrorLaunchFailure);
    CHECK(cuda_on_host::last_fault().find("32 bytes") != std::string::npos);
    CHECK(cuda::launch_kernel(bad_wmma_stride_kernel, 1, 32, 0, nullptr, +a) == cudaErrorLaunchFailure);
    CHECK(cuda_on_host::last_fault().find("stride") != std::string::npos);
    CHECK(cuda::launch_kernel(lane_own_wmma_pointer_kernel, 1, 32, 0, nullptr, +a) == cudaErrorLaunchFailure);
    CHECK(cuda_on_host::last_fault().find("different pointers") != std::string::npos);

    // Configurations a GPU refuses: too many threads, an empty grid, more than 48 KiB of shared
    // memory without the opt-in (and with it, up to 227 KiB).
    CHECK(cuda::launch_kernel(shared_sum_kernel, 1, 2048, 0, nullptr, out.data()) == cudaErrorInvalidConfiguration);
    CHECK(cuda::launch_kernel(shared_sum_kernel, 0, 32, 0, nullptr, out.data()) == cudaErrorInvalidConfiguration);
    CHECK(cuda::launch_kernel(shared_sum_kernel, dim3(1, 65536), 32, 0, nullptr, out.data()) ==
          cudaErrorInvalidConfiguration);
    CHECK(cuda::launch_kernel(shared_sum_kernel, 1, 32, 64 * 1024, nullptr, out.data()) == cudaErrorInvalidValue);
    REQUIRE(cudaFuncSetAttribute(shared_sum_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024) ==
            cudaSuccess);
    CHECK(cuda::launch_kernel(shared_sum_kernel, 1, 32, 64 * 1024, nullptr, out.data()) == cudaSuccess);
    CHECK(cudaFuncSetAttribute(shared_sum_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024) ==
          cudaErrorInvalidValue);
}

TEST_CASE("embedding, norms, rope, swiglu, additions, gathers, guidance and rounding match the CPU") {
    std::mt19937 rng(2);
    const int64_t rows = 9, dim = 96, heads = 3, head_dim = 32, vocab = 50;
    const size_t n = size_t(rows * dim);
    const std::vector<uint16_t> table = to_half(random_floats(size_t(vocab * dim), rng), ElementType::bf16),
                                norm = to_half(random_floats(size_t(dim), rng), ElementType::f16);
    const std::vector<float> head_norm = random_floats(size_t(head_dim), rng), x = random_floats(n, rng),
                             y = random_floats(n, rng);
    std::vector<int32_t> ids(static_cast<size_t>(rows)), positions(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        ids[size_t(r)] = int32_t(rng() % vocab);
        positions[size_t(r)] = int32_t(r * 37 + 5);
    }
    std::vector<float> got(2 * n), expected(2 * n);

    REQUIRE_LAUNCHED(cuda::embedding({table.data(), ElementType::bf16}, dim, ids.data(), rows, got.data(), nullptr));
    cpu::embedding_rows({table.data(), ElementType::bf16, vocab, dim, dim}, ids.data(), rows, expected.data());
    CHECK(got == expected);

    REQUIRE_LAUNCHED(cuda::rmsnorm(x.data(), rows, dim, dim, {norm.data(), ElementType::f16}, 1e-5, got.data(), dim,
                                   nullptr));
    cpu::rmsnorm(x.data(), rows, dim, {norm.data(), ElementType::f16, dim}, 1e-5, expected.data(), dim, dim);
    CHECK(relative_error(got, expected) <= 1e-6);
    // Per-head norms: rows of head_dim inside rows of dim.
    REQUIRE_LAUNCHED(cuda::rmsnorm(x.data(), rows * heads, head_dim, head_dim, {head_norm.data(), ElementType::f32},
                                   1e-6, got.data(), head_dim, nullptr));
    cpu::rmsnorm(x.data(), rows * heads, head_dim, {head_norm.data(), ElementType::f32, head_dim}, 1e-6,
                 expected.data(), head_dim, head_dim);
    CHECK(relative_error(got, expected) <= 1e-6);

    // The residual add fused with the norm: the sum (first half) and its norm (second half).
    std::copy(x.begin(), x.end(), got.begin());
    REQUIRE_LAUNCHED(cuda::add_rmsnorm(got.data(), y.data(), rows, dim, {norm.data(), ElementType::f16}, 1e-5,
                                       got.data() + n, nullptr));
    for (size_t i = 0; i < n; ++i) expected[i] = x[i] + y[i];
    cpu::rmsnorm(expected.data(), rows, dim, {norm.data(), ElementType::f16, dim}, 1e-5, expected.data() + n, dim, dim);
    CHECK(relative_error(got, expected) <= 1e-6);

    std::copy(x.begin(), x.end(), got.begin());
    std::copy(x.begin(), x.end(), expected.begin());
    REQUIRE_LAUNCHED(cuda::add_bias(got.data(), rows, dim, {norm.data(), ElementType::f16}, nullptr));
    cpu::add_bias(expected.data(), rows, dim, dim, {norm.data(), ElementType::f16, dim});
    CHECK(got == expected);

    for (const cpu::RopeParams& rope :
         {cpu::RopeParams{10000.0, head_dim, false}, cpu::RopeParams{500000.0, head_dim, true},
          cpu::RopeParams{10000.0, head_dim / 2, false}}) {
        CAPTURE(rope.rotary_dims);
        CAPTURE(rope.interleaved);
        std::copy(x.begin(), x.end(), got.begin());
        std::copy(x.begin(), x.end(), expected.begin());
        REQUIRE_LAUNCHED(cuda::rope(got.data(), rows, heads, head_dim, positions.data(), rope.theta, rope.rotary_dims,
                                    rope.interleaved, nullptr));
        cpu::rope(expected.data(), rows, heads, head_dim, dim, positions.data(), rope);
        CHECK(got == expected);
    }

    std::copy(x.begin(), x.end(), got.begin());
    std::copy(x.begin(), x.end(), expected.begin());
    REQUIRE_LAUNCHED(cuda::swiglu(got.data(), y.data(), int64_t(n), nullptr));
    cpu::swiglu(expected.data(), y.data(), int64_t(n));
    CHECK(relative_error(got, expected) <= 1e-6);

    // x + y, then guidance from y at 1.5, against the formulas.
    std::copy(x.begin(), x.end(), got.begin());
    REQUIRE_LAUNCHED(cuda::add(got.data(), y.data(), int64_t(n), nullptr));
    REQUIRE_LAUNCHED(cuda::combine_guidance(got.data(), y.data(), 1.5f, int64_t(n), nullptr));
    for (size_t i = 0; i < n; ++i) expected[i] = y[i] + 1.5f * ((x[i] + y[i]) - y[i]);
    CHECK(relative_error(got, expected) <= 1e-6);

    // Gathered rows, one of them twice.
    const std::vector<int32_t> picked = {4, 0, 4, 8};
    REQUIRE_LAUNCHED(cuda::gather_rows(x.data(), dim, picked.data(), int64_t(picked.size()), got.data(), nullptr));
    for (size_t i = 0; i < picked.size(); ++i)
        CHECK(std::equal(got.begin() + int64_t(i) * dim, got.begin() + int64_t(i + 1) * dim,
                         x.begin() + picked[i] * dim));

    for (ElementType type : {ElementType::bf16, ElementType::f16}) {
        std::vector<uint16_t> rounded(n);
        REQUIRE_LAUNCHED(cuda::round_to(x.data(), int64_t(n), type, rounded.data(), nullptr));
        CHECK(rounded == to_half(x, type));
    }
    CHECK(cuda::round_to(x.data(), int64_t(n), ElementType::f32, got.data(), nullptr) == cudaErrorInvalidValue);
}

TEST_CASE("activations quantized for block-scaled fp8 products are F8_E4M3_B128's blocks, split into codes and scales") {
    std::mt19937 rng(31);
    constexpr int64_t k = 384, groups = k / 128;
    for (const int64_t rows : {1, 3, 8, 17}) {
        CAPTURE(rows);
        std::vector<float> x = random_floats(size_t(rows * k), rng, 3.0f);
        x[5] = 1e-30f;                                                  // below e4m3's smallest step
        std::fill(x.begin() + 128, x.begin() + 256, 0.0f);             // a group of zeros: scale 0
        x[size_t(k) * size_t(rows - 1) + 300] = std::nanf("");          // a NaN: its code, and no scale from it
        x[size_t(k) * size_t(rows - 1) + 301] = -INFINITY;
        std::vector<uint8_t> values(size_t(rows * k), 0xAA);
        std::vector<float> scales(size_t(rows * groups), -1.0f);
        REQUIRE_LAUNCHED(cuda::quantize_fp8_groups(x.data(), rows, k, values.data(), scales.data(), nullptr));
        std::vector<uint8_t> blocks(size_t(rows * groups) * 132);
        cpu::quantize_row(ElementType::f8_e4m3_b128, x.data(), rows * k, blocks.data());
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t g = 0; g < groups; ++g) {
                const uint8_t* block = blocks.data() + (r * groups + g) * 132;
                float scale;
                std::memcpy(&scale, block, 4);
                CHECK(std::bit_cast<uint32_t>(scales[size_t(r + g * rows)]) == std::bit_cast<uint32_t>(scale));
                CHECK(std::memcmp(values.data() + r * k + g * 128, block + 4, 128) == 0);
            }
        CHECK(scales[size_t(rows)] == 0.0f);  // row 0's group of zeros
        CHECK(values[size_t(k * (rows - 1) + 300)] == 0x7F);
        CHECK(std::isfinite(scales[size_t(rows - 1 + 2 * rows)]));
    }
    float unused = 0;
    uint8_t code = 0;
    CHECK(cuda::quantize_fp8_groups(&unused, 1, 100, &code, &unused, nullptr) == cudaErrorInvalidValue);
}

TEST_CASE("the last rows of a block-scaled fp8 product sum each group's codes times both scales") {
    std::mt19937 rng(37);
    constexpr int64_t k = 384, groups = k / 128, n = 150;  // two rows of tiles, the second partial
    std::uniform_int_distribution<int> code(0, 255);
    const auto codes = [&](size_t count) {
        std::vector<uint8_t> out(count);
        for (uint8_t& c : out) do c = uint8_t(code(rng)); while ((c & 0x7F) == 0x7F);  // no NaN
        return out;
    };
    const std::vector<uint8_t> w = codes(size_t(n * k));
    std::vector<float> tiles = random_floats(size_t(kernels::fp8_tile_scales(n, k)), rng, 0.01f);
    for (int64_t rows = 0; rows <= 3; ++rows) {
        CAPTURE(rows);
        const std::vector<uint8_t> x = codes(size_t(rows * k));
        const std::vector<float> x_scales = random_floats(size_t(rows * groups), rng, 0.1f);
        std::vector<float> got(size_t(rows * n) + 1, 7.0f), expected(size_t(rows * n));
        REQUIRE_LAUNCHED(cuda::matmul_fp8_rows(x.data(), x_scales.data(), rows, w.data(), tiles.data(), n, k, got.data(),
                                               nullptr));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < n; ++o) {
                double sum = 0;
                for (int64_t g = 0; g < groups; ++g) {
                    double block = 0;
                    for (int64_t j = g * 128; j < (g + 1) * 128; ++j)
                        block += double(fp8_e4m3_to_float(w[size_t(o * k + j)])) * fp8_e4m3_to_float(x[size_t(r * k + j)]);
                    sum += block * tiles[size_t(o / 128 * kernels::fp8_tile_stride(k) + g)] * x_scales[size_t(r + g * rows)];
                }
                expected[size_t(r * n + o)] = float(sum);
            }
        CHECK(relative_error(std::vector<float>(got.begin(), got.end() - 1), expected) <= 1e-5);
        CHECK(got.back() == 7.0f);  // nothing past the rows
    }
    float unused = 0;
    CHECK(cuda::matmul_fp8_rows(w.data(), &unused, 4, w.data(), tiles.data(), n, k, &unused, nullptr) ==
          cudaErrorInvalidValue);  // 4 rows and more go to cuBLASLt
}

TEST_CASE("norms and SwiGLU take 16-byte loads where they can, and write their output rounded as round_to would") {
    std::mt19937 rng(4);
    // Widths of whole 16-byte runs (loads of four) and not (one element at a time); with the
    // residual add and without; in place (a per-head norm) and not.
    const int64_t rows = 6;
    const std::vector<uint16_t> norm = to_half(random_floats(96, rng), ElementType::f16);
    for (const int64_t width : {int64_t(96), int64_t(7)})
        for (ElementType type : {ElementType::bf16, ElementType::f16}) {
            CAPTURE(width);
            CAPTURE(static_cast<int>(type));
            const size_t n = size_t(rows * width);
            const std::vector<float> x = random_floats(n, rng), y = random_floats(n, rng);
            std::vector<float> got(n), expected(n), sum(x);
            std::vector<uint16_t> rounded(n);
            REQUIRE_LAUNCHED(cuda::rmsnorm(x.data(), rows, width, width, {norm.data(), ElementType::f16}, 1e-5,
                                           got.data(), width, nullptr, {rounded.data(), type}));
            cpu::rmsnorm(x.data(), rows, width, {norm.data(), ElementType::f16, width}, 1e-5, expected.data(), width,
                         width);
            CHECK(relative_error(got, expected) <= 1e-6);
            CHECK(rounded == to_half(got, type));

            REQUIRE_LAUNCHED(cuda::add_rmsnorm(sum.data(), y.data(), rows, width, {norm.data(), ElementType::f16},
                                               1e-5, got.data(), nullptr, {rounded.data(), type}));
            std::vector<float> added(n);
            for (size_t i = 0; i < n; ++i) added[i] = x[i] + y[i];
            CHECK(sum == added);
            cpu::rmsnorm(added.data(), rows, width, {norm.data(), ElementType::f16, width}, 1e-5, expected.data(),
                         width, width);
            CHECK(relative_error(got, expected) <= 1e-6);
            CHECK(rounded == to_half(got, type));

            std::vector<float> in_place(x);
            REQUIRE_LAUNCHED(cuda::rmsnorm(in_place.data(), rows, width, width, {norm.data(), ElementType::f16}, 1e-5,
                                           in_place.data(), width, nullptr));
            cpu::rmsnorm(x.data(), rows, width, {norm.data(), ElementType::f16, width}, 1e-5, expected.data(), width,
                         width);
            CHECK(relative_error(in_place, expected) <= 1e-6);

            std::vector<float> gate(x);
            REQUIRE_LAUNCHED(cuda::swiglu(gate.data(), y.data(), int64_t(n), nullptr, {rounded.data(), type}));
            expected = x;
            cpu::swiglu(expected.data(), y.data(), int64_t(n));
            CHECK(relative_error(gate, expected) <= 1e-6);
            CHECK(rounded == to_half(gate, type));
        }
    // A rounded copy in fp32 is no rounding: refused.
    std::vector<float> x = random_floats(8, rng), out(8);
    CHECK(cuda::rmsnorm(x.data(), 2, 4, 4, {norm.data(), ElementType::f16}, 1e-5, out.data(), 4, nullptr,
                        {out.data(), ElementType::f32}) == cudaErrorInvalidValue);
    CHECK(cuda::swiglu(x.data(), x.data(), 8, nullptr, {out.data(), ElementType::f32}) == cudaErrorInvalidValue);
}

TEST_CASE("attention, in fp32 and on tensor cores, with grouped heads, block-causal masks and cache views") {
    std::mt19937 rng(3);
    // Three sequences of 5, 17 and 70 rows (a partial query tile, and several); the second's
    // block-causal region starts at 10. With a cache (fp32 or bf16), the last reads 100 keys in
    // which its queries sit at position 2, and the second 600 in which they sit at 300: one query
    // tile over that many keys, split across 4 blocks (flash-decoding) whose partial softmaxes are
    // combined, the last two splits past what a block-causal mask lets its queries see. Queries scaled up so the softmax is sharp and its
    // running maximum moves between key tiles. Heads of 64 and 128 go to the tensor-core kernel too
    // (bf16 products: within bf16 rounding, 2e-2, as whole bf16 forwards).
    const int64_t heads = 4, tokens = 92, cached_keys = 100, long_keys = 600;
    const std::vector<int64_t> lengths = {5, 17, 70};
    for (const auto& [head_dim, kv_heads] :
         std::vector<std::pair<int64_t, int64_t>>{{20, 2}, {36, 4}, {64, 1}, {128, 2}}) {
        const int64_t q_width = heads * head_dim, kv_width = kv_heads * head_dim;
        const auto q = random_floats(size_t(tokens * q_width), rng, 3.0f),
                   k = random_floats(size_t(tokens * kv_width), rng), v = random_floats(size_t(tokens * kv_width), rng),
                   cache_k = random_floats(size_t(cached_keys * kv_width), rng),
                   cache_v = random_floats(size_t(cached_keys * kv_width), rng),
                   long_k = random_floats(size_t(long_keys * kv_width), rng),
                   long_v = random_floats(size_t(long_keys * kv_width), rng);
        const std::vector<uint16_t> cache_k_bf16 = to_half(cache_k, ElementType::bf16),
                                    cache_v_bf16 = to_half(cache_v, ElementType::bf16),
                                    long_k_bf16 = to_half(long_k, ElementType::bf16),
                                    long_v_bf16 = to_half(long_v, ElementType::bf16);
        std::vector<float> partials(size_t(cuda::attention_partial_floats(tokens, heads, head_dim)));
        for (int64_t block_size : {0, 5, 64})
            for (const std::string cache : {"none", "fp32", "bf16"}) {
                CAPTURE(head_dim);
                CAPTURE(kv_heads);
                CAPTURE(block_size);
                CAPTURE(cache);
                const bool with_cache = cache != "none", bf16 = cache == "bf16";
                std::vector<cuda::AttentionSequence> sequences;
                int64_t first = 0;
                for (int64_t rows : lengths) {
                    sequences.push_back({first, rows, nullptr, nullptr, 0, 0, 0, 0});
                    first += rows;
                }
                sequences[1].block_origin = 10;
                if (with_cache && !bf16) sequences.back() = {22, 70, cache_k.data(), cache_v.data(), cached_keys, 2, 10, 0};
                if (bf16)
                    sequences.back() = {22,  70, cache_k_bf16.data(), cache_v_bf16.data(), cached_keys, 2, 10, 0,
                                        ElementType::bf16};
                if (with_cache && !bf16) sequences[1] = {5, 17, long_k.data(), long_v.data(), long_keys, 300, 10, 0};
                if (bf16)
                    sequences[1] = {5, 17, long_k_bf16.data(), long_v_bf16.data(), long_keys, 300, 10, 0,
                                    ElementType::bf16};
                const int64_t tiles = cuda::number_query_tiles(sequences.data(), int64_t(sequences.size()));
                CHECK(tiles == (with_cache ? 1 + 4 + 3 : 1 + 1 + 3));  // the long cache's tile split 4 ways
                const cuda::AttentionDims dims{heads, kv_heads, head_dim, block_size};

                std::vector<float> expected(q.size(), 0.0f);
                cpu::AttentionScratch scratch;
                for (const cuda::AttentionSequence& s : sequences) {
                    const bool cached = s.keys != nullptr;
                    const cpu::AttentionShape shape{s.rows,   cached ? s.key_count : s.rows, heads,          kv_heads,
                                                    head_dim, q_width,                       kv_width,       block_size,
                                                    s.block_origin, s.query_position,        s.kv_type};
                    for (int64_t h = 0; h < heads; ++h)
                        cpu::attention_tile(q.data() + s.first_row * q_width,
                                            cached ? s.keys : k.data() + s.first_row * kv_width,
                                            cached ? s.values : v.data() + s.first_row * kv_width, shape, h, 0, s.rows,
                                            expected.data() + s.first_row * q_width, scratch);
                }
                std::vector<float> got(q.size(), 0.0f);
                REQUIRE_LAUNCHED(cuda::attention(q.data(), k.data(), v.data(), sequences.data(),
                                                 int64_t(sequences.size()), tiles, dims, got.data(), partials.data(),
                                                 nullptr));
                CHECK(relative_error(got, expected) <= 1e-5);
                if (!cuda::attention_on_tensor_cores(head_dim)) continue;
                std::fill(got.begin(), got.end(), 0.0f);
                REQUIRE_LAUNCHED(cuda::attention_tensor_cores(q.data(), k.data(), v.data(), sequences.data(),
                                                              int64_t(sequences.size()), tiles, dims, got.data(),
                                                              partials.data(), nullptr));
                const double error = relative_error(got, expected);
                CHECK(error <= 2e-2);
                CHECK(error > 1e-5);  // bf16 products: visibly rounded
            }
    }
}

TEST_CASE("routing, grouping by expert and the weighted un-permute give the CPU's choices, order and sums") {
    std::mt19937 rng(5);
    // 40 experts (two per lane for some), 6 per token; logits with ties and a NaN; without groups,
    // and in 5 groups of 8 of which the best 2 are eligible.
    const int64_t rows = 45, experts = 40, k = 6, dim = 24;
    const size_t slots = size_t(rows * k);
    std::vector<float> logits = random_floats(size_t(rows * experts), rng, 2.0f);
    logits[7] = logits[9] = logits[12];
    logits[size_t(experts + 3)] = std::nanf("");
    const std::vector<float> bias = random_floats(size_t(experts), rng, 0.05f);
    for (bool sigmoid : {false, true})
        for (bool biased : {false, true})
            for (int64_t groups : {1, 5}) {
                CAPTURE(sigmoid);
                CAPTURE(biased);
                CAPTURE(groups);
                const int64_t top_groups = groups > 1 ? 2 : 1;
                const cuda::RouteParams params{experts,
                                               k,
                                               sigmoid,
                                               !biased,
                                               biased ? 2.5 : 1.0,
                                               {biased ? bias.data() : nullptr, ElementType::f32},
                                               groups,
                                               top_groups};
                std::vector<int32_t> chosen(slots);
                std::vector<float> weights(slots);
                REQUIRE_LAUNCHED(cuda::route(logits.data(), rows, params, chosen.data(), weights.data(), nullptr));
                const cpu::RouteParams on_cpu =
                    params.with_bias(cpu::WeightVector{biased ? bias.data() : nullptr, ElementType::f32, experts});
                std::vector<int32_t> cpu_chosen(slots);
                std::vector<float> cpu_weights(slots);
                cpu::route(logits.data(), 0, rows, on_cpu, cpu_chosen.data(), cpu_weights.data());
                CHECK(chosen == cpu_chosen);
                for (size_t i = 0; i < slots; ++i) {
                    CAPTURE(i);
                    CHECK(std::isnan(weights[i]) == std::isnan(cpu_weights[i]));  // a NaN logit's softmax row
                    if (!std::isnan(cpu_weights[i]))
                        CHECK(std::abs(weights[i] - cpu_weights[i]) <= 1e-6f * std::abs(cpu_weights[i]));
                }
                if (groups > 1) {  // the choices keep to two groups per token
                    for (int64_t r = 0; r < rows; ++r) {
                        std::vector<int32_t> used;
                        for (int64_t j = 0; j < k; ++j) used.push_back(chosen[size_t(r * k + j)] / int32_t(experts / groups));
                        std::sort(used.begin(), used.end());
                        CHECK(std::unique(used.begin(), used.end()) - used.begin() <= top_groups);
                    }
                }

                // Grouped by expert: offsets, slots in row order within each expert, each token's
                // slots in ascending expert order; the outputs hold garbage first.
                std::vector<int32_t> counts(static_cast<size_t>(experts)), offsets(static_cast<size_t>(experts + 1), -1),
                    slot_rows(slots, -1), token_slots(slots, -1);
                std::vector<float> token_scales(slots, std::nanf(""));
                int32_t fault = 0;
                REQUIRE_LAUNCHED(cuda::group_by_expert(chosen.data(), weights.data(), rows, k, experts, counts.data(),
                                                       offsets.data(), &fault, slot_rows.data(), token_slots.data(),
                                                       token_scales.data(), nullptr));
                CHECK(fault == 0);
                std::vector<int32_t> expected_rows;
                std::vector<int32_t> expected_offsets = {0};
                std::vector<int32_t> slot_of(slots);
                for (int32_t e = 0; e < int32_t(experts); ++e) {
                    for (size_t i = 0; i < slots; ++i)
                        if (chosen[i] == e) {
                            slot_of[i] = int32_t(expected_rows.size());
                            expected_rows.push_back(int32_t(i / size_t(k)));
                        }
                    expected_offsets.push_back(int32_t(expected_rows.size()));
                }
                CHECK(offsets == expected_offsets);
                CHECK(slot_rows == expected_rows);
                for (int64_t t = 0; t < rows; ++t) {
                    std::vector<size_t> mine;
                    for (int64_t j = 0; j < k; ++j) mine.push_back(size_t(t * k + j));
                    std::sort(mine.begin(), mine.end(), [&](size_t a, size_t b) { return chosen[a] < chosen[b]; });
                    for (int64_t j = 0; j < k; ++j) {
                        CHECK(token_slots[size_t(t * k + j)] == slot_of[mine[size_t(j)]]);
                        CHECK(std::memcmp(&token_scales[size_t(t * k + j)], &weights[mine[size_t(j)]], 4) == 0);
                    }
                }

                // x[t] += the scaled expert outputs, in that order, each product and sum rounded.
                const std::vector<float> x = random_floats(size_t(rows * dim), rng),
                                         y = random_floats(slots * size_t(dim), rng);
                std::vector<float> got = x, expected = x;
                REQUIRE_LAUNCHED(cuda::unpermute_add(got.data(), rows, dim, k, token_slots.data(), token_scales.data(),
                                                     y.data(), nullptr));
                for (int64_t t = 0; t < rows; ++t)
                    for (int64_t c = 0; c < dim; ++c)
                        for (int64_t j = 0; j < k; ++j) {
                            const float product =
                                token_scales[size_t(t * k + j)] * y[size_t(token_slots[size_t(t * k + j)] * dim + c)];
                            expected[size_t(t * dim + c)] = expected[size_t(t * dim + c)] + product;
                        }
                CHECK(same_values(got, expected));  // NaN where a NaN logit made the weights NaN
            }

    // Tables route could not have made (an expert twice for a token, one out of range) set the
    // fault and leave every slot and token entry naming a row in range.
    for (int32_t bad : {0, int32_t(experts)}) {
        CAPTURE(bad);
        std::vector<int32_t> table(slots);
        for (size_t i = 0; i < slots; ++i) table[i] = int32_t(i % size_t(k));
        table[1] = bad;
        std::vector<int32_t> counts(static_cast<size_t>(experts)), offsets(static_cast<size_t>(experts + 1), -1),
            slot_rows(slots, INT32_MAX), token_slots(slots, -1);
        std::vector<float> scales(slots, 1.0f), token_scales(slots, std::nanf(""));
        int32_t fault = 0;
        REQUIRE_LAUNCHED(cuda::group_by_expert(table.data(), scales.data(), rows, k, experts, counts.data(),
                                               offsets.data(), &fault, slot_rows.data(), token_slots.data(),
                                               token_scales.data(), nullptr));
        CHECK(fault == 1);
        for (size_t i = 0; i < slots; ++i) {
            CHECK(slot_rows[i] >= 0);
            CHECK(slot_rows[i] < rows);
            CHECK(token_slots[i] >= 0);
            CHECK(size_t(token_slots[i]) < slots);
            CHECK(std::isfinite(token_scales[i]));
        }
        CHECK(offsets.front() == 0);
        for (size_t e = 1; e < offsets.size(); ++e) CHECK(offsets[e - 1] <= offsets[e]);
        CHECK(size_t(offsets.back()) <= slots);
    }
}

TEST_CASE("grouped matmuls of few rows and on tensor cores compute their groups and write nothing else") {
    std::mt19937 rng(9);
    const float untouched = 12345.0f;
    std::uniform_int_distribution<int> sixteenths(-15, 15);  // activations exact in bf16 and fp16
    // Groups of 0 to 130 rows: partial and whole tiles of 64 (two of one group), groups of up to
    // 16 rows and larger ones for the few-row kernel; three column tiles, the last partial.
    const std::vector<int32_t> sizes = {3, 0, 1, 16, 17, 63, 64, 65, 130, 5, 0};
    std::vector<int32_t> offsets = {0};
    for (int32_t size : sizes) offsets.push_back(offsets.back() + size);
    const auto groups = int64_t(sizes.size());
    const int64_t rows = offsets.back(), n = 70, spare = 3;  // rows past the slots must stay
    for (ElementType type : {ElementType::f32, ElementType::bf16, ElementType::f16})
        for (int64_t k : {264, 300}) {  // whole 16-byte runs (tensor cores: a partial last step of 32), or not
            CAPTURE(int(type));
            CAPTURE(k);
            std::vector<std::vector<float>> w(static_cast<size_t>(groups));
            std::vector<std::vector<uint16_t>> w_half(static_cast<size_t>(groups));
            std::vector<const void*> pointers;
            for (int64_t g = 0; g < groups; ++g) {
                w[size_t(g)] = random_floats(size_t(n * k), rng, 0.1f);
                if (type != ElementType::f32) {
                    w_half[size_t(g)] = to_half(w[size_t(g)], type);
                    for (size_t i = 0; i < w[size_t(g)].size(); ++i)
                        w[size_t(g)][i] = from_half(w_half[size_t(g)][i], type);
                    pointers.push_back(w_half[size_t(g)].data());
                } else {
                    pointers.push_back(w[size_t(g)].data());
                }
            }
            std::vector<float> x(size_t(rows * k));
            for (float& v : x) v = float(sixteenths(rng)) / 16.0f;
            const std::vector<uint16_t> x_half = type == ElementType::f32 ? std::vector<uint16_t>{} : to_half(x, type);
            const void* x_data = type == ElementType::f32 ? static_cast<const void*>(x.data()) : x_half.data();
            auto expected = [&](int64_t g, int64_t r, int64_t c) {
                double sum = 0;
                for (int64_t i = 0; i < k; ++i)
                    sum += double(w[size_t(g)][size_t(c * k + i)]) * double(x[size_t(r * k + i)]);
                return sum;
            };
            auto check = [&](const std::vector<float>& got, bool computed_only_small) {
                for (int64_t g = 0; g < groups; ++g)
                    for (int64_t r = offsets[size_t(g)]; r < offsets[size_t(g) + 1]; ++r)
                        for (int64_t c = 0; c < n; ++c) {
                            const float value = got[size_t(r * n + c)];
                            if (computed_only_small && sizes[size_t(g)] > cuda::max_few_rows) {
                                CHECK(value == untouched);  // left to cuBLASLt
                                continue;
                            }
                            const double e = expected(g, r, c);
                            CHECK(std::abs(double(value) - e) <= 1e-5 * (1.0 + std::abs(e)));
                        }
                for (size_t i = size_t(rows * n); i < got.size(); ++i) CHECK(got[i] == untouched);
            };
            for (bool every_group : {false, true}) {
                CAPTURE(every_group);
                std::vector<float> got(size_t((rows + spare) * n), untouched);
                REQUIRE_LAUNCHED(cuda::few_row_grouped_matmul(x_data, pointers.data(), offsets.data(), groups, type, n,
                                                              k, true, every_group, got.data(), nullptr));
                check(got, !every_group);
            }
            if (!cuda::grouped_matmul_on_tensor_cores(type, rows, groups, k)) {
                CHECK((type == ElementType::f32 || k % 8 != 0));
                continue;
            }
            std::vector<float> got(size_t((rows + spare) * n), untouched);
            REQUIRE_LAUNCHED(cuda::grouped_matmul_tensor_cores(x_data, rows, pointers.data(), offsets.data(), groups,
                                                               type, n, k, got.data(), nullptr));
            check(got, false);
            // Offsets past the slots (a broken caller's) are clamped to them: nothing beyond is touched.
            std::vector<int32_t> past = offsets;
            past.back() = int32_t(rows + 50);
            std::fill(got.begin(), got.end(), untouched);
            REQUIRE_LAUNCHED(cuda::grouped_matmul_tensor_cores(x_data, rows, pointers.data(), past.data(), groups, type,
                                                               n, k, got.data(), nullptr));
            for (size_t i = size_t(rows * n); i < got.size(); ++i) CHECK(got[i] == untouched);
        }
}

// Weight-only quantization: the few-row kernel decodes a block type's weights in registers. Through
// x = rows of the identity it returns every weight as it decoded it, which must be the CPU's values
// (bit for bit but for the sign of a zero, which a sum from +0 loses);
// and over random activations, the products of the CPU's decoded weights.
TEST_CASE("grouped matmuls decode block-type weights to the CPU's bits and multiply them") {
    std::mt19937 rng(17);
    const int64_t n = 37, k = 512;  // a partial column tile; two 256-element super-blocks per row
    for (ElementType type : {ElementType::q8_0, ElementType::q4_0, ElementType::q4_k, ElementType::q5_k,
                             ElementType::q6_k, ElementType::f8_e4m3_b128}) {
        CAPTURE(int(type));
        // Random bytes, every block's fp16 scales (or fp32 for F8_E4M3_B128) set finite and small.
        std::vector<uint8_t> w(size_t(kernels::row_bytes(type, k) * n));
        std::uniform_int_distribution<int> byte(0, 255);
        for (uint8_t& b : w) b = uint8_t(byte(rng));
        std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
        const int64_t size = kernels::block_bytes(type);
        for (int64_t at = 0; at < int64_t(w.size()); at += size) {
            auto put_half = [&](int64_t offset) {
                const uint16_t h = float_to_fp16(scale(rng));
                std::memcpy(w.data() + at + offset, &h, 2);
            };
            switch (type) {
                case ElementType::q4_k: case ElementType::q5_k: put_half(0); put_half(2); break;
                case ElementType::q6_k: put_half(208); break;
                case ElementType::f8_e4m3_b128: {
                    const float s = scale(rng);
                    std::memcpy(w.data() + at, &s, 4);
                    for (int64_t j = 4; j < size; ++j)
                        if ((w[size_t(at + j)] & 0x7F) == 0x7F) w[size_t(at + j)] = 0;  // no NaN codes
                    break;
                }
                default: put_half(0);
            }
        }
        std::vector<float> decoded(size_t(n * k));
        for (int64_t c = 0; c < n; ++c)
            cpu::dequantize_row(type, w.data() + c * kernels::row_bytes(type, k), k, decoded.data() + c * k);
        const void* weights[] = {w.data()};

        std::vector<float> identity(size_t(k * k), 0.0f);
        for (int64_t i = 0; i < k; ++i) identity[size_t(i * k + i)] = 1.0f;
        const int32_t all[] = {0, int32_t(k)};
        std::vector<float> columns(size_t(k * n), std::nanf(""));
        REQUIRE_LAUNCHED(cuda::few_row_grouped_matmul(identity.data(), weights, all, 1, type, n, k, false, true,
                                                      columns.data(), nullptr));
        int64_t differing = 0;
        for (int64_t i = 0; i < k; ++i)
            for (int64_t c = 0; c < n; ++c)
                differing += columns[size_t(i * n + c)] != decoded[size_t(c * k + i)];  // -0 sums to +0
        CHECK(differing == 0);

        const int64_t rows = 21;  // a pass of 16 and one of 5
        const std::vector<float> x = random_floats(size_t(rows * k), rng);
        const int32_t offsets[] = {0, int32_t(rows)};
        std::vector<float> got(size_t(rows * n));
        REQUIRE_LAUNCHED(cuda::few_row_grouped_matmul(x.data(), weights, offsets, 1, type, n, k, false, true, got.data(),
                                                      nullptr));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < n; ++c) {
                double e = 0, magnitude = 0;
                for (int64_t i = 0; i < k; ++i) {
                    e += double(decoded[size_t(c * k + i)]) * double(x[size_t(r * k + i)]);
                    magnitude += std::abs(double(decoded[size_t(c * k + i)]) * double(x[size_t(r * k + i)]));
                }
                CHECK(std::abs(double(got[size_t(r * n + c)]) - e) <= 1e-6 * (1.0 + magnitude));
            }
    }
    // Rows that are not whole blocks are refused.
    const uint8_t none[34] = {};
    const void* one[] = {none};
    const int32_t offsets[] = {0, 1};
    float x[16] = {}, out[1] = {};
    CHECK(cuda::few_row_grouped_matmul(x, one, offsets, 1, ElementType::q8_0, 1, 16, false, true, out, nullptr) ==
          cudaErrorInvalidValue);
}
