// K/V cache modes: which positions each step feeds, a partial forward against a cache equal to
// the full forward, the cache's memory in the sequence's state (planned, charged, released), and
// the forward's refusal of feeds a cache cannot serve.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "compare.hpp"
#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "decode/sequence.hpp"
#include "fixtures.hpp"
#include "memory/batch_memory.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

std::unique_ptr<Model> load(const std::string& name) {
    LoadOptions options;
    options.precision = Precision::fp32;
    return load_model(test_data_path("reference/" + name), options);
}

std::vector<int32_t> canvas_of(const ModelSpec& spec, std::vector<int32_t> prompt, int64_t gen_length) {
    prompt.resize(prompt.size() + size_t(gen_length), static_cast<int32_t>(spec.mask_token_id));
    return prompt;
}

// Candidates that commit nothing in particular: the top choice of each output, confidence by position.
std::vector<Candidate> candidates_for(const DecodeSequence& s) {
    std::vector<Candidate> out;
    for (int32_t p : s.output_positions()) {
        Candidate c{};
        c.token = 1 + p % 7;
        c.probability = 1.0f / float(1 + p);
        c.top1_probability = c.probability;
        out.push_back(c);
    }
    return out;
}

// The fed range of every step until the sequence finishes.
std::vector<std::pair<int64_t, int64_t>> feeds(const ModelSpec& spec, const DecodeParams& params, int64_t prompt) {
    std::vector<int32_t> tokens(size_t(prompt), 1);
    DecodeSequence s(spec, params, canvas_of(spec, tokens, params.gen_length));
    std::vector<std::pair<int64_t, int64_t>> out;
    while (!s.finished()) {
        out.emplace_back(s.feed_begin(), s.feed_end());
        CHECK(s.fed_rows() == (s.feed_end() - s.feed_begin()) * (params.cfg_scale > 0 ? 2 : 1));
        s.apply(candidates_for(s));
    }
    return out;
}

}  // namespace

TEST_CASE("each cache mode feeds the whole canvas at block starts and refreshes, else its part of it") {
    const auto model = load("llada");
    DecodeParams params;
    params.gen_length = 16;
    params.steps = 8;  // two blocks of 8 positions, 4 steps each
    params.block_length = 8;
    using Feeds = std::vector<std::pair<int64_t, int64_t>>;
    const int64_t L = 21;  // 5 prompt positions + 16
    CHECK(feeds(model->spec(), params, 5) == Feeds(8, {0, L}));  // none: always everything

    params.cache_mode = CacheMode::prefix;
    CHECK(feeds(model->spec(), params, 5) == Feeds{{0, L}, {5, L}, {5, L}, {5, L}, {0, L}, {13, L}, {13, L}, {13, L}});
    params.cache_mode = CacheMode::dual;
    CHECK(feeds(model->spec(), params, 5) == Feeds{{0, L}, {5, 13}, {5, 13}, {5, 13}, {0, L}, {13, L}, {13, L}, {13, L}});
    params.cache_vicinity = 2;
    CHECK(feeds(model->spec(), params, 5) == Feeds{{0, L}, {3, 15}, {3, 15}, {3, 15}, {0, L}, {11, L}, {11, L}, {11, L}});
    params.cache_vicinity = 0;
    params.cache_refresh_steps = 2;
    CHECK(feeds(model->spec(), params, 5) == Feeds{{0, L}, {5, 13}, {0, L}, {5, 13}, {0, L}, {13, L}, {0, L}, {13, L}});

    // Block diffusion: blocks of 8 from position 0 over a canvas extended to 24; the prompt's 5
    // positions share block 0 with 3 masks (2 steps: the schedule of a whole block, 2 per step),
    // blocks 1 and 2 take 4 steps. The cache is exact, so there is no full refresh; a block's
    // first step feeds the block before it too (final now: its K/V enter the cache), and block 0
    // feeds the prompt with its masks at every step (they attend to each other).
    const auto block_model = load("llada-block");
    DecodeParams b;
    b.gen_length = 16;
    b.steps = 8;
    b.cache_mode = CacheMode::dual;
    CHECK(feeds(block_model->spec(), b, 5) ==
          Feeds{{0, 8}, {0, 8}, {0, 16}, {8, 16}, {8, 16}, {8, 16}, {8, 24}, {16, 24}, {16, 24}, {16, 24}});
    b.cache_mode = CacheMode::none;
    CHECK(feeds(block_model->spec(), b, 5) == Feeds(10, {0, 24}));

    // Dream predicts position p from p - 1: the fed range starts one before the region.
    const auto dream = load("dream");
    DecodeParams d;
    d.policy = CommitPolicy::maskgit_plus;
    d.gen_length = 8;
    d.steps = 4;
    d.cache_mode = CacheMode::dual;
    CHECK(feeds(dream->spec(), d, 5) == Feeds{{0, 13}, {4, 13}, {4, 13}, {4, 13}});
}

TEST_CASE("a partial forward against a freshly filled cache gives the full forward's logits") {
    for (const std::string name : {"llada", "llada-moe", "dream"})
    for (const DType dtype : {DType::f32, DType::bf16}) {
        CAPTURE(name);
        CAPTURE(dtype_name(dtype));
        const auto model = load(name);
        const ModelSpec& spec = model->spec();
        auto backend = make_cpu_backend(2);
        const int64_t length = 40;
        Forward forward(*model, *backend, {2 * length, length});
        std::vector<int32_t> tokens, twin;
        for (int64_t p = 0; p < length; ++p) {
            tokens.push_back(static_cast<int32_t>(1 + (p * 37) % 90));
            twin.push_back(p < 10 ? static_cast<int32_t>(spec.mask_token_id) : tokens.back());
        }
        KVCache cache(*backend, nullptr, spec, length, dtype), twin_cache(*backend, nullptr, spec, length, dtype);
        CHECK(cache.written() == 0);
        const int64_t begin = 16, end = 28;
        std::vector<int32_t> positions;
        for (int64_t p = begin + (spec.logits_shift ? 1 : 0); p < end; ++p) positions.push_back(static_cast<int32_t>(p));

        ForwardSequence full{tokens, positions, nullptr, twin, 0.5, &cache, &twin_cache, 0, -1};
        const ForwardOutput expected = forward.run(std::vector{full}, true);
        CHECK(cache.written() == length);
        CHECK(twin_cache.written() == length);
        ForwardSequence part = full;
        part.feed_begin = begin;
        part.feed_end = end;
        const ForwardOutput actual = forward.run(std::vector{part}, true);
        CHECK(relative_error(actual.logits, expected.logits) <= 1e-5);

        // A token changed outside the fed range is not seen (its K/V in the cache are stale)...
        const int32_t old_token = tokens[size_t(end + 3)];
        tokens[size_t(end + 3)] = old_token == 3 ? 4 : 3;
        twin[size_t(end + 3)] = tokens[size_t(end + 3)];
        CHECK(forward.run(std::vector{part}, true).logits == actual.logits);
        // ...while the exact forward sees it, and so does a fed position.
        KVCache fresh(*backend, nullptr, spec, length, dtype), fresh_twin(*backend, nullptr, spec, length, dtype);
        ForwardSequence exact = full;
        exact.cache = &fresh;
        exact.unconditional_cache = &fresh_twin;
        CHECK(forward.run(std::vector{exact}, true).logits != actual.logits);
        tokens[size_t(begin + 2)] = tokens[size_t(begin + 2)] == 3 ? 4 : 3;
        CHECK(forward.run(std::vector{part}, true).logits != actual.logits);
    }
}

TEST_CASE("a bf16 cache holds the first layer's keys and values of an fp32 cache rounded to nearest even, in half the bytes") {
    const auto model = load("llada");
    const ModelSpec& spec = model->spec();
    auto backend = make_cpu_backend(2);
    const int64_t length = 24;
    Forward forward(*model, *backend, {length, length});
    std::vector<int32_t> tokens;
    for (int64_t p = 0; p < length; ++p) tokens.push_back(static_cast<int32_t>(1 + (p * 13) % 90));
    KVCache wide(*backend, nullptr, spec, length, DType::f32), narrow(*backend, nullptr, spec, length, DType::bf16);
    CHECK(KVCache::bytes(spec, length, DType::bf16) * 2 == KVCache::bytes(spec, length, DType::f32));
    for (KVCache* cache : {&wide, &narrow}) forward.run(std::vector{ForwardSequence{tokens, {}, nullptr, {}, 0.0, cache, nullptr, 0, -1}}, true);
    // The first layer's keys and values (the later layers' differ: they see the rounded attention).
    const size_t elements = size_t(length * wide.row_elements());
    for (auto rows : {&KVCache::keys, &KVCache::values}) {
        const float* expected = static_cast<const float*>((wide.*rows)(0, 0));
        const uint16_t* stored = static_cast<const uint16_t*>((narrow.*rows)(0, 0));
        size_t rounded = 0;
        for (size_t i = 0; i < elements; ++i) rounded += stored[i] == float_to_bf16(expected[i]) ? 1 : 0;
        CHECK(rounded == elements);
    }
    CHECK_THROWS_WITH_AS(KVCache(*backend, nullptr, spec, length, DType::f16), doctest::Contains("f32 or bf16, not F16"),
                         Error);
}

TEST_CASE("the forward refuses feeds that a sequence's cache cannot serve") {
    const auto model = load("llada");
    auto backend = make_cpu_backend(1);
    Forward forward(*model, *backend, {16, 16});
    const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<int32_t> outputs = {5};
    KVCache cache(*backend, nullptr, model->spec(), 8), small(*backend, nullptr, model->spec(), 4);
    auto run = [&](ForwardSequence s) { return forward.run(std::vector{s}, true); };
    CHECK_THROWS_WITH_AS(run({tokens, outputs, nullptr, {}, 0.0, nullptr, nullptr, 4, 8}),
                         doctest::Contains("without a K/V cache"), Error);
    CHECK_THROWS_WITH_AS(run({tokens, outputs, nullptr, {}, 0.0, &cache, nullptr, 4, 8}),
                         doctest::Contains("cache holds only 0..0"), Error);
    CHECK_THROWS_WITH_AS(run({tokens, outputs, nullptr, {}, 0.0, &small, nullptr, 0, 8}),
                         doctest::Contains("holds 4 positions"), Error);
    CHECK_THROWS_WITH_AS(run({tokens, outputs, nullptr, {}, 0.0, &cache, nullptr, 6, 3}),
                         doctest::Contains("not a range"), Error);
    run({tokens, outputs, nullptr, {}, 0.0, &cache, nullptr, 0, 8});
    CHECK_THROWS_WITH_AS(run({tokens, outputs, nullptr, {}, 0.0, &cache, nullptr, 6, 8}),
                         doctest::Contains("needs position 5, which is not fed"), Error);
    CHECK(run({tokens, outputs, nullptr, {}, 0.0, &cache, nullptr, 4, 8}).logits.size() ==
          size_t(model->spec().embedding_rows));
}

TEST_CASE("a cache lives in its sequence's planned state: charged there, released with it") {
    const auto model = load("llada");
    const ModelSpec& spec = model->spec();
    MemoryLedger device("cpu", uint64_t(1) << 40);
    auto backend = make_cpu_backend(1);
    DecodeParams params;
    params.gen_length = 32;
    params.steps = 32;
    params.cfg_scale = 1.0;
    params.cache_mode = CacheMode::dual;
    for (const DType dtype : {DType::f32, DType::bf16}) {
        CAPTURE(dtype_name(dtype));
        params.cache_precision = dtype;
        DecodeSequence sequence(spec, params, canvas_of(spec, {1, 2, 3}, 32));
        const SequenceOptions options{true, true, dtype};
        CHECK(sequence.memory_options().cache_precision == dtype);
        auto memory = try_reserve_sequence(device, spec, {35, options}, BackendKind::cpu, "a sequence");
        REQUIRE(memory);
        CHECK(device.reserved() == sequence_state_bytes(spec, 35, options, BackendKind::cpu));
        const uint64_t before = device.in_use();
        const std::vector<Backend*> devices = {backend.get()};
        memory->make_caches(devices, spec, 35, sequence.memory_options());
        REQUIRE(memory->cache() != nullptr);
        REQUIRE(memory->unconditional_cache() != nullptr);
        CHECK(memory->cache()->element() == dtype);
        // Both caches (the CFG twin's too) fill the state exactly as planned.
        CHECK(device.in_use() - before == kv_cache_bytes(spec, 35, options, BackendKind::cpu));
        CHECK(memory->pool()->available() == 0);
        // Released whole: the caches, the decode state reserved before them, and the pool.
        memory->release();
        CHECK(device.in_use() == before - decode_state_bytes(35, options));
        CHECK(device.reserved() == 0);
        memory.reset();
        CHECK(device.reserved() == 0);
    }
    const SequenceShape shape{35, {true, true}};
    MemoryLedger tiny("cpu", sequence_state_bytes(spec, 35, {false, true}, BackendKind::cpu));
    CHECK(!try_reserve_sequence(tiny, spec, shape, BackendKind::cpu, "a sequence"));
    CHECK(try_reserve_sequence(tiny, spec, {35, {false, true}}, BackendKind::cpu, "a sequence"));
}

// The llada reference model in fp32 with a budget of exactly its weights, one sequence of
// `length` positions with `options` and the scratch of its forward (one thread).
struct BudgetedModel {
    unmask_model* model = nullptr;
    uint64_t weights = 0;

    BudgetedModel(int64_t length, const SequenceOptions& options) {
        const std::string path = test_data_path("reference/llada");
        const ModelSpec spec = load("llada")->spec();
        unmask_model_params load_params;
        REQUIRE(unmask_model_params_init(&load_params) == UNMASK_OK);
        load_params.precision = UNMASK_PRECISION_FP32;
        unmask_model* probe = nullptr;
        REQUIRE(unmask_model_load(path.c_str(), &load_params, &probe) == UNMASK_OK);
        weights = memory(probe).reserved;
        unmask_model_free(probe);
        load_params.memory_budget_bytes = int64_t(weights + sequence_state_bytes(spec, length, options, BackendKind::cpu) +
                                                  scratch_bytes(spec, {length, length}, BackendKind::cpu, 1));
        load_params.memory_margin = 0.0;
        REQUIRE(unmask_model_load(path.c_str(), &load_params, &model) == UNMASK_OK);
    }
    ~BudgetedModel() { unmask_model_free(model); }

    static unmask_memory_usage memory(const unmask_model* m) {
        unmask_memory_usage usage{};
        usage.struct_size = sizeof usage;
        REQUIRE(unmask_model_memory(m, &usage) == UNMASK_OK);
        return usage;
    }
    // unmask_generate of 32 positions after a 3-token prompt, on one thread.
    unmask_status generate(int32_t cache_mode, int32_t cache_precision) const {
        unmask_generate_params params;
        REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
        params.gen_length = 32;
        params.steps = 32;
        params.threads = 1;
        params.cache_mode = cache_mode;
        params.cache_precision = cache_precision;
        std::vector<int32_t> out(32);
        unmask_generation result{sizeof result, 0, out.data(), 32, 0, 0, 0};
        const std::vector<int32_t> prompt = {1, 2, 3};
        return unmask_generate(model, &params, prompt.data(), 3, &result);
    }
};

TEST_CASE("a generation whose cache does not fit the budget is OUT_OF_BUDGET, and without the cache it runs") {
    // Room for one sequence of 35 positions without a cache.
    const BudgetedModel budgeted(35, {});
    CHECK_MESSAGE(budgeted.generate(UNMASK_CACHE_NONE, UNMASK_PRECISION_FP32) == UNMASK_OK, unmask_last_error());
    CHECK(budgeted.generate(UNMASK_CACHE_DUAL, UNMASK_PRECISION_FP32) == UNMASK_ERR_OUT_OF_BUDGET);
    CHECK(budgeted.generate(UNMASK_CACHE_DUAL, UNMASK_PRECISION_BF16) == UNMASK_ERR_OUT_OF_BUDGET);
    CHECK(BudgetedModel::memory(budgeted.model).in_use == budgeted.weights);  // nothing left behind
}

TEST_CASE("a generation reserves a bf16 cache's bytes: it runs where the fp32 cache does not fit") {
    const BudgetedModel budgeted(35, {true, false, DType::bf16});
    CHECK_MESSAGE(budgeted.generate(UNMASK_CACHE_DUAL, UNMASK_PRECISION_BF16) == UNMASK_OK, unmask_last_error());
    // The whole budget was used at the peak: the plan's bytes, no more, no less.
    CHECK(BudgetedModel::memory(budgeted.model).peak_reserved == BudgetedModel::memory(budgeted.model).capacity);
    CHECK(budgeted.generate(UNMASK_CACHE_DUAL, UNMASK_PRECISION_FP32) == UNMASK_ERR_OUT_OF_BUDGET);
    CHECK(BudgetedModel::memory(budgeted.model).in_use == budgeted.weights);
}

TEST_CASE("the engine streams a block diffusion request block by block, each block final when reported") {
    unmask_model_params load_params;
    REQUIRE(unmask_model_params_init(&load_params) == UNMASK_OK);
    load_params.precision = UNMASK_PRECISION_FP32;
    unmask_model* model = nullptr;
    const std::string path = test_data_path("reference/llada-block");
    REQUIRE(unmask_model_load(path.c_str(), &load_params, &model) == UNMASK_OK);
    unmask_engine_params engine_params;
    REQUIRE(unmask_engine_params_init(&engine_params) == UNMASK_OK);
    engine_params.threads = 2;
    unmask_engine* engine = nullptr;
    REQUIRE(unmask_engine_create(model, &engine_params, &engine) == UNMASK_OK);

    struct Seen {
        std::vector<std::vector<int32_t>> blocks;  // the region at each block event
        int64_t steps = 0;
    } seen;
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.gen_length = 24;
    params.steps = 12;
    params.cache_mode = UNMASK_CACHE_DUAL;
    params.stream_user_data = &seen;
    params.stream_callback = [](const unmask_stream_event* event, void* user_data) -> int32_t {
        auto* s = static_cast<Seen*>(user_data);
        if (event->kind == UNMASK_STREAM_BLOCK) s->blocks.emplace_back(event->tokens, event->tokens + event->token_count);
        s->steps = event->step + 1;
        return 0;
    };
    const std::vector<int32_t> prompt = {9, 8, 7, 6, 5};
    unmask_request* request = nullptr;
    REQUIRE(unmask_engine_submit(engine, &params, prompt.data(), 5, 0, &request) == UNMASK_OK);
    REQUIRE(unmask_request_wait(request, -1) == UNMASK_OK);
    std::vector<int32_t> tokens(24);
    int64_t count = 0;
    REQUIRE(unmask_request_tokens(request, tokens.data(), 24, &count) == UNMASK_OK);
    // Blocks of 8 (the model's) from position 0: the prompt's block, two more, and the one that
    // ends past the answer; one event each.
    REQUIRE(seen.blocks.size() == 4);
    for (size_t b = 0; b < 4; ++b) {
        CAPTURE(b);
        // The answer up to block b's end is complete and final (as in the result); after it, masks.
        const long done = std::min(24L, long(8 * (b + 1)) - 5);
        CHECK(seen.blocks[b].size() == 24);
        CHECK(std::equal(tokens.begin(), tokens.begin() + done, seen.blocks[b].begin()));
        CHECK(std::all_of(seen.blocks[b].begin() + done, seen.blocks[b].end(), [](int32_t t) { return t == 299; }));
    }
    unmask_request_free(request);
    unmask_engine_free(engine);
    unmask_model_free(model);
}
