// The CPU kernels: matmul against a float64 reference on awkward shapes with every instruction
// set giving the same bits; Philox against its published answers; sampling against known
// distributions (chi-square); fast_exp accuracy; the thread pool's coverage; the online softmax
// statistics the CUDA candidates kernel keeps; the CPU backend's reused RoPE table.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "core/float_convert.hpp"
#include "core/philox.hpp"
#include "core/thread_pool.hpp"
#include "cpu/attention.hpp"
#include "cpu/candidates.hpp"
#include "cpu/dequantize.hpp"
#include "cpu/matmul.hpp"
#include "cpu/matmul_isa.hpp"
#include "cpu/ops.hpp"
#include "cpu/quantize.hpp"
#include "cpu/vector_math.hpp"
#include "online_softmax.hpp"
#include "random_values.hpp"

using namespace unmask;
using namespace unmask::kernels::cpu;

namespace {

struct Matrix {
    std::vector<float> f32;
    std::vector<uint16_t> half;
    WeightMatrix view;
    std::vector<double> values;  // what the kernel sees, widened exactly
};

Matrix random_weights(int64_t n, int64_t k, ElementType type, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Matrix m;
    m.values.resize(size_t(n * k));
    if (type == ElementType::f32) {
        m.f32.resize(size_t(n * k));
        for (size_t i = 0; i < m.f32.size(); ++i) m.values[i] = m.f32[i] = normal(rng);
        m.view = {m.f32.data(), type, n, k, k};
    } else {
        m.half.resize(size_t(n * k));
        for (size_t i = 0; i < m.half.size(); ++i) {
            const float v = normal(rng);
            m.half[i] = type == ElementType::bf16 ? float_to_bf16(v) : float_to_fp16(v);
            m.values[i] = type == ElementType::bf16 ? bf16_to_float(m.half[i]) : fp16_to_float(m.half[i]);
        }
        m.view = {m.half.data(), type, n, k, k};
    }
    return m;
}

double chi_square(const std::vector<int>& counts, const std::vector<double>& expected_probability, int draws) {
    double chi = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        const double expected = expected_probability[i] * draws;
        if (expected == 0) {
            REQUIRE(counts[i] == 0);  // a token outside the support was drawn
            continue;
        }
        chi += (counts[i] - expected) * (counts[i] - expected) / expected;
    }
    return chi;
}

}  // namespace

TEST_CASE("matmul matches a float64 reference and every instruction set gives the same bits") {
    std::mt19937 rng(11);
    size_t isa_count = 0;
    const MatmulIsa* isas = matmul_isas(isa_count);
    std::vector<float> scratch(matmul_scratch_floats());
    for (ElementType type : {ElementType::f32, ElementType::bf16, ElementType::f16})
        for (int64_t m : {1, 5, 8, 17})
            for (int64_t n : {1, 31, 33, 130})
                for (int64_t k : {1, 7, 300, 513}) {
                    CAPTURE(m);
                    CAPTURE(n);
                    CAPTURE(k);
                    const Matrix w = random_weights(n, k, type, rng);
                    std::normal_distribution<float> normal(0.0f, 1.0f);
                    std::vector<float> a(size_t(m * k));
                    for (auto& v : a) v = normal(rng);
                    std::vector<float> first;
                    for (size_t i = 0; i < isa_count; ++i) {
                        if (!isas[i].supported) continue;
                        CAPTURE(isas[i].name);
                        std::vector<float> c(size_t(m * n), -1.0f);
                        // Two column ranges, as two threads would split them.
                        isas[i].fn(a.data(), k, m, w.view, 0, n / 2, c.data(), n, scratch.data());
                        isas[i].fn(a.data(), k, m, w.view, n / 2, n, c.data(), n, scratch.data());
                        for (int64_t r = 0; r < m; ++r)
                            for (int64_t j = 0; j < n; ++j) {
                                double expected = 0, magnitude = 0;
                                for (int64_t x = 0; x < k; ++x) {
                                    expected += double(a[size_t(r * k + x)]) * w.values[size_t(j * k + x)];
                                    magnitude += std::abs(double(a[size_t(r * k + x)]) * w.values[size_t(j * k + x)]);
                                }
                                REQUIRE(std::abs(c[size_t(r * n + j)] - expected) <= 1e-5 * magnitude + 1e-30);
                            }
                        if (first.empty()) first = c;
                        else REQUIRE(c == first);
                    }
                }
}

// The model's bf16 matrices (WeightMatrix::bf16_products) on a CPU with AVX512-BF16: the
// activations rounded to bf16 (to nearest even) times the weights, summed in fp32. Within fp32
// accumulation of the float64 sum of those rounded products; one summation order whatever the
// rows of the call, the column split (chunks of 64 columns, groups of 32 rows) or the thread:
// each row alone gives the bits of the whole batch, and so does the input rounded once and shared
// by the column runs (matmul_columns_rounded); and not the fp32 kernel's bits, so the rounding is
// really done.
TEST_CASE("bf16 products round the activations to bf16 and sum them in one order") {
    size_t isa_count = 0;
    const MatmulIsa* isas = matmul_isas(isa_count);
    const MatmulIsa* bf16 = nullptr;
    const MatmulIsa* fp32 = nullptr;
    for (size_t i = 0; i < isa_count; ++i) {
        if (std::string(isas[i].name) == "avx512bf16") bf16 = &isas[i];
        if (std::string(isas[i].name) == "avx512") fp32 = &isas[i];
    }
    REQUIRE(bf16 != nullptr);
    REQUIRE(fp32 != nullptr);
    if (!bf16->supported) {
        MESSAGE("this CPU has no AVX512-BF16: bf16 products are not exercised here");
        return;
    }
    std::mt19937 rng(5);
    std::vector<float> scratch(matmul_scratch_floats(true));
    int64_t differing = 0, shared_checks = 0;
    for (int64_t m : {1, 7, 8, 70})
        for (int64_t n : {1, 33, 130, 300})
            for (int64_t k : {1, 2, 31, 300, 513}) {
                CAPTURE(m);
                CAPTURE(n);
                CAPTURE(k);
                Matrix w = random_weights(n, k, ElementType::bf16, rng);
                w.view.bf16_products = true;
                std::normal_distribution<float> normal(0.0f, 1.0f);
                std::vector<float> a(size_t(m * k));
                for (auto& v : a) v = normal(rng);
                std::vector<float> c(size_t(m * n), -1.0f), unrounded(size_t(m * n), -1.0f);
                bf16->fn(a.data(), k, m, w.view, 0, n / 2, c.data(), n, scratch.data());
                bf16->fn(a.data(), k, m, w.view, n / 2, n, c.data(), n, scratch.data());
                fp32->fn(a.data(), k, m, w.view, 0, n, unrounded.data(), n, scratch.data());
                if (matmul_takes_rounded(w.view)) {
                    // The input rounded once, in two halves of rows (as two threads would), to
                    // exactly m * k / 2 words: the guard words after them stay as they were.
                    constexpr uint32_t guard = 0xDEADBEEF;
                    std::vector<uint32_t> rounded(size_t(m * k / 2 + 16), guard);
                    round_activations(a.data(), k, m / 2, k, rounded.data());
                    round_activations(a.data() + (m / 2) * k, k, m - m / 2, k, rounded.data() + (m / 2) * (k / 2));
                    REQUIRE(std::all_of(rounded.end() - 16, rounded.end(), [](uint32_t x) { return x == guard; }));
                    std::vector<float> shared(size_t(m * n), -1.0f);
                    matmul_columns_rounded(rounded.data(), m, w.view, 0, n / 2, shared.data(), n, scratch.data());
                    matmul_columns_rounded(rounded.data(), m, w.view, n / 2, n, shared.data(), n, scratch.data());
                    REQUIRE(std::memcmp(shared.data(), c.data(), c.size() * sizeof(float)) == 0);
                    ++shared_checks;
                }
                for (int64_t r = 0; r < m; ++r) {
                    std::vector<float> alone(size_t(n), -1.0f);
                    bf16->fn(a.data() + r * k, k, 1, w.view, 0, n, alone.data(), n, scratch.data());
                    REQUIRE(std::memcmp(alone.data(), c.data() + r * n, size_t(n) * sizeof(float)) == 0);
                    for (int64_t j = 0; j < n; ++j) {
                        double expected = 0, magnitude = 0;
                        for (int64_t x = 0; x < k; ++x) {
                            const double rounded = bf16_to_float(float_to_bf16(a[size_t(r * k + x)]));
                            expected += rounded * w.values[size_t(j * k + x)];
                            magnitude += std::abs(rounded * w.values[size_t(j * k + x)]);
                        }
                        REQUIRE(std::abs(c[size_t(r * n + j)] - expected) <= 1e-5 * magnitude + 1e-30);
                        differing += c[size_t(r * n + j)] != unrounded[size_t(r * n + j)];
                    }
                }
            }
    CHECK(differing > 0);
    if (matmul_rounds_activations()) CHECK(shared_checks == 4 * 4 * 2);  // every m and n, k = 2 and 300
}

// bf16 matrices packed once (as loading for the CPU packs them, WeightMatrix::panels) give the
// bits of packing on every call: whole and split column ranges, rows rounded per call or shared,
// K blocks whole and partial; a column range that does not start on a panel packs per call; and
// only the matrices the kernel can read that way may be packed.
TEST_CASE("bf16 matrices packed once give the bits of packing on every call") {
    if (!matmul_rounds_activations()) {
        MESSAGE("this CPU has no AVX512-BF16: matrices are not packed here");
        return;
    }
    std::mt19937 rng(11);
    std::vector<float> scratch(matmul_scratch_floats(true));
    int64_t compared = 0;
    for (int64_t n : {32, 64, 288, 544})
        for (int64_t k : {2, 64, 300, 514, 768})
            for (int64_t m : {1, 7, 33, 70}) {
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(m);
                Matrix w = random_weights(n, k, ElementType::bf16, rng);
                w.view.bf16_products = true;
                REQUIRE(matmul_packs_panels(w.view));
                constexpr uint32_t guard = 0xDEADBEEF;
                std::vector<uint32_t> panels(size_t(n * k / 2 + 16), guard);
                pack_panels(w.view, panels.data());
                REQUIRE(std::all_of(panels.end() - 16, panels.end(), [](uint32_t x) { return x == guard; }));
                WeightMatrix packed = w.view;
                packed.panels = panels.data();
                std::normal_distribution<float> normal(0.0f, 1.0f);
                std::vector<float> a(size_t(m * k));
                for (auto& v : a) v = normal(rng);
                std::vector<uint32_t> rounded(size_t(m * k / 2));
                round_activations(a.data(), k, m, k, rounded.data());
                std::vector<float> expected(size_t(m * n), -1.0f);
                matmul_columns(a.data(), k, m, w.view, 0, n, expected.data(), n, scratch.data());
                for (int64_t split : {n, std::min<int64_t>(n, 128), std::min<int64_t>(n, 40)}) {
                    CAPTURE(split);
                    std::vector<float> c(size_t(m * n), -1.0f), shared(size_t(m * n), -1.0f);
                    matmul_columns(a.data(), k, m, packed, 0, split, c.data(), n, scratch.data());
                    matmul_columns(a.data(), k, m, packed, split, n, c.data(), n, scratch.data());
                    matmul_columns_rounded(rounded.data(), m, packed, 0, split, shared.data(), n, scratch.data());
                    matmul_columns_rounded(rounded.data(), m, packed, split, n, shared.data(), n, scratch.data());
                    REQUIRE(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)) == 0);
                    REQUIRE(std::memcmp(shared.data(), expected.data(), c.size() * sizeof(float)) == 0);
                    ++compared;
                }
            }
    CHECK(compared == 4 * 5 * 4 * 3);

    Matrix odd_rows = random_weights(48, 64, ElementType::bf16, rng), odd_k = random_weights(32, 63, ElementType::bf16, rng),
           fp32 = random_weights(32, 64, ElementType::f32, rng), wide = random_weights(32, 64, ElementType::bf16, rng);
    for (Matrix* w : {&odd_rows, &odd_k, &fp32, &wide}) w->view.bf16_products = true;
    WeightMatrix k_major = wide.view, strided = wide.view, fp32_products = wide.view;
    k_major.k_major = true;
    strided.cols = 32;  // every row's first half: a view with a stride of 64
    fp32_products.bf16_products = false;
    for (const WeightMatrix& w : {odd_rows.view, odd_k.view, fp32.view, k_major, strided, fp32_products})
        CHECK_FALSE(matmul_packs_panels(w));
}

// Attention's keys and values are fp32 (or a bf16 cache), and its values k-major: with bf16
// products they are rounded into the panels, giving the bits of the rounded values multiplied as
// row-major bf16 weights (the path the test above checks against float64), not the fp32 product.
TEST_CASE("fp32 and k-major matrices with bf16 products give the bits of their values rounded to bf16") {
    size_t isa_count = 0;
    const MatmulIsa* isas = matmul_isas(isa_count);
    const MatmulIsa* bf16 = nullptr;
    for (size_t i = 0; i < isa_count; ++i)
        if (std::string(isas[i].name) == "avx512bf16") bf16 = &isas[i];
    REQUIRE(bf16 != nullptr);
    if (!bf16->supported) {
        MESSAGE("this CPU has no AVX512-BF16: bf16 products are not exercised here");
        return;
    }
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> scratch(matmul_scratch_floats(true));
    int64_t differing = 0;
    for (int64_t m : {1, 9})
        for (int64_t n : {1, 20, 33, 70})
            for (int64_t k : {1, 2, 31, 300}) {
                CAPTURE(m);
                CAPTURE(n);
                CAPTURE(k);
                const Matrix w = random_weights(n, k, ElementType::f32, rng);
                std::vector<uint16_t> rounded(w.f32.size()), rounded_t(w.f32.size());
                std::vector<float> transposed(w.f32.size());
                for (int64_t j = 0; j < n; ++j)
                    for (int64_t x = 0; x < k; ++x) {
                        rounded[size_t(j * k + x)] = rounded_t[size_t(x * n + j)] = float_to_bf16(w.f32[size_t(j * k + x)]);
                        transposed[size_t(x * n + j)] = w.f32[size_t(j * k + x)];
                    }
                const WeightMatrix reference{rounded.data(), ElementType::bf16, n, k, k, false, true};
                const WeightMatrix variants[] = {{w.f32.data(), ElementType::f32, n, k, k, false, true},
                                                 {transposed.data(), ElementType::f32, n, k, n, true, true},
                                                 {rounded_t.data(), ElementType::bf16, n, k, n, true, true}};
                std::vector<float> a(size_t(m * k));
                for (auto& value : a) value = normal(rng);
                std::vector<float> expected(size_t(m * n), -1.0f), fp32(size_t(m * n), -2.0f);
                bf16->fn(a.data(), k, m, reference, 0, n, expected.data(), n, scratch.data());
                bf16->fn(a.data(), k, m, w.view, 0, n, fp32.data(), n, scratch.data());  // no bf16_products
                for (const WeightMatrix& variant : variants) {
                    CAPTURE(variant.k_major);
                    CAPTURE(int(variant.type));
                    std::vector<float> c(size_t(m * n), -3.0f);
                    bf16->fn(a.data(), k, m, variant, 0, n / 2, c.data(), n, scratch.data());
                    bf16->fn(a.data(), k, m, variant, n / 2, n, c.data(), n, scratch.data());
                    CHECK(c == expected);
                }
                differing += expected != fp32;
            }
    CHECK(differing > 0);
}

// Each instruction set widens fp16 weights its own way (F16C in the AVX2 and AVX-512 kernels):
// every finite fp16 value, subnormals included, must come out as fp16_to_float gives it. An
// identity activation makes c[i, j] the weight w[j, i] itself.
TEST_CASE("every instruction set widens every finite fp16 weight exactly") {
    constexpr int64_t n = 256, k = 256;
    std::vector<uint16_t> bits(size_t(n * k));
    for (size_t h = 0; h < bits.size(); ++h) bits[h] = (h & 0x7C00) == 0x7C00 ? 0 : uint16_t(h);  // inf and NaN: 0
    const WeightMatrix w{bits.data(), ElementType::f16, n, k, k, false};
    std::vector<float> identity(size_t(k * k), 0.0f), scratch(matmul_scratch_floats());
    for (int64_t i = 0; i < k; ++i) identity[size_t(i * k + i)] = 1.0f;
    size_t isa_count = 0;
    const MatmulIsa* isas = matmul_isas(isa_count);
    for (size_t i = 0; i < isa_count; ++i) {
        if (!isas[i].supported) continue;
        CAPTURE(isas[i].name);
        std::vector<float> c(size_t(k * n));
        isas[i].fn(identity.data(), k, k, w, 0, n, c.data(), n, scratch.data());
        int64_t wrong = 0;
        for (int64_t row = 0; row < k; ++row)
            for (int64_t j = 0; j < n; ++j) wrong += c[size_t(row * n + j)] != fp16_to_float(bits[size_t(j * k + row)]);
        CHECK(wrong == 0);
    }
}

TEST_CASE("k-major weights give the same bits as the transposed row-major weights") {
    std::mt19937 rng(5);
    const int64_t m = 9, n = 40, k = 300;
    const Matrix w = random_weights(n, k, ElementType::f32, rng);
    std::vector<float> transposed(size_t(n * k));
    for (int64_t j = 0; j < n; ++j)
        for (int64_t x = 0; x < k; ++x) transposed[size_t(x * n + j)] = w.f32[size_t(j * k + x)];
    const WeightMatrix k_major{transposed.data(), ElementType::f32, n, k, n, true};
    std::vector<float> a(size_t(m * k), 0.5f), c1(size_t(m * n)), c2(size_t(m * n)), scratch(matmul_scratch_floats());
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 17) * 0.1f - 0.8f;
    matmul_columns(a.data(), k, m, w.view, 0, n, c1.data(), n, scratch.data());
    matmul_columns(a.data(), k, m, k_major, 0, n, c2.data(), n, scratch.data());
    CHECK(c1 == c2);
}

TEST_CASE("quantized weights give the bits of their decoded fp32 values on every instruction set") {
    std::mt19937 rng(23);
    size_t isa_count = 0;
    const MatmulIsa* isas = matmul_isas(isa_count);
    std::vector<float> scratch(matmul_scratch_floats(true));
    std::uniform_real_distribution<float> scale(0.001f, 0.05f);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (ElementType type : {ElementType::q8_0, ElementType::q4_0, ElementType::q4_k, ElementType::q5_k, ElementType::q6_k}) {
        CAPTURE(int(type));
        // Two K blocks and a tail (32-element formats) or two whole K blocks (256-element ones).
        const int64_t n = 37, k = block_elements(type) == 32 ? 320 : 512, blocks = n * k / block_elements(type);
        // Random bytes with finite fp16 scales where each format keeps them (Q6_K's d is last).
        std::vector<uint8_t> q(size_t(blocks * block_bytes(type)));
        for (auto& b : q) b = uint8_t(rng());
        for (int64_t b = 0; b < blocks; ++b) {
            uint8_t* block = q.data() + b * block_bytes(type);
            const int64_t at = type == ElementType::q6_k ? 208 : 0;
            for (int64_t f = 0; f < (type == ElementType::q4_k || type == ElementType::q5_k ? 2 : 1); ++f) {
                const uint16_t half = float_to_fp16(scale(rng));
                std::memcpy(block + at + 2 * f, &half, 2);
            }
        }
        std::vector<float> decoded(size_t(n * k));
        for (int64_t r = 0; r < n; ++r) dequantize_row(type, q.data() + row_bytes(type, r * k), k, decoded.data() + r * k);
        const WeightMatrix quantized{q.data(), type, n, k, k};
        const WeightMatrix widened{decoded.data(), ElementType::f32, n, k, k};
        // With bf16 products the blocks are decoded into bf16 panels: the bits of the decoded
        // values rounded to bf16 (as loading at BF16 rounds them) and multiplied as bf16 weights.
        std::vector<uint16_t> rounded(decoded.size());
        for (size_t i = 0; i < decoded.size(); ++i) rounded[i] = float_to_bf16(decoded[i]);
        WeightMatrix quantized_products = quantized;
        quantized_products.bf16_products = true;
        const WeightMatrix rounded_products{rounded.data(), ElementType::bf16, n, k, k, false, true};
        for (int64_t m : {1, 8}) {
            CAPTURE(m);
            std::vector<float> a(size_t(m * k));
            for (auto& v : a) v = normal(rng);
            for (size_t i = 0; i < isa_count; ++i) {
                if (!isas[i].supported) continue;
                CAPTURE(isas[i].name);
                std::vector<float> from_blocks(size_t(m * n), -1.0f), from_floats(size_t(m * n), -2.0f);
                isas[i].fn(a.data(), k, m, quantized, 0, n / 2, from_blocks.data(), n, scratch.data());
                isas[i].fn(a.data(), k, m, quantized, n / 2, n, from_blocks.data(), n, scratch.data());
                isas[i].fn(a.data(), k, m, widened, 0, n, from_floats.data(), n, scratch.data());
                CHECK(from_blocks == from_floats);
                if (std::string(isas[i].name) != "avx512bf16") continue;
                std::vector<float> blocks_bf16(size_t(m * n), -1.0f), rounded_bf16(size_t(m * n), -2.0f);
                isas[i].fn(a.data(), k, m, quantized_products, 0, n, blocks_bf16.data(), n, scratch.data());
                isas[i].fn(a.data(), k, m, rounded_products, 0, n, rounded_bf16.data(), n, scratch.data());
                CHECK(blocks_bf16 == rounded_bf16);
                CHECK(blocks_bf16 != from_floats);  // the bf16 path ran
            }
        }
        // The embedding lookup decodes the rows it gathers.
        const int32_t ids[] = {36, 0, 17};
        std::vector<float> rows(size_t(3 * k));
        embedding_rows(quantized, ids, 3, rows.data());
        for (int64_t r = 0; r < 3; ++r)
            CHECK(std::equal(rows.begin() + r * k, rows.begin() + (r + 1) * k, decoded.begin() + ids[r] * k));
    }
}

namespace {

// Element e of a Q8_0 or Q4_0 block's values as the integer its fp16 d multiplies (ggml's layouts).
int32_t integer_value(ElementType type, const uint8_t* values, int e) {
    if (type == ElementType::q8_0) return int8_t(values[e]);
    return e < 16 ? (values[e] & 15) - 8 : (values[e - 16] >> 4) - 8;
}

void check_int8_products(ElementType type) {
    // n not a multiple of the panel width, K two whole K blocks and a tail of three blocks.
    const int64_t n = 45, k = 608, blocks = k / 32;
    std::mt19937 rng(31);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> w(size_t(n * k));
    for (auto& v : w) v = normal(rng) * 0.05f;
    std::vector<uint8_t> q(size_t(row_bytes(type, n * k)));
    for (int64_t r = 0; r < n; ++r)
        quantize_row(type, w.data() + r * k, k, q.data() + row_bytes(type, r * k));
    WeightMatrix int8{q.data(), type, n, k, k};
    int8.bf16_products = int8.int8_products = true;
    if (!matmul_takes_int8(int8)) {
        MESSAGE("this CPU has no AVX512-VNNI: int8 products not checked");
        return;
    }
    const int64_t m = 21;  // two row groups' worth of tiles and a ragged tile
    std::vector<float> a(size_t(m * k));
    for (auto& v : a) v = normal(rng);
    a[5] = 0.0f;
    std::fill(a.begin() + 3 * k + 64, a.begin() + 3 * k + 96, 0.0f);  // an all-zero block: scale 0

    // The definition (matmul_avx512vnni.cpp), in scalar code.
    std::vector<int8_t> qa(a.size());
    std::vector<float> da(size_t(m * blocks));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t b = 0; b < blocks; ++b) {
            const float* x = a.data() + i * k + b * 32;
            float amax = 0.0f;
            for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(x[e]));
            const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
            da[size_t(i * blocks + b)] = amax / 127.0f;
            for (int e = 0; e < 32; ++e) qa[size_t(i * k + b * 32 + e)] = int8_t(std::nearbyint(x[e] * inverse));
        }
    std::vector<float> expected(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (int64_t b = 0; b < blocks; ++b) {
                const uint8_t* block = q.data() + row_bytes(type, j * k + b * 32);
                uint16_t half;
                std::memcpy(&half, block, 2);
                int32_t dot = 0;
                for (int e = 0; e < 32; ++e) dot += integer_value(type, block + 2, e) * qa[size_t(i * k + b * 32 + e)];
                acc = std::fma(float(dot), fp16_to_float(half) * da[size_t(i * blocks + b)], acc);
            }
            expected[size_t(i * n + j)] = acc;
        }

    std::vector<float> scratch(matmul_scratch_floats(true));
    std::vector<float> whole(size_t(m * n), -1.0f), split(size_t(m * n), -2.0f), rows(size_t(m * n), -3.0f);
    matmul_columns(a.data(), k, m, int8, 0, n, whole.data(), n, scratch.data());
    CHECK(whole == expected);
    for (int64_t begin : {int64_t(0), int64_t(7), int64_t(39)})  // column runs that start off the panel grid
        matmul_columns(a.data(), k, m, int8, begin, begin == 0 ? 7 : begin == 7 ? 39 : n, split.data(), n,
                       scratch.data());
    CHECK(split == whole);
    for (int64_t i = 0; i < m; ++i)  // one row at a time: the same bits as in a batch
        matmul_columns(a.data() + i * k, k, 1, int8, 0, n, rows.data() + i * n, n, scratch.data());
    CHECK(rows == whole);
    // Activations quantized once (in two parts, as threads would) and shared by two column runs.
    std::vector<uint32_t> quantized(size_t(m * quantized_row_words(k)));
    quantize_activations(a.data(), k, m / 2, k, quantized.data());
    quantize_activations(a.data() + (m / 2) * k, k, m - m / 2, k, quantized.data() + (m / 2) * quantized_row_words(k));
    std::vector<float> shared(size_t(m * n), -4.0f);
    matmul_columns_quantized(quantized.data(), m, int8, 0, 20, shared.data(), n, scratch.data());
    matmul_columns_quantized(quantized.data(), m, int8, 20, n, shared.data(), n, scratch.data());
    CHECK(shared == whole);
    // And close to the exact product of the Q8_0 weights: each block's activations are off by at
    // most half a quantization step.
    std::vector<float> decoded(size_t(n * k));
    for (int64_t r = 0; r < n; ++r)
        dequantize_row(type, q.data() + row_bytes(type, r * k), k, decoded.data() + r * k);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double exact = 0.0, bound = 1e-5;
            for (int64_t e = 0; e < k; ++e) {
                exact += double(a[size_t(i * k + e)]) * decoded[size_t(j * k + e)];
                bound += 0.5 * da[size_t(i * blocks + e / 32)] * std::fabs(decoded[size_t(j * k + e)]);
            }
            REQUIRE(std::fabs(whole[size_t(i * n + j)] - exact) <= bound);
        }
}

}  // namespace

TEST_CASE("int8 products with Q8_0 and Q4_0 weights give the bits of the definition, however split") {
    for (ElementType type : {ElementType::q8_0, ElementType::q4_0}) {
        CAPTURE(int(type));
        check_int8_products(type);
    }
}

TEST_CASE("Philox4x32-10 reproduces the Random123 known answers") {
    CHECK(philox4x32({0, 0, 0, 0}, 0) == std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
    CHECK(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, 0xffffffffffffffffull) ==
          std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
    CHECK(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0x299f31d0a4093822ull) ==
          std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
    for (uint32_t i = 0; i < 1000; ++i) {
        const double u = uniform_open01(42, i, 3, 7, RandomStream::token_noise);
        REQUIRE(u > 0.0);
        REQUIRE(u < 1.0);
    }
    // The extreme bits: the lowest midpoint, and the highest, which would round to 1.0.
    const uint64_t all_ones = (uint64_t(1) << 53) - 1;
    CHECK(open01_of_bits(0) == 0x1.0p-54);
    CHECK(open01_of_bits(all_ones) == std::nextafter(1.0, 0.0));
    CHECK(open01_of_bits(all_ones - 1) < 1.0);
    CHECK(std::isfinite(-std::log(-std::log(open01_of_bits(all_ones)))));
    CHECK(-std::log(-std::log(open01_of_bits(all_ones))) <= gumbel_noise_max());
    CHECK(-std::log(-std::log(open01_of_bits(0))) >= gumbel_noise_min());
}

TEST_CASE("sampled tokens follow the intended distribution (chi-square, 20000 draws)") {
    const std::vector<float> logits = {2.0f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, 1.5f, 0.2f};
    auto softmax = [&](double temperature, const std::vector<bool>& keep) {
        std::vector<double> p(logits.size());
        double total = 0;
        for (size_t i = 0; i < logits.size(); ++i) total += p[i] = keep[i] ? std::exp(logits[i] / temperature) : 0.0;
        for (auto& v : p) v /= total;
        return p;
    };
    const std::vector<bool> all(8, true);
    struct Case {
        std::string what;
        CandidateParams params;
        std::vector<double> expected;  // of the sampled token
        std::vector<double> reported;  // the probability reported with it (the distribution's)
    };
    std::vector<Case> cases;
    CandidateParams llada;  // Gumbel noise at T over unscaled logits: samples softmax(logits / T)
    llada.noise_temperature = 1.0;
    cases.push_back({"LLaDA T=1", llada, softmax(1.0, all), softmax(1.0, all)});
    llada.noise_temperature = 0.5;  // LLaDA's confidence stays softmax(logits), unscaled
    cases.push_back({"LLaDA T=0.5", llada, softmax(0.5, all), softmax(1.0, all)});
    CandidateParams dream;  // Dream: logits / T, filters, then a sample
    dream.distribution_temperature = 0.7;
    dream.noise_temperature = 1.0;
    dream.top_k = 3;  // keeps tokens 0, 6, 1
    const auto top3 = softmax(0.7, {true, true, false, false, false, false, true, false});
    cases.push_back({"top-k 3", dream, top3, top3});
    dream.top_k = 0;
    dream.top_p = 0.8;  // nucleus of softmax(logits / 0.7): 0, 6, 1 reach 0.8
    cases.push_back({"top-p 0.8", dream, top3, top3});

    CandidateScratch scratch;
    constexpr int draws = 20000;
    for (Case& c : cases) {
        CAPTURE(c.what);
        std::vector<int> counts(logits.size(), 0);
        for (uint32_t position = 0; position < draws; ++position) {
            c.params.seed = 1234;
            const Candidate out = logits_to_candidate(logits.data(), 8, position, c.params, scratch);
            ++counts[size_t(out.token)];
            if (position < 8) CHECK(out.probability == doctest::Approx(c.reported[size_t(out.token)]).epsilon(1e-4));
        }
        // 7 degrees of freedom (fewer with filters, which only makes the bound looser): P(chi2 > 24.32) = 0.001.
        CHECK(chi_square(counts, c.expected, draws) < 24.32);
    }
}

TEST_CASE("top-p and top-k thresholds equal a whole sort's, however far the nucleus reaches") {
    // The definition: the values sorted in descending order, the nucleus the fewest whose
    // probability (normalised by the total in token order) exceeds top_p, then the k-th largest.
    auto by_sorting = [](const std::vector<float>& z, int64_t top_k, double top_p) {
        std::vector<float> sorted = z;
        std::sort(sorted.begin(), sorted.end(), std::greater<float>());
        float threshold = -std::numeric_limits<float>::infinity();
        if (top_p < 1.0) {
            double total = 0, cumulative = 0;
            for (float v : z) total += std::exp(double(v) - sorted[0]);
            for (size_t j = 0; j < sorted.size() && !(j > 0 && cumulative > top_p); ++j) {
                threshold = sorted[j];
                cumulative += std::exp(double(sorted[j]) - sorted[0]) / total;
            }
        }
        if (top_k > 0 && top_k < int64_t(z.size())) threshold = std::max(threshold, sorted[size_t(top_k - 1)]);
        return threshold;
    };
    std::mt19937 rng(31);
    std::vector<float> scratch;
    int long_nuclei = 0;
    for (const int64_t vocab : {1, 3, 64, 65, 300, 5003}) {
        for (const float spread : {0.01f, 0.5f, 3.0f, 40.0f}) {  // nuclei of nearly all the row .. of one token
            std::normal_distribution<float> normal(0.0f, spread);
            std::vector<float> z(static_cast<size_t>(vocab));
            for (float& v : z) v = rng() % 9 == 0 ? std::floor(normal(rng)) : normal(rng);  // ties too
            if (vocab > 1) z[size_t(rng() % z.size())] = -std::numeric_limits<float>::infinity();
            z[0] = 1.0f;  // whatever the -inf took, the maximum is finite
            for (const double top_p : {0.05, 0.5, 0.95, 0.999, 1.0})
                for (const int64_t top_k : {int64_t(0), int64_t(1), int64_t(7), int64_t(100), vocab - 1, vocab}) {
                    CAPTURE(vocab);
                    CAPTURE(spread);
                    CAPTURE(top_p);
                    CAPTURE(top_k);
                    const float expected = by_sorting(z, top_k, top_p);
                    CHECK(filter_threshold(z, top_k, top_p, scratch) == expected);
                    if (top_p < 1.0 && top_k == 0)
                        long_nuclei += std::count_if(z.begin(), z.end(), [&](float v) { return v >= expected; }) > 256;
                }
        }
    }
    CHECK(long_nuclei >= 4);  // nuclei past several extensions of the ordered prefix
}

TEST_CASE("a banned token is never chosen and all-banned logits do not crash") {
    const std::vector<float> logits = {5.0f, 1.0f, 0.0f};
    const int32_t banned[] = {0};
    CandidateParams params;
    params.banned_tokens = banned;
    CandidateScratch scratch;
    const Candidate out = logits_to_candidate(logits.data(), 3, 0, params, scratch);
    CHECK(out.token == 1);
    CHECK(out.top1_token == 1);
    const int32_t all_banned[] = {0, 1, 2};
    params.banned_tokens = all_banned;
    const Candidate none = logits_to_candidate(logits.data(), 3, 0, params, scratch);
    CHECK(none.probability == 0.0f);
}

TEST_CASE("a NaN logit counts as -inf, and a row of NaNs is a row of -inf") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const std::vector<float> with_nan = {nan, 1.0f, 0.5f, nan, 3.0f, 2.5f}, with_inf = {-inf, 1.0f, 0.5f, -inf, 3.0f, 2.5f};
    std::vector<CandidateParams> variants(4);
    variants[1].noise_temperature = 1.0;
    variants[1].seed = 7;
    variants[2].top_p = 0.9;
    variants[2].noise_temperature = 0.5;
    variants[3].top_k = 2;
    variants[3].distribution_temperature = 0.7;
    CandidateScratch scratch;
    const auto same = [](const Candidate& a, const Candidate& b) {
        CHECK(a.token == b.token);
        CHECK(a.top1_token == b.top1_token);
        CHECK(a.probability == b.probability);
        CHECK(a.top1_probability == b.top1_probability);
        CHECK(a.top2_probability == b.top2_probability);
        CHECK(a.negative_entropy == b.negative_entropy);
    };
    for (const CandidateParams& params : variants) {
        for (uint32_t position = 0; position < 20; ++position) {
            const Candidate nan_row = logits_to_candidate(with_nan.data(), 6, position, params, scratch);
            same(nan_row, logits_to_candidate(with_inf.data(), 6, position, params, scratch));
            CHECK((nan_row.token != 0 && nan_row.token != 3));
        }
        const std::vector<float> nans(6, nan), infs(6, -inf);
        same(logits_to_candidate(nans.data(), 6, 0, params, scratch), logits_to_candidate(infs.data(), 6, 0, params, scratch));
    }
}

TEST_CASE("online softmax statistics match two float64 passes, in any order and split any way") {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(5003);
    for (float& v : logits) v = normal(rng);
    for (size_t i = 0; i < logits.size(); i += 97) logits[i] = -std::numeric_limits<float>::infinity();
    const double max = *std::max_element(logits.begin(), logits.end());
    double total = 0, weighted = 0, entropy_terms = 0;
    for (float v : logits) total += std::exp(double(v) - max);
    for (float v : logits) {
        if (std::isinf(v)) continue;
        weighted += std::exp(double(v) - max) * (double(v) - max);
        const double p = std::exp(double(v) - max) / total;
        entropy_terms += p * std::log(p);
    }
    const auto check = [&](kernels::OnlineSoftmax stats) {
        stats.rescale(max);
        CHECK(stats.max == max);
        CHECK(stats.total == doctest::Approx(total).epsilon(1e-6));
        CHECK(stats.weighted == doctest::Approx(weighted).epsilon(1e-6));
        CHECK(stats.weighted / stats.total - std::log(stats.total) == doctest::Approx(entropy_terms).epsilon(1e-6));
    };
    std::vector<float> ascending = logits, descending = logits;
    std::sort(ascending.begin(), ascending.end());  // a new maximum, and a rescale, at every value
    std::sort(descending.begin(), descending.end(), std::greater<float>());
    for (const std::vector<float>* order : {&logits, &ascending, &descending}) {
        kernels::OnlineSoftmax stats;
        for (float v : *order) stats.add(v);
        check(stats);
    }
    // Seven strided shares (as a block's threads take a row), each rescaled to the row's maximum.
    kernels::OnlineSoftmax shares[7], combined;
    for (size_t i = 0; i < logits.size(); ++i) shares[i % 7].add(logits[i]);
    combined.max = max;
    for (kernels::OnlineSoftmax& share : shares) {
        share.rescale(max);
        combined.total += share.total;
        combined.weighted += share.weighted;
    }
    check(combined);
    // Nothing but -inf (and NaN): no terms; rescaled, still none.
    kernels::OnlineSoftmax none;
    none.add(-std::numeric_limits<float>::infinity());
    none.add(std::numeric_limits<float>::quiet_NaN());
    CHECK(none.max == -std::numeric_limits<double>::infinity());
    none.rescale(2.0);
    CHECK(none.total == 0);
    CHECK(none.weighted == 0);
}

TEST_CASE("fast_exp is within 3e-7 relative error of exp over the range softmax uses") {
    for (float x = -87.0f; x <= 88.0f; x += 0.001f) {
        const double exact = std::exp(double(x));
        REQUIRE(std::abs(fast_exp(x) - exact) <= 3e-7 * exact);
    }
    CHECK(fast_exp(-1000.0f) == 0.0f);
}

TEST_CASE("a task's exception reaches the caller after every task has finished") {
    ThreadPool pool(3);
    std::atomic<int> finished{0};
    CHECK_THROWS_WITH(pool.parallel_for(64,
                                        [&](int64_t i) {
                                            if (i == 5) throw std::runtime_error("task 5 failed");
                                            ++finished;
                                        }),
                      "task 5 failed");
    CHECK(finished == 63);
    pool.parallel_for(4, [&](int64_t) { ++finished; });  // the pool still works
    CHECK(finished == 67);
}

TEST_CASE("the thread pool runs every task exactly once whatever the thread count") {
    for (int threads : {1, 2, 5}) {
        ThreadPool pool(threads);
        for (int64_t tasks : {0, 1, 7, 1000}) {
            std::vector<std::atomic<int>> runs(size_t(tasks + 1));
            pool.parallel_for(tasks, [&](int64_t i) { runs[size_t(i)]++; });
            for (int64_t i = 0; i < tasks; ++i) REQUIRE(runs[size_t(i)] == 1);
        }
    }
}

TEST_CASE("attention with grouped heads and a block-causal mask matches a float64 computation") {
    std::mt19937 rng(21);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t tokens = 23, heads = 4, kv_heads = 2, d = 8;
    std::vector<float> q(size_t(tokens * heads * d)), k(size_t(tokens * kv_heads * d)), v(k.size());
    for (auto* buffer : {&q, &k, &v})
        for (auto& x : *buffer) x = normal(rng);
    // Blocks of 5 from position 0, and from position 7 (positions 0..6 then form one block before
    // the others: a prompt ahead of the generated blocks).
    for (auto [block_size, origin] : {std::pair<int64_t, int64_t>{0, 0}, {5, 0}, {5, 7}}) {
        CAPTURE(block_size);
        CAPTURE(origin);
        const AttentionShape shape{tokens, tokens, heads, kv_heads, d, heads * d, kv_heads * d, block_size, origin, 0};
        std::vector<float> out(q.size());
        AttentionScratch scratch;
        for (int64_t h = 0; h < heads; ++h) {
            attention_tile(q.data(), k.data(), v.data(), shape, h, 0, 10, out.data(), scratch);  // two query tiles
            attention_tile(q.data(), k.data(), v.data(), shape, h, 10, tokens, out.data(), scratch);
        }
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t g = h / (heads / kv_heads);
            for (int64_t i = 0; i < tokens; ++i) {
                int64_t visible = tokens;
                if (block_size > 0 && i < origin) visible = origin;
                else if (block_size > 0) visible = std::min(tokens, origin + ((i - origin) / block_size + 1) * block_size);
                std::vector<double> score(static_cast<size_t>(visible));
                double max = -1e300, total = 0;
                for (int64_t j = 0; j < visible; ++j) {
                    double dot = 0;
                    for (int64_t c = 0; c < d; ++c)
                        dot += double(q[size_t(i * heads * d + h * d + c)]) * k[size_t(j * kv_heads * d + g * d + c)];
                    score[size_t(j)] = dot / std::sqrt(double(d));
                    max = std::max(max, score[size_t(j)]);
                }
                for (auto& s : score) total += s = std::exp(s - max);
                for (int64_t c = 0; c < d; ++c) {
                    double expected = 0;
                    for (int64_t j = 0; j < visible; ++j)
                        expected += score[size_t(j)] / total * v[size_t(j * kv_heads * d + g * d + c)];
                    REQUIRE(std::abs(out[size_t(i * heads * d + h * d + c)] - expected) < 1e-5);
                }
            }
        }
    }
}

TEST_CASE("attention over bf16 keys and values gives the bits of attention over their fp32 values") {
    // What a bf16 K/V cache holds, read by the same kernel: each element widened exactly, so the
    // result is the fp32 attention of the rounded keys and values, bit for bit.
    std::mt19937 rng(22);
    const int64_t tokens = 37, heads = 4, kv_heads = 2, d = 16;
    const std::vector<float> q = random_floats(size_t(tokens * heads * d), rng);
    std::vector<float> k = random_floats(size_t(tokens * kv_heads * d), rng), v = random_floats(k.size(), rng);
    std::vector<uint16_t> k_bf16(k.size()), v_bf16(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
        k_bf16[i] = float_to_bf16(k[i]);
        v_bf16[i] = float_to_bf16(v[i]);
        k[i] = bf16_to_float(k_bf16[i]);
        v[i] = bf16_to_float(v_bf16[i]);
    }
    for (int64_t block_size : {0, 8}) {
        CAPTURE(block_size);
        AttentionShape shape{tokens, tokens, heads, kv_heads, d, heads * d, kv_heads * d, block_size, 3, 0};
        std::vector<float> wide(q.size()), narrow(q.size());
        AttentionScratch scratch;
        for (int64_t h = 0; h < heads; ++h) attention_tile(q.data(), k.data(), v.data(), shape, h, 0, tokens, wide.data(), scratch);
        shape.kv_type = ElementType::bf16;
        for (int64_t h = 0; h < heads; ++h)
            attention_tile(q.data(), k_bf16.data(), v_bf16.data(), shape, h, 0, tokens, narrow.data(), scratch);
        CHECK(narrow == wide);
    }
}

TEST_CASE("attention with bf16 products rounds fp32 keys and values as a bf16 cache holds them") {
    // q·kᵀ and p·v with bf16 operands (a bf16 model's attention): fp32 keys and values are rounded
    // into the panels as a bf16 cache stores them, so both give the same bits; and the result is
    // not the fp32 attention's, but close to it. An odd number of keys and a head of 20 columns
    // exercise the pair and column tails.
    std::mt19937 rng(23);
    const int64_t tokens = 37, heads = 4, kv_heads = 2, d = 20;
    const std::vector<float> q = random_floats(size_t(tokens * heads * d), rng);
    const std::vector<float> k = random_floats(size_t(tokens * kv_heads * d), rng), v = random_floats(k.size(), rng);
    std::vector<uint16_t> k_bf16(k.size()), v_bf16(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
        k_bf16[i] = float_to_bf16(k[i]);
        v_bf16[i] = float_to_bf16(v[i]);
    }
    const bool rounds = std::string(matmul_isa()) == "avx512bf16";
    for (int64_t block_size : {0, 8}) {
        CAPTURE(block_size);
        AttentionShape shape{tokens, tokens, heads, kv_heads, d, heads * d, kv_heads * d, block_size, 3, 0};
        std::vector<float> fp32(q.size()), from_f32(q.size()), from_bf16(q.size());
        AttentionScratch scratch;
        for (int64_t h = 0; h < heads; ++h) attention_tile(q.data(), k.data(), v.data(), shape, h, 0, tokens, fp32.data(), scratch);
        shape.bf16_products = true;
        for (int64_t h = 0; h < heads; ++h)
            attention_tile(q.data(), k.data(), v.data(), shape, h, 0, tokens, from_f32.data(), scratch);
        shape.kv_type = ElementType::bf16;
        for (int64_t h = 0; h < heads; ++h)
            attention_tile(q.data(), k_bf16.data(), v_bf16.data(), shape, h, 0, tokens, from_bf16.data(), scratch);
        CHECK(from_f32 == from_bf16);
        double worst = 0;
        for (size_t i = 0; i < q.size(); ++i) worst = std::max(worst, double(std::abs(from_f32[i] - fp32[i])));
        CHECK(worst < 0.05);
        if (rounds) CHECK(from_f32 != fp32);
        else MESSAGE("this CPU has no AVX512-BF16: attention keeps fp32 products here");
    }
}

TEST_CASE("the CPU backend's reused RoPE table gives the bits of a fresh rotation, whatever came before") {
    // The backend keeps the rotations of the last positions it was called with (every layer asks
    // for the same ones); a call with other positions, another theta or width, fewer rows, or more
    // rows than its workspace holds must rotate exactly as a table made for that call alone.
    std::mt19937 rng(31);
    const int64_t heads = 3, head_dim = 8, reserved = 16;
    const auto backend = make_cpu_backend(2);
    WorkspaceLimits limits;
    limits.tokens = reserved;
    limits.head_dim = head_dim;
    backend->reserve_workspace(limits);
    std::vector<int32_t> counting(reserved), shifted(reserved), beyond(reserved + 9);
    for (int64_t t = 0; t < int64_t(beyond.size()); ++t) {
        if (t < reserved) counting[size_t(t)] = int32_t(t), shifted[size_t(t)] = int32_t(t + 5);
        beyond[size_t(t)] = int32_t(3 * t);
    }
    const RopeSpec plain{10000.0, head_dim, false}, other{500000.0, head_dim, true}, partial{10000.0, head_dim / 2, false};
    const struct {
        const std::vector<int32_t>* positions;
        int64_t rows;
        RopeSpec spec;
    } calls[] = {{&counting, reserved, plain}, {&counting, reserved, plain}, {&shifted, reserved, plain},
                 {&counting, reserved, plain}, {&counting, reserved, other}, {&counting, reserved, partial},
                 {&counting, reserved / 2, partial}, {&beyond, int64_t(beyond.size()), plain},
                 {&counting, reserved, plain}};
    std::vector<float> previous;
    for (const auto& call : calls) {
        CAPTURE(call.rows);
        CAPTURE(call.spec.theta);
        CAPTURE(call.spec.rotary_dims);
        const std::vector<float> x = random_floats(size_t(call.rows * heads * head_dim), rng);
        std::vector<float> got = x, expected = x;
        backend->rope(got.data(), call.rows, heads, head_dim, call.positions->data(), call.spec);
        rope(expected.data(), call.rows, heads, head_dim, heads * head_dim, call.positions->data(),
             RopeParams{call.spec.theta, call.spec.rotary_dims, call.spec.interleaved});
        CHECK(got == expected);
        CHECK(got != x);  // it rotated
    }
}

TEST_CASE("the CPU backend's grouped matmuls give each group's bits of a matmul of its rows alone") {
    // Groups of 0, 1, 5 and 23 rows and one held by another device (no weight), each with its own
    // weights, gate and up sharing their input: one parallel loop over groups, outputs and column
    // runs must give what a matmul of the group's rows alone gives, with its activations prepared
    // as that would (bf16 pairs, int8 blocks or fp32 by type), and leave the other device's rows.
    std::mt19937 rng(41);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t k = 96, n = 160, groups = 5;
    const int32_t offsets[] = {0, 0, 1, 6, 29, 33};  // group 4's 4 rows are another device's
    const int64_t slots = offsets[groups];
    for (const DType dtype : {DType::f32, DType::bf16, DType::q8_0}) {
        CAPTURE(int(dtype));
        std::vector<std::vector<float>> floats(2 * groups);
        std::vector<std::vector<uint16_t>> halves(2 * groups);
        std::vector<std::vector<uint8_t>> blocks(2 * groups);
        std::vector<Weight> weights(2 * groups);
        for (size_t i = 0; i < weights.size(); ++i) {
            Weight& w = weights[i];
            w.name = "expert";
            w.dtype = w.file_dtype = dtype;
            w.shape = {n, k};
            w.elements = uint64_t(n * k);
            floats[i].resize(w.elements);
            for (auto& v : floats[i]) v = normal(rng) * 0.1f;
            if (dtype == DType::bf16) {
                for (float v : floats[i]) halves[i].push_back(float_to_bf16(v));
                w.data = halves[i].data();
            } else if (dtype == DType::q8_0) {
                blocks[i].resize(size_t(kernels::row_bytes(kernels::ElementType::q8_0, n * k)));
                for (int64_t r = 0; r < n; ++r)
                    quantize_row(kernels::ElementType::q8_0, floats[i].data() + r * k, k,
                                 blocks[i].data() + kernels::row_bytes(kernels::ElementType::q8_0, r * k));
                w.data = blocks[i].data();
            } else {
                w.data = floats[i].data();
            }
        }
        std::vector<const Weight*> gate(groups), up(groups);
        for (int64_t e = 0; e < groups; ++e) {
            gate[size_t(e)] = e == 4 ? nullptr : &weights[size_t(e)];
            up[size_t(e)] = e == 4 ? nullptr : &weights[size_t(groups + e)];
        }
        std::vector<float> x(size_t(slots * k));
        for (auto& v : x) v = normal(rng);
        const auto backend = make_cpu_backend(2);
        WorkspaceLimits limits;
        limits.tokens = slots;
        limits.matmul_input = slots * k;
        backend->reserve_workspace(limits);
        std::vector<float> gate_out(size_t(slots * n), -7.0f), up_out(size_t(slots * n), -7.0f);
        const GroupedMatmulOutput outputs[] = {{gate, gate_out.data()}, {up, up_out.data()}};
        backend->grouped_matmuls(x.data(), slots, offsets, outputs);
        for (int64_t e = 0; e < groups; ++e) {
            const int64_t first = offsets[e], rows = offsets[e + 1] - first;
            CAPTURE(e);
            for (const auto& [list, got] : {std::pair{&gate, &gate_out}, std::pair{&up, &up_out}}) {
                const auto begin = got->begin() + first * n, end = got->begin() + (first + rows) * n;
                if ((*list)[size_t(e)] == nullptr) {
                    CHECK(std::all_of(begin, end, [](float v) { return v == -7.0f; }));
                    continue;
                }
                std::vector<float> alone(size_t(std::max<int64_t>(rows, 1) * n));
                if (rows > 0) backend->matmul(x.data() + first * k, rows, *(*list)[size_t(e)], nullptr, alone.data());
                CHECK(std::equal(begin, end, alone.begin()));
            }
        }
    }
}
