// The engine: continuous batching without cross-talk, backpressure, deadlines, cancel, shutdown
// outcomes, stats and metrics, memory admission, service configuration files, and a stress run
// from many threads (also run under TSan and ASan in CI).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "engine/service_config.hpp"
#include "fixtures.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

struct Model {
    unmask_model* model = nullptr;
    explicit Model(const std::string& name, int64_t budget = 0) {
        unmask_model_params params;
        REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
        params.precision = UNMASK_PRECISION_FP32;
        params.memory_budget_bytes = budget;
        if (budget > 0) params.memory_margin = 0.0;
        const std::string path = fixture_path(name);
        REQUIRE_MESSAGE(unmask_model_load(path.c_str(), &params, &model) == UNMASK_OK, unmask_last_error());
    }
    ~Model() { unmask_model_free(model); }
};

struct Engine {
    unmask_engine* engine = nullptr;
    Engine(const unmask_model* model, int32_t concurrent, int32_t queued, double timeout = 0) {
        unmask_engine_params params;
        REQUIRE(unmask_engine_params_init(&params) == UNMASK_OK);
        params.max_concurrent_requests = concurrent;
        params.max_queued_requests = queued;
        params.threads = 2;
        params.request_timeout_seconds = timeout;
        REQUIRE_MESSAGE(unmask_engine_create(model, &params, &engine) == UNMASK_OK, unmask_last_error());
    }
    ~Engine() { unmask_engine_free(engine); }
};

unmask_generate_params defaults(int64_t gen_length, int64_t steps) {
    unmask_generate_params p;
    REQUIRE(unmask_generate_params_init(&p) == UNMASK_OK);
    p.gen_length = gen_length;
    p.steps = steps;
    p.threads = 2;
    return p;
}

struct Outcome {
    unmask_request_info info{};
    std::vector<int32_t> tokens;
};

Outcome outcome_of(unmask_request* request) {
    Outcome o;
    REQUIRE(unmask_request_wait(request, -1) == UNMASK_OK);
    o.info.struct_size = sizeof o.info;
    REQUIRE(unmask_request_info_get(request, &o.info) == UNMASK_OK);
    REQUIRE(o.info.state == UNMASK_REQUEST_FINISHED);
    int64_t count = 0;
    REQUIRE(unmask_request_tokens(request, nullptr, 0, &count) == UNMASK_OK);
    o.tokens.resize(size_t(count));
    REQUIRE(unmask_request_tokens(request, o.tokens.data(), count, &count) == UNMASK_OK);
    return o;
}

unmask_engine_stats stats_of(const unmask_engine* engine) {
    unmask_engine_stats s{};
    s.struct_size = sizeof s;
    REQUIRE(unmask_engine_stats_get(engine, &s) == UNMASK_OK);
    return s;
}

// Holds the scheduler inside a stream callback until released, so tests can fill the queue.
struct Gate {
    std::mutex mutex;
    std::condition_variable changed;
    bool entered = false, open = false;
    static int32_t callback(const unmask_stream_event*, void* user_data) {
        auto* gate = static_cast<Gate*>(user_data);
        std::unique_lock lock(gate->mutex);
        gate->entered = true;
        gate->changed.notify_all();
        gate->changed.wait(lock, [&] { return gate->open; });
        return 0;
    }
    void wait_entered() {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return entered; });
    }
    void release() {
        std::lock_guard lock(mutex);
        open = true;
        changed.notify_all();
    }
    // Parameters of a request that the gate holds inside its first step.
    unmask_generate_params held(int64_t gen_length, int64_t steps) {
        unmask_generate_params p = defaults(gen_length, steps);
        p.stream_callback = &Gate::callback;
        p.stream_user_data = this;
        p.stream_steps = 1;
        return p;
    }
};

}  // namespace

TEST_CASE("requests batched in the engine give the same tokens as alone (no cross-talk), whatever their caches") {
    Model model("good/llada-long");
    struct Case {
        std::vector<int32_t> prompt;
        unmask_generate_params params;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 8; ++i) {
        unmask_generate_params p = defaults(8 * (i + 1), 8);
        p.seed = 1000 + uint64_t(i);
        p.temperature = i % 2 == 0 ? 0.0 : 0.8;
        if (i % 4 == 1) p.policy = UNMASK_POLICY_RANDOM;
        if (i % 4 == 2) {
            p.block_length = 4 * (i + 1);
            p.threshold = 0.3;
        }
        if (i == 3) p.cfg_scale = 0.5;
        if (i == 5) p.policy = UNMASK_POLICY_ENTROPY;
        if (i == 7) p.policy = UNMASK_POLICY_ORIGIN;
        // Cache modes side by side with uncached requests in the same forwards.
        if (i == 2 || i == 3) p.cache_mode = UNMASK_CACHE_DUAL;
        if (i == 5 || i == 6) p.cache_mode = UNMASK_CACHE_PREFIX;
        if (i == 6) p.cache_vicinity = 3;
        if (i == 3 || i == 6) p.cache_precision = UNMASK_PRECISION_BF16;  // beside fp32 caches
        std::vector<int32_t> prompt;
        for (int j = 0; j <= i; ++j) prompt.push_back(1 + (7 * i + j) % 50);
        cases.push_back({prompt, p});
    }
    std::vector<std::vector<int32_t>> alone;
    for (const Case& c : cases) {
        std::vector<int32_t> out(size_t(c.params.gen_length));
        unmask_generation result{sizeof result, 0, out.data(), c.params.gen_length, 0, 0, 0};
        REQUIRE_MESSAGE(unmask_generate(model.model, &c.params, c.prompt.data(), int64_t(c.prompt.size()), &result) == UNMASK_OK,
                        unmask_last_error());
        alone.push_back(out);
    }
    Engine engine(model.model, 8, 16);
    const unmask_engine_stats idle = stats_of(engine.engine);
    std::vector<unmask_request*> requests;
    for (const Case& c : cases) {
        unmask_request* r = nullptr;
        REQUIRE(unmask_engine_submit(engine.engine, &c.params, c.prompt.data(), int64_t(c.prompt.size()), 0, &r) == UNMASK_OK);
        requests.push_back(r);
    }
    for (size_t i = 0; i < cases.size(); ++i) {
        CAPTURE(i);
        const Outcome o = outcome_of(requests[i]);
        CHECK(o.info.finish_reason != UNMASK_FINISH_ERROR);
        CHECK(o.tokens == alone[i]);
        CHECK(o.info.steps > 0);
        CHECK(o.info.end_to_end_seconds >= o.info.compute_seconds);
        unmask_request_free(requests[i]);
    }
    const unmask_engine_stats s = stats_of(engine.engine);
    CHECK(s.requests_submitted == 8);
    CHECK(s.finished[UNMASK_FINISH_LENGTH] + s.finished[UNMASK_FINISH_EOS] == 8);
    CHECK(s.requests_running == 0);
    // Every request's state (K/V caches included) went back to the books.
    CHECK(s.memory_reserved == idle.memory_reserved);
    CHECK(s.memory_in_use == idle.memory_in_use);
    CHECK(s.memory_peak_in_use > idle.memory_in_use);
}

TEST_CASE("a full queue is QUEUE_FULL at exactly its bound, and a blocking submit waits for room") {
    Model model("good/llada-long");
    Engine engine(model.model, 1, 3);
    Gate gate;
    const unmask_generate_params held = gate.held(16, 4);
    const std::vector<int32_t> prompt = {1, 2, 3};
    unmask_request* running = nullptr;
    REQUIRE(unmask_engine_submit(engine.engine, &held, prompt.data(), 3, 0, &running) == UNMASK_OK);
    gate.wait_entered();  // admitted and inside its first step: the queue is empty
    const unmask_generate_params p = defaults(16, 4);
    std::vector<unmask_request*> queued(3);
    for (auto& r : queued) REQUIRE(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 0, &r) == UNMASK_OK);
    unmask_request* refused = nullptr;
    CHECK(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 0, &refused) == UNMASK_ERR_QUEUE_FULL);
    CHECK(refused == nullptr);
    CHECK(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 0.05, &refused) == UNMASK_ERR_QUEUE_FULL);
    // A blocking submit gets in once the gate opens and the queue moves.
    std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        gate.release();
    });
    unmask_request* waited = nullptr;
    CHECK_MESSAGE(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 30.0, &waited) == UNMASK_OK, unmask_last_error());
    opener.join();
    for (unmask_request* r : {running, queued[0], queued[1], queued[2], waited}) {
        CHECK(outcome_of(r).info.finish_reason == UNMASK_FINISH_LENGTH);
        unmask_request_free(r);
    }
    CHECK(stats_of(engine.engine).requests_rejected == 2);
}

TEST_CASE("a burst on an idle engine fills the free running slots before the queue counts") {
    // Submitted back to back, faster than the scheduler wakes: the first takes the free slot (held
    // in its first step by the gate), the second the one queue place, and only the third is refused,
    // whether or not the scheduler admitted the first in between.
    Model model("good/llada-long");
    for (int round = 0; round < 20; ++round) {
        Engine engine(model.model, 1, 1);
        Gate gate;
        const unmask_generate_params held = gate.held(16, 4);
        const unmask_generate_params p = defaults(16, 4);
        const std::vector<int32_t> prompt = {1, 2, 3};
        unmask_request *first = nullptr, *second = nullptr, *third = nullptr;
        REQUIRE(unmask_engine_submit(engine.engine, &held, prompt.data(), 3, 0, &first) == UNMASK_OK);
        CHECK_MESSAGE(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 0, &second) == UNMASK_OK,
                      unmask_last_error());
        CHECK(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 0, &third) == UNMASK_ERR_QUEUE_FULL);
        CHECK(third == nullptr);
        gate.release();
        for (unmask_request* r : {first, second}) {
            if (r == nullptr) continue;
            CHECK(outcome_of(r).info.finish_reason == UNMASK_FINISH_LENGTH);
            unmask_request_free(r);
        }
    }
}

TEST_CASE("a deadline ends a request within one step, and cancel works from another thread") {
    Model model("good/llada-long");
    Engine engine(model.model, 4, 8);
    struct Steps {
        std::mutex mutex;
        std::vector<std::chrono::steady_clock::time_point> times;
        static int32_t callback(const unmask_stream_event* e, void* user_data) {
            auto* steps = static_cast<Steps*>(user_data);
            if (e->kind == UNMASK_STREAM_STEP) {
                std::lock_guard lock(steps->mutex);
                steps->times.push_back(std::chrono::steady_clock::now());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));  // steps of at least 5 ms
            return 0;
        }
    } steps;
    unmask_generate_params p = defaults(512, 512);
    p.timeout_seconds = 0.2;
    p.stream_callback = &Steps::callback;  // (a timeout of 1e300 s would mean none, not overflow)
    p.stream_user_data = &steps;
    p.stream_steps = 1;
    const std::vector<int32_t> prompt = {1, 2, 3};
    unmask_request* timed = nullptr;
    REQUIRE(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 0, &timed) == UNMASK_OK);
    // Taken after the engine's own clock started, so this deadline is never before the engine's.
    const auto submitted = std::chrono::steady_clock::now();
    const Outcome o = outcome_of(timed);
    CHECK(o.info.finish_reason == UNMASK_FINISH_TIMEOUT);
    CHECK(o.info.end_to_end_seconds >= 0.2);
    {
        std::lock_guard lock(steps.mutex);
        const auto deadline = submitted + std::chrono::milliseconds(200);
        const auto late = std::count_if(steps.times.begin(), steps.times.end(), [&](auto t) { return t > deadline; });
        CHECK(late <= 1);  // at most the step that was running when the deadline passed
        CHECK(steps.times.size() < 512);
    }
    unmask_request_free(timed);

    unmask_generate_params long_run = defaults(512, 512);
    unmask_request* cancelled = nullptr;
    REQUIRE(unmask_engine_submit(engine.engine, &long_run, prompt.data(), 3, 0, &cancelled) == UNMASK_OK);
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        CHECK(unmask_request_cancel(cancelled) == UNMASK_OK);
    });
    const Outcome c = outcome_of(cancelled);
    canceller.join();
    CHECK(c.info.finish_reason == UNMASK_FINISH_CANCELLED);
    CHECK(c.info.steps < 512);
    unmask_request_free(cancelled);
    CHECK(unmask_request_wait(nullptr, 0) == UNMASK_ERR_INVALID_ARGUMENT);

    // A caller that found the answer's end stops it: the outcome is EOS, counted as one, and a
    // later cancel changes nothing (the first of the two wins).
    auto finished_as = [&](int32_t reason) {
        unmask_engine_stats stats{};
        stats.struct_size = sizeof stats;
        REQUIRE(unmask_engine_stats_get(engine.engine, &stats) == UNMASK_OK);
        return stats.finished[reason];
    };
    const uint64_t eos_before = finished_as(UNMASK_FINISH_EOS), cancelled_before = finished_as(UNMASK_FINISH_CANCELLED);
    unmask_request* stopped = nullptr;
    REQUIRE(unmask_engine_submit(engine.engine, &long_run, prompt.data(), 3, 0, &stopped) == UNMASK_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK(unmask_request_stop(stopped) == UNMASK_OK);
    CHECK(unmask_request_cancel(stopped) == UNMASK_OK);
    const Outcome s = outcome_of(stopped);
    CHECK(s.info.finish_reason == UNMASK_FINISH_EOS);
    CHECK(s.info.steps < 512);
    CHECK(finished_as(UNMASK_FINISH_EOS) == eos_before + 1);
    CHECK(finished_as(UNMASK_FINISH_CANCELLED) == cancelled_before);
    unmask_request_free(stopped);
    CHECK(unmask_request_stop(nullptr) == UNMASK_ERR_INVALID_ARGUMENT);

    // Freeing a running request's handle cancels it, and its callback is not called again.
    struct Counter {
        std::atomic<int> calls{0};
        static int32_t callback(const unmask_stream_event*, void* user_data) {
            ++static_cast<Counter*>(user_data)->calls;
            return 0;
        }
    };
    auto counter = std::make_unique<Counter>();
    unmask_generate_params streamed = defaults(512, 512);
    streamed.stream_callback = &Counter::callback;
    streamed.stream_user_data = counter.get();
    streamed.stream_steps = 1;
    unmask_request* freed = nullptr;
    REQUIRE(unmask_engine_submit(engine.engine, &streamed, prompt.data(), 3, 0, &freed) == UNMASK_OK);
    while (counter->calls < 2) std::this_thread::yield();
    unmask_request_free(freed);
    const int calls = counter->calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(counter->calls == calls);
    counter.reset();  // under ASan, a later callback would touch freed memory
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(unmask_request_wait(nullptr, 1e300) == UNMASK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("shutdown gives every queued and running request exactly one outcome") {
    Model model("good/llada-long");
    const std::vector<int32_t> prompt = {1, 2, 3};
    for (const int32_t mode : {UNMASK_SHUTDOWN_IMMEDIATE, UNMASK_SHUTDOWN_DRAIN}) {
        CAPTURE(mode);
        Engine engine(model.model, 2, 16);
        std::vector<unmask_request*> requests(12);
        const unmask_generate_params p = defaults(64, 32);
        for (auto& r : requests) REQUIRE(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 0, &r) == UNMASK_OK);
        REQUIRE(unmask_engine_shutdown(engine.engine, mode, 0) == UNMASK_OK);
        unmask_request* late = nullptr;
        CHECK(unmask_engine_submit(engine.engine, &p, prompt.data(), 3, 0, &late) == UNMASK_ERR_SHUTTING_DOWN);
        int cancelled = 0, finished = 0;
        for (unmask_request* r : requests) {
            const Outcome o = outcome_of(r);  // waits: every request has its outcome
            cancelled += o.info.finish_reason == UNMASK_FINISH_CANCELLED;
            finished += o.info.finish_reason == UNMASK_FINISH_LENGTH || o.info.finish_reason == UNMASK_FINISH_EOS;
            unmask_request_free(r);
        }
        CHECK(cancelled + finished == 12);
        if (mode == UNMASK_SHUTDOWN_DRAIN) CHECK(finished == 12);
        const unmask_engine_stats s = stats_of(engine.engine);
        CHECK(s.health == UNMASK_HEALTH_STOPPED);
        uint64_t outcomes = 0;
        for (uint64_t f : s.finished) outcomes += f;
        CHECK(outcomes == s.requests_submitted);
        CHECK(s.requests_running + s.requests_waiting == 0);
    }
}

TEST_CASE("stress: 8 threads x 200 requests with random cancels and deadlines all get one outcome") {
    Model model("good/llada-long");
    Engine engine(model.model, 6, 32);
    std::atomic<int> outcomes{0}, rejected{0}, failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<uint32_t>(t));
            for (int i = 0; i < 200; ++i) {
                unmask_generate_params p;
                unmask_generate_params_init(&p);
                p.gen_length = 4 + int64_t(rng() % 29);
                p.steps = 1 + int64_t(rng() % 4);
                p.temperature = rng() % 2 ? 0.9 : 0.0;
                p.seed = rng();
                p.cfg_scale = rng() % 5 == 0 ? 1.0 : 0.0;
                p.timeout_seconds = rng() % 4 == 0 ? 0.001 * double(rng() % 20) : 0.0;
                const std::vector<int32_t> prompt = {int32_t(1 + rng() % 50), int32_t(1 + rng() % 50)};
                unmask_request* r = nullptr;
                const unmask_status status =
                    unmask_engine_submit(engine.engine, &p, prompt.data(), 2, rng() % 2 ? 0.0 : 0.01, &r);
                if (status == UNMASK_ERR_QUEUE_FULL) {
                    ++rejected;
                    continue;
                }
                if (status != UNMASK_OK) {
                    ++failures;
                    continue;
                }
                if (rng() % 5 == 0) unmask_request_cancel(r);
                if (unmask_request_wait(r, 60.0) != UNMASK_OK) ++failures;
                unmask_request_info info{};
                info.struct_size = sizeof info;
                if (unmask_request_info_get(r, &info) != UNMASK_OK || info.state != UNMASK_REQUEST_FINISHED ||
                    info.finish_reason < UNMASK_FINISH_LENGTH || info.finish_reason > UNMASK_FINISH_TIMEOUT)
                    ++failures;
                ++outcomes;
                unmask_request_free(r);
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(failures == 0);
    CHECK(outcomes + rejected == 1600);
    const unmask_engine_stats s = stats_of(engine.engine);
    CHECK(s.requests_submitted == uint64_t(outcomes.load()));
    CHECK(s.requests_rejected == uint64_t(rejected.load()));
    uint64_t finished = 0;
    for (uint64_t f : s.finished) finished += f;
    CHECK(finished == s.requests_submitted);
    CHECK(s.finished[UNMASK_FINISH_ERROR] == 0);
    CHECK(s.memory_reserved <= s.memory_capacity);
    CHECK(s.requests_running + s.requests_waiting == 0);
}

TEST_CASE("stats and Prometheus metrics describe the outcomes") {
    Model model("good/tiny-chat");
    Engine engine(model.model, 2, 4);
    const std::vector<int32_t> prompt = {104, 105};
    unmask_generate_params p = defaults(8, 4);
    unmask_request* r = nullptr;
    REQUIRE(unmask_engine_submit(engine.engine, &p, prompt.data(), 2, 0, &r) == UNMASK_OK);
    const Outcome o = outcome_of(r);
    CHECK(o.info.first_block_seconds >= 0);
    int64_t length = 0;
    CHECK(unmask_request_text(r, nullptr, 0, &length) == UNMASK_OK);
    unmask_request_free(r);
    const unmask_engine_stats s = stats_of(engine.engine);
    CHECK(s.health == UNMASK_HEALTH_READY);
    CHECK(s.steps_total == uint64_t(o.info.steps));
    CHECK(s.end_to_end_seconds_p50 > 0);
    CHECK(s.memory_reserved <= s.memory_planned);
    int64_t size = 0;
    REQUIRE(unmask_engine_metrics(engine.engine, nullptr, 0, &size) == UNMASK_OK);
    std::string text(size_t(size), '\0');
    REQUIRE(unmask_engine_metrics(engine.engine, text.data(), size, &size) == UNMASK_OK);
    CHECK(text.find("unmask_num_requests_running 0\n") != std::string::npos);
    CHECK(text.find("unmask_request_success_total{finished_reason=\"" +
                    std::string(o.info.finish_reason == UNMASK_FINISH_EOS ? "eos" : "length") + "\"} 1\n") != std::string::npos);
    CHECK(text.find("unmask_e2e_request_latency_seconds_count 1\n") != std::string::npos);
    CHECK(text.find("# TYPE unmask_time_to_first_block_seconds histogram") != std::string::npos);
}

TEST_CASE("admission waits for memory, and a request that could never fit is refused at once") {
    // Room for the engine's forwards and about two requests' state.
    Model big("good/llada-long", 6 << 20);
    unmask_engine_params params;
    REQUIRE(unmask_engine_params_init(&params) == UNMASK_OK);
    params.threads = 2;
    params.max_concurrent_requests = 2;
    params.max_sequence_length = 512;
    unmask_engine* engine = nullptr;
    REQUIRE_MESSAGE(unmask_engine_create(big.model, &params, &engine) == UNMASK_OK, unmask_last_error());
    const unmask_engine_stats s = stats_of(engine);
    CHECK(s.max_tokens_per_forward >= 512);
    const std::vector<int32_t> prompt = {1, 2, 3};
    unmask_generate_params p = defaults(600, 8);
    unmask_request* r = nullptr;
    CHECK(unmask_engine_submit(engine, &p, prompt.data(), 3, 0, &r) == UNMASK_ERR_TOO_LONG);
    p.gen_length = 200;
    std::vector<unmask_request*> requests(6);
    for (auto& q : requests) REQUIRE(unmask_engine_submit(engine, &p, prompt.data(), 3, 0, &q) == UNMASK_OK);
    for (auto* q : requests) {
        CHECK(outcome_of(q).info.finish_reason == UNMASK_FINISH_LENGTH);
        unmask_request_free(q);
    }
    CHECK(stats_of(engine).memory_peak_in_use <= stats_of(engine).memory_capacity);
    unmask_engine_free(engine);

    params.max_concurrent_requests = 60000;  // far beyond the budget: the engine says so
    CHECK(unmask_engine_create(big.model, &params, &engine) == UNMASK_ERR_OUT_OF_BUDGET);
    CHECK(std::string(unmask_last_error()).find("lower max_concurrent_requests") != std::string::npos);
}

TEST_CASE("the deployment guide's service configuration parses, in YAML and in JSON") {
    for (const char* name : {"service_config.yaml", "service_config.json"}) {
        CAPTURE(name);
        const ServiceConfig c = read_service_config(std::string(UNMASK_SOURCE_DIR) + "/tests/data/" + name);
        CHECK(c.listen_port == 8080);
        CHECK(c.max_concurrent_requests == 16);
        CHECK(c.request_timeout_seconds == 30.0);
        CHECK(c.weights_path == "/models/llada-8b-instruct");
        CHECK(c.precision == Precision::bf16);
        CHECK_FALSE(c.quantize_embeddings);
        CHECK(c.max_sequence_length == 4096);
        CHECK(c.min_diffusion_steps == 8);
        CHECK(c.max_diffusion_steps == 32);
        CHECK(c.gpu_devices == std::vector<int64_t>{0, 1});
        CHECK(c.memory_fraction == 0.85);
        CHECK(c.log_level == LogLevel::info);
        CHECK(c.log_rotation_size_mb == 100);
    }
    // The C ABI copies the same values, and the server section into its deprecated fields (the
    // server reads that section itself: tests/server/test_server_parts.cpp).
    unmask_service_config config{};
    config.struct_size = sizeof config;
    REQUIRE(unmask_service_config_read((std::string(UNMASK_SOURCE_DIR) + "/tests/data/service_config.yaml").c_str(),
                                       &config) == UNMASK_OK);
    CHECK(std::string(config.bind_address) == "0.0.0.0");
    CHECK(std::string(config.api_keys_env) == "UNMASK_API_KEYS");
    CHECK(config.rate_limit_burst == 10);
    CHECK(config.max_body_bytes == 65536);
    CHECK(std::string(config.tls_private_key) == "/etc/unmask/key.pem");
    CHECK(config.drain_timeout_seconds == 20.0);
    CHECK(std::string(config.log_file) == "/var/log/unmask/server.log");
    CHECK(config.log_prompts == 1);
    CHECK(std::string(config.api_key_file) == std::string(UNMASK_SOURCE_DIR) + "/tests/data/keys.txt");
    CHECK(config.gpu_device_count == 2);
    CHECK(config.quantize_embeddings == 0);
    CHECK(config.gpu_device == 0);  // the first of [0, 1]: the GPU an engine runs on
    CHECK(config.gpu_devices[0] == 0);
    CHECK(config.gpu_devices[1] == 1);
    CHECK(config.cpu_devices == 1);
    // A caller built against ABI 1.2 passes the older size and gets only the fields it knows.
    unmask_service_config older{};
    std::memset(&older, 0x5a, sizeof older);
    older.struct_size = 4168;
    REQUIRE(unmask_service_config_read((std::string(UNMASK_SOURCE_DIR) + "/tests/data/service_config.yaml").c_str(),
                                       &older) == UNMASK_OK);
    CHECK(older.listen_port == 8080);
    CHECK(older.bind_address[0] == 0x5a);
}

TEST_CASE("the server section is the server's: the library checks only its shape and hands it over") {
    // Keys the library does not know are the server's to judge.
    const ServiceConfig c = parse_service_config("model:\n  weights_path: m\nserver:\n  anything: 1\n", true, ".");
    CHECK(c.weights_path == "./m");
    CHECK_THROWS_WITH_AS(parse_service_config("model:\n  weights_path: m\nserver: [1]\n", true, "."),
                         doctest::Contains("'server' must be a mapping"), Error);
    const std::string yaml = std::string(UNMASK_SOURCE_DIR) + "/tests/data/service_config.yaml";
    char json[512];
    int64_t length = 0;
    REQUIRE(unmask_service_config_section(yaml.c_str(), "server", json, sizeof json, &length) == UNMASK_OK);
    REQUIRE(length < int64_t(sizeof json));
    const auto server = nlohmann::json::parse(std::string(json, size_t(length)));
    CHECK(server.at("bind_address") == "0.0.0.0");
    CHECK(server.at("rate_limit_burst") == 10);
    CHECK(server.at("log_prompts") == true);
    CHECK(server.at("api_key_file") == "keys.txt");  // as written: the host resolves it
    // The whole length is reported when the buffer is short; a section the file lacks is null.
    REQUIRE(unmask_service_config_section(yaml.c_str(), "server", json, 4, &length) == UNMASK_OK);
    CHECK(length == int64_t(server.dump().size()));
    REQUIRE(unmask_service_config_section(yaml.c_str(), "model", json, sizeof json, &length) == UNMASK_OK);
    CHECK(nlohmann::json::parse(std::string(json, size_t(length))).at("precision") == "bf16");
    CHECK(unmask_service_config_section(yaml.c_str(), "servers", json, sizeof json, &length) ==
          UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("'servers' is not a section") != std::string::npos);
    CHECK(unmask_service_config_section("/nonexistent.yaml", "server", json, sizeof json, &length) == UNMASK_ERR_IO);
    CHECK(unmask_service_config_section(yaml.c_str(), "server", nullptr, 8, &length) == UNMASK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("each wrong key, type or value in a service configuration is named") {
    const std::string base = "model:\n  weights_path: m\n";
    const std::pair<std::string, std::string> cases[] = {
        {base + "service:\n  max_concurent_requests: 4\n", "'service.max_concurent_requests' is not a known key"},
        {base + "servise:\n  listen_port: 80\n", "'servise' is not a known section"},
        {base + "service:\n  max_concurrent_requests: four\n", "'service.max_concurrent_requests' must be an integer"},
        {base + "service:\n  max_concurrent_requests: 0\n", "'service.max_concurrent_requests' must be within 1..65536"},
        {base + "service:\n  listen_port: 70000\n", "'service.listen_port' must be within 0..65535"},
        {base + "service:\n  max_queued_requests: 0x40\n", "'service.max_queued_requests' must be an integer"},
        {base + "service:\n  request_timeout_seconds: -1\n", "'service.request_timeout_seconds' must be within"},
        {base + "  precision: fp4\n", "'model.precision' must be one of"},
        {base + "  quantize_embeddings: 1\n", "'model.quantize_embeddings' must be true or false"},
        {base + "  quantize_embeddings: true\n", "'model.quantize_embeddings' needs 'model.precision' int8, q4 or fp8"},
        {base + "  min_diffusion_steps: 40\n  max_diffusion_steps: 8\n", "exceeds 'model.max_diffusion_steps'"},
        {base + "resources:\n  memory_fraction: 1.5\n", "'resources.memory_fraction' must be within (0, 1]"},
        {base + "resources:\n  memory_fraction: 0\n", "'resources.memory_fraction' must be within (0, 1]"},
        {base + "resources:\n  gpu_devices: 0\n", "'resources.gpu_devices' must be a list"},
        {base + "resources:\n  gpu_devices: [0, 1, 0]\n", "'resources.gpu_devices' lists device 0 twice"},
        {base + "resources:\n  gpu_devices: [" + [] {
             std::string many;
             for (int i = 0; i <= max_devices; ++i) many += (i ? ", " : "") + std::to_string(i);
             return many;
         }() + "]\n", "at most 64 share a model"},
        {base + "resources:\n  cpu_devices: 0\n", "'resources.cpu_devices' must be within"},
        {base + "resources:\n  cpu_devices: 2\n  gpu_devices: [0]\n", "cannot go with 'resources.gpu_devices'"},
        {base + "resources:\n  log_level: loud\n", "'resources.log_level' must be one of"},
        {"service:\n  listen_port: 80\n", "'model.weights_path' is required"},
        {base + "service: [1, 2]\n", "'service' must be a mapping"},
        {"model: {weights_path: m\n", "not valid YAML"},
    };
    for (const auto& item : cases) {
        const std::string& text = item.first;
        const std::string& message = item.second;
        CAPTURE(text);
        CHECK_THROWS_WITH_AS(parse_service_config(text, true, "."), doctest::Contains(message.c_str()), Error);
    }
    CHECK_THROWS_WITH_AS(parse_service_config(R"({"model": {"weights_path": "m", "weights_path": "n"}})", false, "."),
                         doctest::Contains("duplicate"), Error);
    // Nesting is bounded in both syntaxes before anything recursive walks it (YAML sequences 200
    // deep: within what yaml-cpp parses, beyond our bound of 128).
    const std::string deep_yaml = "server:\n  x: " + std::string(200, '[') + std::string(200, ']') + "\n";
    CHECK_THROWS_WITH_AS(parse_service_config(deep_yaml, true, "."), doctest::Contains("nests deeper than 128 levels"), Error);
    const std::string deep_json = R"({"server": {"x": )" + std::string(100000, '[') + std::string(100000, ']') + "}}";
    CHECK_THROWS_WITH_AS(parse_service_config(deep_json, false, "."), doctest::Contains("nested deeper than 128 levels"), Error);
    CHECK_THROWS_WITH_AS(parse_service_config(R"({"model": {"weights_path": 5}})", false, "."),
                         doctest::Contains("'model.weights_path' must be a string"), Error);
    CHECK_THROWS_WITH_AS(parse_service_config(R"({"model": {"weights_path": "m"}, "service": {"listen_port": "80"}})",
                                              false, "."),
                         doctest::Contains("'service.listen_port' must be an integer"), Error);
    CHECK(parse_service_config(base + "  precision: q4\n  quantize_embeddings: true\n", true, ".").quantize_embeddings);
    // YAML integers are decimal (no octal), empty sections are defaults, 0 means none.
    const ServiceConfig c = parse_service_config(
        base + "service:\n  max_queued_requests: 0100\n  listen_port: 0\nresources:\n", true, ".");
    CHECK(c.max_queued_requests == 100);
    CHECK(c.listen_port == 0);
}

TEST_CASE("an engine starts from a configuration file and serves its model") {
    const std::string directory = test_data_path("engine-config");
    std::filesystem::create_directories(directory);
    const std::string path = directory + "/service.yaml";
    std::ofstream(path) << "service:\n  max_concurrent_requests: 2\n  request_timeout_seconds: 60\n"
                        << "model:\n  weights_path: " << fixture_path("good/tiny-chat")
                        << "\n  precision: fp32\n  max_sequence_length: 128\n"
                        << "resources:\n  gpu_devices: []\n  memory_fraction: 0.5\n";
    unmask_engine* engine = nullptr;
    REQUIRE_MESSAGE(unmask_engine_create_from_config(path.c_str(), &engine) == UNMASK_OK, unmask_last_error());
    const unmask_model* model = nullptr;
    REQUIRE(unmask_engine_model(engine, &model) == UNMASK_OK);
    const unmask_tokenizer* tokenizer = nullptr;
    REQUIRE(unmask_model_tokenizer(model, &tokenizer) == UNMASK_OK);
    CHECK(tokenizer != nullptr);
    const std::vector<int32_t> prompt = {104, 105};
    unmask_generate_params p = defaults(16, 8);
    unmask_request* r = nullptr;
    REQUIRE(unmask_engine_submit(engine, &p, prompt.data(), 2, 0, &r) == UNMASK_OK);
    CHECK(outcome_of(r).tokens.size() == 16);
    p.gen_length = 200;
    unmask_request* too_long = nullptr;
    CHECK(unmask_engine_submit(engine, &p, prompt.data(), 2, 0, &too_long) == UNMASK_ERR_TOO_LONG);
    unmask_engine_free(engine);  // the request outlives the engine that owned the model
    int64_t length = 0;
    CHECK(unmask_request_text(r, nullptr, 0, &length) == UNMASK_OK);
    unmask_request_free(r);

    std::ofstream(path) << "model:\n  weights_path: " << fixture_path("good/tiny-chat") << "\nresources:\n  gpu_devices: [1023]\n";
    CHECK(unmask_engine_create_from_config(path.c_str(), &engine) != UNMASK_OK);
    CHECK(engine == nullptr);
    // Several GPUs reach the model's load, which names what is missing.
    std::ofstream(path) << "model:\n  weights_path: " << fixture_path("good/tiny-chat") << "\nresources:\n  gpu_devices: [0, 1]\n";
    CHECK(unmask_engine_create_from_config(path.c_str(), &engine) == UNMASK_ERR_UNSUPPORTED);
    CHECK(std::string(unmask_last_error()).find("NCCL") != std::string::npos);
    // Host devices serve: the model shared by 2 of them.
    std::ofstream(path) << "model:\n  weights_path: " << fixture_path("good/tiny-chat")
                        << "\n  precision: fp32\n  max_sequence_length: 64\nresources:\n  cpu_devices: 2\n";
    REQUIRE_MESSAGE(unmask_engine_create_from_config(path.c_str(), &engine) == UNMASK_OK, unmask_last_error());
    unmask_request* shared = nullptr;
    p.gen_length = 16;
    REQUIRE(unmask_engine_submit(engine, &p, prompt.data(), 2, 0, &shared) == UNMASK_OK);
    CHECK(outcome_of(shared).tokens.size() == 16);
    unmask_request_free(shared);
    unmask_engine_free(engine);
    // ... and are really asked for: 3 cannot share tiny-chat's 4 heads.
    std::ofstream(path) << "model:\n  weights_path: " << fixture_path("good/tiny-chat") << "\nresources:\n  cpu_devices: 3\n";
    CHECK(unmask_engine_create_from_config(path.c_str(), &engine) == UNMASK_ERR_UNSUPPORTED);
    CHECK(std::string(unmask_last_error()).find("3 devices") != std::string::npos);
    CHECK(unmask_engine_create_from_config((directory + "/missing.yaml").c_str(), &engine) == UNMASK_ERR_IO);
}
