// Memory planning and its enforcement: the ledger's books, the planner's buckets and derived
// answers (a 35B sparse-expert model planned from config.json alone), the peak the tracking
// allocator measures during real generation held against the plan, and OUT_OF_BUDGET with the
// length that would fit.
#include <doctest/doctest.h>

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.hpp"
#include "core/error.hpp"
#include "decode/generate.hpp"
#include "fixtures.hpp"
#include "memory/batch_memory.hpp"
#include "core/memory_ledger.hpp"
#include "memory/memory_plan.hpp"
#include "model/model.hpp"
#include "model/run_state.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

constexpr uint64_t unlimited = uint64_t(1) << 50;

PlanRequest request_for(int64_t length, int64_t concurrent, bool cfg, int threads) {
    PlanRequest r;
    r.budget_bytes = unlimited;
    r.margin = 0.0;
    r.threads = threads;
    r.max_sequence_length = length;
    r.max_concurrent = concurrent;
    r.sequence.cfg = cfg;
    return r;
}

// Bytes the C library's heap holds now.
uint64_t heap_in_use() {
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

}  // namespace

TEST_CASE("the ledger refuses what does not fit, names it, and returns every byte") {
    MemoryLedger device("test device", 1000);
    Reservation weights = device.reserve(600, "the weights");
    CHECK_THROWS_WITH_AS(device.reserve(500, "a sequence's state"),
                         doctest::Contains("a sequence's state needs 500 bytes but test device has 400"), Error);
    {
        auto scratch = device.pool("scratch", 300);
        CHECK(device.reserved() == 900);
        CHECK(device.in_use() == 600);  // a pool is held whole but used as it allocates
        scratch->charge(200, "a buffer");
        CHECK(device.in_use() == 800);
        CHECK_THROWS_AS(scratch->charge(101, "a buffer"), Error);
        scratch->discharge(200);
        CHECK(device.peak_in_use() == 800);
    }
    CHECK(device.reserved() == 600);
    Reservation moved = std::move(weights);
    CHECK(device.reserved() == 600);
    moved = Reservation();
    CHECK(device.reserved() == 0);
    CHECK(device.in_use() == 0);
    CHECK(device.peak_reserved() == 900);
    CHECK(device.peak_in_use() == 800);
    try {
        device.reserve(1001, "too much");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.status() == Status::out_of_budget);
    }
}

TEST_CASE("a copy past the end of a device buffer is INTERNAL, not a write past it") {
    auto backend = make_cpu_backend(1);
    DeviceBuffer buffer = backend->allocate(16);
    std::vector<char> host(17, 'x');
    backend->copy_to_device(buffer, host.data(), 16);
    backend->copy_to_host(host.data(), buffer, 16);
    for (auto copy : {+[](Backend& b, DeviceBuffer& d, char* h) { b.copy_to_device(d, h, 17); },
                      +[](Backend& b, DeviceBuffer& d, char* h) { b.copy_to_host(h, d, 17); }}) {
        try {
            copy(*backend, buffer, host.data());
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.status() == Status::internal);
        }
    }
}

TEST_CASE("a 35B sparse-expert model is planned from config.json alone: weights are parameters x 2") {
    // The guide's shape: 56 layers of 128 experts (6 active), bf16, two 80 GB devices, 4096 positions.
    const uint64_t h = 2048, layers = 56, experts = 128, width = 768, vocab = 151936, q = 32 * 128, kv = 4 * 128;
    const uint64_t attention = h * q + 2 * h * kv + q * h + 2 * 128;
    const uint64_t expert_parameters = layers * experts * 3 * h * width;
    const uint64_t parameters = 2 * vocab * h + h + layers * (attention + 2 * h + experts * h) + expert_parameters;
    CHECK(parameters > 34'000'000'000ull);
    CHECK(parameters < 36'000'000'000ull);

    PlanRequest r;
    r.precision = Precision::bf16;
    r.backend = BackendKind::cuda;  // GPUs, each with its own memory
    r.devices = 2;
    r.device_memory_bytes = 80'000'000'000ull;
    r.memory_fraction = 0.85;
    r.max_sequence_length = 4096;
    r.max_concurrent = 8;
    r.threads = 16;
    const MemoryPlan plan = plan_memory(fixture_path("good/moe-35b-a3b"), r);
    CHECK(plan.parameters_total == parameters);
    CHECK(std::abs(double(plan.weights_total) - 2.0 * double(parameters)) <= 0.01 * 2.0 * double(parameters));
    // Tensor parallelism: each device holds half of every projection, expert and the LM head; the
    // embedding, the norms and the routers are on both.
    CHECK(plan.weights_by_component[size_t(Component::experts)] == expert_parameters * 2 / 2);
    const uint64_t per_device = vocab * h + vocab * h / 2 + h +
                                layers * ((h * q + 2 * h * kv + q * h) / 2 + 2 * 128 + 2 * h + experts * h) +
                                expert_parameters / 2;
    CHECK(plan.weights == 2 * per_device);
    CHECK(plan.budget == 68'000'000'000ull);
    CHECK(plan.margin == 6'800'000'000ull);
    CHECK(plan.usable == plan.budget - plan.margin);
    CHECK(plan.sequences_per_device == 8);  // every device runs every sequence, with half of its K/V heads
    CHECK(plan.dynamic == 8 * sequence_state_bytes(read_model_config(fixture_path("good/moe-35b-a3b")), 4096,
                                                   r.sequence, r.backend, 2));
    CHECK(plan.required == plan.weights + plan.dynamic + plan.scratch);
    CHECK(plan.fits);
    CHECK(plan.max_concurrent_at_length >= 8);
}

// The published configs of LLaDA2.0-mini and -flash, SDAR-8B and RND1-30B (config.json alone):
// parameters counted here from the families' tensor lists, bf16 weights, experts divided over the
// devices. Their totals match the published sizes (16B, 100B, 8B, 30B).
TEST_CASE("the published LLaDA2, SDAR and RND1 shapes are planned from config.json with their parameter counts") {
    struct Shape {
        const char* name;
        uint64_t layers, hidden, heads, kv_heads, vocab, dense_width, dense_layers, experts, expert_width,
            shared_width;
        bool expert_bias;
        double published;  // billions of parameters
    };
    const Shape shapes[] = {
        {"llada2-mini", 20, 2048, 16, 4, 157184, 5120, 1, 256, 512, 512, true, 16.0},
        {"llada2-flash", 32, 4096, 32, 4, 157184, 9216, 1, 256, 1024, 1024, true, 100.0},
        {"sdar-8b", 36, 4096, 32, 8, 151936, 12288, 36, 0, 0, 0, false, 8.0},
        {"rnd1-30b", 48, 2048, 32, 4, 151936, 0, 0, 128, 768, 0, false, 30.0},
    };
    for (const Shape& m : shapes) {
        CAPTURE(m.name);
        const uint64_t hd = 128, h = m.hidden, q = m.heads * hd, kv = m.kv_heads * hd;
        const uint64_t attention = h * (q + 2 * kv) + q * h + 2 * hd + 2 * h;  // q/k/v, o, q/k norms, two norms
        const uint64_t dense = 3 * h * m.dense_width;
        const uint64_t routed = m.experts * 3 * h * m.expert_width;
        const uint64_t router = m.experts * h + (m.expert_bias ? m.experts : 0) + 3 * h * m.shared_width;
        const uint64_t sparse_layers = m.layers - m.dense_layers;
        const uint64_t parameters = 2 * m.vocab * h + h + m.layers * attention + m.dense_layers * dense +
                                    sparse_layers * (routed + router);
        CHECK(double(parameters) / 1e9 >= m.published);
        CHECK(double(parameters) / 1e9 <= m.published * 1.05);

        PlanRequest r;
        r.precision = Precision::bf16;
        r.device_memory_bytes = 80'000'000'000ull;
        r.memory_fraction = 0.9;
        r.max_sequence_length = 4096;
        r.max_concurrent = 4;
        r.threads = 16;
        r.devices = std::string(m.name) == "llada2-flash" ? 4 : 1;
        r.backend = BackendKind::cuda;
        const MemoryPlan plan = plan_memory(fixture_path("good/published/" + std::string(m.name)), r);
        CHECK(plan.parameters_total == parameters);
        CHECK(plan.weights_total == 2 * parameters);
        CHECK(plan.weights_by_component[size_t(Component::experts)] == 2 * sparse_layers * m.experts * 3 * h *
                                                                           m.expert_width / uint64_t(r.devices));
        CHECK(plan.fits);
        if (std::string(m.name) == "llada2-flash") {  // bf16 experts of 100 GB per device: two do not hold it
            r.devices = 2;
            CHECK_FALSE(plan_memory(fixture_path("good/published/llada2-flash"), r).fits);
        }
    }
}

TEST_CASE("the K/V cache and CFG add exactly their bytes to a sequence's state") {
    const ModelSpec spec = read_model_config(fixture_path("good/moe-35b-a3b"));
    const int64_t length = 1024;
    const uint64_t plain = sequence_state_bytes(spec, length, {false, false}, BackendKind::cpu);
    const uint64_t cached = sequence_state_bytes(spec, length, {true, false}, BackendKind::cpu);
    const uint64_t guided = sequence_state_bytes(spec, length, {false, true}, BackendKind::cpu);
    const uint64_t both = sequence_state_bytes(spec, length, {true, true}, BackendKind::cpu);
    const uint64_t kv = 2 * 56 * 4 * 128 * 1024 * 4;  // 2 x layers x kv_heads x head_dim x length x fp32
    CHECK(cached - plain == kv);
    CHECK(both - guided == 2 * kv);  // the unconditional twin keeps its own cache
    CHECK(guided - plain == 4 * 1024);  // the unconditional canvas
    // The CUDA backend's cache is the same size; a bf16 cache is half of it.
    CHECK(sequence_state_bytes(spec, length, {true, false}, BackendKind::cuda) - plain == kv);
    CHECK(sequence_state_bytes(spec, length, {true, false, DType::bf16}, BackendKind::cpu) - plain == kv / 2);
    CHECK(sequence_state_bytes(spec, length, {true, true, DType::bf16}, BackendKind::cuda) - guided == kv);
}

TEST_CASE("a block diffusion model is planned for the whole blocks it decodes") {
    const auto directory = fixture_path("good/published/llada2-mini");  // blocks of 32
    const ModelSpec spec = read_model_config(directory);
    REQUIRE(spec.diffusion_block_size == 32);
    CHECK(spec.decoded_positions(1000) == 1024);
    CHECK(spec.decoded_positions(1024) == 1024);
    PlanRequest r = request_for(1000, 4, false, 2);
    const MemoryPlan partial = plan_memory(directory, r);
    r.max_sequence_length = 1024;
    const MemoryPlan whole = plan_memory(directory, r);
    r.max_sequence_length = 992;
    const MemoryPlan shorter = plan_memory(directory, r);
    CHECK(partial.max_sequence_length == 1000);  // the request's length is reported as asked
    CHECK(partial.sequence_state == whole.sequence_state);
    CHECK(partial.dynamic == whole.dynamic);
    CHECK(partial.scratch == whole.scratch);
    CHECK(shorter.sequence_state < partial.sequence_state);
    CHECK(partial.sequence_state == sequence_state_bytes(spec, 1024, {}, BackendKind::cpu));
}

TEST_CASE("the derived answers are the edges of what fits") {
    PlanRequest r;
    r.precision = Precision::bf16;
    r.device_memory_bytes = 24'000'000'000ull;
    r.memory_fraction = 0.9;
    r.max_sequence_length = 2048;
    r.max_concurrent = 64;
    r.threads = 2;
    const auto directory = fixture_path("good/moe-35b-a3b");
    r.backend = BackendKind::cuda;
    r.devices = 8;
    const MemoryPlan plan = plan_memory(directory, r);
    REQUIRE(plan.max_concurrent_at_length > 0);
    REQUIRE(plan.max_length_at_concurrency > 0);
    auto fits = [&](int64_t length, int64_t concurrent) {
        PlanRequest q = r;
        q.max_sequence_length = length;
        q.max_concurrent = concurrent;
        return plan_memory(directory, q).fits;
    };
    CHECK(fits(2048, plan.max_concurrent_at_length));
    CHECK_FALSE(fits(2048, plan.max_concurrent_at_length + 8));  // the next whole sequence per device
    if (plan.max_length_at_concurrency < 8192) {
        CHECK(fits(plan.max_length_at_concurrency, 64));
        CHECK_FALSE(fits(plan.max_length_at_concurrency + 1, 64));
    }
    CHECK(plan.fits == fits(2048, 64));

    r.devices = 1;  // 70 GB of weights on one 24 GB device: nothing fits, and the plan says so
    const MemoryPlan alone = plan_memory(directory, r);
    CHECK_FALSE(alone.fits);
    CHECK(alone.max_concurrent_at_length == 0);
    CHECK(alone.max_length_at_concurrency == 0);
}

TEST_CASE("bad budgets are INVALID_ARGUMENT") {
    const ModelSpec spec = read_model_config(fixture_path("good/llada-long"));
    CHECK_THROWS_WITH_AS(device_budget(BackendKind::cpu, uint64_t(0), std::nullopt, 0, 0.1),
                         doctest::Contains("must be positive"), Error);
    CHECK_THROWS_WITH_AS(device_budget(BackendKind::cpu, std::nullopt, 1.5, 0, 0.1), doctest::Contains("(0, 1]"), Error);
    CHECK_THROWS_AS(device_budget(BackendKind::cpu, std::nullopt, 0.0, 0, 0.1), Error);
    CHECK_THROWS_AS(device_budget(BackendKind::cpu, std::nullopt, std::nan(""), 0, 0.1), Error);
    CHECK_THROWS_AS(device_budget(BackendKind::cpu, std::nullopt, 0.5, 0, 1.0), Error);

    const std::string path = fixture_path("good/llada-long");
    unmask_plan_params params;
    REQUIRE(unmask_plan_params_init(&params) == UNMASK_OK);
    unmask_memory_plan plan{};
    plan.struct_size = sizeof plan;
    for (auto mutate : {+[](unmask_plan_params& p) { p.memory_budget_bytes = -1; },
                        +[](unmask_plan_params& p) { p.memory_fraction = 1.01; },
                        +[](unmask_plan_params& p) { p.memory_fraction = 0.0; },
                        +[](unmask_plan_params& p) { p.memory_fraction = -0.5; },
                        +[](unmask_plan_params& p) { p.memory_margin = 1.0; },
                        +[](unmask_plan_params& p) { p.max_concurrent = 0; },
                        +[](unmask_plan_params& p) { p.devices = 0; },
                        +[](unmask_plan_params& p) { p.devices = UNMASK_MAX_DEVICES + 1; },  // as loading allows
                        +[](unmask_plan_params& p) { p.max_sequence_length = 4096; },
                        +[](unmask_plan_params& p) { p.device_memory_bytes = UINT64_MAX; },
                        +[](unmask_plan_params& p) { p.max_concurrent = 1 << 30; }}) {  // beyond one forward
        unmask_plan_params bad = params;
        mutate(bad);
        CHECK(unmask_plan(path.c_str(), &bad, &plan) == UNMASK_ERR_INVALID_ARGUMENT);
    }
    unmask_model_params load;
    REQUIRE(unmask_model_params_init(&load) == UNMASK_OK);
    load.memory_fraction = 2.0;
    unmask_model* model = nullptr;
    CHECK(unmask_model_load(path.c_str(), &load, &model) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(model == nullptr);
}

TEST_CASE("unmask_plan reports the breakdown of a model directory") {
    const std::string path = fixture_path("good/llada-moe-long");
    unmask_plan_params params;
    REQUIRE(unmask_plan_params_init(&params) == UNMASK_OK);
    params.memory_budget_bytes = 64 << 20;
    params.max_sequence_length = 512;
    params.max_concurrent = 4;
    params.threads = 2;
    unmask_memory_plan plan{};
    plan.struct_size = sizeof plan;
    REQUIRE_MESSAGE(unmask_plan(path.c_str(), &params, &plan) == UNMASK_OK, unmask_last_error());
    CHECK(plan.budget == uint64_t(64 << 20));
    CHECK(plan.usable == plan.budget - plan.margin);
    uint64_t components = 0;
    for (uint64_t bytes : plan.weights_by_component) components += bytes;
    CHECK(components == plan.weights);
    CHECK(plan.weights_by_component[UNMASK_COMPONENT_EXPERTS] > 0);
    CHECK(plan.weights_by_component[UNMASK_COMPONENT_SHARED_EXPERTS] > 0);
    CHECK(plan.dynamic == 4 * plan.sequence_state);
    CHECK(plan.required == plan.weights + plan.dynamic + plan.scratch);
    CHECK(plan.fits == (plan.required <= plan.usable ? 1 : 0));

    // A K/V cache adds its bytes to each sequence's state: half as many in bf16.
    unmask_memory_plan cached = plan, cached_bf16 = plan;
    params.kv_cache = 1;
    REQUIRE_MESSAGE(unmask_plan(path.c_str(), &params, &cached) == UNMASK_OK, unmask_last_error());
    params.kv_cache_precision = UNMASK_PRECISION_BF16;
    REQUIRE_MESSAGE(unmask_plan(path.c_str(), &params, &cached_bf16) == UNMASK_OK, unmask_last_error());
    CHECK(cached.sequence_state > plan.sequence_state);
    CHECK(cached.sequence_state - plan.sequence_state == 2 * (cached_bf16.sequence_state - plan.sequence_state));
    CHECK(cached_bf16.max_concurrent_at_length > cached.max_concurrent_at_length);
    params.kv_cache_precision = UNMASK_PRECISION_FP16;
    CHECK(unmask_plan(path.c_str(), &params, &cached) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("params->kv_cache_precision must be") != std::string::npos);
    // A bf16 cache needs a cache; an ABI 1.4 caller's struct (72 bytes) ends before the field.
    params.kv_cache = 0;
    params.kv_cache_precision = UNMASK_PRECISION_BF16;
    CHECK(unmask_plan(path.c_str(), &params, &cached) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("needs params->kv_cache = 1") != std::string::npos);
    params.struct_size = 72;
    CHECK(unmask_plan(path.c_str(), &params, &cached) == UNMASK_OK);
    CHECK(cached.sequence_state == plan.sequence_state);
    params.struct_size = sizeof params;
    params.kv_cache_precision = UNMASK_PRECISION_FP32;

    // The same figures as loading the model and reading its description.
    unmask_model_params load;
    REQUIRE(unmask_model_params_init(&load) == UNMASK_OK);
    load.metadata_only = 1;
    unmask_model* model = nullptr;
    REQUIRE(unmask_model_load(path.c_str(), &load, &model) == UNMASK_OK);
    unmask_model_description info{};
    info.struct_size = sizeof info;
    REQUIRE(unmask_model_info(model, &info) == UNMASK_OK);
    CHECK(plan.weights_total == info.weight_bytes);
    CHECK(plan.parameters_total == info.parameters_total);
    unmask_model_free(model);
}

namespace {

// The tracking allocator's peak during real generation of `batch` sequences of `length`
// positions against the plan, loaded at `precision` (converted: the weights live on the heap).
void check_measured_peak(const std::string& name, Precision precision, int64_t length, int64_t batch, bool cfg) {
    const int threads = 2;
    CAPTURE(name);
    CAPTURE(static_cast<int>(precision));
    CAPTURE(length);
    CAPTURE(batch);
    CAPTURE(cfg);
    MemoryLedger device("cpu", unlimited);
    const uint64_t heap_before = heap_in_use();
    LoadOptions options;
    options.precision = precision;
    options.memory = &device;
    const auto model = load_model(fixture_path(name), options);
    const MemoryPlan plan = plan_memory(model->spec(), weight_bytes(model->spec(), model->weights(), 1),
                                        request_for(length, batch, cfg, threads));

    DecodeParams params;
    params.gen_length = length - 4;
    params.steps = 2;
    params.cfg_scale = cfg ? 1.0 : 0.0;
    std::vector<DecodeSequence> sequences;
    std::vector<SequenceShape> shapes;
    for (int64_t i = 0; i < batch; ++i) {
        std::vector<int32_t> canvas = {1, 2, 3, static_cast<int32_t>(4 + i)};
        canvas.resize(size_t(length), static_cast<int32_t>(model->spec().mask_token_id));
        sequences.emplace_back(model->spec(), params, std::move(canvas));
        shapes.push_back({length, {false, cfg}});
    }
    uint64_t heap_peak = 0;
    {
        const BatchMemory memory = reserve_batch(device, model->spec(), shapes, BackendKind::cpu, threads);
        CHECK(memory.limits.tokens == batch * length * (cfg ? 2 : 1));  // one forward per step
        auto backend = make_cpu_backend(threads, *memory.scratch);
        generate(*model, *backend, sequences, memory.limits, [&](size_t, const DecodeSequence&, int64_t) {
            heap_peak = std::max(heap_peak, heap_in_use() - std::min(heap_in_use(), heap_before));
            return true;
        });
    }
    const double measured = double(device.peak_in_use());
    CHECK(std::abs(measured - double(plan.required)) <= 0.10 * double(plan.required));
    CHECK(device.peak_reserved() <= plan.required);
    // The heap as the C library counts it (every allocation, tracked or not), at each step: the
    // plan's weights, state and scratch, within 10%.
#ifndef __SANITIZE_ADDRESS__  // ASan's allocator does not report through mallinfo2
    CHECK(std::abs(double(heap_peak) - double(plan.required)) <= 0.10 * double(plan.required));
#endif
    CHECK(device.in_use() == model->description().weight_bytes);  // all but the weights returned
}

}  // namespace

// For dense and MoE models, batches of 1 to 8, 64 to 1024 positions, with and without CFG. (K/V
// cache modes arrive with the cache issue; their state is planned above, not yet allocated.)
TEST_CASE("the measured peak of real generation is within 10% of the plan and never above the budget") {
    for (const char* name : {"good/llada-long", "good/llada-moe-long"})
        for (const int64_t length : {64, 256, 1024})
            for (const int64_t batch : {1, 3, 8})
                for (const bool cfg : {false, true}) check_measured_peak(name, Precision::bf16, length, batch, cfg);
}

// The formats quantized at load: the planner, from the files alone, charges the blocks and their
// scales as loading holds them, and generation's peak is the plan's as in bf16. (These fixtures'
// rows are not whole groups of 128, so fp8 would quantize nothing here: test_fp8 checks its plan.)
TEST_CASE("the measured peak with int8 and q4 weights is the plan's too") {
    for (const std::string name : {"good/llada-long", "good/llada-moe-long"}) {
        for (const Precision precision : {Precision::int8, Precision::q4}) {
            CAPTURE(name);
            CAPTURE(static_cast<int>(precision));
            LoadOptions options;
            options.precision = precision;
            options.metadata_only = true;
            const auto headers = load_model(fixture_path(name), options);
            const auto quantized = std::count_if(headers->weights().begin(), headers->weights().end(),
                                                 [](const Weight& w) { return is_quantized_dtype(w.dtype); });
            CHECK(quantized > 0);
            PlanRequest request;
            request.precision = precision;
            CHECK(plan_memory(fixture_path(name), request).weights == headers->description().weight_bytes);
            check_measured_peak(name, precision, 256, 3, false);
        }
    }
}

TEST_CASE("a generation that does not fit is refused with the longest length that would") {
    const std::string path = fixture_path("good/llada-long");
    unmask_model_params load;
    REQUIRE(unmask_model_params_init(&load) == UNMASK_OK);
    load.precision = UNMASK_PRECISION_FP32;
    // Room for the weights and exactly one sequence of 512 positions.
    const ModelSpec spec = read_model_config(path);
    PlanRequest fp32;
    fp32.precision = Precision::fp32;
    fp32.budget_bytes = unlimited;
    const uint64_t weights = plan_memory(path, fp32).weights_total;
    load.memory_budget_bytes = int64_t(weights + sequence_state_bytes(spec, 512, {}, BackendKind::cpu) +
                                       scratch_bytes(spec, {512, 512}, BackendKind::cpu, 2));
    load.memory_margin = 0.0;
    unmask_model* model = nullptr;
    REQUIRE(unmask_model_load(path.c_str(), &load, &model) == UNMASK_OK);
    unmask_memory_usage before{};
    before.struct_size = sizeof before;
    REQUIRE(unmask_model_memory(model, &before) == UNMASK_OK);
    CHECK(before.capacity == uint64_t(load.memory_budget_bytes));
    CHECK(before.reserved == weights);

    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.threads = 2;
    params.steps = 2;
    params.gen_length = 1000;
    const std::vector<int32_t> prompt = {1, 2, 3, 4};
    std::vector<int32_t> tokens(1024);
    unmask_generation result{};
    result.struct_size = sizeof result;
    result.tokens = tokens.data();
    result.tokens_capacity = 1024;
    REQUIRE(unmask_generate(model, &params, prompt.data(), 4, &result) == UNMASK_ERR_OUT_OF_BUDGET);
    const std::string message = unmask_last_error();
    const std::string marker = "the longest sequence that fits now has ";
    const auto at = message.find(marker);
    REQUIRE_MESSAGE(at != std::string::npos, message);
    const int64_t longest = std::stoll(message.substr(at + marker.size()));
    CHECK(longest == 512);

    unmask_memory_usage after{};
    after.struct_size = sizeof after;
    REQUIRE(unmask_model_memory(model, &after) == UNMASK_OK);
    CHECK(after.reserved == before.reserved);  // nothing held by the refused request

    params.gen_length = longest - 4;  // exactly the suggestion fits
    CHECK_MESSAGE(unmask_generate(model, &params, prompt.data(), 4, &result) == UNMASK_OK, unmask_last_error());
    params.gen_length = longest - 3;
    CHECK(unmask_generate(model, &params, prompt.data(), 4, &result) == UNMASK_ERR_OUT_OF_BUDGET);
    REQUIRE(unmask_model_memory(model, &after) == UNMASK_OK);
    CHECK(after.peak_reserved <= after.capacity);

    // A batch of two is told the length at which both fit.
    const int32_t* prompts[2] = {prompt.data(), prompt.data()};
    const int64_t lengths[2] = {4, 4};
    std::vector<int32_t> second(1024);
    unmask_generation results[2] = {result, result};
    results[1].tokens = second.data();
    params.gen_length = 1000;
    REQUIRE(unmask_generate_batch(model, &params, 2, prompts, lengths, results) == UNMASK_ERR_OUT_OF_BUDGET);
    const std::string batch_message = unmask_last_error();
    const std::string batch_marker = "the longest sequences that fit now, 2 of them, have ";
    const auto batch_at = batch_message.find(batch_marker);
    REQUIRE_MESSAGE(batch_at != std::string::npos, batch_message);
    const int64_t both = std::stoll(batch_message.substr(batch_at + batch_marker.size()));
    CHECK(both < longest);
    params.gen_length = both - 4;
    CHECK_MESSAGE(unmask_generate_batch(model, &params, 2, prompts, lengths, results) == UNMASK_OK, unmask_last_error());
    unmask_model_free(model);

    // Weights beyond the budget are refused before any is read.
    load.memory_budget_bytes = 1000;
    CHECK(unmask_model_load(path.c_str(), &load, &model) == UNMASK_ERR_OUT_OF_BUDGET);
    CHECK(std::string(unmask_last_error()).find("the weights of") != std::string::npos);
}

TEST_CASE("a batch too large for one forward runs in several, with the same tokens") {
    const std::string path = fixture_path("good/llada-long");
    auto run = [&](int64_t budget, std::vector<std::vector<int32_t>>& outputs) {
        unmask_model_params load;
        REQUIRE(unmask_model_params_init(&load) == UNMASK_OK);
        load.memory_budget_bytes = budget;
        load.memory_margin = 0.0;
        unmask_model* model = nullptr;
        REQUIRE(unmask_model_load(path.c_str(), &load, &model) == UNMASK_OK);
        unmask_generate_params params;
        REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
        params.threads = 2;
        params.steps = 4;
        params.gen_length = 252;
        params.temperature = 0.7;
        params.seed = 9;
        std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}};
        std::vector<const int32_t*> prompt_pointers;
        std::vector<int64_t> lengths;
        outputs.assign(4, std::vector<int32_t>(252));
        std::vector<unmask_generation> results(4);
        for (size_t i = 0; i < 4; ++i) {
            prompt_pointers.push_back(prompts[i].data());
            lengths.push_back(4);
            results[i].struct_size = sizeof(unmask_generation);
            results[i].tokens = outputs[i].data();
            results[i].tokens_capacity = 252;
        }
        const auto status = unmask_generate_batch(model, &params, 4, prompt_pointers.data(), lengths.data(), results.data());
        CHECK_MESSAGE(status == UNMASK_OK, unmask_last_error());
        unmask_memory_usage usage{};
        usage.struct_size = sizeof usage;
        REQUIRE(unmask_model_memory(model, &usage) == UNMASK_OK);
        unmask_model_free(model);
        return usage.peak_in_use;
    };
    std::vector<std::vector<int32_t>> roomy, tight;
    const uint64_t roomy_peak = run(int64_t(1) << 30, roomy);
    // Room for the weights, four sequences' state, and forwards of fewer than two of them.
    const ModelSpec spec = read_model_config(path);
    PlanRequest fp32;
    fp32.precision = Precision::fp32;
    fp32.budget_bytes = unlimited;
    const uint64_t one = scratch_bytes(spec, {256, 256}, BackendKind::cpu, 2);
    const uint64_t two = scratch_bytes(spec, {512, 256}, BackendKind::cpu, 2);
    const uint64_t budget = plan_memory(path, fp32).weights_total +
                            4 * sequence_state_bytes(spec, 256, {}, BackendKind::cpu) + (one + two) / 2;
    const uint64_t tight_peak = run(int64_t(budget), tight);
    CHECK(tight_peak <= budget);
    CHECK(tight_peak < roomy_peak);
    for (size_t i = 0; i < 4; ++i) {
        CAPTURE(i);
        CHECK(tight[i] == roomy[i]);
    }
}

TEST_CASE("a CUDA plan's scratch holds cuBLASLt's workspace and staging sized for the largest forward") {
    const ModelSpec spec = read_model_config(fixture_path("good/moe-35b-a3b"));
    const ForwardLimits limits{512, 256};
    const WorkspaceLimits workspace = workspace_limits(spec, limits);
    CHECK(workspace.tokens == 512);
    CHECK(workspace.vocab == spec.embedding_rows);
    CHECK(workspace.experts == spec.experts);
    // The largest matmul input: every token at the hidden state, the attention output or the
    // shared expert's SwiGLU, or the k (token, expert) rows of each token into or out of the
    // routed experts (every layer of this model is MoE, so its dense width does not count).
    const int64_t k = spec.experts_per_token;
    CHECK(workspace.matmul_input ==
          512 * std::max({spec.hidden_size, spec.attention_heads * spec.head_dim, spec.shared_expert_intermediate_size,
                          k * spec.hidden_size, k * spec.expert_intermediate_size}));
    const CudaWorkspace w = cuda_workspace(workspace);
    CHECK(w.rounded == uint64_t(workspace.matmul_input) * 2);  // bf16 copies of the activations
    CHECK(w.attention == 512 * CudaWorkspace::attention_sequence_bytes);
    // Split sequences' partial softmaxes: per row and head, up to 4 outputs with a maximum and total.
    CHECK(workspace.attention_heads == spec.attention_heads);
    CHECK(workspace.head_dim == spec.head_dim);
    CHECK(w.attention_partials ==
          uint64_t(512 * spec.attention_heads) * CudaWorkspace::attention_max_splits * uint64_t(spec.head_dim + 2) * 4);
    CHECK(w.candidates == 128 * (CudaWorkspace::candidate_row_bytes + 4 * 4 + sizeof(Candidate)));
    CHECK(w.routing == uint64_t(spec.experts) * 4);  // per-expert counts
    CHECK(w.routing_fault == 4);
    // Gate, up and down of every layer (all of them route): a device pointer per expert each.
    CHECK(workspace.expert_weight_lists == 3 * spec.layers);
    CHECK(w.expert_tables == uint64_t(3 * spec.layers) * allocation_bytes(uint64_t(spec.experts) * 8));
    CHECK(w.graphs == CudaWorkspace::graph_slots * CudaWorkspace::graph_constant_bytes);
    const uint64_t expected = allocation_bytes(CudaWorkspace::matmul_bytes) + allocation_bytes(w.rounded) +
                              allocation_bytes(w.attention) + allocation_bytes(w.attention_partials) +
                              allocation_bytes(w.candidates) + allocation_bytes(w.routing) + allocation_bytes(w.routing_fault) +
                              allocation_bytes(w.expert_tables) + allocation_bytes(w.graphs);
    CHECK(cuda_workspace_bytes(workspace) == expected);
    // A dense model's plan holds no routing.
    WorkspaceLimits dense_limits = workspace;
    dense_limits.experts = 0;
    dense_limits.expert_weight_lists = 0;
    const CudaWorkspace d = cuda_workspace(dense_limits);
    CHECK(d.graphs == w.graphs);
    CHECK(d.routing == 0);
    CHECK(d.routing_fault == 0);
    CHECK(d.expert_tables == 0);
    const uint64_t routing = allocation_bytes(w.routing) + allocation_bytes(w.routing_fault);
    CHECK(cuda_workspace_bytes(dense_limits) == expected - routing - allocation_bytes(w.expert_tables));
    CHECK(scratch_bytes(spec, limits, BackendKind::cuda, 1) == run_state_sizes(spec, limits).total() + expected);
    // The routed experts run over a chunk's (token, expert) slots at once: k rows per token, for
    // at most moe_chunk_tokens tokens.
    const RunStateSizes sizes = run_state_sizes(spec, limits);
    CHECK(sizes.expert_input == allocation_bytes(uint64_t(512 * k * spec.hidden_size) * 4));
    CHECK(sizes.slot_rows == allocation_bytes(uint64_t(512 * k) * 4));
    CHECK(sizes.gate == allocation_bytes(uint64_t(512 * std::max(k * spec.expert_intermediate_size,
                                                                 spec.shared_expert_intermediate_size)) * 4));
    const ForwardLimits big{3 * moe_chunk_tokens, 256};
    CHECK(run_state_sizes(spec, big).expert_input ==
          allocation_bytes(uint64_t(moe_chunk_tokens * k * spec.hidden_size) * 4));
    const int64_t per_token =
        std::max({spec.hidden_size, spec.attention_heads * spec.head_dim, spec.shared_expert_intermediate_size});
    CHECK(largest_matmul_input(spec, big) ==
          std::max(3 * moe_chunk_tokens * per_token,
                   moe_chunk_tokens * k * std::max(spec.hidden_size, spec.expert_intermediate_size)));
    // A short forward still stages the LM head's outputs and their CFG twins.
    const ModelSpec dense = read_model_config(fixture_path("good/llada"));
    CHECK(largest_matmul_input(dense, {8, 8}) ==
          16 * std::max({dense.hidden_size, dense.attention_heads * dense.head_dim, dense.intermediate_size}));
}
