// FP8 E4M3 weights: the codes' values and rounding against tests/reference/fp8_e4m3.py (written
// from the format's definition), fp8 checkpoints kept as F8_E4M3_B128 blocks (or decoded where
// their rows are not whole groups of 128), their bytes as loaded and as planned, and `precision`
// fp8 quantizing a float model's matrices at load. Their logits against the PyTorch reference are
// in test_forward_reference.cpp; malformed fp8 checkpoints in test_model_loading.cpp's cases.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "cpu/dequantize.hpp"
#include "cpu/quantize.hpp"
#include "fixtures.hpp"
#include "format/tensor_catalog.hpp"
#include "fp8_tiles.hpp"
#include "memory/memory_plan.hpp"
#include "model/model.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<float> read_floats(const std::string& path) {
    const std::vector<uint8_t> bytes = read_bytes(path);
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
}

// Row r of a weight decoded to fp32 (F32 or block types).
std::vector<float> row_values(const Weight& w, int64_t r) {
    std::vector<float> out(size_t(w.shape[1]));
    const uint64_t bytes = dtype_bytes(w.dtype, uint64_t(w.shape[1]));
    const auto* row = static_cast<const uint8_t*>(w.data) + uint64_t(r) * bytes;
    if (w.dtype == DType::f32) std::memcpy(out.data(), row, bytes);
    else kernels::cpu::dequantize_row(element_type(w.dtype), row, w.shape[1], out.data());
    return out;
}

std::unique_ptr<Model> load_reference(const std::string& name, Precision precision) {
    return load_model(test_data_path("reference/" + name), {.precision = precision});
}

}  // namespace

TEST_CASE("the 256 FP8 E4M3 codes decode to the format's values, and values round to the nearest code, ties to even") {
    const std::vector<float> expected = read_floats(test_data_path("reference/fp8/values.expected"));
    REQUIRE(expected.size() == 256);
    for (int code = 0; code < 256; ++code) {
        CAPTURE(code);
        const float value = fp8_e4m3_to_float(uint8_t(code));
        if (std::isnan(expected[size_t(code)])) {
            CHECK(std::isnan(value));
            CHECK((code & 0x7F) == 0x7F);
            continue;
        }
        CHECK(float_to_bits(value) == float_to_bits(expected[size_t(code)]));
        CHECK(float_to_fp8_e4m3(value) == code);  // every value is a code's own
    }
    CHECK(fp8_e4m3_to_float(0x7E) == 448.0f);
    CHECK(fp8_e4m3_to_float(0x01) == std::ldexp(1.0f, -9));          // the smallest subnormal
    CHECK(float_to_fp8_e4m3(432.0f) == 0x7E);                         // halfway 416..448: to the even code
    CHECK(float_to_fp8_e4m3(1.0625f) == 0x38);                        // halfway 1..1.125: to 1
    CHECK(float_to_fp8_e4m3(-1.1875f) == (0x80 | 0x3A));              // halfway 1.125..1.25: to 1.25
    CHECK(float_to_fp8_e4m3(std::ldexp(1.0f, -10)) == 0x00);          // halfway 0..2^-9: to 0
    CHECK(float_to_fp8_e4m3(std::ldexp(3.0f, -10)) == 0x02);          // halfway 2^-9..2^-8: to 2^-8
    CHECK(float_to_fp8_e4m3(1e9f) == 0x7E);                           // beyond 448: saturates
    CHECK(float_to_fp8_e4m3(-std::numeric_limits<float>::infinity()) == 0xFE);
    CHECK((float_to_fp8_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7F) == 0x7F);
}

TEST_CASE("precision fp8 makes the reference's F8_E4M3_B128 blocks, and they decode back within half a step") {
    using kernels::ElementType;
    const std::vector<float> x = read_floats(test_data_path("reference/fp8/rows.input"));
    const std::vector<uint8_t> expected = read_bytes(test_data_path("reference/fp8/rows.blocks"));
    const auto elements = int64_t(x.size());
    REQUIRE(expected.size() == size_t(kernels::row_bytes(ElementType::f8_e4m3_b128, elements)));
    std::vector<uint8_t> blocks(expected.size(), 0xAA);
    kernels::cpu::quantize_row(ElementType::f8_e4m3_b128, x.data(), elements, blocks.data());
    CHECK(blocks == expected);
    std::vector<float> back(x.size());
    kernels::cpu::dequantize_row(ElementType::f8_e4m3_b128, blocks.data(), elements, back.data());
    for (int64_t b = 0; b < elements / 128; ++b) {
        float scale = 0.0f;
        std::memcpy(&scale, blocks.data() + b * 132, 4);
        for (int64_t j = 128 * b; j < 128 * (b + 1); ++j) {
            CAPTURE(j);
            const float v = x[size_t(j)];
            if (!std::isfinite(v)) {
                CHECK(std::isnan(back[size_t(j)]));
                continue;
            }
            // Half of a value's step: 1/16 of it above 2^-6 scales, 2^-10 scales below.
            CHECK(std::fabs(back[size_t(j)] - v) <= std::max(std::fabs(v) / 16, std::ldexp(scale, -10)) * 1.0001f);
        }
    }
}

TEST_CASE("an fp8 checkpoint holds 132 bytes per 128 weights as loaded and as planned, and reports F8_E4M3") {
    for (const std::string name : {"llada-fp8", "llada-fp8-block"}) {
        CAPTURE(name);
        const auto model = load_reference(name, Precision::automatic);
        uint64_t bytes = 0;
        for (const Weight& w : model->weights()) {
            const uint64_t per = w.dtype == DType::f8_e4m3_b128 ? 0 : dtype_size(w.dtype);
            bytes += per ? w.elements * per : w.elements / 128 * 132;
        }
        CHECK(model->description().weight_bytes == bytes);
        CHECK(model->description().precision == Precision::automatic);  // fp8 matrices beside float norms
        CHECK(plan_memory(test_data_path("reference/" + name), {}).weights == bytes);

        unmask_model* handle = nullptr;
        REQUIRE(unmask_model_load(test_data_path("reference/" + name).c_str(), nullptr, &handle) == UNMASK_OK);
        unmask_tensor_description t{};
        t.struct_size = sizeof t;
        REQUIRE(unmask_model_tensor(handle, 0, &t) == UNMASK_OK);
        int64_t fp8 = 0;
        for (int64_t i = 0; unmask_model_tensor(handle, i, &t) == UNMASK_OK; ++i) {
            if (t.file_dtype != UNMASK_DTYPE_F8_E4M3) continue;
            ++fp8;
            CHECK(t.dtype == UNMASK_DTYPE_F8_E4M3);
            CHECK(t.bytes % 132 == 0);
        }
        CHECK(fp8 >= 14);
        unmask_model_free(handle);
    }
}

TEST_CASE("an fp8 checkpoint whose rows are not whole groups of 128 is decoded at load, scale by scale") {
    const auto model = load_model(fixture_path("good/llada-fp8-tiny"), {});
    int64_t decoded = 0;
    for (const Weight& w : model->weights()) {
        if (w.file_dtype != DType::f8_e4m3) continue;
        ++decoded;
        CHECK(w.dtype == DType::f32);
    }
    CHECK(decoded == 16);
    // The first q_proj row: each code's value times the tensor's scale, one fp32 product.
    const Weight& q = model->weight("model.transformer.blocks.0.q_proj.weight");
    const std::vector<float> row = row_values(q, 0);
    const auto catalog = TensorCatalog::open(fixture_path("good/llada-fp8-tiny"));
    const CatalogEntry* codes = catalog.find("model.transformer.blocks.0.q_proj.weight");
    const CatalogEntry* scale = catalog.find("model.transformer.blocks.0.q_proj.weight_scale");
    REQUIRE(codes != nullptr);
    REQUIRE(scale != nullptr);
    float s = 0.0f;
    std::memcpy(&s, scale->file->tensor_bytes(*scale->info), 4);
    for (size_t j = 0; j < row.size(); ++j) CHECK(row[j] == fp8_e4m3_to_float(codes->file->tensor_bytes(*codes->info)[j]) * s);
}

TEST_CASE("precision fp8 quantizes a float model's matrices at load, and an fp8 file keeps its own codes") {
    const auto original = load_reference("llada-fp8-original", Precision::automatic);
    const auto fp8 = load_reference("llada-fp8-original", Precision::fp8);
    CHECK(fp8->description().precision == Precision::fp8);
    int64_t quantized = 0;
    for (const Weight& w : fp8->weights()) {
        CAPTURE(w.name);
        const bool kept = w.role == Role::embedding || w.role == Role::lm_head || w.shape.size() == 1;
        REQUIRE(w.dtype == (kept ? DType::f32 : DType::f8_e4m3_b128));
        if (kept) continue;
        ++quantized;
        for (int64_t r = 0; r < w.shape[0]; ++r) {
            const std::vector<float> got = row_values(w, r), want = row_values(original->weight(w.name), r);
            std::vector<uint8_t> blocks(size_t(w.shape[1] / 128 * 132));
            kernels::cpu::quantize_row(kernels::ElementType::f8_e4m3_b128, want.data(), w.shape[1], blocks.data());
            const auto* stored = static_cast<const uint8_t*>(w.data) + uint64_t(r) * blocks.size();
            REQUIRE(std::memcmp(stored, blocks.data(), blocks.size()) == 0);
            for (size_t j = 0; j < got.size(); ++j) REQUIRE(std::fabs(got[j] - want[j]) <= std::fabs(want[j]) / 16 + 1e-6f);
        }
    }
    CHECK(quantized == 14);
    PlanRequest request;
    request.precision = Precision::fp8;
    CHECK(plan_memory(test_data_path("reference/llada-fp8-original"), request).weights == fp8->description().weight_bytes);
    request.backend = BackendKind::cuda;  // its kernels decode the same blocks in registers
    request.device_memory_bytes = uint64_t(1) << 30;
    CHECK(plan_memory(test_data_path("reference/llada-fp8-original"), request).weights == fp8->description().weight_bytes);

    // An fp8 checkpoint at int8, q4 or fp8 keeps its codes; at bf16 it is decoded, then rounded.
    const auto checkpoint = load_reference("llada-fp8", Precision::automatic);
    for (Precision precision : {Precision::int8, Precision::q4, Precision::fp8}) {
        const auto kept = load_reference("llada-fp8", precision);
        CHECK(kept->description().weight_bytes == checkpoint->description().weight_bytes);
    }
    const auto bf16 = load_reference("llada-fp8", Precision::bf16);
    const Weight& q = bf16->weight("model.transformer.blocks.0.q_proj.weight");
    REQUIRE(q.dtype == DType::bf16);
    const std::vector<float> decoded = row_values(checkpoint->weight(q.name), 0);
    for (size_t j = 0; j < decoded.size(); ++j)
        CHECK(bf16_to_float(static_cast<const uint16_t*>(q.data)[j]) == bf16_to_float(float_to_bf16(decoded[j])));
}

TEST_CASE("a checkpoint of 128x128 blocks and dynamic activations marks its dense matrices for fp8 products, in tiles") {
    const auto blocks = load_reference("llada-fp8-block", Precision::automatic);
    int64_t marked = 0;
    for (const Weight& w : blocks->weights()) {
        CAPTURE(w.name);
        const bool dense = w.role != Role::embedding && w.role != Role::lm_head && w.dtype == DType::f8_e4m3_b128;
        CHECK(w.fp8_w8a8 == dense);
        if (!w.fp8_w8a8) continue;
        ++marked;
        // Its rows split into cuBLASLt's operand: every value and its tile's scale give the value loaded.
        const int64_t n = w.shape[0], k = w.shape[1];
        std::vector<uint8_t> values(size_t(n * k));
        std::vector<float> scales(size_t(kernels::fp8_tile_scales(n, k)), -1.0f);
        REQUIRE(kernels::split_fp8_tiles(static_cast<const uint8_t*>(w.data), n, k, values.data(), scales.data()));
        for (int64_t r = 0; r < n; ++r) {
            const std::vector<float> loaded = row_values(w, r);
            for (int64_t c = 0; c < k; ++c) {
                const float scale = scales[size_t(r / 128 * kernels::fp8_tile_stride(k) + c / 128)];
                REQUIRE(fp8_e4m3_to_float(values[size_t(r * k + c)]) * scale == loaded[size_t(c)]);
            }
        }
        for (int64_t t = 0; t < (n + 127) / 128; ++t)  // the padding of a row of tiles
            for (int64_t g = k / 128; g < kernels::fp8_tile_stride(k); ++g)
                CHECK(scales[size_t(t * kernels::fp8_tile_stride(k) + g)] == 0.0f);
    }
    CHECK(marked == 14);  // q, k, v, o, gate, up and down of both layers
    // Per-tensor scales, or the same blocks at load-time fp8 (one scale per 128 of a row): none.
    const auto per_tensor = load_reference("llada-fp8", Precision::automatic);
    const auto at_load = load_reference("llada-fp8-original", Precision::fp8);
    for (const auto* model : {per_tensor.get(), at_load.get()})
        for (const Weight& w : model->weights()) CHECK_FALSE(w.fp8_w8a8);

    // Rows whose blocks' scales differ within a tile do not split.
    const Weight& q = blocks->weight("model.transformer.blocks.0.q_proj.weight");
    std::vector<uint8_t> changed(static_cast<const uint8_t*>(q.data),
                                 static_cast<const uint8_t*>(q.data) + dtype_bytes(q.dtype, q.elements));
    const float other = 0.5f;
    std::memcpy(changed.data() + 5 * 132, &other, 4);  // row 5's first block
    std::vector<uint8_t> values(size_t(q.elements));
    std::vector<float> scales(size_t(kernels::fp8_tile_scales(q.shape[0], q.shape[1])));
    CHECK_FALSE(kernels::split_fp8_tiles(changed.data(), q.shape[0], q.shape[1], values.data(), scales.data()));
    CHECK_FALSE(kernels::split_fp8_tiles(changed.data(), 1, 100, values.data(), scales.data()));  // not groups of 128
}
