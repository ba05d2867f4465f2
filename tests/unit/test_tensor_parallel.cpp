// Tensor parallelism over host devices (model/tensor_parallel.hpp): with 2 and 4 devices every
// architecture gives the single device's tokens, at temperature 0 and sampled from a seed, alone
// and batched, with and without K/V caches; a device that fails mid-forward ends it on every
// device with its error, and the forward refuses work from then on with DEVICE instead of hanging.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/placement.hpp"
#include "backend/profiled_backend.hpp"
#include "core/error.hpp"
#include "fixtures.hpp"
#include "engine/engine.hpp"
#include "memory/memory_plan.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "model/tensor_parallel.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

std::unique_ptr<Model> load(const std::string& name, Precision precision) {
    LoadOptions options;
    options.precision = precision;
    return load_model(test_data_path("reference/" + name), options);
}

// `count` CPU backends of one thread each, and the pointers a Forward takes.
struct HostDevices {
    explicit HostDevices(int count) {
        for (int r = 0; r < count; ++r) {
            owned.push_back(make_cpu_backend(1));
            pointers.push_back(owned.back().get());
        }
    }
    std::vector<std::unique_ptr<Backend>> owned;
    std::vector<Backend*> pointers;
};

std::vector<int32_t> canvas(const ModelSpec& spec, int64_t length, int64_t salt) {
    std::vector<int32_t> tokens;
    for (int64_t p = 0; p < length; ++p)
        tokens.push_back(p % 5 == 4 ? int32_t(spec.mask_token_id) : int32_t((p * 13 + salt * 7 + 1) % spec.vocab_size));
    return tokens;
}

// Two forwards of the same canvases: the whole canvas (into the caches, with them), then its
// second half from the caches. Returns every candidate of both, in order.
std::vector<Candidate> decode_twice(const Model& model, std::span<Backend* const> devices,
                                    const std::vector<std::vector<int32_t>>& canvases, const CandidateParams& sampling,
                                    bool cached) {
    int64_t tokens = 0, longest = 0;
    for (const auto& c : canvases) tokens += int64_t(c.size()), longest = std::max(longest, int64_t(c.size()));
    Forward forward(model, devices, {tokens, longest});
    std::vector<std::unique_ptr<KVCache>> caches;
    std::vector<ForwardSequence> batch;
    for (const auto& c : canvases) {
        if (cached) caches.push_back(std::make_unique<KVCache>(devices, nullptr, model.spec(), int64_t(c.size())));
        batch.push_back({c, {}, &sampling, {}, 0.0, cached ? caches.back().get() : nullptr, nullptr, 0, -1});
    }
    std::vector<Candidate> out = forward.run(batch, false).candidates;
    if (!cached) return out;
    for (ForwardSequence& s : batch) s.feed_begin = int64_t(s.tokens.size()) / 2;
    // Dream predicts p from p - 1: its outputs start one past the fed range.
    std::vector<std::vector<int32_t>> positions;
    for (ForwardSequence& s : batch) {
        positions.emplace_back();
        for (int64_t p = s.feed_begin + (model.spec().logits_shift ? 1 : 0); p < int64_t(s.tokens.size()); ++p)
            positions.back().push_back(int32_t(p));
        s.output_positions = positions.back();
    }
    const std::vector<Candidate> second = forward.run(batch, false).candidates;
    out.insert(out.end(), second.begin(), second.end());
    return out;
}

const char* const architectures[] = {"llada", "llada-block", "llada-moe", "llada-moe-sigmoid", "dream",
                                     "llada2-moe", "sdar", "sdar-moe", "rnd1", "llada-fp8-block"};

}  // namespace

TEST_CASE("tensor parallelism over 2 and 4 host devices gives the single device's tokens for every architecture") {
    CandidateParams greedy;
    CandidateParams sampled;
    sampled.noise_temperature = 1.0;
    sampled.seed = 1234;
    const int32_t banned[] = {2};
    sampled.banned_tokens = banned;
    sampled.probability_excluded_token = 1;
    // Top-k needs whole rows: the devices gather them instead of merging their shares' statistics.
    CandidateParams filtered = sampled;
    filtered.top_k = 4;
    for (const std::string name : architectures) {
        const auto model = load(name, Precision::fp32);
        const ModelSpec& spec = model->spec();
        const std::vector<std::vector<int32_t>> alone = {canvas(spec, 16, 0)};
        const std::vector<std::vector<int32_t>> batched = {canvas(spec, 16, 0), canvas(spec, 11, 1), canvas(spec, 24, 2)};
        HostDevices one(1);
        for (const int devices : {2, 4}) {
            HostDevices many(devices);
            for (const auto* canvases : {&alone, &batched})
                for (const CandidateParams* sampling : {&greedy, &sampled, &filtered})
                    for (const bool cached : {false, true}) {
                        CAPTURE(name);
                        CAPTURE(devices);
                        CAPTURE(canvases->size());
                        CAPTURE(sampling == &sampled);
                        CAPTURE(sampling == &filtered);
                        CAPTURE(cached);
                        const auto expected = decode_twice(*model, one.pointers, *canvases, *sampling, cached);
                        const auto got = decode_twice(*model, many.pointers, *canvases, *sampling, cached);
                        REQUIRE(got.size() == expected.size());
                        size_t same = 0;
                        double worst = 0;
                        for (size_t i = 0; i < got.size(); ++i) {
                            same += got[i].token == expected[i].token && got[i].top1_token == expected[i].top1_token;
                            worst = std::max(worst, double(std::abs(got[i].probability - expected[i].probability)));
                        }
                        CHECK(same == got.size());
                        CHECK(worst < 1e-4);  // row-parallel sums add in another order: rounding only
                    }
        }
    }
}

TEST_CASE("classifier-free guidance over several devices gives the single device's tokens") {
    // The split candidates step combines each device's slice of a row with its unconditional twin.
    const auto model = load("llada", Precision::fp32);
    const ModelSpec& spec = model->spec();
    const std::vector<int32_t> guided = canvas(spec, 16, 0), plain = canvas(spec, 12, 1);
    std::vector<int32_t> unconditional = guided;
    for (size_t p = 0; p < 6; ++p) unconditional[p] = int32_t(spec.mask_token_id);  // the prompt masked
    CandidateParams sampled;
    sampled.noise_temperature = 0.8;
    sampled.seed = 77;
    auto run = [&](std::span<Backend* const> devices) {
        Forward forward(*model, devices, {44, 16});
        const std::vector<ForwardSequence> batch = {{guided, {}, &sampled, unconditional, 0.7},
                                                    {plain, {}, &sampled, {}, 0.0}};
        return forward.run(batch, false).candidates;
    };
    HostDevices one(1);
    const std::vector<Candidate> expected = run(one.pointers);
    for (const int devices : {2, 4}) {
        HostDevices many(devices);
        const std::vector<Candidate> got = run(many.pointers);
        REQUIRE(got.size() == expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
            CAPTURE(devices);
            CAPTURE(i);
            CHECK(got[i].token == expected[i].token);
            CHECK(got[i].top1_token == expected[i].top1_token);
            CHECK(got[i].probability == doctest::Approx(expected[i].probability).epsilon(1e-4));
            CHECK(got[i].top1_probability == doctest::Approx(expected[i].top1_probability).epsilon(1e-4));
            CHECK(got[i].negative_entropy == doctest::Approx(expected[i].negative_entropy).epsilon(1e-4));
        }
    }
}

TEST_CASE("outputs past one chunk of 128 rows, on devices, give the single device's tokens") {
    // The split candidates step runs once per chunk of output rows; the later chunks start past 0.
    const auto model = load("llada", Precision::fp32);
    const std::vector<int32_t> tokens = canvas(model->spec(), 300, 4);
    CandidateParams sampled;
    sampled.noise_temperature = 0.5;
    sampled.seed = 5;
    auto run = [&](std::span<Backend* const> devices) {
        Forward forward(*model, devices, {300, 300});
        return forward.run(std::vector{ForwardSequence{tokens, {}, &sampled, {}, 0.0}}, false).candidates;
    };
    HostDevices one(1), two(2);
    const std::vector<Candidate> expected = run(one.pointers), got = run(two.pointers);
    REQUIRE(expected.size() == 300);
    REQUIRE(got.size() == expected.size());
    size_t same = 0;
    for (size_t i = 0; i < got.size(); ++i) same += got[i].token == expected[i].token;
    CHECK(same == got.size());
}

TEST_CASE("tensor-parallel logits match the single device's, quantized weights included") {
    for (const auto& [name, precision] : {std::pair{"llada", Precision::bf16}, std::pair{"llada", Precision::int8},
                                          std::pair{"llada2-moe", Precision::bf16}}) {
        CAPTURE(name);
        CAPTURE(int(precision));
        const auto model = load(name, precision);
        const std::vector<int32_t> tokens = canvas(model->spec(), 12, 3);
        HostDevices one(1), two(2);
        Forward single(*model, one.pointers, {12, 12}), parallel(*model, two.pointers, {12, 12});
        const std::vector batch = {ForwardSequence{tokens, {}, nullptr, {}, 0.0}};
        const std::vector<float> expected = single.run(batch, true).logits, got = parallel.run(batch, true).logits;
        REQUIRE(got.size() == expected.size());
        double worst = 0, scale = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            worst = std::max(worst, double(std::abs(got[i] - expected[i])));
            scale = std::max(scale, double(std::abs(expected[i])));
        }
        MESSAGE(std::string(name) << " precision " << int(precision) << ": largest difference " << worst << " of " << scale);
        CHECK(worst <= 1e-3 * scale);
    }
}

TEST_CASE("a model that does not divide among the devices is refused with the reason") {
    const auto model = load("llada", Precision::fp32);
    HostDevices three(3);
    CHECK_THROWS_WITH_AS(Forward(*model, three.pointers, {8, 8}),
                         doctest::Contains("the model's 4 attention heads do not divide among them"), Error);
    // The fp8 blocks of 128 columns cannot split a row of 128 in two.
    const auto fp8 = load("llada-fp8-block", Precision::automatic);
    HostDevices two(2);
    CHECK_THROWS_WITH_AS(Forward(*fp8, two.pointers, {8, 8}), doctest::Contains("not whole blocks of 128"), Error);
    ModelSpec spec = model->spec();
    spec.kv_heads = 3;
    spec.attention_heads = 6;
    CHECK_THROWS_WITH_AS(shard_spec(spec, 2), doctest::Contains("3 K/V heads neither divide"), Error);
    // A vocabulary need not divide (the last slice is shorter), but each device needs a slice.
    spec = model->spec();
    spec.embedding_rows = 3;
    CHECK_THROWS_WITH_AS(shard_spec(spec, 4), doctest::Contains("3 vocabulary rows are too few"), Error);
    spec.embedding_rows = 4;
    CHECK(shard_spec(spec, 4).embedding_rows == 4);
}

TEST_CASE("a vocabulary that does not divide: the slices, and room for the gather's tail") {
    CHECK(vocabulary_slice(262, 4) == 66);  // 66 + 66 + 66 + 64
    CHECK(gathered_vocabulary_slack(262, 4) == 2);
    CHECK(vocabulary_slice(300, 4) == 75);
    CHECK(gathered_vocabulary_slack(300, 4) == 0);
    CHECK(gathered_vocabulary_slack(945, 1) == 0);
    ModelSpec spec = load("llada", Precision::fp32)->spec();
    spec.embedding_rows = 262;
    const std::vector<int64_t> head = {262, spec.hidden_size};
    int64_t covered = 0;
    for (int rank = 0; rank < 4; ++rank) {  // the LM head's rows: consecutive slices, every row once
        const Share share = share_of(spec, Role::lm_head, -1, head, rank, 4);
        CHECK(share.first == covered);
        covered += share.count;
    }
    CHECK(covered == 262);
    for (const int64_t tokens : {int64_t(1), int64_t(7), int64_t(4096)}) {
        CAPTURE(tokens);
        const RunStateSizes sizes = run_state_sizes(shard_spec(spec, 4), {tokens, tokens}, 4);
        const auto outputs = uint64_t(2 * std::min(tokens, output_chunk_rows));
        // The last row's gather writes 4 x 66 floats from its start; the last rank sends 66 from its
        // last row of 64.
        CHECK(sizes.logits >= ((outputs - 1) * 262 + 4 * 66) * sizeof(float));
        CHECK(sizes.shard_logits >= ((outputs - 1) * 64 + 66) * sizeof(float));
        CHECK(sizes.shard_logits >= outputs * 66 * sizeof(float));  // rank 0's rows of 66
    }
}

TEST_CASE("each device holds its share: heads, K/V heads replicated past their count, experts and vocabulary") {
    const auto model = load("rnd1", Precision::fp32);  // 4 heads, 1 K/V head, MoE with 8 experts
    const ModelSpec& spec = model->spec();
    const ModelSpec shard = shard_spec(spec, 4);
    CHECK(shard.attention_heads == spec.attention_heads / 4);
    CHECK(shard.kv_heads == 1);
    CHECK(shard.expert_intermediate_size == spec.expert_intermediate_size);  // experts stay whole
    CHECK(first_kv_head(spec, 3, 4) == 0);
    auto device = make_cpu_backend(1);
    const auto weights = shard_weights(*model, 1, 4, *device);
    uint64_t elements = 0, whole = 0;
    for (const Weight& w : model->weights()) whole += w.elements;
    bool lm_head = false;
    std::vector<int32_t> experts;
    for (const Weight& w : weights->weights()) {
        elements += w.elements;
        if (w.role == Role::expert_gate && w.layer == 0) experts.push_back(w.expert);
        if (w.role == Role::lm_head) {
            lm_head = true;
            CHECK(w.shape[0] * 4 == spec.embedding_rows);  // tied: a quarter of the embedding's rows
        }
        if (w.role == Role::o_proj) CHECK(w.shape[1] == shard.attention_heads * spec.head_dim);
    }
    CHECK(lm_head);
    CHECK(experts == std::vector<int32_t>{2, 3});  // device 1 of 4: the second quarter of the 8 experts
    CHECK(elements < whole);
}

// What `unmask plan --devices 2` answers is what the devices hold and are charged: on GPUs, each
// device's share of the weights as shard_weights binds it; on host devices (one memory), the
// model once plus every device's copies of its column shares, run state and workspace, and its
// shards of the sequences' K/V caches, as the devices' allocations measure them.
TEST_CASE("the plan for 2 devices is what the devices hold and are charged") {
    const std::string path = test_data_path("reference/llada2-moe");
    const auto model = load("llada2-moe", Precision::fp32);
    const int64_t length = 64, concurrent = 2;
    PlanRequest request;
    request.precision = Precision::fp32;
    request.devices = 2;
    request.threads = 2;  // one per host device
    request.budget_bytes = uint64_t(1) << 40;
    request.max_sequence_length = length;
    request.max_concurrent = concurrent;
    request.sequence.kv_cache = true;
    PlanRequest on_gpus = request;
    on_gpus.backend = BackendKind::cuda;
    const MemoryPlan gpu_plan = plan_memory(path, on_gpus), host_plan = plan_memory(path, request);
    CHECK(gpu_plan.sequences_per_device == concurrent);
    CHECK(gpu_plan.weights_total == host_plan.weights_total);

    MemoryLedger ledger("host", UINT64_MAX);  // the devices' one memory
    std::vector<std::unique_ptr<Backend>> owned;
    std::vector<Backend*> devices;
    for (int r = 0; r < 2; ++r) {
        owned.push_back(make_cpu_backend(1, ledger));
        devices.push_back(owned.back().get());
    }
    const uint64_t idle = ledger.in_use();  // the backends' first workspaces
    for (int r = 0; r < 2; ++r) {
        CAPTURE(r);
        const auto shard = shard_weights(*model, r, 2, *devices[size_t(r)]);
        uint64_t bound = 0;
        for (const Weight& w : shard->weights()) bound += dtype_bytes(w.dtype, w.elements);
        CHECK(bound == gpu_plan.weights);
    }
    CHECK(ledger.in_use() == idle);  // the shards' copies went with them
    {
        Forward forward(*model, devices, {concurrent * length, length});
        std::vector<std::unique_ptr<KVCache>> caches;
        for (int64_t s = 0; s < concurrent; ++s)
            caches.push_back(std::make_unique<KVCache>(devices, nullptr, model->spec(), length));
        const uint64_t kv = kv_cache_bytes(model->spec(), length, request.sequence, BackendKind::cpu, 2);
        CHECK(kv * 2 == kv_cache_bytes(model->spec(), length, request.sequence, BackendKind::cpu, 1));  // 2 K/V heads
        CHECK(host_plan.dynamic - uint64_t(concurrent) * decode_state_bytes(length, request.sequence) ==
              uint64_t(concurrent) * 2 * kv);
        // The copies are planned in bytes and allocated in 64-byte granules.
        const uint64_t planned = host_plan.weights - host_plan.weights_total + host_plan.scratch + uint64_t(concurrent) * 2 * kv;
        CHECK(ledger.in_use() >= planned);
        CHECK(ledger.in_use() - planned <= 64 * 2 * 3 * uint64_t(model->spec().layers));  // o, down, shared down
    }
    owned.clear();  // the backends' workspaces last
    CHECK(ledger.in_use() == 0);
}

// An engine on 2 host devices serves requests, batched, with and without a K/V cache, as it does
// on one: the same tokens at temperature 0.
TEST_CASE("an engine on 2 host devices gives the tokens it gives on one") {
    for (const char* name : {"llada", "llada2-moe"}) {
        CAPTURE(name);
        const auto model = load(name, Precision::fp32);
        const ModelSpec& spec = model->spec();
        std::vector<std::vector<int32_t>> tokens[2];
        for (const int devices : {1, 2}) {
            MemoryLedger memory("test memory", uint64_t(1) << 32);
            EngineOptions options;
            options.max_concurrent_requests = 3;
            options.max_sequence_length = 32;
            options.threads = 2;
            options.devices = devices;
            {
                Engine engine(*model, memory, std::move(options));
                std::vector<std::shared_ptr<Request>> requests;
                for (int i = 0; i < 3; ++i) {
                    RequestInput input;
                    input.params.gen_length = 16;
                    input.params.steps = 8;
                    input.params.block_length = 8;
                    if (i == 1) input.params.cache_mode = CacheMode::dual;
                    input.canvas = {int32_t(5 + i), 9, 14};
                    input.canvas.resize(input.canvas.size() + 16, static_cast<int32_t>(spec.mask_token_id));
                    input.first_output = 3;
                    requests.push_back(engine.submit(std::move(input), std::nullopt));
                }
                for (const auto& request : requests) {
                    REQUIRE(request->wait(std::chrono::seconds(60)));
                    const RequestResult result = request->result();
                    CHECK(result.error == "");
                    CHECK(result.tokens.size() == 16);
                    tokens[devices - 1].push_back(result.tokens);
                }
            }
            CHECK(memory.in_use() == 0);  // the engine gave back its scratch and every request's state
        }
        CHECK(tokens[1] == tokens[0]);
    }
}

namespace {

struct OwnedCpu {
    std::unique_ptr<Backend> cpu = make_cpu_backend(1);
};

// A host device whose `healthy`-th matmul fails.
class FailingDevice : OwnedCpu, public ProfiledBackend {
public:
    explicit FailingDevice(int healthy) : ProfiledBackend(*cpu), healthy_(healthy) {}
    void matmul(const float* x, int64_t rows, const Weight& w, const Weight* bias, float* out) override {
        if (calls_++ == healthy_) throw Error(Status::device, "a device failed (planted)");
        ProfiledBackend::matmul(x, rows, w, bias, out);
    }

private:
    int calls_ = 0, healthy_;
};

}  // namespace

// The first matmul a device's forward calls (matmuls aside) is the first layer's o projection,
// before any collective: healthy 0 fails there, 3 after several all-reduces.
TEST_CASE("a device failing mid-forward ends the forward on every device with its error, and the next runs") {
    const auto model = load("llada", Precision::fp32);
    const std::vector<int32_t> tokens = canvas(model->spec(), 8, 0);
    const std::vector batch = {ForwardSequence{tokens, {}, nullptr, {}, 0.0}};
    HostDevices healthy(2);
    const std::vector<float> expected = Forward(*model, healthy.pointers, {8, 8}).run(batch, true).logits;
    for (const auto& [failing_rank, healthy_matmuls] : {std::pair{1, 3}, std::pair{0, 0}, std::pair{1, 0}}) {
        CAPTURE(failing_rank);
        CAPTURE(healthy_matmuls);
        HostDevices others(2);
        FailingDevice failing(healthy_matmuls);
        std::vector<Backend*> devices = others.pointers;
        devices[size_t(failing_rank)] = &failing;
        Forward forward(*model, devices, {8, 8});
        CHECK_THROWS_WITH_AS(forward.run(batch, true), doctest::Contains("a device failed (planted)"), Error);
        CHECK(forward.run(batch, true).logits == expected);  // a new group: the failure cost one forward
    }
}

namespace {

// A CPU backend on the engine's scratch whose `failing`-th matmul fails (once): with a
// DeviceLost when `lost`, else an Error(DEVICE).
class FailingOnce final : public ProfiledBackend {
public:
    FailingOnce(std::unique_ptr<Backend> inner, int failing, bool lost)
        : ProfiledBackend(*inner), inner_(std::move(inner)), failing_(failing), lost_(lost) {}
    void matmul(const float* x, int64_t rows, const Weight& w, const Weight* bias, float* out) override {
        if (calls_++ == failing_) {
            if (lost_) throw DeviceLost("device 1 failed (planted)");
            throw Error(Status::device, "device 1 failed (planted)");
        }
        ProfiledBackend::matmul(x, rows, w, bias, out);
    }

private:
    std::unique_ptr<Backend> inner_;
    int calls_ = 0, failing_;
    bool lost_;
};

// Host devices whose second fails as FailingOnce does; the others are the CPU placement's.
class FailingSecondDevice final : public DevicePlacement {
public:
    FailingSecondDevice(int failing, bool lost) : failing_(failing), lost_(lost) {}
    BackendKind kind() const noexcept override { return BackendKind::cpu; }
    std::unique_ptr<Backend> make_backend(int threads, MemoryLedger& scratch) const override {
        auto backend = cpu_placement()->make_backend(threads, scratch);
        if (made_++ != 1) return backend;
        return std::make_unique<FailingOnce>(std::move(backend), failing_, lost_);
    }

private:
    int failing_;
    bool lost_;
    mutable int made_ = 0;
};

std::shared_ptr<Request> submit_one(Engine& engine, const ModelSpec& spec, int32_t first_token) {
    RequestInput input;
    input.params.gen_length = 16;
    input.params.steps = 8;
    input.params.block_length = 8;
    input.canvas = {first_token, 9, 14};
    input.canvas.resize(input.canvas.size() + 16, static_cast<int32_t>(spec.mask_token_id));
    input.first_output = 3;
    return engine.submit(std::move(input), std::nullopt);
}

}  // namespace

// The 2 x 40th matmul falls in the second request's first step or later: the device fails with
// requests running; a plain device error ends the step's requests, a lost device the engine.
TEST_CASE("a host device failing mid-step ends its requests with DEVICE and gives back their memory") {
    const auto model = load("llada2-moe", Precision::fp32);
    const ModelSpec& spec = model->spec();
    auto engine_options = [](std::shared_ptr<const DevicePlacement> placement) {
        EngineOptions options;
        options.max_concurrent_requests = 2;
        options.max_sequence_length = 32;
        options.threads = 2;
        options.devices = 2;
        options.placement = std::move(placement);
        return options;
    };
    std::vector<int32_t> healthy_tokens;
    {
        MemoryLedger memory("test memory", uint64_t(1) << 32);
        Engine engine(*model, memory, engine_options(nullptr));
        const auto request = submit_one(engine, spec, 5);
        REQUIRE(request->wait(std::chrono::seconds(60)));
        healthy_tokens = request->result().tokens;
    }

    SUBCASE("an error: the step's requests end with it, the engine serves the next") {
        MemoryLedger memory("test memory", uint64_t(1) << 32);
        Engine engine(*model, memory, engine_options(std::make_shared<FailingSecondDevice>(40, false)));
        const uint64_t base = memory.in_use();  // the engine's scratch, before any request
        std::vector<std::shared_ptr<Request>> failed = {submit_one(engine, spec, 5), submit_one(engine, spec, 6)};
        for (const auto& request : failed) {
            REQUIRE(request->wait(std::chrono::seconds(60)));
            CHECK(request->result().finish == RequestFinish::error);
            CHECK(request->result().error_status == Status::device);
            CHECK(request->result().error.find("device 1 failed (planted)") != std::string::npos);
        }
        CHECK(memory.in_use() == base);  // both requests' states (their K/V shards included) returned
        const auto next = submit_one(engine, spec, 5);
        REQUIRE(next->wait(std::chrono::seconds(60)));
        CHECK(next->result().tokens == healthy_tokens);
        CHECK(engine.health() == Health::ready);
    }
    SUBCASE("a lost device: the engine fails, every request ends with DEVICE, and nothing hangs") {
        MemoryLedger memory("test memory", uint64_t(1) << 32);
        {
            Engine engine(*model, memory, engine_options(std::make_shared<FailingSecondDevice>(40, true)));
            std::vector<std::shared_ptr<Request>> failed = {submit_one(engine, spec, 5), submit_one(engine, spec, 6)};
            for (const auto& request : failed) {
                REQUIRE(request->wait(std::chrono::seconds(60)));
                CHECK(request->result().finish == RequestFinish::error);
                CHECK(request->result().error_status == Status::device);
            }
            CHECK(engine.health() == Health::failed);
            CHECK_THROWS_WITH_AS(submit_one(engine, spec, 7), doctest::Contains("device 1 failed (planted)"), Error);
        }
        CHECK(memory.in_use() == 0);  // the engine gave back its scratch and the devices' copies
    }
}

namespace {

// The model at `path` loaded through the C API for `devices` host devices.
unmask_model* load_for_devices(const std::string& path, int32_t devices) {
    unmask_model_params params;
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    params.precision = UNMASK_PRECISION_FP32;
    params.devices = devices;
    unmask_model* model = nullptr;
    REQUIRE(unmask_model_load(path.c_str(), &params, &model) == UNMASK_OK);
    return model;
}

unmask_memory_usage memory_of(const unmask_model* model) {
    unmask_memory_usage usage{};
    usage.struct_size = sizeof usage;
    REQUIRE(unmask_model_memory(model, &usage) == UNMASK_OK);
    return usage;
}

// The tokens of two generations, seeded and sampled with the dual cache: one batch through
// unmask_generate_batch, then one request through an engine.
std::vector<std::vector<int32_t>> generate_through_the_c_api(const unmask_model* model) {
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.gen_length = 16;
    params.steps = 8;
    params.block_length = 8;
    params.temperature = 0.7;
    params.seed = 11;
    params.cache_mode = UNMASK_CACHE_DUAL;
    params.threads = 2;
    const std::vector<int32_t> first = {5, 9, 14}, second = {7, 3};
    const int32_t* prompts[] = {first.data(), second.data()};
    const int64_t lengths[] = {3, 2};
    std::vector<std::vector<int32_t>> tokens(3, std::vector<int32_t>(16));
    unmask_generation results[2]{};
    for (int i = 0; i < 2; ++i) {
        results[i].struct_size = sizeof results[i];
        results[i].tokens = tokens[size_t(i)].data();
        results[i].tokens_capacity = 16;
    }
    REQUIRE(unmask_generate_batch(model, &params, 2, prompts, lengths, results) == UNMASK_OK);

    unmask_engine_params engine_params;
    REQUIRE(unmask_engine_params_init(&engine_params) == UNMASK_OK);
    engine_params.max_concurrent_requests = 2;
    engine_params.max_sequence_length = 32;
    engine_params.threads = 2;
    unmask_engine* engine = nullptr;
    REQUIRE(unmask_engine_create(model, &engine_params, &engine) == UNMASK_OK);
    unmask_request* request = nullptr;
    REQUIRE(unmask_engine_submit(engine, &params, first.data(), 3, 0, &request) == UNMASK_OK);
    REQUIRE(unmask_request_wait(request, 60) == UNMASK_OK);
    int64_t count = 0;
    REQUIRE(unmask_request_tokens(request, tokens[2].data(), 16, &count) == UNMASK_OK);
    CHECK(count == 16);
    unmask_request_free(request);
    unmask_engine_free(engine);
    return tokens;
}

}  // namespace

TEST_CASE("a model loaded for host devices generates what it does on one, and gives back every byte") {
    // tiny-chat's 262 vocabulary rows do not divide among 4 devices: slices of 66, the last of 64.
    const std::pair<std::string, int32_t> cases[] = {{test_data_path("reference/llada"), 2},
                                                     {test_data_path("reference/llada2-moe"), 2},
                                                     {fixture_path("good/tiny-chat"), 4}};
    for (const auto& [path, shared] : cases) {
        CAPTURE(path);
        std::vector<std::vector<int32_t>> tokens[2];
        uint64_t peak[2] = {};
        for (const int32_t devices : {1, shared}) {
            const size_t i = devices == 1 ? 0 : 1;
            unmask_model* model = load_for_devices(path, devices);
            const uint64_t weights = memory_of(model).in_use;
            tokens[i] = generate_through_the_c_api(model);
            const unmask_memory_usage after = memory_of(model);
            CHECK(after.in_use == weights);  // states, scratch and the devices' weight copies returned
            peak[i] = after.peak_reserved - weights;
            unmask_model_free(model);
        }
        CHECK(peak[1] > peak[0]);  // the second device's scratch and weight copies: it did run
        CHECK(tokens[1] == tokens[0]);
        CHECK(tokens[0][0] != tokens[0][1]);  // the prompts differ, and so do their answers
    }
}

TEST_CASE("device counts and lists the model parameters cannot serve are refused with the reason") {
    unmask_model_params params;
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    CHECK(params.devices == 1);
    CHECK(params.device_ids == nullptr);
    const std::string path = test_data_path("reference/llada");
    unmask_model* model = nullptr;
    auto load_status = [&](const unmask_model_params& p) { return unmask_model_load(path.c_str(), &p, &model); };

    // A program built against ABI 1.12 passes 96 bytes: what lies past them is not read.
    unmask_model_params older;
    std::memset(&older, 0x5a, sizeof older);
    REQUIRE(unmask_model_params_init_sized(&older, 96) == UNMASK_OK);
    older.precision = UNMASK_PRECISION_FP32;
    REQUIRE(load_status(older) == UNMASK_OK);
    unmask_model_free(model);
    model = nullptr;

    for (const int32_t devices : {0, -1, UNMASK_MAX_DEVICES + 1}) {
        params.devices = devices;
        CHECK(load_status(params) == UNMASK_ERR_INVALID_ARGUMENT);
        CHECK(std::string(unmask_last_error()).find("params->devices") != std::string::npos);
    }
    params.devices = 2;
    const int32_t gpus[] = {0, 1};
    params.device_ids = gpus;  // GPU ids for the CPU backend
    CHECK(load_status(params) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("device_ids") != std::string::npos);

    params.backend = UNMASK_BACKEND_CUDA;
    const int32_t twice[] = {1, 1};
    params.device_ids = twice;
    CHECK(load_status(params) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("GPU 1 twice") != std::string::npos);
    const int32_t out_of_range[] = {0, 4096};
    params.device_ids = out_of_range;
    CHECK(load_status(params) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("device_ids[1]") != std::string::npos);
    params.device_ids = gpus;  // several GPUs need the forward to drive NCCL
    CHECK(load_status(params) == UNMASK_ERR_UNSUPPORTED);
    CHECK(std::string(unmask_last_error()).find("NCCL") != std::string::npos);
    CHECK(model == nullptr);

    // llada's test model has 4 heads: 3 devices cannot share them.
    params.backend = UNMASK_BACKEND_CPU;
    params.device_ids = nullptr;
    params.devices = 3;
    CHECK(load_status(params) == UNMASK_ERR_UNSUPPORTED);
    CHECK(std::string(unmask_last_error()).find("3") != std::string::npos);
    CHECK(model == nullptr);
}
