// The CUDA backend's conformance suite: every Backend op, whole forwards of each architecture and
// whole generations against the CPU backend (the reference). Without a CUDA device only the
// host-side cases (named "host:") run; the rest are skipped with a message.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "../unit/compare.hpp"
#include "../unit/fixtures.hpp"
#include "../unit/random_values.hpp"
#include "backend/backend.hpp"
#include "backend/cuda/cublaslt_matmul.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_runtime_info.hpp"
#include "backend/cuda/device_loss.hpp"
#include "backend/cuda/nccl_communicator.hpp"
#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "cpu/quantize.hpp"
#include "fp8_tiles.hpp"
#include "cuda/attention.hpp"
#include "cuda/grouped_matmul.hpp"
#include "cuda/ops.hpp"
#include "cuda/query_tiles.hpp"
#include "decode/generate.hpp"
#include "memory/memory_plan.hpp"
#include "model/forward.hpp"
#include "model/kv_cache.hpp"
#include "model/model.hpp"

using namespace unmask;

namespace {

// A weight with its host data, in one of the weight element types.
struct HostWeight {
    std::vector<float> f32;
    std::vector<uint16_t> half;
    Weight weight;
};

HostWeight random_weight(std::vector<int64_t> shape, DType dtype, std::mt19937& rng, float scale = 1.0f) {
    HostWeight w;
    uint64_t elements = 1;
    for (int64_t d : shape) elements *= uint64_t(d);
    std::normal_distribution<float> normal(0.0f, scale);
    if (dtype == DType::f32) {
        w.f32.resize(elements);
        for (float& v : w.f32) v = normal(rng);
    } else {
        w.half.resize(elements);
        for (uint16_t& v : w.half) v = dtype == DType::bf16 ? float_to_bf16(normal(rng)) : float_to_fp16(normal(rng));
    }
    w.weight.name = "test weight";
    w.weight.dtype = dtype;
    w.weight.file_dtype = dtype;
    w.weight.shape = std::move(shape);
    w.weight.elements = elements;
    w.weight.data = dtype == DType::f32 ? static_cast<const void*>(w.f32.data()) : w.half.data();
    return w;
}

// The CPU and the CUDA backend side by side, with the weights of a test on the device.
struct Pair {
    MemoryLedger ledger{"cuda weights", UINT64_MAX};
    std::unique_ptr<Backend> cpu = make_cpu_backend(2);
    std::unique_ptr<Backend> cuda;

    explicit Pair(std::span<const Weight> weights)
        : cuda(make_cuda_backend(CudaWeights::upload(weights, 0, &ledger))) {
        // Room for every test's attention keys (up to 1024), candidate rows and matmul inputs (256
        // rows of 1024);
        // the CPU refuses work beyond it, the GPU grows its staging.
        for (Backend* b : {cpu.get(), cuda.get()}) b->reserve_workspace({1024, 8192, 256, 256 * 1024});
    }

    template <typename T>
    DeviceBuffer put(Backend& b, const std::vector<T>& v) {
        DeviceBuffer buffer = b.allocate(std::max<size_t>(1, v.size()) * sizeof(T));
        if (!v.empty()) b.copy_to_device(buffer, v.data(), v.size() * sizeof(T));
        return buffer;
    }
    std::vector<float> get(Backend& b, const DeviceBuffer& buffer, size_t n) {
        std::vector<float> v(n);
        b.copy_to_host(v.data(), buffer, n * sizeof(float));
        return v;
    }
    // Runs `op(backend, inputs on that backend)` on both and returns (cpu, cuda) of `output` floats.
    template <typename Op>
    std::pair<std::vector<float>, std::vector<float>> both(const std::vector<std::vector<float>>& inputs,
                                                           size_t output, const Op& op) {
        std::pair<std::vector<float>, std::vector<float>> results;
        for (Backend* b : {cpu.get(), cuda.get()}) {
            std::vector<DeviceBuffer> buffers;
            for (const auto& input : inputs) buffers.push_back(put(*b, input));
            DeviceBuffer out = put(*b, std::vector<float>(output, 0.0f));
            op(*b, buffers, out.floats());
            (b == cpu.get() ? results.first : results.second) = get(*b, out, output);
        }
        return results;
    }

};

std::vector<Weight> weights_of(std::initializer_list<const HostWeight*> list) {
    std::vector<Weight> out;
    for (const HostWeight* w : list) out.push_back(w->weight);
    return out;
}

}  // namespace

TEST_CASE("host: the cuBLASLt layout of a row-major x · wᵀ") {
    // out[rows, n] = x[rows, k] · wᵀ is, column-major, outᵀ[n, rows] = (w as [k, n])ᵀ · (x as [k, rows]).
    const auto l = cuda::CublasLtMatmul::layout(5, 7, 3);
    CHECK(l.transa == CUBLAS_OP_T);
    CHECK(l.transb == CUBLAS_OP_N);
    CHECK(l.m == 7);
    CHECK(l.n == 5);
    CHECK(l.k == 3);
    CHECK(l.lda == 3);
    CHECK(l.ldb == 3);
    CHECK(l.ldd == 7);
}

TEST_CASE("matmul in fp32, bf16 and fp16 with and without bias matches the CPU") {
    std::mt19937 rng(1);
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
        for (int64_t rows : {1, 7, 64})
            for (auto [n, k] : {std::pair<int64_t, int64_t>{33, 64}, {256, 300}, {1000, 128}}) {
                CAPTURE(dtype_name(dtype));
                CAPTURE(rows);
                CAPTURE(n);
                CAPTURE(k);
                HostWeight w = random_weight({n, k}, dtype, rng, 0.05f), bias = random_weight({n}, dtype, rng);
                const auto weights = weights_of({&w, &bias});
                Pair pair(weights);
                for (bool with_bias : {false, true}) {
                    auto [cpu, gpu] = pair.both({random_floats(size_t(rows * k), rng)}, size_t(rows * n),
                                                [&](Backend& b, auto& in, float* out) {
                                                    b.matmul(in[0].floats(), rows, weights[0],
                                                             with_bias ? &weights[1] : nullptr, out);
                                                });
                    // bf16/fp16 weights take the activations rounded to their precision.
                    CHECK(relative_error(gpu, cpu) <= (dtype == DType::f32 ? 1e-5 : 1e-2));
                }
            }
}

namespace {

// An F8_E4M3_B128 matrix of an fp8 checkpoint with 128x128 blocks and dynamic activations
// (Weight::fp8_w8a8): random codes (no NaN), one random scale per tile.
struct Fp8TileWeight {
    std::vector<uint8_t> blocks;
    Weight weight;
};
Fp8TileWeight fp8_tile_weight(int64_t n, int64_t k, std::mt19937& rng) {
    Fp8TileWeight w;
    const int64_t groups = k / 128;
    std::vector<float> tiles(size_t((n + 127) / 128 * groups));
    std::uniform_real_distribution<float> scale(1e-3f, 4e-3f);
    for (float& t : tiles) t = scale(rng);
    std::uniform_int_distribution<int> code(0, 255);
    w.blocks.resize(size_t(n * groups * 132));
    for (int64_t r = 0; r < n; ++r)
        for (int64_t g = 0; g < groups; ++g) {
            uint8_t* b = w.blocks.data() + (r * groups + g) * 132;
            std::memcpy(b, &tiles[size_t(r / 128 * groups + g)], 4);
            for (int j = 0; j < 128; ++j) {
                int c = code(rng);
                while ((c & 0x7F) == 0x7F) c = code(rng);
                b[4 + j] = uint8_t(c);
            }
        }
    w.weight.name = "fp8 tiles";
    w.weight.role = Role::q_proj;
    w.weight.dtype = DType::f8_e4m3_b128;
    w.weight.file_dtype = DType::f8_e4m3;
    w.weight.fp8_w8a8 = true;
    w.weight.shape = {n, k};
    w.weight.elements = uint64_t(n * k);
    w.weight.data = w.blocks.data();
    return w;
}

// rows · wᵀ as the block-scaled product defines it, in float64: x quantized per 128 of a row as
// F8_E4M3_B128 blocks are, each block's product of codes times both scales.
std::vector<float> fp8_product(const std::vector<float>& x, int64_t rows, const Fp8TileWeight& w) {
    const int64_t n = w.weight.shape[0], k = w.weight.shape[1], groups = k / 128;
    std::vector<uint8_t> xq(size_t(rows * groups * 132));
    kernels::cpu::quantize_row(kernels::ElementType::f8_e4m3_b128, x.data(), rows * k, xq.data());
    std::vector<float> out(size_t(rows * n));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < n; ++o) {
            double sum = 0;
            for (int64_t g = 0; g < groups; ++g) {
                const uint8_t* a = xq.data() + (r * groups + g) * 132;
                const uint8_t* b = w.blocks.data() + (o * groups + g) * 132;
                double block = 0;
                for (int j = 0; j < 128; ++j) block += double(fp8_e4m3_to_float(a[4 + j])) * fp8_e4m3_to_float(b[4 + j]);
                float sa, sb;
                std::memcpy(&sa, a, 4);
                std::memcpy(&sb, b, 4);
                sum += block * sa * sb;
            }
            out[size_t(r * n + o)] = float(sum);
        }
    return out;
}

}  // namespace

TEST_CASE("an fp8 checkpoint's dense matrices multiply in fp8 with activations quantized per 128 on sm_90") {
    std::mt19937 rng(17);
    const bool fp8 = cuda::CublasLtMatmul::block_scaled_fp8(0);
    if (!fp8) MESSAGE("no block-scaled fp8 products on this device: the weights stay F8_E4M3_B128, weight-only");
    // 130 outputs are not a multiple of 4 (cuBLASLt's rule): that matrix stays weight-only.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{128, 128}, {200, 384}, {384, 256}, {130, 128}}) {
        const Fp8TileWeight w = fp8_tile_weight(n, k, rng);
        HostWeight bf16 = random_weight({40, k}, DType::bf16, rng, 0.05f), bias = random_weight({n}, DType::f32, rng);
        std::vector<Weight> weights = {w.weight, bf16.weight, bias.weight};
        Pair pair(weights);
        for (int64_t rows : {1, 3, 4, 17, 64}) {
            CAPTURE(n);
            CAPTURE(k);
            CAPTURE(rows);
            const std::vector<float> x = random_floats(size_t(rows * k), rng);
            // The fp8 matrix twice (the second with a bias), then a bf16 one on the same input: rows
            // in multiples of 4 go to cuBLASLt, the last up to 3 to matmul_fp8_rows.
            auto [cpu, gpu] = pair.both({x}, size_t(rows * (2 * n + 40)), [&](Backend& b, auto& in, float* out) {
                const std::vector<MatmulOutput> outputs = {{&weights[0], nullptr, out},
                                                           {&weights[0], &weights[2], out + rows * n},
                                                           {&weights[1], nullptr, out + 2 * rows * n}};
                b.matmuls(in[0].floats(), rows, outputs);
            });
            const auto part = [&](const std::vector<float>& v, int64_t from, int64_t count) {
                return std::vector<float>(v.begin() + from, v.begin() + from + count);
            };
            const std::vector<float> plain = part(gpu, 0, rows * n), biased = part(gpu, rows * n, rows * n);
            if (fp8 && n % 4 == 0) {
                // Hopper's fp8 tensor cores sum with fewer bits than fp32 within a block: 1e-3,
                // where a misplaced scale or a code off by one step is 1e-2 or more.
                CHECK(relative_error(plain, fp8_product(x, rows, w)) <= 1e-3);
                std::vector<float> with_bias = plain;
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t o = 0; o < n; ++o) with_bias[size_t(r * n + o)] += bias.f32[size_t(o)];
                CHECK(relative_error(biased, with_bias) <= 1e-6);
                // Unquantized activations (the CPU's product) differ by fp8's own error, a few percent.
                MESSAGE("against the CPU's unquantized activations: " << relative_error(plain, part(cpu, 0, rows * n)));
            } else {
                CHECK(relative_error(plain, part(cpu, 0, rows * n)) <= 1e-4);
            }
            CHECK(relative_error(part(gpu, 2 * rows * n, rows * 40), part(cpu, 2 * rows * n, rows * 40)) <= 1e-2);
        }
    }
}

TEST_CASE("activations quantized for fp8 products on the device are F8_E4M3_B128's codes and scales, bit for bit") {
    std::mt19937 rng(19);
    const int64_t rows = 6, k = 256, groups = k / 128;
    std::vector<float> x = random_floats(size_t(rows * k), rng, 5.0f);
    // Ties between codes, values past 448 times the scale's reach, the subnormal steps, zero and NaN.
    const float edges[] = {448.0f, 464.0f, 1e6f, -1e6f, 0.0f, -0.0f, 1e-30f, 2e-3f, 1.0625f, 1.1875f, std::nanf("")};
    for (size_t i = 0; i < std::size(edges); ++i) x[i * 7] = edges[i];
    Pair pair({});
    Backend& cuda = *pair.cuda;
    const size_t bytes = size_t(kernels::fp8_activation_bytes(rows, k));
    DeviceBuffer in = pair.put(cuda, x), out = cuda.allocate(bytes);
    cuda.synchronize();  // the upload is on the backend's stream, the launch on the legacy one
    auto* values = reinterpret_cast<uint8_t*>(out.floats());
    REQUIRE(kernels::cuda::quantize_fp8_groups(in.floats(), rows, k, values, reinterpret_cast<float*>(values + rows * k),
                                               nullptr) == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<uint8_t> got(bytes);
    REQUIRE(cudaMemcpy(got.data(), values, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    std::vector<uint8_t> blocks(size_t(rows * groups) * 132);
    kernels::cpu::quantize_row(kernels::ElementType::f8_e4m3_b128, x.data(), rows * k, blocks.data());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < groups; ++g) {
            CAPTURE(r);
            CAPTURE(g);
            const uint8_t* block = blocks.data() + (r * groups + g) * 132;
            CHECK(std::memcmp(got.data() + r * k + g * 128, block + 4, 128) == 0);
            CHECK(std::memcmp(got.data() + rows * k + (r + g * rows) * 4, block, 4) == 0);
        }
}

TEST_CASE("host: block-scaled fp8 products are for sm_90 devices only, and none without a device") {
    CHECK_FALSE(cuda::CublasLtMatmul::block_scaled_fp8(cuda::device_count()));  // no such device
}

TEST_CASE("matmuls of one input in mixed precisions each match the CPU's matmul") {
    std::mt19937 rng(11);
    const int64_t rows = 5, k = 96;
    // bf16 twice (one rounding serves both), then fp16 and fp32 (rounded again, or not at all),
    // then bf16 again (rounded again after the fp16 one), the first and last with a bias.
    HostWeight a = random_weight({40, k}, DType::bf16, rng, 0.05f), b16 = random_weight({24, k}, DType::bf16, rng, 0.05f),
               h = random_weight({16, k}, DType::f16, rng, 0.05f), f = random_weight({8, k}, DType::f32, rng, 0.05f),
               c = random_weight({12, k}, DType::bf16, rng, 0.05f), bias_a = random_weight({40}, DType::bf16, rng),
               bias_c = random_weight({12}, DType::f32, rng);
    const auto weights = weights_of({&a, &b16, &h, &f, &c, &bias_a, &bias_c});
    Pair pair(weights);
    const std::vector<int64_t> widths = {40, 24, 16, 8, 12};
    const int64_t total = 40 + 24 + 16 + 8 + 12;
    const auto x = random_floats(size_t(rows * k), rng);
    // The CPU runs matmul per output; the GPU matmuls once.
    std::vector<float> expected, actual;
    for (bool fused : {false, true}) {
        auto [cpu, gpu] = pair.both({x}, size_t(rows * total), [&](Backend& backend, auto& in, float* out) {
            std::vector<MatmulOutput> outputs;
            float* at = out;
            for (size_t i = 0; i < widths.size(); ++i) {
                const Weight* bias = i == 0 ? &weights[5] : i == 4 ? &weights[6] : nullptr;
                outputs.push_back({&weights[i], bias, at});
                at += rows * widths[i];
            }
            if (fused) {
                backend.matmuls(in[0].floats(), rows, outputs);
            } else {
                for (const MatmulOutput& o : outputs) backend.matmul(in[0].floats(), rows, *o.weight, o.bias, o.out);
            }
        });
        CHECK(relative_error(gpu, cpu) <= 1e-2);
        (fused ? actual : expected) = gpu;
    }
    CHECK(actual == expected);  // on the GPU too: one rounding per precision is the same rounding
}

TEST_CASE("a matmul right after a norm or SwiGLU takes their rounded output; after any other call it rounds anew") {
    std::mt19937 rng(13);
    const int64_t rows = 24, dim = 128, n = 72;
    HostWeight w = random_weight({n, dim}, DType::bf16, rng, 0.05f), norm = random_weight({dim}, DType::bf16, rng);
    const auto weights = weights_of({&w, &norm});
    Pair pair(weights);
    Backend& cuda = *pair.cuda;
    const auto x = random_floats(size_t(rows * dim), rng), y = random_floats(size_t(rows * dim), rng);
    DeviceBuffer in = pair.put(cuda, x), normed = pair.put(cuda, x),
                 out = pair.put(cuda, std::vector<float>(size_t(rows * n))),
                 fresh = pair.put(cuda, std::vector<float>(size_t(rows * n)));
    cuda.matmul(in.floats(), rows, weights[0], nullptr, out.floats());  // the matmuls now round to bf16
    // Norm then matmul (the fused copy), against norm, a synchronising copy, then matmul (rounded
    // anew): the same rounding, so the same bits.
    for (bool fused : {true, false}) {
        cuda.rmsnorm(in.floats(), rows, dim, dim, weights[1], 1e-5, normed.floats(), dim);
        if (!fused) (void)pair.get(cuda, normed, 1);
        cuda.matmul(normed.floats(), rows, weights[0], nullptr, (fused ? out : fresh).floats());
    }
    CHECK(pair.get(cuda, out, size_t(rows * n)) == pair.get(cuda, fresh, size_t(rows * n)));
    // A call between the norm and the matmul that changes the norm's output: the matmul must see
    // the change (the CPU's answer), not the copy the norm wrote.
    auto [cpu, gpu] = pair.both({x, y}, size_t(rows * n), [&](Backend& b, auto& buffers, float* result) {
        DeviceBuffer scratch = pair.put(b, std::vector<float>(size_t(rows * dim)));
        b.rmsnorm(buffers[0].floats(), rows, dim, dim, weights[1], 1e-5, scratch.floats(), dim);
        b.add(scratch.floats(), buffers[1].floats(), rows * dim);
        b.matmul(scratch.floats(), rows, weights[0], nullptr, result);
    });
    CHECK(relative_error(gpu, cpu) <= 1e-2);
    // SwiGLU then matmul: the same.
    auto [cpu2, gpu2] = pair.both({x, y}, size_t(rows * n), [&](Backend& b, auto& buffers, float* result) {
        b.swiglu(buffers[0].floats(), buffers[1].floats(), rows * dim);
        b.matmul(buffers[0].floats(), rows, weights[0], nullptr, result);
    });
    CHECK(relative_error(gpu2, cpu2) <= 1e-2);
}

TEST_CASE("embedding, rmsnorm, add_rmsnorm, rope, swiglu, add, gathers, guidance and bf16 stores match the CPU") {
    std::mt19937 rng(2);
    const int64_t rows = 9, dim = 96, heads = 3, head_dim = 32, vocab = 50;
    HostWeight table = random_weight({vocab, dim}, DType::bf16, rng), norm = random_weight({dim}, DType::f16, rng),
               head_norm = random_weight({head_dim}, DType::f32, rng);
    const auto weights = weights_of({&table, &norm, &head_norm});
    Pair pair(weights);
    const size_t n = size_t(rows * dim);
    auto expect_close = [](const std::pair<std::vector<float>, std::vector<float>>& r, double tolerance) {
        CHECK(relative_error(r.second, r.first) <= tolerance);
    };
    std::vector<int32_t> ids(static_cast<size_t>(rows));
    for (int32_t& id : ids) id = int32_t(rng() % vocab);
    {
        std::vector<float> ids_as_floats(ids.size());
        std::memcpy(ids_as_floats.data(), ids.data(), ids.size() * 4);
        expect_close(pair.both({ids_as_floats}, n, [&](Backend& b, auto& in, float* out) {
                         b.embedding(weights[0], in[0].ints(), rows, out);
                     }), 0.0);
    }
    const std::vector<float> x = random_floats(n, rng), y = random_floats(n, rng);
    expect_close(pair.both({x}, n, [&](Backend& b, auto& in, float* out) {
                     b.rmsnorm(in[0].floats(), rows, dim, dim, weights[1], 1e-5, out, dim);
                 }), 1e-5);
    // Per-head norms: rows of head_dim inside rows of dim.
    expect_close(pair.both({x}, n, [&](Backend& b, auto& in, float* out) {
                     b.rmsnorm(in[0].floats(), rows * heads, head_dim, head_dim, weights[2], 1e-6, out, head_dim);
                 }), 1e-5);
    // The residual add fused with the norm: the sum (first half) and its norm (second half).
    expect_close(pair.both({x, y}, 2 * n, [&](Backend& b, auto& in, float* out) {
                     b.store(in[0].floats(), int64_t(n), kernels::ElementType::f32, out);
                     b.add_rmsnorm(out, in[1].floats(), rows, dim, weights[1], 1e-5, out + n);
                 }), 1e-5);
    std::vector<float> positions_as_floats(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        const int32_t position = int32_t(r * 37 + 5);
        std::memcpy(&positions_as_floats[size_t(r)], &position, 4);
    }
    for (const RopeSpec& spec : {RopeSpec{10000.0, head_dim, false}, RopeSpec{500000.0, head_dim, true},
                                 RopeSpec{10000.0, head_dim / 2, false}}) {
        expect_close(pair.both({x, positions_as_floats}, n, [&](Backend& b, auto& in, float* out) {
                         b.store(in[0].floats(), int64_t(n), kernels::ElementType::f32, out);
                         b.rope(out, rows, heads, head_dim, in[1].ints(), spec);
                     }), 1e-5);
    }
    expect_close(pair.both({x, y}, n, [&](Backend& b, auto& in, float* out) {
                     b.store(in[0].floats(), int64_t(n), kernels::ElementType::f32, out);
                     b.swiglu(out, in[1].floats(), int64_t(n));
                 }), 1e-5);
    expect_close(pair.both({x, y}, n, [&](Backend& b, auto& in, float* out) {
                     b.store(in[0].floats(), int64_t(n), kernels::ElementType::f32, out);
                     b.add(out, in[1].floats(), int64_t(n));
                     b.combine_guidance(out, in[1].floats(), 1.5, int64_t(n));
                 }), 1e-6);
    // Stored as bf16 (a K/V cache's rounding), two per float of the output: the CPU's bits.
    const auto stored = pair.both({x}, n / 2, [&](Backend& b, auto& in, float* out) {
        b.store(in[0].floats(), int64_t(n), kernels::ElementType::bf16, out);
    });
    CHECK(std::memcmp(stored.first.data(), stored.second.data(), n / 2 * sizeof(float)) == 0);
    // Gather rows, one of them twice.
    const std::vector<int32_t> picked = {4, 0, 4, 8};
    std::vector<float> picked_as_floats(picked.size());
    std::memcpy(picked_as_floats.data(), picked.data(), picked.size() * 4);
    expect_close(pair.both({x, picked_as_floats}, picked.size() * size_t(dim), [&](Backend& b, auto& in, float* out) {
                     b.gather_rows(in[0].floats(), dim, in[1].ints(), int64_t(picked.size()), out);
                 }), 0.0);
}

TEST_CASE("grouped matmuls of few and many rows per group match the CPU in every precision") {
    std::mt19937 rng(8);
    // Groups of 0 to 70 rows, two layouts: many slots per group (bf16/fp16 weights over k a
    // multiple of 8: every group on tensor cores, offsets read on the device; the others: offsets
    // read on the host, up to max_few_rows rows in the few-row kernel, the rest through cuBLASLt)
    // and few (every group in the few-row kernel, offsets read on the device, a group of 20 rows in
    // two passes). Widths with and
    // without whole 16-byte runs, one and several column tiles, a partial last one. The
    // activations are multiples of 1/16 below 1, exact in bf16 and fp16, so rounding them loses
    // nothing and both backends add the same exact products: only the order of the sums differs.
    for (const std::vector<int32_t>& sizes : {std::vector<int32_t>{3, 0, 1, 4, 5, 16, 17, 40, 2, 70, 60},
                                              std::vector<int32_t>{3, 0, 1, 4, 5, 20, 2, 1, 0}}) {
        std::vector<int32_t> offsets = {0};
        for (int32_t size : sizes) offsets.push_back(offsets.back() + size);
        const auto groups = static_cast<int64_t>(sizes.size());
        const int64_t rows = offsets.back();
        // The first layout takes the host's path, the second the device's.
        REQUIRE(kernels::cuda::few_rows_on_average(rows, groups) == (sizes.back() == 0));
        for (DType dtype : {DType::f32, DType::bf16, DType::f16})
            for (auto [n, k] : {std::pair<int64_t, int64_t>{24, 64}, {37, 300}, {64, 7}, {200, 520}, {1024, 2048}}) {
                CAPTURE(rows);
                CAPTURE(dtype_name(dtype));
                CAPTURE(n);
                CAPTURE(k);
                std::vector<HostWeight> host;
                for (int64_t g = 0; g < 2 * groups; ++g) host.push_back(random_weight({n, k}, dtype, rng, 0.1f));
                std::vector<Weight> weights;
                for (const HostWeight& w : host) weights.push_back(w.weight);
                std::vector<const Weight*> first, second;
                for (int64_t g = 0; g < groups; ++g) {
                    first.push_back(&weights[size_t(g)]);
                    second.push_back(&weights[size_t(groups + g)]);
                }
                Pair pair(weights);
                std::vector<float> x(size_t(rows * k));
                std::uniform_int_distribution<int> sixteenths(-15, 15);
                for (float& v : x) v = float(sixteenths(rng)) / 16.0f;
                std::vector<float> results[2][2];
                for (int side = 0; side < 2; ++side) {
                    Backend& b = side == 0 ? *pair.cpu : *pair.cuda;
                    DeviceBuffer in = pair.put(b, x), at = pair.put(b, offsets),
                                 one = pair.put(b, std::vector<float>(size_t(rows * n), 0.0f)),
                                 two = pair.put(b, std::vector<float>(size_t(rows * n), 0.0f));
                    const GroupedMatmulOutput outputs[] = {{first, one.floats()}, {second, two.floats()}};
                    b.grouped_matmuls(in.floats(), rows, at.ints(), outputs);
                    results[side][0] = pair.get(b, one, size_t(rows * n));
                    results[side][1] = pair.get(b, two, size_t(rows * n));
                }
                // fp32 sums of up to 2048 terms in another order: far below bf16's 4e-3 per rounding.
                for (int o = 0; o < 2; ++o) CHECK(relative_error(results[1][o], results[0][o]) <= 1e-4);
            }
    }
}

TEST_CASE("the few-row grouped kernel computes groups of up to 16 rows and leaves larger ones, or takes all") {
    std::mt19937 rng(9);
    // Groups of 3, 0, 16, 17 and 1 rows; three column tiles, the last partial; whole 16-byte runs
    // over k = 264 (a partial last sweep of the warp).
    const std::vector<int32_t> offsets = {0, 3, 3, 19, 36, 37};
    const int64_t groups = 5, rows = 37, n = 70, k = 264;
    std::vector<HostWeight> host;
    for (int64_t g = 0; g < groups; ++g) host.push_back(random_weight({n, k}, DType::bf16, rng, 0.1f));
    std::uniform_int_distribution<int> sixteenths(-15, 15);
    std::vector<uint16_t> x(size_t(rows * k));
    for (uint16_t& v : x) v = float_to_bf16(float(sixteenths(rng)) / 16.0f);  // exact in bf16
    Pair pair({});
    Backend& cuda = *pair.cuda;
    std::vector<DeviceBuffer> weights;
    std::vector<const void*> pointers;
    for (const HostWeight& w : host) {
        weights.push_back(pair.put(cuda, w.half));
        pointers.push_back(weights.back().floats());
    }
    const float untouched = 12345.0f;
    for (bool every_group : {false, true}) {
        CAPTURE(every_group);
        DeviceBuffer in = pair.put(cuda, x), table = pair.put(cuda, pointers), groups_at = pair.put(cuda, offsets),
                     out = pair.put(cuda, std::vector<float>(size_t(rows * n), untouched));
        cuda.synchronize();  // the uploads are on the backend's stream, the launch on the legacy one
        REQUIRE(kernels::cuda::few_row_grouped_matmul(
                    in.floats(), reinterpret_cast<const void* const*>(table.floats()), groups_at.ints(), groups,
                    kernels::ElementType::bf16, n, k, true, every_group, out.floats(), nullptr) == cudaSuccess);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        const std::vector<float> got = pair.get(cuda, out, size_t(rows * n));
        for (int64_t g = 0; g < groups; ++g)
            for (int64_t r = offsets[size_t(g)]; r < offsets[size_t(g) + 1]; ++r)
                for (int64_t c = 0; c < n; ++c) {
                    const float value = got[size_t(r * n + c)];
                    if (!every_group && offsets[size_t(g) + 1] - offsets[size_t(g)] > kernels::cuda::max_few_rows) {
                        CHECK(value == untouched);  // left to cuBLASLt
                        continue;
                    }
                    double expected = 0;
                    for (int64_t i = 0; i < k; ++i)
                        expected += double(bf16_to_float(host[size_t(g)].half[size_t(c * k + i)])) *
                                    double(bf16_to_float(x[size_t(r * k + i)]));
                    CHECK(std::abs(double(value) - expected) <= 1e-5 * (1.0 + std::abs(expected)));
                }
    }
}

TEST_CASE("the tensor-core grouped kernel computes groups of any size and writes nothing else") {
    std::mt19937 rng(12);
    // Groups of 0, 1, 63, 64, 65, 130, 5 and 0 rows (partial and whole tiles of 64, two of one
    // group); two column tiles, the last partial; k = 264, a partial last step of 32.
    const std::vector<int32_t> sizes = {0, 1, 63, 64, 65, 130, 5, 0};
    std::vector<int32_t> offsets = {0};
    for (int32_t size : sizes) offsets.push_back(offsets.back() + size);
    const auto groups = static_cast<int64_t>(sizes.size());
    const int64_t rows = offsets.back(), n = 70, k = 264, spare = 3;  // rows past the slots must stay
    Pair pair({});
    Backend& cuda = *pair.cuda;
    const float untouched = 12345.0f;
    std::uniform_int_distribution<int> sixteenths(-15, 15);
    for (DType dtype : {DType::bf16, DType::f16}) {
        CAPTURE(dtype_name(dtype));
        const auto type = dtype == DType::bf16 ? kernels::ElementType::bf16 : kernels::ElementType::f16;
        auto to_float = [&](uint16_t h) { return dtype == DType::bf16 ? bf16_to_float(h) : fp16_to_float(h); };
        std::vector<HostWeight> host;
        std::vector<DeviceBuffer> weights;
        std::vector<const void*> pointers;
        for (int64_t g = 0; g < groups; ++g) {
            host.push_back(random_weight({n, k}, dtype, rng, 0.1f));
            weights.push_back(pair.put(cuda, host.back().half));
            pointers.push_back(weights.back().floats());
        }
        std::vector<uint16_t> x(size_t(rows * k));
        for (uint16_t& v : x) {  // exact in both types
            const float value = float(sixteenths(rng)) / 16.0f;
            v = dtype == DType::bf16 ? float_to_bf16(value) : float_to_fp16(value);
        }
        const DeviceBuffer in = pair.put(cuda, x), table = pair.put(cuda, pointers);
        // The kernel over `group_offsets` into outputs poisoned with `untouched`, `spare` rows past the slots.
        auto run = [&](const std::vector<int32_t>& group_offsets) {
            DeviceBuffer at = pair.put(cuda, group_offsets),
                         out = pair.put(cuda, std::vector<float>(size_t((rows + spare) * n), untouched));
            cuda.synchronize();  // the uploads are on the backend's stream, the launch on the legacy one
            REQUIRE(kernels::cuda::grouped_matmul_tensor_cores(in.floats(), rows,
                                                               reinterpret_cast<const void* const*>(table.floats()),
                                                               at.ints(), groups, type, n, k, out.floats(),
                                                               nullptr) == cudaSuccess);
            REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
            return pair.get(cuda, out, size_t((rows + spare) * n));
        };
        REQUIRE(kernels::cuda::grouped_matmul_on_tensor_cores(type, rows, groups, k));
        const std::vector<float> got = run(offsets);
        for (int64_t g = 0; g < groups; ++g)
            for (int64_t r = offsets[size_t(g)]; r < offsets[size_t(g) + 1]; ++r)
                for (int64_t c = 0; c < n; ++c) {
                    double expected = 0;
                    for (int64_t i = 0; i < k; ++i)
                        expected += double(to_float(host[size_t(g)].half[size_t(c * k + i)])) *
                                    double(to_float(x[size_t(r * k + i)]));
                    CHECK(std::abs(double(got[size_t(r * n + c)]) - expected) <= 1e-5 * (1.0 + std::abs(expected)));
                }
        for (size_t i = size_t(rows * n); i < got.size(); ++i) CHECK(got[i] == untouched);

        // Offsets past the slots (a broken caller's) are clamped to them: nothing beyond is touched.
        std::vector<int32_t> past = offsets;
        past.back() = int32_t(rows + 50);
        const std::vector<float> clamped = run(past);
        for (size_t i = size_t(rows * n); i < clamped.size(); ++i) CHECK(clamped[i] == untouched);
    }
    // What it does not take: fp32 weights, k not a multiple of 8, more than 65535 rows of tiles.
    CHECK_FALSE(kernels::cuda::grouped_matmul_on_tensor_cores(kernels::ElementType::f32, 100, 4, 264));
    CHECK_FALSE(kernels::cuda::grouped_matmul_on_tensor_cores(kernels::ElementType::bf16, 100, 4, 300));
    CHECK_FALSE(kernels::cuda::grouped_matmul_on_tensor_cores(kernels::ElementType::bf16, 64 * 65535, 1, 264));
    CHECK(kernels::cuda::grouped_matmul_on_tensor_cores(kernels::ElementType::f16, 64 * 65534, 1, 264));
    CHECK(kernels::cuda::grouped_matmul_tensor_cores(nullptr, 10, nullptr, nullptr, 2, kernels::ElementType::bf16, 8,
                                                     300, nullptr, nullptr) == cudaErrorInvalidValue);
}

TEST_CASE("routing, grouping by expert, grouped matmuls and the weighted un-permute match the CPU") {
    std::mt19937 rng(5);
    // 40 experts (two per lane for some), 6 per token, bf16 experts and an fp32 expert bias.
    const int64_t rows = 45, experts = 40, k = 6, dim = 24, width = 10;
    std::vector<HostWeight> host;
    for (int64_t e = 0; e < 3 * experts; ++e)
        host.push_back(random_weight(e < 2 * experts ? std::vector<int64_t>{width, dim} : std::vector<int64_t>{dim, width},
                                     DType::bf16, rng, 0.2f));
    host.push_back(random_weight({experts}, DType::f32, rng, 0.05f));
    std::vector<Weight> weights;
    for (const HostWeight& w : host) weights.push_back(w.weight);
    std::vector<const Weight*> gate, up, down;
    for (int64_t e = 0; e < experts; ++e) {
        gate.push_back(&weights[size_t(e)]);
        up.push_back(&weights[size_t(experts + e)]);
        down.push_back(&weights[size_t(2 * experts + e)]);
    }
    Pair pair(weights);
    const auto logits = random_floats(size_t(rows * experts), rng, 2.0f), x = random_floats(size_t(rows * dim), rng);
    const auto slots = size_t(rows * k);
    struct Result {
        std::vector<int32_t> chosen, slot_rows, token_slots;
        std::vector<float> weights, token_scales, x;
        std::vector<int32_t> offsets;
    };
    for (RouterScore score : {RouterScore::softmax, RouterScore::sigmoid})
        for (bool biased : {false, true}) {
            CAPTURE(static_cast<int>(score));
            CAPTURE(biased);
            const RouterParams params{experts, k, score == RouterScore::sigmoid, !biased, biased ? 2.5 : 1.0,
                                      biased ? &weights.back() : nullptr};
            Result results[2];
            for (int side = 0; side < 2; ++side) {
                Backend& b = side == 0 ? *pair.cpu : *pair.cuda;
                Result& r = results[side];
                DeviceBuffer in_logits = pair.put(b, logits), in_x = pair.put(b, x);
                DeviceBuffer chosen = b.allocate(slots * 4), chosen_weights = b.allocate(slots * 4),
                             slot_rows = b.allocate(slots * 4), token_slots = b.allocate(slots * 4),
                             token_scales = b.allocate(slots * 4), gathered = b.allocate(slots * size_t(dim) * 4),
                             g = b.allocate(slots * size_t(width) * 4), u = b.allocate(slots * size_t(width) * 4),
                             y = b.allocate(slots * size_t(dim) * 4), offsets = b.allocate(size_t(experts + 1) * 4);
                b.route(in_logits.floats(), rows, params, chosen.ints(), chosen_weights.floats());
                b.group_by_expert(chosen.ints(), chosen_weights.floats(), rows, k, experts, slot_rows.ints(),
                                  token_slots.ints(), token_scales.floats(), offsets.ints());
                b.gather_rows(in_x.floats(), dim, slot_rows.ints(), int64_t(slots), gathered.floats());
                // 270 slots over 40 experts: every group in the few-row kernel, offsets on the device.
                REQUIRE(kernels::cuda::few_rows_on_average(int64_t(slots), experts));
                const GroupedMatmulOutput gate_up[] = {{gate, g.floats()}, {up, u.floats()}};
                b.grouped_matmuls(gathered.floats(), int64_t(slots), offsets.ints(), gate_up);
                b.swiglu(g.floats(), u.floats(), int64_t(slots) * width);
                const GroupedMatmulOutput out[] = {{down, y.floats()}};
                b.grouped_matmuls(g.floats(), int64_t(slots), offsets.ints(), out);
                b.unpermute_add(in_x.floats(), rows, dim, k, token_slots.ints(), token_scales.floats(), y.floats());
                auto ints = [&](const DeviceBuffer& buffer, size_t n) {
                    std::vector<int32_t> v(n);
                    b.copy_to_host(v.data(), buffer, n * 4);
                    return v;
                };
                r.offsets = ints(offsets, size_t(experts + 1));
                r.chosen = ints(chosen, slots);
                r.slot_rows = ints(slot_rows, slots);
                r.token_slots = ints(token_slots, slots);
                r.weights = pair.get(b, chosen_weights, slots);
                r.token_scales = pair.get(b, token_scales, slots);
                r.x = pair.get(b, in_x, x.size());
            }
            const Result &cpu = results[0], &gpu = results[1];
            CHECK(gpu.chosen == cpu.chosen);
            CHECK(relative_error(gpu.weights, cpu.weights) <= 1e-6);
            CHECK(gpu.offsets == cpu.offsets);
            CHECK(gpu.slot_rows == cpu.slot_rows);
            CHECK(gpu.token_slots == cpu.token_slots);
            CHECK(relative_error(gpu.token_scales, cpu.token_scales) <= 1e-6);
            CHECK(relative_error(gpu.x, cpu.x) <= 1e-2);  // bf16 experts
            CHECK(cpu.x != x);
        }
    // Routing tables route could not have made (an expert twice for a token, an expert out of
    // range) are INTERNAL on both: on the CPU from group_by_expert, on the GPU from the next
    // synchronisation, once; the slots the GPU leaves name rows in range.
    for (Backend* b : {pair.cpu.get(), pair.cuda.get()})
        for (int32_t bad : {0, int32_t(experts)}) {
            CAPTURE(b->name());
            CAPTURE(bad);
            std::vector<int32_t> table(slots);
            for (size_t i = 0; i < slots; ++i) table[i] = int32_t(i % size_t(k));
            table[1] = bad;
            // The outputs hold garbage first: whatever the GPU leaves must be its own writing.
            DeviceBuffer chosen = pair.put(*b, table), scales = pair.put(*b, std::vector<float>(slots, 1.0f)),
                         slot_rows = pair.put(*b, std::vector<int32_t>(slots, INT32_MAX)),
                         token_slots = pair.put(*b, std::vector<int32_t>(slots, -1)),
                         token_scales = pair.put(*b, std::vector<float>(slots, std::nanf(""))),
                         offsets = pair.put(*b, std::vector<int32_t>(size_t(experts + 1), -1));
            std::vector<int32_t> rows_back(slots), slots_back(slots), offsets_back(size_t(experts + 1));
            try {
                b->group_by_expert(chosen.ints(), scales.floats(), rows, k, experts, slot_rows.ints(),
                                   token_slots.ints(), token_scales.floats(), offsets.ints());
                b->copy_to_host(rows_back.data(), slot_rows, slots * 4);
                FAIL("a bad routing table was accepted");
            } catch (const Error& e) {
                CHECK(e.status() == Status::internal);
            }
            if (b != pair.cuda.get()) continue;
            CHECK_NOTHROW(b->copy_to_host(rows_back.data(), slot_rows, slots * 4));  // reported once
            b->copy_to_host(slots_back.data(), token_slots, slots * 4);
            b->copy_to_host(offsets_back.data(), offsets, offsets_back.size() * 4);
            const std::vector<float> scales_back = pair.get(*b, token_scales, slots);
            for (size_t i = 0; i < slots; ++i) {
                CHECK(rows_back[i] >= 0);
                CHECK(rows_back[i] < rows);
                CHECK(slots_back[i] >= 0);
                CHECK(size_t(slots_back[i]) < slots);
                CHECK(std::isfinite(scales_back[i]));
            }
            CHECK(offsets_back.front() == 0);
            for (size_t e = 1; e < offsets_back.size(); ++e) CHECK(offsets_back[e - 1] <= offsets_back[e]);
            CHECK(size_t(offsets_back.back()) <= slots);
        }
}

TEST_CASE("host: query tiles are numbered in order, ceil(rows / tile) per sequence") {
    const int64_t tile = kernels::cuda::attention_query_tile;
    std::vector<kernels::cuda::AttentionSequence> sequences(4);
    const int64_t rows[] = {1, tile, tile + 1, 3 * tile};
    for (size_t s = 0; s < sequences.size(); ++s) sequences[s].rows = rows[s];
    CHECK(kernels::cuda::number_query_tiles(sequences.data(), 4) == 1 + 1 + 2 + 3);
    CHECK(sequences[0].first_tile == 0);
    CHECK(sequences[1].first_tile == 1);
    CHECK(sequences[2].first_tile == 2);
    CHECK(sequences[3].first_tile == 4);
}

TEST_CASE("host: the query tiles cover every row once per head and key split, with the head's keys and the mask's") {
    namespace kc = kernels::cuda;
    std::mt19937 rng(11);
    auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    // The mask written out key by key: positions before the origin are block -1.
    auto visible = [](int64_t position, int64_t keys, int64_t block_size, int64_t origin) {
        if (block_size == 0) return keys;
        auto block = [&](int64_t p) { return p < origin ? int64_t(-1) : (p - origin) / block_size; };
        int64_t n = 0;
        for (int64_t j = 0; j < keys; ++j) n += block(j) <= block(position) ? 1 : 0;
        return n;
    };
    for (int trial = 0; trial < 60; ++trial) {
        const kc::AttentionDims dims{.heads = 4, .kv_heads = int64_t(1) << uniform(0, 2), .head_dim = 8,
                                     .block_size = std::array<int64_t, 3>{0, 4, 5}[size_t(uniform(0, 2))]};
        CAPTURE(trial);
        const int64_t count = uniform(1, 6), d = dims.head_dim, kv_stride = dims.kv_heads * d;
        std::vector<kc::AttentionSequence> sequences(static_cast<size_t>(count));
        std::vector<std::vector<float>> caches;
        caches.reserve(sequences.size());
        int64_t total_rows = 0;
        for (kc::AttentionSequence& seq : sequences) {
            seq.first_row = total_rows;
            seq.rows = uniform(0, 3) == 0 ? uniform(0, 2) : uniform(1, 80);  // empty ones too
            total_rows += seq.rows;
            seq.block_origin = uniform(0, 10);
            seq.key_count = seq.rows;
            if (uniform(0, 1) == 1) {  // a cache view: more keys, the queries somewhere among them
                // One query tile over hundreds of keys splits them (flash-decoding).
                const bool long_cache = seq.rows <= kc::attention_query_tile && uniform(0, 1) == 1;
                seq.key_count = seq.rows + (long_cache ? uniform(200, 700) : uniform(0, 40));
                seq.query_position = uniform(0, seq.key_count - seq.rows);
                caches.emplace_back(static_cast<size_t>(2 * seq.key_count * kv_stride + 1));
                seq.keys = caches.back().data();
                seq.values = caches.back().data() + seq.key_count * kv_stride;
            }
        }
        const std::vector<float> k(static_cast<size_t>(total_rows * kv_stride + 1)), v(k.size());
        const int64_t tiles = kc::number_query_tiles(sequences.data(), count);
        std::vector<int> splits_of_row(static_cast<size_t>(total_rows));
        for (const kc::AttentionSequence& seq : sequences) {
            const int64_t splits = kc::key_splits(seq);
            const bool one_tile_over_a_cache = seq.keys != nullptr && seq.rows <= kc::attention_query_tile;
            CHECK(splits == (one_tile_over_a_cache ? std::clamp<int64_t>(seq.key_count / kc::attention_split_keys, 1,
                                                                         kc::attention_max_splits)
                                                   : 1));
            for (int64_t i = 0; i < seq.rows; ++i) splits_of_row[size_t(seq.first_row + i)] = int(splits);
        }
        for (int64_t head = 0; head < dims.heads; ++head) {
            std::vector<int> covered(static_cast<size_t>(total_rows));
            std::map<std::pair<int64_t, int64_t>, int64_t> next_key;  // (first row, first query) -> the keys so far
            const int64_t kv_head = head / (dims.heads / dims.kv_heads);
            for (int64_t t = 0; t < tiles; ++t) {
                const kc::QueryTile q = kc::query_tile_of(k.data(), v.data(), sequences.data(), count, dims, t, head);
                REQUIRE(q.queries > 0);  // a tile of no rows would be a block with nothing to do
                const kc::AttentionSequence& seq = q.seq;
                REQUIRE(q.first_query + q.queries <= seq.rows);
                for (int64_t i = 0; i < q.queries; ++i) ++covered[size_t(seq.first_row + q.first_query + i)];
                CHECK(q.query_offset == (seq.first_row + q.first_query) * dims.heads * d + head * d);
                const bool cached = seq.keys != nullptr;
                const void* keys = cached ? seq.keys : k.data() + seq.first_row * kv_stride;
                const void* values = cached ? seq.values : v.data() + seq.first_row * kv_stride;
                const size_t head_offset = size_t(kv_head * d) * sizeof(float);  // fp32 caches here
                CHECK(q.keys == static_cast<const char*>(keys) + head_offset);
                CHECK(q.values == static_cast<const char*>(values) + head_offset);
                CHECK(q.key_count == seq.key_count);
                int64_t most = 0;
                for (int64_t i = q.first_query; i < q.first_query + q.queries; ++i) {
                    const int64_t expected = visible(seq.query_position + i, seq.key_count, dims.block_size,
                                                     seq.block_origin);
                    CHECK(kc::visible_keys(seq, i, dims.block_size, seq.key_count) == expected);
                    most = std::max(most, expected);
                }
                CHECK(q.tile_keys == most);
                // The splits of a tile take its visible keys in order, in whole passes of 64.
                CHECK(q.splits == kc::key_splits(seq));
                int64_t& keys_so_far = next_key[{seq.first_row, q.first_query}];
                CHECK(q.key_begin == keys_so_far);
                CHECK((q.key_begin % 64 == 0 || q.key_begin == q.tile_keys));
                CHECK(q.key_end >= q.key_begin);
                keys_so_far = q.key_end;
                if (q.split == q.splits - 1) CHECK(q.key_end == q.tile_keys);
            }
            CHECK(covered == splits_of_row);
        }
    }
}

TEST_CASE("attention with grouped heads, block-causal masks and cache views matches the CPU") {
    std::mt19937 rng(3);
    const int64_t heads = 4;
    Pair pair({});
    // Three sequences of 5, 17 and 70 rows (a partial query tile, and several); the second's
    // block-causal region starts at 10, so its first queries sit before it. With a cache, the last
    // reads 100 keys in which its queries sit at position 2, its blocks starting at 10. Head sizes
    // under a warp, not a multiple of 4 or 32, LLaDA's 128 and the largest; one, two and four K/V
    // heads; block sizes dividing a tile, not dividing it and larger; queries scaled up so the
    // softmax is sharp and its running maximum moves between key tiles. With bf16 products, heads
    // of 64 and 128 go to the tensor-core kernel: within bf16 rounding (2e-2, as whole bf16
    // forwards), and visibly rounded (the fp32 kernel would be within 1e-4); the others stay fp32.
    // The cache is fp32 or bf16 (its elements rounded on the host, two to a float of the input).
    // With a cache the second reads 600 keys in which its queries sit at 300: one query tile over
    // them, its keys split across 4 blocks whose partial softmaxes are combined (flash-decoding).
    const std::vector<int64_t> lengths = {5, 17, 70};
    const int64_t tokens = 92, cached_keys = 100, long_keys = 600;
    const std::vector<std::pair<int64_t, int64_t>> shapes = {{20, 2}, {32, 2}, {36, 4}, {64, 1}, {64, 4},
                                                             {80, 2}, {128, 2}, {256, 2}};
    for (const auto& shape : shapes) {
        const int64_t head_dim = shape.first, kv_heads = shape.second;
        const int64_t q_width = heads * head_dim, kv_width = kv_heads * head_dim;
        const auto q = random_floats(size_t(tokens * q_width), rng, 3.0f),
                   k = random_floats(size_t(tokens * kv_width), rng), v = random_floats(size_t(tokens * kv_width), rng);
        const auto cache_k = random_floats(size_t(cached_keys * kv_width), rng),
                   cache_v = random_floats(size_t(cached_keys * kv_width), rng),
                   long_k = random_floats(size_t(long_keys * kv_width), rng),
                   long_v = random_floats(size_t(long_keys * kv_width), rng);
        auto packed_bf16 = [](const std::vector<float>& x) {
            std::vector<float> out((x.size() + 1) / 2);
            for (size_t i = 0; i < x.size(); ++i) {
                const uint16_t h = float_to_bf16(x[i]);
                std::memcpy(reinterpret_cast<char*>(out.data()) + 2 * i, &h, 2);
            }
            return out;
        };
        const auto cache_k_bf16 = packed_bf16(cache_k), cache_v_bf16 = packed_bf16(cache_v),
                   long_k_bf16 = packed_bf16(long_k), long_v_bf16 = packed_bf16(long_v);
        for (int64_t block_size : {0, 5, 8, 64})
            for (const std::string cache : {"none", "fp32", "bf16"})
                for (bool bf16_products : {false, true}) {
                    CAPTURE(head_dim);
                    CAPTURE(kv_heads);
                    CAPTURE(block_size);
                    CAPTURE(cache);
                    CAPTURE(bf16_products);
                    auto run = [&](Backend& b, auto& in, float* out) {
                        std::vector<SequenceRows> sequences;
                        int64_t first = 0;
                        for (int64_t rows : lengths) {
                            sequences.push_back({first, rows, nullptr, nullptr, 0, 0, 0});
                            first += rows;
                        }
                        sequences[1].block_origin = 10;
                        if (cache == "fp32") {
                            sequences.back() = {22, 70, in[3].floats(), in[4].floats(), cached_keys, 2, 10};
                            sequences[1] = {5, 17, in[7].floats(), in[8].floats(), long_keys, 300, 10};
                        }
                        if (cache == "bf16") {
                            sequences.back() = {22, 70, in[5].floats(), in[6].floats(), cached_keys, 2, 10,
                                                kernels::ElementType::bf16};
                            sequences[1] = {5, 17, in[9].floats(), in[10].floats(), long_keys, 300, 10,
                                            kernels::ElementType::bf16};
                        }
                        b.attention(in[0].floats(), in[1].floats(), in[2].floats(), sequences,
                                    {heads, kv_heads, head_dim, block_size, bf16_products}, out);
                    };
                    auto [cpu, gpu] = pair.both({q, k, v, cache_k, cache_v, cache_k_bf16, cache_v_bf16, long_k, long_v,
                                                 long_k_bf16, long_v_bf16},
                                                size_t(tokens * q_width), run);
                    const double error = relative_error(gpu, cpu);
                    if (bf16_products && kernels::cuda::attention_on_tensor_cores(head_dim)) {
                        CHECK(error <= 2e-2);
                        CHECK(error > 1e-4);
                        if (head_dim == 64) {
                            // Closer: the CPU on the inputs rounded as the kernel rounds them (q's
                            // scale, 1/8, is exact), leaving the weights' rounding and the order of
                            // the sums; a wrong rescale between passes would show here.
                            auto rounded = [](std::vector<float> x) {
                                for (float& f : x) f = bf16_to_float(float_to_bf16(f));
                                return x;
                            };
                            const auto close = pair.both({rounded(q), rounded(k), rounded(v), rounded(cache_k),
                                                          rounded(cache_v), cache_k_bf16, cache_v_bf16,
                                                          rounded(long_k), rounded(long_v), long_k_bf16, long_v_bf16},
                                                         size_t(tokens * q_width), run);
                            CHECK(relative_error(close.second, close.first) <= 5e-3);
                        }
                    } else {
                        CHECK(error <= 1e-4);
                    }
                }
    }
}

TEST_CASE("candidates match the CPU for greedy, sampled, filtered, banned and NaN rows") {
    std::mt19937 rng(4);
    Pair pair({});
    const int64_t rows = 48, vocab = 5003;
    auto logits = random_floats(size_t(rows * vocab), rng, 3.0f);
    // NaN logits (count as -inf on both): one row's first, a few scattered, one row all NaN.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    logits[size_t(5 * vocab)] = nan;
    for (int64_t r = 0; r < rows; r += 7) logits[size_t(r * vocab + (r * 131) % vocab)] = nan;
    std::fill_n(logits.begin() + 13 * vocab, vocab, nan);
    // Tied maxima in a greedy, a sampled and a filtered row: the first is top-1, the other the runner-up.
    for (const int64_t r : {18, 19, 20}) logits[size_t(r * vocab + 30)] = logits[size_t(r * vocab + 4000)] = 50.0f;
    const std::vector<int32_t> banned = {7, 11};
    std::vector<CandidateParams> variants(6);
    variants[1].noise_temperature = 0.8;
    variants[1].seed = 99;
    variants[1].step = 3;
    variants[2].distribution_temperature = 0.7;
    variants[2].top_k = 20;
    variants[2].noise_temperature = 1.0;
    variants[3].top_p = 0.9;
    variants[3].noise_temperature = 1.0;
    variants[3].seed = 5;
    variants[4].banned_tokens = banned;
    variants[4].probability_excluded_token = 3;
    variants[5].top_k = 1;
    variants[5].top_p = 0.5;
    std::vector<uint32_t> positions(static_cast<size_t>(rows));
    std::vector<const CandidateParams*> params(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        positions[size_t(r)] = uint32_t(r * 3);
        params[size_t(r)] = &variants[size_t(r) % variants.size()];
    }
    std::vector<Candidate> cpu(static_cast<size_t>(rows)), gpu(static_cast<size_t>(rows));
    for (Backend* b : {pair.cpu.get(), pair.cuda.get()}) {
        DeviceBuffer input = pair.put(*b, logits);
        b->reserve_workspace({1, vocab});
        b->candidates(input.floats(), rows, vocab, positions.data(), params, b == pair.cpu.get() ? cpu.data() : gpu.data());
    }
    for (int64_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        CHECK(gpu[size_t(r)].token == cpu[size_t(r)].token);
        CHECK(gpu[size_t(r)].top1_token == cpu[size_t(r)].top1_token);
        CHECK(gpu[size_t(r)].probability == doctest::Approx(cpu[size_t(r)].probability).epsilon(1e-4));
        CHECK(gpu[size_t(r)].top1_probability == doctest::Approx(cpu[size_t(r)].top1_probability).epsilon(1e-4));
        CHECK(gpu[size_t(r)].top2_probability == doctest::Approx(cpu[size_t(r)].top2_probability).epsilon(1e-4));
        CHECK(gpu[size_t(r)].negative_entropy == doctest::Approx(cpu[size_t(r)].negative_entropy).epsilon(1e-4));
        if (params[size_t(r)]->banned_tokens.size() > 0)
            CHECK((gpu[size_t(r)].token != 7 && gpu[size_t(r)].token != 11));
    }
}

namespace {

const char* const architectures[] = {"llada", "llada-block", "llada-moe", "llada-moe-sigmoid", "dream",
                                     "llada2-moe", "sdar", "sdar-moe", "rnd1"};

std::unique_ptr<Model> load(const std::string& path, Precision precision) {
    LoadOptions options;
    options.precision = precision;
    return load_model(path, options);
}

// A batch of two sequences through `model` on both backends: logits within `tolerance`, the
// same top-1 wherever the CPU's top two are `top_gap` apart, and the device memory the forward and
// its backend hold exactly the plan's scratch (the experts' weight tables, made by the first
// forward, included).
void check_forward(const Model& model, double tolerance, float top_gap = 0.05f) {
    MemoryLedger ledger("cuda weights", UINT64_MAX), scratch("cuda scratch", UINT64_MAX);
    auto cuda = make_cuda_backend(CudaWeights::upload(model.weights(), 0, &ledger), scratch);
    auto cpu = make_cpu_backend(2);
    const std::vector<std::vector<int32_t>> sequences = {{1, 2, 3, 4, 5, 6, 7},
                                                         {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3}};
    const ForwardLimits limits{20, 13};
    std::vector<ForwardSequence> batch;
    const CandidateParams greedy;
    for (const auto& s : sequences) batch.push_back({s, {}, &greedy, {}, 0.0});
    Forward on_cpu(model, *cpu, limits), on_cuda(model, *cuda, limits);
    const ForwardOutput expected = on_cpu.run(batch, true), actual = on_cuda.run(batch, true);
    const double error = relative_error(actual.logits, expected.logits);
    MESSAGE("max relative error " << error);
    CHECK(error <= tolerance);
    const ForwardOutput cpu_candidates = on_cpu.run(batch, false), cuda_candidates = on_cuda.run(batch, false);
    REQUIRE(cpu_candidates.candidates.size() == cuda_candidates.candidates.size());
    for (size_t i = 0; i < cpu_candidates.candidates.size(); ++i) {
        const Candidate &c = cpu_candidates.candidates[i], &g = cuda_candidates.candidates[i];
        if (c.top1_probability - c.top2_probability > top_gap) CHECK(g.top1_token == c.top1_token);
    }
    CHECK(scratch.in_use() == scratch_bytes(model.spec(), limits, BackendKind::cuda, 1));
}

}  // namespace

TEST_CASE("whole forwards of every architecture match the CPU in fp32 and bf16") {
    for (const std::string name : architectures)
        for (auto [precision, tolerance] : {std::pair{Precision::fp32, 1e-4}, std::pair{Precision::bf16, 2e-2}}) {
            CAPTURE(name);
            CAPTURE(static_cast<int>(precision));
            check_forward(*load(test_data_path("reference/" + name), precision), tolerance);
        }
    // The bundled model: a trained block diffusion model (heads of 32: the fp32 attention kernel;
    // the tensor-core one, for heads of 64 and 128, is checked against the CPU above).
    check_forward(*load(UNMASK_SOURCE_DIR "/models/toolcall-llada-3m", Precision::bf16), 2e-2);
}

// Weight-only quantization: the CUDA kernels decode the blocks in registers to the CPU's values and
// sum in fp32 (in another order), so a quantized model's logits follow the CPU's as fp32 ones do.
TEST_CASE("whole forwards of quantized models match the CPU: fp8 checkpoints, int8/q4/fp8 at load, ggml's blocks") {
    check_forward(*load(test_data_path("reference/llada-fp8"), Precision::automatic), 1e-4);
    // 128x128 blocks with dynamic activations: on sm_90 the dense matrices take fp8 activations
    // too (each moved by up to 1/16 of itself), which the CPU does not.
    if (cuda::CublasLtMatmul::block_scaled_fp8(0))
        check_forward(*load(test_data_path("reference/llada-fp8-block"), Precision::automatic), 0.1, 0.3f);
    else
        check_forward(*load(test_data_path("reference/llada-fp8-block"), Precision::automatic), 1e-4);
    for (Precision precision : {Precision::int8, Precision::q4, Precision::fp8}) {
        CAPTURE(static_cast<int>(precision));
        check_forward(*load(test_data_path("reference/llada-moe"), precision), 1e-4);  // routed experts quantized
        check_forward(*load(UNMASK_SOURCE_DIR "/models/toolcall-llada-3m", precision), 1e-4);
    }
    for (const std::string type : {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"}) {
        CAPTURE(type);
        check_forward(*load(UNMASK_SOURCE_DIR "/tests/fixtures/ggml/llada-256-" + type + ".gguf", Precision::automatic), 1e-4);
    }
}

TEST_CASE("generation gives the CPU's tokens for every policy and cache mode at temperature 0") {
    // Two models: the bundled one (block diffusion: its own blocks, LLaDA's policies) and the
    // reference LLaDA (no blocks of its own: blocks of 16), which also runs Dream's whole-canvas
    // policies (on the whole canvas).
    for (const std::string& path : {std::string(UNMASK_SOURCE_DIR "/models/toolcall-llada-3m"), test_data_path("reference/llada")}) {
        CAPTURE(path);
        const auto model = load(path, Precision::fp32);
        MemoryLedger ledger("cuda weights", UINT64_MAX);
        auto cuda = make_cuda_backend(CudaWeights::upload(model->weights(), 0, &ledger));
        auto cpu = make_cpu_backend(2);
        const ModelSpec& spec = model->spec();
        const std::vector<int32_t> prompt = {257, 40, 83, 84, 258};  // the bundled model's <|user|> ... <|assistant|>
        for (CommitPolicy policy : {CommitPolicy::low_confidence, CommitPolicy::random, CommitPolicy::origin,
                                    CommitPolicy::maskgit_plus, CommitPolicy::topk_margin, CommitPolicy::entropy})
            for (CacheMode cache : {CacheMode::none, CacheMode::prefix, CacheMode::dual})
                for (double threshold : {0.0, 0.9}) {
                    CAPTURE(static_cast<int>(policy));
                    CAPTURE(static_cast<int>(cache));
                    CAPTURE(threshold);
                    if (threshold > 0 && policy != CommitPolicy::low_confidence) continue;
                    DecodeParams params;
                    params.gen_length = 32;
                    params.steps = 32;
                    params.block_length = spec.diffusion_block_size > 0 ? 0 : 16;  // 0: the model's blocks
                    params.policy = policy;
                    params.cache_mode = cache;
                    params.threshold = threshold;
                    params.seed = 7;
                    if (params.whole_region_policy()) {
                        if (spec.diffusion_block_size > 0) continue;  // refused: blocks of the model's
                        params.block_length = 0;
                    }
                    std::vector<int32_t> canvas = prompt;
                    canvas.resize(prompt.size() + 32, static_cast<int32_t>(spec.mask_token_id));
                    std::vector<std::vector<int32_t>> results;
                    for (Backend* b : {cpu.get(), cuda.get()}) {
                        std::vector<DecodeSequence> sequences;
                        sequences.emplace_back(spec, params, canvas);
                        generate(*model, *b, sequences, single_forward_limits(sequences));
                        results.push_back(sequences[0].canvas());
                    }
                    CHECK(results[1] == results[0]);
                }
    }
}

TEST_CASE("forwards replayed as CUDA graphs give the eager forwards' logits bit for bit") {
    // llada-moe: its routing stays on the device (few slots per expert), so it is captured too.
    for (const std::string name : {"llada", "llada-block", "dream", "llada-moe"}) {
        CAPTURE(name);
        const auto model = load(test_data_path("reference/" + name), Precision::bf16);
        const ModelSpec& spec = model->spec();
        MemoryLedger ledger("cuda weights", UINT64_MAX);
        const auto weights = CudaWeights::upload(model->weights(), 0, &ledger);
        auto graphs = make_cuda_backend(weights), eager = make_cuda_backend(weights, {.graphs = false});
        const int64_t length = 24, begin = 8, end = 16;
        std::vector<int32_t> first, second, outputs;
        for (int64_t p = 0; p < length; ++p) {
            first.push_back(static_cast<int32_t>(1 + (p * 37) % 90));
            second.push_back(p >= begin && p < end ? first.back() : static_cast<int32_t>(1 + (p * 11) % 70));
        }
        for (int64_t p = begin + 1; p < end; ++p) outputs.push_back(static_cast<int32_t>(p));
        // Full forwards of both canvases filling a cache each, then partial forwards against the
        // caches in turn (one shape, recorded on its second coming, replayed after), four rounds,
        // each with a new fed token (a graph that did nothing would leave the last round's results).
        // The second cache is bf16: its stores and reads are captured too.
        auto logits = [&](Backend& backend) {
            Forward forward(*model, backend, {length, length});
            KVCache one(backend, nullptr, spec, length), two(backend, nullptr, spec, length, DType::bf16);
            std::vector<int32_t> canvas_one = first, canvas_two = second;
            std::vector<std::vector<float>> out;
            for (int round = 0; round < 4; ++round)
                for (auto [canvas, cache] : {std::pair{&canvas_one, &one}, std::pair{&canvas_two, &two}}) {
                    if (round > 0) (*canvas)[size_t(begin + 1)] = static_cast<int32_t>(40 + round);
                    ForwardSequence full{*canvas, outputs, nullptr, {}, 0.0, cache};
                    if (round == 0) out.push_back(forward.run(std::vector{full}, true).logits);
                    ForwardSequence part = full;
                    part.feed_begin = begin;
                    part.feed_end = end;
                    out.push_back(forward.run(std::vector{part}, true).logits);
                }
            return out;
        };
        const auto expected = logits(*eager);
        CHECK(expected[1] != expected[3]);  // the caches' contents matter
        CHECK(logits(*graphs) == expected);
        // The partial forwards' two shapes each captured on their second coming and replayed
        // twice after; the full forwards came once each.
        const CudaGraphStats stats = cuda_graph_stats(*graphs);
        CHECK(stats.recorded == 2);
        CHECK(stats.replayed == 4);
        CHECK(stats.refused == 0);
        CHECK(cuda_graph_stats(*eager).recorded == 0);
    }
}

TEST_CASE("graphs are dropped when a staging buffer grows, then captured again") {
    // A graph reads the staging buffers it was captured with: when they grow (a forward with
    // larger limits reserves its workspace), every graph must go and be captured anew.
    const auto model = load(test_data_path("reference/llada"), Precision::bf16);
    MemoryLedger ledger("cuda weights", UINT64_MAX);
    const auto weights = CudaWeights::upload(model->weights(), 0, &ledger);
    auto graphs = make_cuda_backend(weights), eager = make_cuda_backend(weights, {.graphs = false});
    const std::vector<int32_t> outputs = {3, 7};
    auto logits = [&](Backend& backend) {
        Forward small(*model, backend, {16, 16});
        std::vector<std::vector<float>> out;
        std::vector<int32_t> canvas = {5, 9, 14, 3, 22, 7, 41, 2, 8, 8, 8, 8};
        auto run = [&](int round) {
            canvas[3] = static_cast<int32_t>(10 + round);  // a new token each time
            out.push_back(small.run(std::vector{ForwardSequence{canvas, outputs, nullptr, {}, 0.0}}, true).logits);
        };
        for (int round = 0; round < 3; ++round) run(round);  // seen, captured, replayed
        { Forward large(*model, backend, {64, 64}); }        // grows the staging buffers
        for (int round = 3; round < 6; ++round) run(round);  // captured again, replayed twice
        return out;
    };
    const auto expected = logits(*eager);
    CHECK(logits(*graphs) == expected);
    const CudaGraphStats stats = cuda_graph_stats(*graphs);
    CHECK(stats.recorded == 2);
    CHECK(stats.replayed == 3);
    CHECK(stats.refused == 0);
}

TEST_CASE("a graph whose attention descriptors outgrow their share is captured again with a larger one") {
    // 600 sequences over 2 layers: 1,200 descriptors of 64 bytes, past the planned 64 KiB a graph.
    const auto model = load(test_data_path("reference/llada"), Precision::bf16);
    MemoryLedger ledger("cuda weights", UINT64_MAX);
    const auto weights = CudaWeights::upload(model->weights(), 0, &ledger);
    auto graphs = make_cuda_backend(weights), eager = make_cuda_backend(weights, {.graphs = false});
    constexpr int64_t count = 600, length = 3;
    REQUIRE(model->spec().layers * count * CudaWorkspace::attention_sequence_bytes >
            CudaWorkspace::graph_constant_bytes);
    const std::vector<int32_t> outputs = {1};
    auto logits = [&](Backend& backend) {
        Forward forward(*model, backend, {count * length, length});
        std::vector<std::vector<float>> out;
        for (int round = 0; round < 4; ++round) {
            std::vector<std::vector<int32_t>> canvases;
            std::vector<ForwardSequence> sequences;
            for (int64_t s = 0; s < count; ++s)
                canvases.push_back({static_cast<int32_t>(1 + (s * 7 + round) % 60), static_cast<int32_t>(2 + s % 50), 8});
            for (const auto& canvas : canvases) sequences.push_back(ForwardSequence{canvas, outputs, nullptr, {}, 0.0});
            out.push_back(forward.run(sequences, true).logits);
        }
        return out;
    };
    const auto expected = logits(*eager);
    CHECK(logits(*graphs) == expected);
    // Seen; captured past the share (abandoned, run as it came); captured with the grown share;
    // replayed.
    const CudaGraphStats stats = cuda_graph_stats(*graphs);
    CHECK(stats.refused == 1);
    CHECK(stats.recorded == 1);
    CHECK(stats.replayed == 1);
}

TEST_CASE("a refused device allocation is OUT_OF_BUDGET, not a crash") {
    Pair pair({});
    MemoryLedger small("small", 1 << 20);
    CHECK_THROWS_AS(pair.cuda->allocate_in(small, size_t(2) << 20), Error);
    try {
        pair.cuda->allocate(size_t(1) << 50);  // a petabyte: the ledger has room, the GPU has not
        FAIL("allocated a petabyte");
    } catch (const Error& e) {
        CHECK(e.status() == Status::out_of_budget);
    }
    // The backend still works afterwards.
    DeviceBuffer b = pair.cuda->allocate(16);
    const float values[4] = {1, 2, 3, 4};
    pair.cuda->copy_to_device(b, values, sizeof values);
    float back[4] = {};
    pair.cuda->copy_to_host(back, b, sizeof back);
    CHECK(back[3] == 4.0f);
}

TEST_CASE("host: the CUDA errors that corrupt a context lose the device; the others do not") {
    for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorMisalignedAddress,
                          cudaErrorIllegalInstruction, cudaErrorHardwareStackError, cudaErrorAssert,
                          cudaErrorECCUncorrectable, cudaErrorLaunchTimeout})
        CHECK(cuda::corrupts_context(e));
    for (cudaError_t e : {cudaSuccess, cudaErrorInvalidValue, cudaErrorMemoryAllocation, cudaErrorInvalidConfiguration,
                          cudaErrorNoDevice, cudaErrorStreamCaptureInvalidated, cudaErrorNotReady})
        CHECK_FALSE(cuda::corrupts_context(e));
    // A device number no machine has, so that the other cases' devices are untouched.
    constexpr int device = 1000;
    CHECK_FALSE(cuda::device_lost(device).has_value());
    cuda::mark_device_lost(device, "first");
    cuda::mark_device_lost(device, "second");
    REQUIRE(cuda::device_lost(device).has_value());
    CHECK(*cuda::device_lost(device) == "first");  // the error that lost it, not a later echo
    CHECK_FALSE(cuda::device_lost(device + 1).has_value());
}

// Last in the file (doctest runs the cases in file order) and, in check.sh, in a process of its
// own: after it, the process's context on GPU 0 is unusable.
TEST_CASE("a kernel's illegal address loses the device: DeviceLost at once from then on, in every backend") {
    Pair pair({});
    Backend& cuda = *pair.cuda;
    DeviceBuffer fine = cuda.allocate(64);
    auto* unmapped = reinterpret_cast<float*>(uintptr_t(1) << 46);
    cuda.add(unmapped, unmapped, int64_t(1) << 20);
    try {
        cuda.synchronize();
        FAIL("an illegal address went unnoticed");
    } catch (const DeviceLost& e) {
        CHECK(e.status() == Status::device);
        CHECK(std::string(e.what()).find("GPU 0 is lost") != std::string::npos);
    }
    REQUIRE(cuda::device_lost(0).has_value());
    // Every later call fails at once, with the first error's reason, on this backend and any new one.
    CHECK_THROWS_AS(cuda.allocate(64), DeviceLost);
    CHECK_THROWS_AS(cuda.add(fine.floats(), fine.floats(), 16), DeviceLost);
    CHECK_THROWS_AS(cuda.synchronize(), DeviceLost);
    CHECK_THROWS_AS(make_cuda_backend(CudaWeights::upload(std::span<const Weight>{}, 0, nullptr)), DeviceLost);
}

TEST_CASE("host: all_to_all's segments start where the counts before them end") {
    const std::vector<size_t> counts = {3, 0, 5, 1};
    CHECK(segment_offsets(counts) == std::vector<size_t>{0, 3, 3, 8});
    CHECK(segment_offsets({}).empty());
}

TEST_CASE("host: an NCCL device group refuses an empty, repeated or missing device list, naming it") {
    const int gpus = cuda::device_count();
    std::vector<void*> streams(2, nullptr);
    CHECK_THROWS_WITH_AS(make_nccl_communicators({}, {}), doctest::Contains("at least one device"), Error);
    const std::vector<int> one = {0};
    CHECK_THROWS_WITH_AS(make_nccl_communicators(one, streams), doctest::Contains("2 streams for 1 devices"), Error);
    const std::vector<int> missing = {0, gpus};  // GPU `gpus` is one past the last
    try {
        make_nccl_communicators(missing, streams);
        FAIL("a group of a missing GPU was made");
    } catch (const Error& e) {
        CHECK(e.status() == Status::device);
        CHECK(std::string(e.what()).find("does not exist") != std::string::npos);
    }
    if (gpus > 0) {
        const std::vector<int> twice = {0, 0};
        CHECK_THROWS_WITH_AS(make_nccl_communicators(twice, streams), doctest::Contains("GPU 0 is listed twice"), Error);
    }
}

// With two GPUs or more (tests/gpu/check.sh's multi-GPU section): every collective against its
// definition on odd sizes, with small integers so that any order of summing gives the same bits;
// then a rank's abort ends the others' collectives with DEVICE.
TEST_CASE("NCCL collectives over the GPUs agree with their definitions, and an abort ends them") {
    const int gpus = std::min(cuda::device_count(), 4);
    if (gpus < 2) {
        MESSAGE("skipped: " << gpus << " GPU; the NCCL collectives need two or more");
        return;
    }
    std::vector<int> devices;
    std::vector<void*> streams;
    for (int d = 0; d < gpus; ++d) {
        devices.push_back(d);
        REQUIRE(cudaSetDevice(d) == cudaSuccess);
        cudaStream_t stream = nullptr;
        REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
        streams.push_back(stream);
    }
    auto communicators = make_nccl_communicators(devices, streams);
    const size_t count = 1001;
    auto value = [](int rank, size_t i) { return float(int(i % 97) - 40 + 3 * rank); };
    const auto ranks = size_t(gpus);
    std::vector<std::vector<float>> reduced(ranks), gathered(ranks), scattered(ranks), broadcast(ranks), exchanged(ranks);
    // Rank r sends r + d + 1 values to rank d, each r * 1000 + d * 100 + i.
    auto sent = [](int r, int d) { return size_t(r + d + 1); };
    auto run_rank = [&](int r) {
        REQUIRE(cudaSetDevice(r) == cudaSuccess);
        const auto stream = static_cast<cudaStream_t>(streams[size_t(r)]);
        Communicator& c = *communicators[size_t(r)];
        auto to_device = [&](const std::vector<float>& host) {
            float* device = nullptr;
            REQUIRE(cudaMalloc(&device, std::max<size_t>(host.size(), 1) * sizeof(float)) == cudaSuccess);
            REQUIRE(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
            return device;
        };
        auto to_host = [&](const float* device, size_t n) {
            std::vector<float> host(n);
            REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
            REQUIRE(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
            return host;
        };
        std::vector<float> mine(count), wide(count * size_t(gpus));
        for (size_t i = 0; i < count; ++i) mine[i] = value(r, i);
        for (size_t i = 0; i < wide.size(); ++i) wide[i] = value(r, i);
        float* data = to_device(mine);
        c.all_reduce_sum(data, count);
        reduced[size_t(r)] = to_host(data, count);
        float* in = to_device(mine);
        float* out = to_device(wide);
        c.all_gather(in, count, out);
        gathered[size_t(r)] = to_host(out, wide.size());
        float* whole = to_device(wide);
        c.reduce_scatter_sum(whole, count, data);
        scattered[size_t(r)] = to_host(data, count);
        float* root = to_device(mine);
        c.broadcast(root, count, 1);
        broadcast[size_t(r)] = to_host(root, count);
        std::vector<size_t> sends, receives;
        std::vector<float> segments;
        for (int d = 0; d < gpus; ++d) {
            sends.push_back(sent(r, d));
            receives.push_back(sent(d, r));
            for (size_t i = 0; i < sent(r, d); ++i) segments.push_back(float(r * 1000 + d * 100 + int(i)));
        }
        size_t expected_in = 0;
        for (size_t n : receives) expected_in += n;
        float* segments_in = to_device(segments);
        float* segments_out = to_device(std::vector<float>(expected_in));
        c.all_to_all(segments_in, sends.data(), segments_out, receives.data());
        exchanged[size_t(r)] = to_host(segments_out, expected_in);
        c.barrier();
        for (float* p : {data, in, out, whole, root, segments_in, segments_out}) cudaFree(p);
    };
    std::atomic<int> stopped{0};  // ranks whose run ended with an exception (a failed REQUIRE, an Error)
    std::vector<std::thread> threads;
    for (int r = 0; r < gpus; ++r)
        threads.emplace_back([&, r] {
            try {
                run_rank(r);
            } catch (...) {
                ++stopped;
                communicators[size_t(r)]->abort("rank " + std::to_string(r) + " failed its checks");
            }
        });
    for (std::thread& t : threads) t.join();
    REQUIRE(stopped == 0);
    for (int r = 0; r < gpus; ++r) {
        CAPTURE(r);
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i) {
            float sum = 0, scatter = 0;
            for (int q = 0; q < gpus; ++q) {
                sum += value(q, i);
                scatter += value(q, size_t(r) * count + i);
            }
            wrong += reduced[size_t(r)][i] != sum;
            wrong += scattered[size_t(r)][i] != scatter;
            wrong += broadcast[size_t(r)][i] != value(1, i);
            for (int q = 0; q < gpus; ++q) wrong += gathered[size_t(r)][size_t(q) * count + i] != value(q, i);
        }
        std::vector<float> expected;
        for (int q = 0; q < gpus; ++q)
            for (size_t i = 0; i < sent(q, r); ++i) expected.push_back(float(q * 1000 + r * 100 + int(i)));
        CHECK(exchanged[size_t(r)] == expected);
        CHECK(wrong == 0);
    }

    // Rank 1 gives up: rank 0's next collective is refused with its reason, never waiting for it.
    communicators[1]->abort("planted failure");
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    float* data = nullptr;
    REQUIRE(cudaMalloc(&data, sizeof(float)) == cudaSuccess);
    try {
        communicators[0]->all_reduce_sum(data, 1);
        FAIL("a collective ran after its group was aborted");
    } catch (const Error& e) {
        CHECK(e.status() == Status::device);
        CHECK(std::string(e.what()).find("planted failure") != std::string::npos);
    }
    cudaFree(data);
    communicators.clear();
    for (void* stream : streams) cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    if (cuda::device_count() == 0) {
        std::puts("no CUDA device: only the host-side cases run");
        context.addFilter("test-case", "host:*");
    }
    return context.run();
}
