// Decoding: token-for-token agreement with the PyTorch references of LLaDA's generate() and
// Dream's algorithms (greedy, every policy and schedule), reproducibility with sampling, the
// commit rules of threshold and factor decoding, step bounds, and bad parameters.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "decode/feed_window.hpp"
#include "decode/sequence.hpp"
#include "decode/transfer_schedule.hpp"
#include "fixtures.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

struct LoadedModel {
    unmask_model* model = nullptr;
    explicit LoadedModel(const std::string& name) {
        unmask_model_params params;
        REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
        params.precision = UNMASK_PRECISION_FP32;
        const std::string path = test_data_path("reference/" + name);
        REQUIRE_MESSAGE(unmask_model_load(path.c_str(), &params, &model) == UNMASK_OK, unmask_last_error());
    }
    ~LoadedModel() { unmask_model_free(model); }
};

// Initialised parameters for `gen_length` positions in `steps` steps on two threads.
unmask_generate_params short_params(int64_t gen_length, int64_t steps) {
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.gen_length = gen_length;
    params.steps = steps;
    params.threads = 2;
    return params;
}

unmask_generate_params params_from_json(const nlohmann::json& p) {
    unmask_generate_params params = short_params(p.at("gen_length"), p.at("steps"));
    REQUIRE(unmask_enum_value(UNMASK_ENUM_POLICY, p.value("policy", "low_confidence").c_str(), &params.policy) == UNMASK_OK);
    params.block_length = p.value("block_length", 0);
    params.min_steps = p.value("min_steps", 0);
    params.max_steps = p.value("max_steps", 0);
    params.cfg_scale = p.value("cfg_scale", 0.0);
    params.threshold = p.value("threshold", 0.0);
    params.factor = p.value("factor", 0.0);
    params.alg_temp = p.value("alg_temp", 0.0);
    params.top_p = p.value("top_p", 1.0);
    params.top_k = p.value("top_k", 0);
    params.seed = p.value("seed", 0);
    params.logits_eos_inf = p.value("logits_eos_inf", false) ? 1 : 0;
    REQUIRE(unmask_enum_value(UNMASK_ENUM_EOS_CONFIDENCE, p.value("eos_confidence", "off").c_str(), &params.eos_confidence) ==
            UNMASK_OK);
    params.eot_token_id = p.value("eot_token_id", -1);
    params.eos_token_id = p.value("eos_token_id", -1);
    params.early_stop = p.value("early_stop", false) ? 1 : 0;
    params.edit_threshold = p.value("edit_threshold", 0.0);
    params.max_post_edit_steps = p.value("max_post_edit_steps", 16);
    return params;
}

struct Generated {
    unmask_status status;
    std::vector<int32_t> tokens;
    unmask_generation result{};
};

Generated generate(const unmask_model* model, const unmask_generate_params& params, const std::vector<int32_t>& prompt) {
    Generated g;
    g.tokens.resize(size_t(params.gen_length));
    g.result.struct_size = sizeof g.result;
    g.result.tokens = g.tokens.data();
    g.result.tokens_capacity = params.gen_length;
    g.status = unmask_generate(model, &params, prompt.data(), static_cast<int64_t>(prompt.size()), &g.result);
    return g;
}

// The reference decoding cases of model `name` (tests/reference/make_reference_fixtures.py).
nlohmann::json decoding_cases(const std::string& name) {
    std::ifstream in(test_data_path("reference/" + name + "/decoding.json"));
    REQUIRE(in.good());
    const auto cases = nlohmann::json::parse(in);
    REQUIRE(!cases.empty());
    return cases;
}

}  // namespace

TEST_CASE("each cache mode's feed window: the whole canvas to start a block or refresh, then its part") {
    // A canvas of 100 positions decoding the block [40, 48).
    FeedWindowInputs in;
    in.length = 100;
    in.block_begin = 40;
    in.block_end = 48;
    auto window = [&](int64_t block_step) {
        in.block_step = block_step;
        const FeedWindow w = feed_window(in);
        return std::pair(w.begin, w.end);
    };
    using Window = std::pair<int64_t, int64_t>;
    CHECK(window(3) == Window(0, 100));  // no cache: everything, every step
    in.mode = CacheMode::dual;
    CHECK(window(0) == Window(0, 100));  // a block's first step fills the cache
    CHECK(window(1) == Window(40, 48));  // then the block alone
    in.vicinity = 3;
    in.logits_shift = true;  // position p predicted from p - 1: one more before the block
    CHECK(window(1) == Window(36, 51));
    in.mode = CacheMode::prefix;
    CHECK(window(1) == Window(36, 100));  // the block and everything after it
    in.refresh = 2;
    CHECK(window(2) == Window(0, 100));  // a refresh: everything again
    CHECK(window(3) == Window(36, 100));
    // Block diffusion (exact cache): never past the block; at its first step also the finished
    // blocks whose K/V are not final yet; a refresh from 0.
    in = {};
    in.mode = CacheMode::dual;
    in.block_causal = true;
    in.length = 100;
    in.block_begin = 40;
    in.block_end = 48;
    in.cache_final = 32;
    CHECK(window(0) == Window(32, 48));
    CHECK(window(1) == Window(40, 48));
    in.refresh = 4;
    CHECK(window(4) == Window(0, 48));
}

TEST_CASE("greedy decoding reproduces the PyTorch references token for token, for every policy and schedule") {
    for (const std::string name : {"llada", "llada-moe", "dream", "rnd1"}) {
        LoadedModel loaded(name);
        const auto cases = decoding_cases(name);
        for (const auto& c : cases) {
            CAPTURE(name);
            CAPTURE(c["name"].get<std::string>());
            const auto params = params_from_json(c["params"]);
            const Generated g = generate(loaded.model, params, c["prompt"].get<std::vector<int32_t>>());
            REQUIRE_MESSAGE(g.status == UNMASK_OK, unmask_last_error());
            CHECK(g.tokens == c["tokens"].get<std::vector<int32_t>>());
            CHECK(g.result.steps == c["steps"].get<int64_t>());
            CHECK(g.result.forwards == c["forwards"].get<int64_t>() * (params.cfg_scale > 0 ? 2 : 1));
            CHECK(g.result.token_count == params.gen_length);
        }
    }
}

TEST_CASE("with the cache refreshed every step, prefix and dual caches give exactly the tokens of no cache") {
    // Every reference case (every policy, blocks, CFG with its twin's cache, threshold, early
    // stop): a cache filled by full forwards and read back gives the same numbers as none.
    for (const std::string name : {"llada", "llada-moe", "dream"}) {
        LoadedModel loaded(name);
        const auto cases = decoding_cases(name);
        for (const auto& c : cases) {
            for (const int32_t mode : {UNMASK_CACHE_PREFIX, UNMASK_CACHE_DUAL}) {
                CAPTURE(name);
                CAPTURE(c["name"].get<std::string>());
                CAPTURE(mode);
                auto params = params_from_json(c["params"]);
                params.cache_mode = mode;
                params.cache_refresh_steps = 1;
                const Generated g = generate(loaded.model, params, c["prompt"].get<std::vector<int32_t>>());
                REQUIRE_MESSAGE(g.status == UNMASK_OK, unmask_last_error());
                CHECK(g.tokens == c["tokens"].get<std::vector<int32_t>>());
                CHECK(g.result.steps == c["steps"].get<int64_t>());
            }
        }
    }
}

TEST_CASE("block diffusion matches the PyTorch reference of the published generate(), with or without the cache") {
    // Blocks aligned to position 0, prompts that do and do not end on a block boundary (LLaDA with a
    // block size, LLaDA2, SDAR). The cache of committed blocks is exact under block-causal
    // attention, so every mode, without any refresh, gives the reference's tokens.
    struct Cache {
        int32_t mode;
        int64_t refresh, vicinity;
    };
    const Cache caches[] = {{UNMASK_CACHE_NONE, 0, 0}, {UNMASK_CACHE_PREFIX, 0, 0}, {UNMASK_CACHE_DUAL, 0, 0},
                            {UNMASK_CACHE_DUAL, 0, 3}, {UNMASK_CACHE_PREFIX, 2, 0}, {UNMASK_CACHE_DUAL, 3, 2}};
    for (const std::string name : {"llada-block", "llada2-moe", "sdar"}) {
        LoadedModel loaded(name);
        const auto cases = decoding_cases(name);
        for (const auto& c : cases) {
            for (const Cache& cache : caches) {
                CAPTURE(name);
                CAPTURE(c["name"].get<std::string>());
                CAPTURE(cache.mode);
                CAPTURE(cache.refresh);
                CAPTURE(cache.vicinity);
                auto params = params_from_json(c["params"]);
                params.cache_mode = cache.mode;
                params.cache_refresh_steps = cache.refresh;
                params.cache_vicinity = cache.vicinity;
                params.block_length = 0;  // the model's block size
                const Generated g = generate(loaded.model, params, c["prompt"].get<std::vector<int32_t>>());
                REQUIRE_MESSAGE(g.status == UNMASK_OK, unmask_last_error());
                CHECK(g.tokens == c["tokens"].get<std::vector<int32_t>>());
                CHECK(g.result.steps == c["steps"].get<int64_t>());
            }
        }
    }
    // The block length is the model's: another one is refused.
    LoadedModel loaded("llada-block");
    const auto cases = decoding_cases("llada-block");
    auto params = params_from_json(cases[0]["params"]);
    params.block_length = 12;
    const Generated g = generate(loaded.model, params, cases[0]["prompt"].get<std::vector<int32_t>>());
    CHECK(g.status == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("differs from the model's diffusion block size 8") != std::string::npos);
}

TEST_CASE("block diffusion infilling across fully fixed blocks gives the same tokens with the exact cache") {
    // Blocks without masks run no forward, so their K/V enter the cache with the next block's
    // first forward (two fixed blocks in a row here).
    LoadedModel loaded("llada-block");
    // Blocks of 8 from position 0.
    std::vector<int32_t> canvas = {3, 17, 42, 5};  // the prompt, in block 0
    for (int i = 0; i < 12; ++i) canvas.push_back(299);                            // blocks 0 and 1: masked
    for (int i = 0; i < 16; ++i) canvas.push_back(static_cast<int32_t>(20 + i));  // blocks 2 and 3: fixed
    for (int i = 0; i < 8; ++i) canvas.push_back(i % 3 == 0 ? 11 : 299);           // block 4: partly masked
    auto infill = [&](int32_t mode, int64_t vicinity) {
        unmask_generate_params params;
        REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
        params.steps = 20;  // 4 per block
        params.threads = 2;
        params.cache_mode = mode;
        params.cache_vicinity = vicinity;
        std::vector<int32_t> out(canvas.size());
        unmask_generation result{sizeof result, 0, out.data(), int64_t(out.size()), 0, 0, 0};
        REQUIRE_MESSAGE(unmask_infill(loaded.model, &params, canvas.data(), int64_t(canvas.size()), &result) == UNMASK_OK,
                        unmask_last_error());
        CHECK(std::count(out.begin(), out.end(), 299) == 0);
        return out;
    };
    const auto exact = infill(UNMASK_CACHE_NONE, 0);
    CHECK(std::equal(canvas.begin() + 16, canvas.begin() + 32, exact.begin() + 16));  // the fixed blocks stay
    CHECK(infill(UNMASK_CACHE_DUAL, 0) == exact);
    CHECK(infill(UNMASK_CACHE_PREFIX, 0) == exact);
    CHECK(infill(UNMASK_CACHE_DUAL, 5) == exact);
}

TEST_CASE("an ABI 1.1 caller's params (200 bytes) run without a cache, whatever their tail padding holds") {
    LoadedModel loaded("llada");
    unmask_generate_params params = short_params(16, 16);
    const std::vector<int32_t> prompt = {4, 8, 15};
    const Generated current = generate(loaded.model, params, prompt);
    REQUIRE(current.status == UNMASK_OK);
    params.struct_size = 200;  // sizeof(unmask_generate_params) in ABI 1.1
    params.cache_mode = 77;    // the padding of a 1.1 struct: not a field for that caller
    const Generated old = generate(loaded.model, params, prompt);
    REQUIRE_MESSAGE(old.status == UNMASK_OK, unmask_last_error());
    CHECK(old.tokens == current.tokens);
    params.struct_size = sizeof params;
    CHECK(generate(loaded.model, params, prompt).status == UNMASK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("without refresh, cached decoding keeps its schedule and stays deterministic") {
    LoadedModel loaded("llada");
    unmask_generate_params params = short_params(32, 32);
    params.block_length = 8;
    const std::vector<int32_t> prompt = {5, 9, 14, 3, 7, 21};
    for (const int32_t mode : {UNMASK_CACHE_PREFIX, UNMASK_CACHE_DUAL}) {
        for (const int64_t vicinity : {0, 4}) {
            CAPTURE(mode);
            CAPTURE(vicinity);
            params.cache_mode = mode;
            params.cache_vicinity = vicinity;
            const Generated cached = generate(loaded.model, params, prompt);
            REQUIRE_MESSAGE(cached.status == UNMASK_OK, unmask_last_error());
            CHECK(cached.result.steps == 32);
            CHECK(cached.result.forwards == 32);
            CHECK(std::count(cached.tokens.begin(), cached.tokens.end(), 299) == 0);  // no mask left
            params.threads = 1;
            CHECK(generate(loaded.model, params, prompt).tokens == cached.tokens);
            params.threads = 2;
        }
    }
}

TEST_CASE("a bf16 K/V cache decodes every reference case as PyTorch does with keys and values rounded to bf16") {
    // Refreshed at every step (or exact: block diffusion), the cache holds the K/V of the current
    // canvas, rounded: the reference's forward with K/V rounded to bf16 after RoPE. Rounding
    // changes some cases' tokens (their logits move by about 1e-3), so these are its own tokens.
    for (const std::string name : {"llada", "llada-block", "llada-moe", "dream"}) {
        LoadedModel loaded(name);
        const auto cases = decoding_cases(name);
        for (const auto& c : cases) {
            CAPTURE(name);
            CAPTURE(c["name"].get<std::string>());
            auto params = params_from_json(c["params"]);
            params.cache_mode = UNMASK_CACHE_DUAL;
            if (name == "llada-block") params.block_length = 0;
            else params.cache_refresh_steps = 1;
            params.cache_precision = UNMASK_PRECISION_BF16;
            const Generated g = generate(loaded.model, params, c["prompt"].get<std::vector<int32_t>>());
            REQUIRE_MESSAGE(g.status == UNMASK_OK, unmask_last_error());
            CHECK(g.tokens == c["tokens_kv_bf16"].get<std::vector<int32_t>>());
            CHECK(g.result.steps == c["steps_kv_bf16"].get<int64_t>());
        }
    }
}

TEST_CASE("an ABI 1.4 caller's params end before cache_precision: what follows them is not read") {
    // 216 bytes then, 224 now: the caller's cache keeps the default, fp32.
    LoadedModel loaded("llada");
    unmask_generate_params params = short_params(16, 16);
    params.cache_mode = UNMASK_CACHE_DUAL;
    params.cache_precision = 77;
    params.struct_size = 216;
    CHECK(generate(loaded.model, params, {4, 8, 15}).status == UNMASK_OK);
    params.struct_size = sizeof params;
    CHECK(generate(loaded.model, params, {4, 8, 15}).status == UNMASK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("with temperature > 0 and a seed, output is identical across thread counts and batch compositions") {
    LoadedModel loaded("llada");
    unmask_generate_params params = short_params(16, 8);
    params.block_length = 8;
    params.temperature = 1.0;
    params.seed = 99;
    const std::vector<std::vector<int32_t>> prompts = {{3, 4, 5}, {10, 11, 12, 13, 14, 15, 16}, {7}, {1, 2, 3, 4, 5}};

    params.threads = 1;
    const Generated alone = generate(loaded.model, params, prompts[1]);
    REQUIRE(alone.status == UNMASK_OK);
    params.threads = 3;
    CHECK(generate(loaded.model, params, prompts[1]).tokens == alone.tokens);
    params.seed = 100;
    CHECK(generate(loaded.model, params, prompts[1]).tokens != alone.tokens);  // the seed matters
    params.seed = 99;

    // The same prompt second in a batch of four with other lengths (and another policy mix).
    std::vector<std::vector<int32_t>> outputs(4, std::vector<int32_t>(16));
    std::vector<unmask_generation> results(4);
    std::vector<const int32_t*> pointers;
    std::vector<int64_t> lengths;
    for (size_t i = 0; i < 4; ++i) {
        results[i] = {sizeof(unmask_generation), 0, outputs[i].data(), 16, 0, 0, 0};
        pointers.push_back(prompts[i].data());
        lengths.push_back(static_cast<int64_t>(prompts[i].size()));
    }
    params.threads = 2;
    REQUIRE(unmask_generate_batch(loaded.model, &params, 4, pointers.data(), lengths.data(), results.data()) == UNMASK_OK);
    CHECK(outputs[1] == alone.tokens);
}

TEST_CASE("the step callback sees every step and can cancel") {
    LoadedModel loaded("llada");
    unmask_generate_params params = short_params(16, 8);
    struct Seen {
        std::vector<int64_t> steps, committed;
        int64_t masks_at_cancel = -1;
    } seen;
    params.step_user_data = &seen;
    params.step_callback = [](int64_t, int64_t step, int64_t committed, const int32_t* canvas, int64_t length,
                              void* user) -> int32_t {
        auto* s = static_cast<Seen*>(user);
        s->steps.push_back(step);
        s->committed.push_back(committed);
        if (step == 2) {
            s->masks_at_cancel = std::count(canvas, canvas + length, 299);
            return 1;
        }
        return 0;
    };
    const Generated g = generate(loaded.model, params, {1, 2, 3});
    REQUIRE(g.status == UNMASK_OK);
    CHECK(g.result.finish_reason == UNMASK_FINISH_CANCELLED);
    CHECK(seen.steps == std::vector<int64_t>{0, 1, 2});
    CHECK(seen.committed == std::vector<int64_t>{2, 2, 2});
    CHECK(seen.masks_at_cancel == 10);
    CHECK(g.result.steps == 3);
}

TEST_CASE("infilling keeps the fixed prefix and suffix and fills the masked middle") {
    LoadedModel loaded("llada");
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.steps = 6;
    std::vector<int32_t> canvas = {5, 6, 7, 299, 299, 299, 299, 299, 299, 40, 41, 299, 42};
    std::vector<int32_t> out(canvas.size());
    unmask_generation result{sizeof result, 0, out.data(), static_cast<int64_t>(out.size()), 0, 0, 0};
    REQUIRE(unmask_infill(loaded.model, &params, canvas.data(), static_cast<int64_t>(canvas.size()), &result) == UNMASK_OK);
    CHECK(result.token_count == 13);
    for (size_t i : {0u, 1u, 2u, 9u, 10u, 12u}) CHECK(out[i] == canvas[i]);
    for (size_t i : {3u, 4u, 5u, 6u, 7u, 8u, 11u}) CHECK(out[i] != 299);
    CHECK(result.steps == 6);
}

namespace {

// A spec and canvas for driving DecodeSequence directly with synthetic candidates.
ModelSpec toy_spec() {
    ModelSpec spec;
    spec.embedding_rows = 100;
    spec.vocab_size = 100;
    spec.mask_token_id = 99;
    spec.eos_token_id = 98;
    spec.max_sequence_length = 1024;
    return spec;
}

std::vector<Candidate> candidates_with(const std::vector<float>& probability) {
    std::vector<Candidate> out;
    for (size_t i = 0; i < probability.size(); ++i)
        out.push_back({static_cast<int32_t>(10 + i), probability[i], static_cast<int32_t>(10 + i), probability[i], 0.0f, 0.0f});
    return out;
}

}  // namespace

TEST_CASE("threshold decoding commits exactly the positions at or above tau, or else the most confident one") {
    const ModelSpec spec = toy_spec();
    DecodeParams p;
    p.gen_length = 6;
    p.steps = 6;
    p.threshold = 0.8;
    DecodeSequence s(spec, p, {1, 2, 99, 99, 99, 99, 99, 99});
    REQUIRE(s.output_positions() == std::vector<int32_t>{2, 3, 4, 5, 6, 7});
    CHECK(s.apply(candidates_with({0.9f, 0.1f, 0.8f, 0.79f, 0.95f, 0.2f})) == 3);
    CHECK(s.canvas() == std::vector<int32_t>{1, 2, 10, 99, 12, 99, 14, 99});
    REQUIRE(s.output_positions() == std::vector<int32_t>{3, 5, 7});
    CHECK(s.apply(candidates_with({0.3f, 0.5f, 0.4f})) == 1);  // nobody reaches tau: the top one only
    CHECK(s.canvas()[5] == 11);
}

TEST_CASE("factor decoding commits the largest n with c(i) >= 1 - f / (i + 1)") {
    // f = 1: thresholds 0.5, 0.667, 0.75, 0.8, ... for i = 1, 2, 3, 4.
    CHECK(factor_commit_count({0.9f, 0.7f, 0.76f, 0.1f}, 1.0) == 3);
    CHECK(factor_commit_count({0.9f, 0.6f, 0.99f}, 1.0) == 1);
    CHECK(factor_commit_count({0.4f}, 1.0) == 1);  // always at least one
    CHECK(factor_commit_count({0.99f, 0.99f, 0.99f, 0.99f}, 0.1) == 4);
}

TEST_CASE("min_steps and max_steps bound adaptive decoding on every run") {
    const ModelSpec spec = toy_spec();
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    for (int run = 0; run < 200; ++run) {
        DecodeParams p;
        p.gen_length = 32;
        p.block_length = run % 2 ? 16 : 32;
        p.steps = 32;
        p.threshold = run % 3 == 0 ? 0.0 : 0.3 + 0.6 * uniform(rng);
        p.factor = p.threshold > 0 ? 0.0 : 0.5 + uniform(rng);
        p.min_steps = 4 + run % 5;
        p.max_steps = p.min_steps + run % 7;
        CAPTURE(run);
        std::vector<int32_t> canvas(40, 99);
        std::fill(canvas.begin(), canvas.begin() + 8, 7);  // an 8-token prompt
        DecodeSequence s(spec, p, canvas);
        while (!s.finished()) {
            std::vector<float> probability(s.output_positions().size());
            for (auto& v : probability) v = uniform(rng);
            s.apply(candidates_with(probability));
        }
        CHECK(s.steps() <= p.max_steps);
        CHECK(s.steps() >= p.min_steps);
        CHECK(std::count(s.canvas().begin(), s.canvas().end(), 99) == 0);
    }
}

TEST_CASE("LLaDA transfer counts, Dream timesteps and RND1's schedule follow the references") {
    CHECK(llada_transfer_counts(10, 4) == std::vector<int64_t>{3, 3, 2, 2});
    CHECK(llada_transfer_counts(3, 4) == std::vector<int64_t>{1, 1, 1, 0});
    const auto t = dream_timesteps(4, 1e-3);
    CHECK(t.front() == 1.0);
    CHECK(t.back() == doctest::Approx(1e-3));
    CHECK(dream_transfer_count(16, 0, t) == int64_t(16 * (1 - t[1] / t[0])));
    CHECK(dream_transfer_count(5, 3, t) == 5);  // the last step commits the rest
    // RND1: floor(M (N - 1 - i) / N) stay masked after step i, in torch's float32.
    CHECK(rnd1_masks_kept(255, 0, 256) == 254);
    CHECK(rnd1_masks_kept(11, 18, 20) == 0);  // floor(11 / 20): the second-last step commits the rest
    CHECK(rnd1_masks_kept(11, 19, 20) == 0);
    CHECK(rnd1_masks_kept(108, 4, 12) == 62);  // torch.tensor([108]) * (7 / 12) is 62.999998 in float32
}

TEST_CASE("early stop fills the rest with EOS once the answer has ended") {
    const ModelSpec spec = toy_spec();
    DecodeParams p;
    p.gen_length = 8;
    p.block_length = 4;
    p.steps = 4;  // two steps per block, two commits per step
    p.early_stop = true;
    DecodeSequence s(spec, p, {1, 99, 99, 99, 99, 99, 99, 99, 99});
    // Block 1 commits two tokens per step: "10 98" then "98 98" (EOS ends the answer).
    auto eos_after_first = [&](std::vector<int32_t> tokens) {
        std::vector<Candidate> c;
        for (int32_t t : tokens) c.push_back({t, 0.9f, t, 0.9f, 0.0f, 0.0f});
        return c;
    };
    s.apply(eos_after_first({10, 98, 50, 51}));
    CHECK_FALSE(s.finished());
    s.apply(eos_after_first({98, 98}));
    REQUIRE(s.finished());
    CHECK(s.finish_reason() == FinishReason::eos);
    CHECK(s.canvas() == std::vector<int32_t>{1, 10, 98, 98, 98, 98, 98, 98, 98});
    CHECK(s.steps() == 2);

    // An earlier EOS followed by more answer does not end it; the last run of EOS does.
    DecodeSequence later(spec, p, {1, 99, 99, 99, 99, 99, 99, 99, 99});
    later.apply(eos_after_first({10, 98, 50, 51}));
    later.apply(eos_after_first({11, 98}));
    REQUIRE(later.finished());
    CHECK(later.canvas() == std::vector<int32_t>{1, 10, 98, 11, 98, 98, 98, 98, 98});

    // Without early stop the canvas is always filled.
    p.early_stop = false;
    DecodeSequence full(spec, p, {1, 99, 99, 99, 99, 99, 99, 99, 99});
    full.apply(eos_after_first({10, 98, 50, 51}));
    full.apply(eos_after_first({98, 98}));
    CHECK_FALSE(full.finished());
}

TEST_CASE("Dream's policies run all their steps although EOS is committed early") {
    // A trained model predicts its EOS padding with high confidence, so a confidence-ordered
    // schedule commits EOS at the end of the canvas long before the answer is complete; the
    // sequence must not end there (it once did, after about 7 of 48 steps, with a truncated answer).
    const ModelSpec spec = toy_spec();
    for (const CommitPolicy policy : {CommitPolicy::maskgit_plus, CommitPolicy::topk_margin, CommitPolicy::entropy}) {
        CAPTURE(int(policy));
        DecodeParams p;
        p.policy = policy;
        p.gen_length = 6;
        p.steps = 6;
        DecodeSequence s(spec, p, {1, 99, 99, 99, 99, 99, 99});
        // Every step: EOS at the last two positions, sure; the answer's tokens unsure.
        while (!s.finished()) {
            std::vector<Candidate> c;
            for (const int32_t position : s.output_positions()) {
                const bool padding = position >= 5;
                const int32_t token = padding ? 98 : 10 + position;
                const float p_token = padding ? 0.99f : 0.4f;
                c.push_back({token, p_token, token, p_token, padding ? 0.01f : 0.3f, padding ? -0.05f : -1.5f});
            }
            s.apply(c);
            REQUIRE(s.steps() <= 6);
        }
        CHECK(s.steps() == 6);
        CHECK(s.canvas() == std::vector<int32_t>{1, 11, 12, 13, 14, 98, 98});
    }
}

TEST_CASE("a sequence with nothing left to predict steps without a forward and does not disturb its batch") {
    LoadedModel loaded("dream");
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.policy = UNMASK_POLICY_ORIGIN;
    params.gen_length = 1;
    params.steps = 8;
    const std::vector<int32_t> first = {1, 2, 3}, second = {4, 5, 6, 7};
    for (uint64_t seed = 0; seed < 6; ++seed) {
        CAPTURE(seed);
        params.seed = seed;
        const Generated alone = generate(loaded.model, params, second);
        REQUIRE(alone.status == UNMASK_OK);
        CHECK(alone.result.steps == 8);
        CHECK(alone.result.forwards <= 8);
        std::vector<std::vector<int32_t>> out(2, std::vector<int32_t>(1));
        std::vector<unmask_generation> results(2);
        for (size_t i = 0; i < 2; ++i) results[i] = {sizeof(unmask_generation), 0, out[i].data(), 1, 0, 0, 0};
        const int32_t* prompts[] = {first.data(), second.data()};
        const int64_t lengths[] = {3, 4};
        REQUIRE(unmask_generate_batch(loaded.model, &params, 2, prompts, lengths, results.data()) == UNMASK_OK);
        CHECK(out[1] == alone.tokens);
        CHECK(results[1].forwards == alone.result.forwards);
    }
}

TEST_CASE("an EOS among the fixed tokens of an infilling canvas is not an answer ending") {
    LoadedModel loaded("llada");
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.steps = 2;
    params.logits_eos_inf = 1;  // the generated positions cannot be EOS (297)
    std::vector<int32_t> canvas = {5, 299, 299, 297};
    std::vector<int32_t> out(4);
    unmask_generation result{sizeof result, 0, out.data(), 4, 0, 0, 0};
    REQUIRE(unmask_infill(loaded.model, &params, canvas.data(), 4, &result) == UNMASK_OK);
    CHECK(result.finish_reason == UNMASK_FINISH_LENGTH);
    CHECK(out[3] == 297);
}

TEST_CASE("bad generation parameters are INVALID_ARGUMENT naming the field") {
    LoadedModel loaded("llada");
    struct Case {
        const char* message;
        void (*set)(unmask_generate_params&);
    };
    const Case cases[] = {
        {"gen_length 16 is not a multiple of block_length 5", [](unmask_generate_params& p) { p.block_length = 5; }},
        {"steps 6 is not a multiple of the number of blocks 4", [](unmask_generate_params& p) { p.block_length = 4; p.steps = 6; }},
        {"steps must be positive", [](unmask_generate_params& p) { p.steps = 0; }},
        {"gen_length must be positive", [](unmask_generate_params& p) { p.gen_length = -3; }},
        {"params->policy has the unknown value 17", [](unmask_generate_params& p) { p.policy = 17; }},
        {"temperature must be >= 0", [](unmask_generate_params& p) { p.temperature = -1; }},
        {"top_p must be in (0, 1]", [](unmask_generate_params& p) { p.top_p = 0; }},
        {"threshold and factor decoding are exclusive", [](unmask_generate_params& p) { p.threshold = 0.9; p.factor = 1; }},
        {"steps 16 is above max_steps 8", [](unmask_generate_params& p) { p.max_steps = 8; }},
        {"steps 16 is below min_steps 20", [](unmask_generate_params& p) { p.min_steps = 20; }},
        {"Dream's and RND1's policies decode the whole canvas", [](unmask_generate_params& p) { p.policy = UNMASK_POLICY_ENTROPY; p.block_length = 8; }},
        {"the rnd1 policy takes top_k or top_p, not both",
         [](unmask_generate_params& p) { p.policy = UNMASK_POLICY_RND1; p.top_k = 5; p.top_p = 0.9; }},
        {"alg_temp is Dream's", [](unmask_generate_params& p) { p.policy = UNMASK_POLICY_RND1; p.alg_temp = 0.5; }},
        {"params->threads -1 is outside", [](unmask_generate_params& p) { p.threads = -1; }},
        {"eos_token_id 5000 is outside the vocabulary", [](unmask_generate_params& p) { p.eos_token_id = 5000; }},
        {"temperature must be a finite number", [](unmask_generate_params& p) { p.temperature = 1.0 / 0.0; }},
        {"cfg_scale must be a finite number", [](unmask_generate_params& p) { p.cfg_scale = 0.0 / 0.0; }},
        {"steps 4194304 is above the supported", [](unmask_generate_params& p) { p.steps = 1 << 22; }},
        {"more than the 16 positions of a block", [](unmask_generate_params& p) { p.steps = 32; }},
        {"params->cache_mode has the unknown value 3", [](unmask_generate_params& p) { p.cache_mode = 3; }},
        {"cache_refresh_steps must be in 0..", [](unmask_generate_params& p) { p.cache_mode = UNMASK_CACHE_DUAL; p.cache_refresh_steps = -1; }},
        {"cache_vicinity must be in 0..", [](unmask_generate_params& p) { p.cache_mode = UNMASK_CACHE_PREFIX; p.cache_vicinity = -2; }},
        {"cache_refresh_steps and cache_vicinity need a cache_mode", [](unmask_generate_params& p) { p.cache_vicinity = 4; }},
        {"params->cache_precision must be UNMASK_PRECISION_FP32 or UNMASK_PRECISION_BF16, got 3",
         [](unmask_generate_params& p) { p.cache_precision = UNMASK_PRECISION_FP16; }},
        {"params->cache_precision must be", [](unmask_generate_params& p) { p.cache_precision = UNMASK_PRECISION_AUTO; }},
        {"cache precision other than fp32 needs a cache_mode",
         [](unmask_generate_params& p) { p.cache_precision = UNMASK_PRECISION_BF16; }},
        {"token editing (edit_threshold 0.5) works with threshold decoding",
         [](unmask_generate_params& p) { p.edit_threshold = 0.5; }},
        {"token editing (edit_threshold 0.5) works with threshold decoding, the low_confidence policy and temperature 0",
         [](unmask_generate_params& p) { p.threshold = 0.9; p.temperature = 0.5; p.edit_threshold = 0.5; }},
        {"edit_threshold must be in [0, 1], got 1.5", [](unmask_generate_params& p) { p.edit_threshold = 1.5; }},
        {"max_post_edit_steps must be in 0..", [](unmask_generate_params& p) { p.max_post_edit_steps = -1; }},
    };
    for (const Case& c : cases) {
        CAPTURE(c.message);
        unmask_generate_params params = short_params(16, 16);
        c.set(params);
        std::vector<int32_t> out(64);
        unmask_generation result{sizeof result, 0, out.data(), 64, 0, 0, 0};
        const std::vector<int32_t> prompt = {1, 2, 3};
        CHECK(unmask_generate(loaded.model, &params, prompt.data(), 3, &result) == UNMASK_ERR_INVALID_ARGUMENT);
        CHECK(std::string(unmask_last_error()).find(c.message) != std::string::npos);
    }
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.gen_length = 600;
    std::vector<int32_t> out(600);
    unmask_generation result{sizeof result, 0, out.data(), 600, 0, 0, 0};
    const std::vector<int32_t> prompt = {1, 2, 3};
    CHECK(unmask_generate(loaded.model, &params, prompt.data(), 3, &result) == UNMASK_ERR_TOO_LONG);
    params.gen_length = 16;
    result.tokens_capacity = 8;
    CHECK(unmask_generate(loaded.model, &params, prompt.data(), 3, &result) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("tokens_capacity 8") != std::string::npos);
    const std::vector<int32_t> masked_prompt = {1, 299};
    result.tokens_capacity = 600;
    CHECK(unmask_generate(loaded.model, &params, masked_prompt.data(), 2, &result) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("use unmask_infill") != std::string::npos);
    CHECK(unmask_generate(nullptr, &params, prompt.data(), 3, &result) == UNMASK_ERR_INVALID_ARGUMENT);
}
