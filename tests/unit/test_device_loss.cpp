// A lost device (DeviceLost: a GPU whose context a faulting kernel corrupted) is terminal: the
// engine that meets it fails every request with DEVICE, reports Health::failed, refuses new
// requests with the reason, and never calls its backend again. Planted through a backend whose
// embedding throws DeviceLost from its `healthy_forwards`-th forward on.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/profiled_backend.hpp"
#include "core/error.hpp"
#include "engine/engine.hpp"
#include "fixtures.hpp"
#include "model/model.hpp"

using namespace unmask;

namespace {

struct OwnedCpu {
    std::unique_ptr<Backend> cpu;
};

// The CPU backend, counting every call (ProfiledBackend), lost after `healthy_forwards` forwards.
class LosingBackend : OwnedCpu, public ProfiledBackend {
public:
    // Lost only once `armed` (every request submitted), so that no submission meets the failure.
    LosingBackend(MemoryLedger& scratch, int64_t healthy_forwards, std::atomic<int64_t>& calls,
                  const std::atomic<bool>& armed)
        : OwnedCpu{make_cpu_backend(1, scratch)}, ProfiledBackend(*cpu), healthy_(healthy_forwards), calls_(calls),
          armed_(armed) {}
    void embedding(const Weight& table, const int32_t* ids, int64_t rows, float* out) override {
        if (forwards_++ >= healthy_) {
            while (!armed_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            throw DeviceLost("GPU 0 is lost (planted); this process can no longer use it");
        }
        ProfiledBackend::embedding(table, ids, rows, out);
        calls_ = total_calls();
    }

private:
    int64_t total_calls() const {
        int64_t n = 0;
        for (const auto& [kind, time] : times()) n += time.calls;
        return n;
    }
    int64_t healthy_, forwards_ = 0;
    std::atomic<int64_t>& calls_;
    const std::atomic<bool>& armed_;
};

// A placement on the CPU whose backends `make` builds: how these tests plant a failing device.
template <typename Make>
std::shared_ptr<const DevicePlacement> planted_device(Make make) {
    struct Planted final : DevicePlacement {
        explicit Planted(Make m) : make_(std::move(m)) {}
        BackendKind kind() const noexcept override { return BackendKind::cpu; }
        std::unique_ptr<Backend> make_backend(int, MemoryLedger& scratch) const override { return make_(scratch); }
        Make make_;
    };
    return std::make_shared<const Planted>(std::move(make));
}

std::shared_ptr<Request> submit(Engine& engine, const ModelSpec& spec) {
    RequestInput input;
    input.params.gen_length = 8;
    input.params.steps = 8;
    input.canvas = {5, 9, 14};
    input.canvas.resize(input.canvas.size() + 8, static_cast<int32_t>(spec.mask_token_id));
    input.first_output = 3;
    return engine.submit(std::move(input), std::nullopt);
}

}  // namespace

TEST_CASE("a lost device fails the engine for good: every request DEVICE, health failed, no more calls") {
    LoadOptions options;
    options.precision = Precision::fp32;
    const auto model = load_model(test_data_path("reference/llada"), options);
    MemoryLedger memory("test memory", uint64_t(1) << 32);
    std::atomic<int64_t> calls{0};
    std::atomic<bool> armed{false};
    EngineOptions engine_options;
    engine_options.max_concurrent_requests = 2;
    engine_options.threads = 1;
    engine_options.placement = planted_device([&](MemoryLedger& scratch) {
        return std::make_unique<LosingBackend>(scratch, 3, calls, armed);  // lost in the 4th step
    });
    Engine engine(*model, memory, std::move(engine_options));
    const std::vector<std::shared_ptr<Request>> requests = {submit(engine, model->spec()), submit(engine, model->spec()),
                                                            submit(engine, model->spec())};  // the third queued
    armed = true;
    for (const auto& request : requests) {
        REQUIRE(request->wait(std::chrono::seconds(60)));
        const RequestResult result = request->result();
        CHECK(result.finish == RequestFinish::error);
        CHECK(result.error_status == Status::device);
        CHECK(result.error.find("GPU 0 is lost (planted)") != std::string::npos);
    }
    CHECK(engine.health() == Health::failed);
    const EngineStats stats = engine.stats();
    CHECK(stats.health == Health::failed);
    CHECK(stats.running == 0);
    CHECK(stats.waiting == 0);
    CHECK(stats.finished[static_cast<int>(RequestFinish::error)] == 3);

    // A new request is refused with the reason, not queued for a device that cannot run it.
    try {
        submit(engine, model->spec());
        FAIL("a failed engine took a request");
    } catch (const Error& e) {
        CHECK(e.status() == Status::device);
        CHECK(std::string(e.what()).find("GPU 0 is lost (planted)") != std::string::npos);
    }
    CHECK(engine.stats().rejected == 1);
    // Nothing more reached the backend: the scheduler stopped instead of retrying.
    const int64_t seen = calls.load();
    CHECK(seen > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(calls.load() == seen);
    engine.shutdown(Engine::ShutdownMode::drain);
    CHECK(engine.health() == Health::failed);
}

TEST_CASE("an ordinary device error fails only the step's requests: the engine keeps serving") {
    LoadOptions options;
    options.precision = Precision::fp32;
    const auto model = load_model(test_data_path("reference/llada"), options);
    MemoryLedger memory("test memory", uint64_t(1) << 32);
    struct FailingOnce : OwnedCpu, ProfiledBackend {
        explicit FailingOnce(MemoryLedger& scratch) : OwnedCpu{make_cpu_backend(1, scratch)}, ProfiledBackend(*cpu) {}
        void embedding(const Weight& table, const int32_t* ids, int64_t rows, float* out) override {
            if (!failed_) {
                failed_ = true;
                fail(Status::device, "CUDA copy to device failed: planted");
            }
            ProfiledBackend::embedding(table, ids, rows, out);
        }
        bool failed_ = false;
    };
    EngineOptions engine_options;
    engine_options.max_concurrent_requests = 1;
    engine_options.threads = 1;
    engine_options.placement = planted_device([](MemoryLedger& scratch) { return std::make_unique<FailingOnce>(scratch); });
    Engine engine(*model, memory, std::move(engine_options));
    const auto first = submit(engine, model->spec());
    REQUIRE(first->wait(std::chrono::seconds(60)));
    CHECK(first->result().error_status == Status::device);
    const auto second = submit(engine, model->spec());
    REQUIRE(second->wait(std::chrono::seconds(60)));
    CHECK(second->result().finish == RequestFinish::length);
    CHECK(engine.health() == Health::ready);
}
