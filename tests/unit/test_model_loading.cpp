// Loading Hugging Face model directories: every class of bad file gives its status and a message
// naming the problem; good models of each architecture load at every precision.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "cpu/dequantize.hpp"
#include "cpu/matmul.hpp"
#include "fixtures.hpp"
#include "memory/memory_plan.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

std::unique_ptr<Model> load(const std::string& relative, Precision precision = Precision::automatic,
                            LoadOptions options = {}) {
    options.precision = precision;
    return load_model(fixture_path(relative), options);
}

float weight_value(const Weight& w, uint64_t i) {
    const auto* bytes = static_cast<const uint8_t*>(w.data);
    switch (w.dtype) {
        case DType::f32: return bits_to_float(reinterpret_cast<const uint32_t*>(bytes)[i]);
        case DType::bf16: return bf16_to_float(reinterpret_cast<const uint16_t*>(bytes)[i]);
        default: return fp16_to_float(reinterpret_cast<const uint16_t*>(bytes)[i]);
    }
}

}  // namespace

TEST_CASE("every malformed model gives its status and a message naming the problem") {
    std::ifstream in(fixture_path("expected.json"));
    REQUIRE(in.good());
    const auto cases = nlohmann::json::parse(in);
    REQUIRE(cases.size() >= 25);
    for (const auto& c : cases) {
        const std::string path = fixture_path(c["path"].get<std::string>());
        CAPTURE(path);
        unmask_model_params params;
        REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
        unmask_model* model = nullptr;
        const unmask_status status = unmask_model_load(path.c_str(), &params, &model);
        CHECK(std::string(unmask_status_string(status)) == c["status"].get<std::string>());
        CHECK(model == nullptr);
        const std::string message = unmask_last_error();
        CAPTURE(message);
        CHECK(message.find(c["message"].get<std::string>()) != std::string::npos);
        unmask_model_free(model);
    }
}

TEST_CASE("a model of each architecture loads with its spec and every tensor bound") {
    struct Case {
        const char* path;
        const char* architecture;
        size_t tensors;
    };
    // Tensor counts: LLaDA 1 + 9/layer + 2; LLaDA-MoE 1 + (8 attention + 3 dense) + (8 + 1 router +
    // 4x3 experts + 3 shared) + 2; Dream 1 + (9 attention + 3 mlp)/layer + 2.
    const Case cases[] = {{"good/llada", "llada", 21}, {"good/llada-moe", "llada-moe", 38}, {"good/dream", "dream", 27}};
    for (const Case& c : cases) {
        CAPTURE(c.path);
        const auto model = load(c.path);
        CHECK(model->spec().architecture_name == c.architecture);
        CHECK(model->weights().size() == c.tensors);
        CHECK(model->has_data());
        uint64_t elements = 0;
        for (const Weight& w : model->weights()) {
            CHECK(w.data != nullptr);
            elements += w.elements;
        }
        CHECK(model->description().parameters_total == elements);
    }
}

TEST_CASE("LLaDA2's fused query_key_value is bound once and used as its q, k and v rows, in place") {
    // The reference's tiny LLaDA2: 4 query heads and 2 key/value heads of 16 dims, hidden 64, fp32.
    for (const Precision precision : {Precision::automatic, Precision::bf16}) {
        CAPTURE(static_cast<int>(precision));
        LoadOptions options;
        options.precision = precision;
        const auto model = load_model(test_data_path("reference/llada2-moe"), options);
        const std::string fused = "model.layers.1.attention.query_key_value.weight";
        const Weight& q = model->weight(fused + "[0:64]");
        const Weight& k = model->weight(fused + "[64:96]");
        const Weight& v = model->weight(fused + "[96:128]");
        CHECK((q.role == Role::q_proj && k.role == Role::k_proj && v.role == Role::v_proj));
        CHECK((q.layer == 1 && k.layer == 1 && v.layer == 1));
        CHECK(q.shape == std::vector<int64_t>{64, 64});
        CHECK(k.shape == std::vector<int64_t>{32, 64});
        CHECK(v.shape == std::vector<int64_t>{32, 64});
        const size_t row_bytes = 64 * dtype_size(q.dtype);
        CHECK(static_cast<const uint8_t*>(k.data) == static_cast<const uint8_t*>(q.data) + 64 * row_bytes);
        CHECK(static_cast<const uint8_t*>(v.data) == static_cast<const uint8_t*>(k.data) + 32 * row_bytes);
        CHECK_THROWS(model->weight(fused));  // no weight by the fused name itself
        uint64_t elements = 0;
        for (const Weight& w : model->weights()) elements += w.elements;
        CHECK(model->description().parameters_total == elements);
        CHECK(model->description().bytes_by_component[size_t(Component::attention)] ==
              uint64_t(3 * (128 * 64 + 64 * 64)) * dtype_size(q.dtype));  // 3 layers of fused q/k/v and dense
    }
}

TEST_CASE("the published LLaDA2.0-mini, SDAR-8B and RND1-30B tensors bind by name from their headers alone") {
    // Headers of the real names and shapes over sparse data (tests/fixtures): a metadata-only load
    // binds every tensor, uses all of them, and counts the parameters the planner counts.
    struct Case {
        const char* name;
        const char* architecture;
        size_t file_tensors, fused;  // tensors in the file; fused query_key_value among them
    };
    const Case cases[] = {{"llada2-mini", "llada2-moe", 1 + 20 * 6 + 3 + 19 * (2 + 256 * 3 + 3) + 2, 20},
                          {"sdar-8b", "sdar", 1 + 36 * 11 + 2, 0},
                          {"rnd1-30b", "rnd1", 1 + 48 * (8 + 1 + 128 * 3) + 2, 0}};
    for (const Case& c : cases) {
        CAPTURE(c.name);
        LoadOptions options;
        options.metadata_only = true;
        std::vector<std::string> warnings;
        auto sink = [](int32_t level, const char* message, void* user_data) {
            if (level == static_cast<int32_t>(LogLevel::warn))
                static_cast<std::vector<std::string>*>(user_data)->push_back(message);
        };
        options.logger = Logger(sink, &warnings, LogLevel::debug);
        const auto directory = fixture_path("good/published/" + std::string(c.name));
        const auto model = load_model(directory, options);
        CHECK(model->spec().architecture_name == c.architecture);
        CHECK_FALSE(model->has_data());
        CHECK(model->weights().size() == c.file_tensors + 2 * c.fused);  // a fused tensor is three weights
        CHECK(warnings.empty());  // no tensor of the file left unused
        PlanRequest request;
        request.precision = Precision::automatic;  // from the headers: bf16
        request.max_sequence_length = 1024;
        request.threads = 2;
        const MemoryPlan plan = plan_memory(directory, request);
        CHECK(model->description().parameters_total == plan.parameters_total);
        CHECK(model->description().weight_bytes == plan.weights_total);
        CHECK(plan.weights_total == 2 * plan.parameters_total);
    }
}

TEST_CASE("a snapshot of symlinks into the Hugging Face blob store loads") {
    const auto model = load("good/hf-cache/snapshots/abc123");
    CHECK(model->spec().architecture_name == "dream");
    CHECK(model->weights().size() == 27);
}

TEST_CASE("config facts come from config.json, not from constants") {
    const auto llada = load("good/llada");
    CHECK(llada->spec().rope_theta == 500000.0);
    CHECK(llada->spec().mask_token_id == 63);
    CHECK(llada->spec().embedding_rows == 64);
    CHECK(llada->spec().vocab_size == 60);
    CHECK(llada->spec().kv_heads == 2);
    CHECK_FALSE(llada->spec().logits_shift);

    const auto dream = load("good/dream");
    CHECK(dream->spec().logits_shift);
    CHECK(dream->spec().qkv_bias);
    CHECK(dream->spec().rms_norm_eps == doctest::Approx(1e-6));

    const auto moe = load("good/llada-moe");
    CHECK(moe->spec().is_moe());
    CHECK(moe->spec().qk_norm);
    CHECK(moe->spec().moe_layer == std::vector<bool>{false, true});
    CHECK(moe->spec().shared_expert_intermediate_size == 24);
}

TEST_CASE("MoE active parameters count k of E routed experts") {
    const auto model = load("good/llada-moe");
    uint64_t experts = 0, total = 0;
    for (const Weight& w : model->weights()) {
        total += w.elements;
        if (w.component == Component::experts) experts += w.elements;
    }
    REQUIRE(experts > 0);
    CHECK(model->description().parameters_total == total);
    CHECK(model->description().parameters_active == total - experts + experts * 2 / 4);  // top-2 of 4
}

TEST_CASE("int8 and q4 quantize a float model's matrices at load, and the plan charges what loading holds") {
    const auto f32 = load("good/llada", Precision::fp32);
    for (const auto& [precision, blocks] : {std::pair{Precision::int8, DType::q8_0}, std::pair{Precision::q4, DType::q4_0}}) {
        CAPTURE(dtype_name(blocks));
        const auto model = load("good/llada", precision);
        CHECK(model->description().precision == precision);
        int64_t quantized = 0;
        for (const Weight& w : model->weights()) {
            CAPTURE(w.name);
            // Embeddings, the LM head, norms and rows that are not whole blocks (ff_out's 48) stay as stored.
            const bool kept = w.role == Role::embedding || w.role == Role::lm_head || w.shape.size() == 1 || w.shape[1] % 32 != 0;
            REQUIRE(w.dtype == (kept ? DType::f32 : blocks));
            if (kept) continue;
            ++quantized;
            const Weight& original = f32->weight(w.name);
            std::vector<float> row(size_t(w.shape[1]));
            const auto* bytes = static_cast<const uint8_t*>(w.data);
            const uint64_t row_bytes = dtype_bytes(w.dtype, uint64_t(w.shape[1]));
            for (int64_t r = 0; r < w.shape[0]; ++r) {
                kernels::cpu::dequantize_row(element_type(w.dtype), bytes + uint64_t(r) * row_bytes, w.shape[1], row.data());
                for (int64_t j = 0; j < w.shape[1]; ++j) {
                    uint16_t half = 0;  // the block's scale: its first two bytes
                    std::memcpy(&half, bytes + uint64_t(r) * row_bytes + dtype_bytes(w.dtype, uint64_t(j / 32 * 32)), 2);
                    // Half a step for Q8_0; Q4_0 clamps the side opposite its extreme, a step at most.
                    REQUIRE(std::fabs(row[size_t(j)] - weight_value(original, uint64_t(r * w.shape[1] + j))) <=
                            (blocks == DType::q8_0 ? 0.56f : 1.01f) * std::fabs(fp16_to_float(half)));
                }
            }
        }
        CHECK(quantized == 12);  // q, k, v, o, ff_proj and up_proj of both layers
        PlanRequest request;
        request.precision = precision;
        CHECK(plan_memory(fixture_path("good/llada"), request).weights == model->description().weight_bytes);
        request.backend = BackendKind::cuda;  // its kernels decode the same blocks in registers
        request.device_memory_bytes = uint64_t(1) << 30;
        CHECK(plan_memory(fixture_path("good/llada"), request).weights == model->description().weight_bytes);
    }
    // quantize_embeddings: the embedding and the LM head are quantized too (rows of 32: whole blocks),
    // as loaded and as planned; through the C API, 0 (default) or 1.
    const auto all = load("good/llada", Precision::int8, {.quantize_embeddings = true});
    CHECK(all->weight("model.transformer.wte.weight").dtype == DType::q8_0);
    CHECK(all->weight("model.transformer.ff_out.weight").dtype == DType::q8_0);
    CHECK(all->weight("model.transformer.blocks.0.ff_out.weight").dtype == DType::f32);  // 48 columns
    PlanRequest everything;
    everything.precision = Precision::int8;
    everything.quantize_embeddings = true;
    CHECK(plan_memory(fixture_path("good/llada"), everything).weights == all->description().weight_bytes);
    unmask_model_params params;
    unmask_model_params_init(&params);
    CHECK(params.quantize_embeddings == 0);
    params.precision = UNMASK_PRECISION_INT8;
    params.quantize_embeddings = 2;
    unmask_model* handle = nullptr;
    CHECK(unmask_model_load(fixture_path("good/llada").c_str(), &params, &handle) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("quantize_embeddings") != std::string::npos);
    params.quantize_embeddings = 1;
    params.reserved = 7;
    CHECK(unmask_model_load(fixture_path("good/llada").c_str(), &params, &handle) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("params->reserved must be 0") != std::string::npos);
    params.reserved = 0;
    params.precision = UNMASK_PRECISION_BF16;  // nothing is quantized at load: the flag would do nothing
    CHECK(unmask_model_load(fixture_path("good/llada").c_str(), &params, &handle) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("needs params->precision INT8, Q4 or FP8") != std::string::npos);
    unmask_plan_params plan;
    unmask_plan_params_init(&plan);
    plan.quantize_embeddings = 1;
    unmask_memory_plan planned{};
    planned.struct_size = sizeof planned;
    CHECK(unmask_plan(fixture_path("good/llada").c_str(), &plan, &planned) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("got auto") != std::string::npos);
    params.precision = UNMASK_PRECISION_INT8;
    REQUIRE(unmask_model_load(fixture_path("good/llada").c_str(), &params, &handle) == UNMASK_OK);
    unmask_model_description d{};
    d.struct_size = sizeof d;
    REQUIRE(unmask_model_info(handle, &d) == UNMASK_OK);
    CHECK(d.weight_bytes == all->description().weight_bytes);
    unmask_model_free(handle);

    // Tensors a file already holds in blocks stay as they are; its float ones are quantized.
    const auto gguf = load("gguf/llada-q8_0.gguf", Precision::q4);
    CHECK(gguf->weight("model.transformer.blocks.0.q_proj.weight").dtype == DType::q8_0);
    CHECK(gguf->weight("model.transformer.blocks.0.ff_out.weight").dtype == DType::f32);  // 48 columns
    CHECK(gguf->weight("model.transformer.ff_out.weight").dtype == DType::q8_0);           // as stored
}

TEST_CASE("weights convert to every precision with round-to-nearest-even") {
    const auto f32 = load("good/llada", Precision::fp32);
    const auto bf16 = load("good/llada", Precision::bf16);
    const auto f16 = load("good/llada", Precision::fp16);
    CHECK(f32->description().precision == Precision::fp32);
    CHECK(bf16->description().weight_bytes * 2 == f32->description().weight_bytes);
    for (size_t t = 0; t < f32->weights().size(); ++t) {
        const Weight& a = f32->weights()[t];
        const Weight& b = bf16->weights()[t];
        const Weight& h = f16->weights()[t];
        REQUIRE(b.dtype == DType::bf16);
        REQUIRE(h.dtype == DType::f16);
        for (uint64_t i = 0; i < a.elements; ++i) {
            const float v = weight_value(a, i);
            REQUIRE(weight_value(b, i) == bf16_to_float(float_to_bf16(v)));
            REQUIRE(weight_value(h, i) == fp16_to_float(float_to_fp16(v)));
        }
    }
    // And back up: bf16 files widened to fp32 are exact.
    const auto moe_bf16 = load("good/llada-moe");
    const auto moe_f32 = load("good/llada-moe", Precision::fp32);
    const Weight& narrow = moe_bf16->weight("lm_head.weight");
    const Weight& wide = moe_f32->weight("lm_head.weight");
    for (uint64_t i = 0; i < narrow.elements; ++i) REQUIRE(weight_value(narrow, i) == weight_value(wide, i));
}

TEST_CASE("weights in the file's dtype are used from the map without a copy") {
    const auto model = load("good/llada-moe");  // bf16 file, automatic precision
    const Weight& w = model->weight("model.embed_tokens.weight");
    CHECK(w.dtype == DType::bf16);
    CHECK(w.file_dtype == DType::bf16);
    CHECK(model->description().precision == Precision::bf16);
}

TEST_CASE("metadata-only loading binds shapes without data") {
    LoadOptions options;
    options.metadata_only = true;
    const auto meta = load("good/dream", Precision::bf16, options);
    const auto full = load("good/dream", Precision::bf16);
    CHECK_FALSE(meta->has_data());
    CHECK(meta->weights().front().data == nullptr);
    CHECK(meta->description().weight_bytes == full->description().weight_bytes);
    CHECK(meta->description().parameters_total == full->description().parameters_total);
}

TEST_CASE("checksums are verified when the manifest is present and required on request") {
    const auto verified = load("good/llada-checksummed");
    CHECK(verified->description().checksums == ChecksumResult::verified);

    LoadOptions skip;
    skip.checksum_mode = ChecksumMode::skip;
    CHECK(load("good/llada-checksummed", Precision::automatic, skip)->description().checksums ==
          ChecksumResult::not_checked);

    LoadOptions require;
    require.checksum_mode = ChecksumMode::require;
    try {
        load("good/llada", Precision::automatic, require);
        FAIL("loading without a manifest must fail when checksums are required");
    } catch (const Error& e) {
        CHECK(e.status() == Status::model_format);
        CHECK(std::string(e.what()).find("has no SHA256SUMS") != std::string::npos);
    }
}

TEST_CASE("a model's fingerprint tells its files' versions apart: the verified manifest, or config and headers") {
    const auto fingerprint = [](const std::filesystem::path& path, ChecksumMode mode = ChecksumMode::if_present) {
        LoadOptions options;
        options.checksum_mode = mode;
        return load_model(path, options)->description().fingerprint;
    };
    const std::string checked = fingerprint(fixture_path("good/llada-checksummed"));
    CHECK(checked.starts_with("sha256sums:"));
    CHECK(checked.size() == std::string("sha256sums:").size() + 64);
    const std::string unchecked = fingerprint(fixture_path("good/llada-checksummed"), ChecksumMode::skip);
    CHECK(unchecked.starts_with("headers:"));

    // The same files give the same fingerprint; other files another.
    const std::string llada = fingerprint(fixture_path("good/llada"));
    CHECK(llada.starts_with("headers:"));
    CHECK(fingerprint(fixture_path("good/llada")) == llada);
    CHECK(fingerprint(fixture_path("good/llada-moe")) != llada);
    const std::string gguf = fingerprint(fixture_path("gguf/llada-f32.gguf"));
    CHECK(gguf.starts_with("headers:"));
    CHECK(gguf != llada);

    // Without a manifest: a changed config.json or header changes it; weight values alone do not
    // (they are not read for it, as documented).
    const ScratchDirectory scratch("fingerprint");
    const auto copy = scratch.path() / "llada";
    std::filesystem::copy(fixture_path("good/llada"), copy);
    CHECK(fingerprint(copy) == llada);
    {
        std::fstream weights(copy / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
        weights.seekp(-2, std::ios::end);
        weights.write("\x7f\x7f", 2);
    }
    CHECK(fingerprint(copy) == llada);
    { std::ofstream(copy / "config.json", std::ios::app) << "\n"; }
    CHECK(fingerprint(copy) != llada);

    // The C API hands out the same text.
    unmask_model_params params;
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    unmask_model* model = nullptr;
    REQUIRE(unmask_model_load(fixture_path("good/llada-checksummed").c_str(), &params, &model) == UNMASK_OK);
    unmask_model_description info{};
    info.struct_size = sizeof info;
    REQUIRE(unmask_model_info(model, &info) == UNMASK_OK);
    CHECK(std::string(info.fingerprint) == checked);
    unmask_model_free(model);
}

TEST_CASE("progress is reported up to the total and the callback can cancel") {
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    LoadOptions options;
    options.progress = [&](uint64_t done, uint64_t total) {
        calls.emplace_back(done, total);
        return true;
    };
    load("good/llada-checksummed", Precision::fp32, options);
    REQUIRE(!calls.empty());
    for (size_t i = 1; i < calls.size(); ++i) CHECK(calls[i].first >= calls[i - 1].first);
    CHECK(calls.back().first == calls.back().second);

    int remaining = 3;
    options.progress = [&](uint64_t, uint64_t) { return --remaining > 0; };
    try {
        load("good/llada", Precision::fp32, options);
        FAIL("a cancelling progress callback must stop the load");
    } catch (const Error& e) {
        CHECK(e.status() == Status::cancelled);
    }
}

TEST_CASE("tensors the architecture does not use are a warning through the log callback") {
    std::vector<std::string> warnings;
    auto sink = [](int32_t level, const char* message, void* user_data) {
        if (level == static_cast<int32_t>(LogLevel::warn))
            static_cast<std::vector<std::string>*>(user_data)->push_back(message);
    };
    LoadOptions options;
    options.logger = Logger(sink, &warnings, LogLevel::debug);
    const auto model = load("good/llada-extra-tensor", Precision::automatic, options);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("model.transformer.unused_buffer") != std::string::npos);
}

namespace {
int32_t cancel_at_second_report(uint64_t, uint64_t, void* user_data) {
    return ++*static_cast<int*>(user_data) >= 2 ? 1 : 0;
}
}  // namespace

TEST_CASE("a progress callback returning non-zero cancels the load through the C API") {
    const std::string path = fixture_path("good/dream");
    unmask_model_params params;
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    int reports = 0;
    params.progress_callback = cancel_at_second_report;
    params.progress_user_data = &reports;
    unmask_model* model = nullptr;
    CHECK(unmask_model_load(path.c_str(), &params, &model) == UNMASK_ERR_CANCELLED);
    CHECK(model == nullptr);
    CHECK(reports == 2);
    CHECK(std::string(unmask_last_error()).find("cancelled") != std::string::npos);
}

TEST_CASE("the C API describes a loaded model and each of its tensors") {
    const std::string path = fixture_path("good/llada-moe");
    unmask_model_params params;
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    params.precision = UNMASK_PRECISION_FP16;
    unmask_model* model = nullptr;
    REQUIRE(unmask_model_load(path.c_str(), &params, &model) == UNMASK_OK);
    unmask_model_description info{};
    info.struct_size = sizeof info;
    REQUIRE(unmask_model_info(model, &info) == UNMASK_OK);
    CHECK(std::string(info.architecture) == "llada-moe");
    CHECK(info.precision == UNMASK_PRECISION_FP16);
    CHECK(info.experts == 4);
    CHECK(info.experts_per_token == 2);
    CHECK(info.tensor_count == 38);
    CHECK(info.parameters_active < info.parameters_total);

    uint64_t bytes = 0;
    for (int64_t i = 0; i < info.tensor_count; ++i) {
        unmask_tensor_description t{};
        t.struct_size = sizeof t;
        REQUIRE(unmask_model_tensor(model, i, &t) == UNMASK_OK);
        CHECK(t.dtype == UNMASK_DTYPE_F16);
        CHECK(t.file_dtype == UNMASK_DTYPE_BF16);
        bytes += t.bytes;
    }
    CHECK(bytes == info.weight_bytes);
    unmask_tensor_description t{};
    t.struct_size = sizeof t;
    CHECK(unmask_model_tensor(model, info.tensor_count, &t) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("outside the model's 38 tensors") != std::string::npos);
    unmask_model_free(model);
}

// A model loaded for one host device (LoadedModel, LoadOptions::cpu_panels) packs its bf16
// matrices once for the CPU's bf16 kernel, in place of their mapped pages, and computes the same
// bits as packing on every call; the weights still read as before (their dropped pages come back
// from the file), so fp32 products give the unpacked model's bits too. The bundled model: its
// projections and MLPs are whole runs of 32 rows, its LM head (260 rows) and embedding are not packed.
TEST_CASE("a model loaded for the CPU packs its bf16 matrices once and gives the same bits") {
    const std::string path = UNMASK_SOURCE_MODELS_DIR "/" UNMASK_BUNDLED_MODEL_NAME;
    LoadOptions packing;
    packing.cpu_panels = true;
    const auto unpacked = load_model(path, {}), packed = load_model(path, packing);
    int64_t with_panels = 0;
    for (const Weight& w : packed->weights()) {
        CAPTURE(w.name);
        with_panels += w.panels != nullptr;
        if (w.panels != nullptr) CHECK(cpu_packs_panels(w));
        if (w.role == Role::embedding || w.role == Role::lm_head) CHECK(w.panels == nullptr);
    }
    for (const Weight& w : unpacked->weights()) CHECK(w.panels == nullptr);
    const int64_t projections = 7 * packed->spec().layers;  // q, k, v, o, gate, up, down
    if (kernels::cpu::matmul_rounds_activations())
        CHECK(with_panels == projections);
    else
        CHECK(with_panels == 0);  // no AVX512-BF16: nothing reads panels

    const auto mask = static_cast<int32_t>(packed->spec().mask_token_id);
    std::vector<int32_t> tokens(32, mask);
    for (const auto& [position, token] : {std::pair{0, 3}, std::pair{1, 17}, std::pair{2, 99}, std::pair{6, 5}, std::pair{11, 12},
                                          std::pair{31, 7}})
        tokens[size_t(position)] = token;
    for (const bool bf16_products : {true, false}) {
        CAPTURE(bf16_products);
        std::vector<std::vector<float>> logits;
        for (const Model* model : {unpacked.get(), packed.get()}) {
            auto backend = make_cpu_backend(2, bf16_products);
            ForwardLimits limits;
            limits.tokens = limits.sequence_length = int64_t(tokens.size());
            Forward forward(*model, *backend, limits);
            const ForwardSequence sequence{tokens, {}, nullptr, {}, 0.0};
            logits.push_back(forward.run(std::span(&sequence, 1), true).logits);
        }
        REQUIRE(logits[0].size() == tokens.size() * size_t(packed->spec().embedding_rows));
        CHECK(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)) == 0);
    }
}
