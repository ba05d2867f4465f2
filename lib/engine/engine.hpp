// The engine: one per model, shared by any number of submitting threads. A bounded queue feeds a
// scheduler thread that admits requests first come, first served, as far as memory and the
// concurrency limit allow, and runs every admitted request's next step in shared forwards
// (continuous batching: requests join and leave between steps). Deadlines and cancels are checked
// between steps. Every submitted request gets exactly one outcome, also at shutdown.
//
// Fairness: every running request takes one step per scheduler iteration, whatever its length,
// so a long request slows the others' steps but never holds them back; admission is strictly in
// order, so a request waiting for memory is not overtaken (it cannot starve either).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "backend/placement.hpp"
#include "core/logging.hpp"
#include "core/memory_ledger.hpp"
#include "engine/latency_histogram.hpp"
#include "engine/request.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"

namespace unmask {

struct EngineOptions {
    int64_t max_concurrent_requests = 8;
    int64_t max_queued_requests = 64;
    int64_t max_sequence_length = 0;     // prompt + generation admitted; 0: the model's maximum
    int64_t max_tokens_per_forward = 0;  // 0: all running requests at max length, or as many as fit
    double request_timeout_seconds = 0;  // default per request; 0: none
    int64_t min_steps = 0, max_steps = 0;  // defaults for requests that set none (0: unbounded)
    int threads = 0;                     // 0: every hardware thread; max(1, threads / devices) per device
    // Host devices sharing the model (tensor and expert parallelism, docs/parallel.md): CPU
    // backends of this process, each with its share of the weights, of every sequence's K/V
    // caches and of the threads. The CPU placement only.
    int devices = 1;
    Logger logger;
    // Where the model's weights are and so where the engine computes: its backend (with `threads`
    // threads on the CPU) charges the scratch the engine reserved. Null: the CPU.
    std::shared_ptr<const DevicePlacement> placement;
};

// Equals UNMASK_HEALTH_* (capi/abi_enums.cpp).
enum class Health : int32_t { loading = 0, ready = 1, draining = 2, failed = 3, stopped = 4 };
const char* health_name(Health health) noexcept;

struct EngineStats {
    Health health = Health::loading;
    int64_t running = 0, waiting = 0;
    uint64_t submitted = 0, rejected = 0;  // rejected: QUEUE_FULL or SHUTTING_DOWN at submission
    uint64_t finished[request_finish_count] = {};
    uint64_t steps = 0, forwards = 0, generated_tokens = 0, prompt_tokens = 0;
    LatencyHistogram queue_time, first_block_time, end_to_end_time;
    uint64_t memory_capacity = 0, memory_reserved = 0, memory_in_use = 0, memory_peak_in_use = 0;
    uint64_t memory_planned = 0;  // weights + scratch + max_concurrent_requests states at max length
    int64_t max_tokens_per_forward = 0, max_sequence_length = 0;
};

class Engine {
public:
    // Reserves the scratch for forwards of max_tokens_per_forward rows in `memory` (which holds
    // the model's weights) and starts the scheduler. Throws OUT_OF_BUDGET when not even one
    // sequence of max_sequence_length fits, INVALID_ARGUMENT for bad options.
    Engine(const Model& model, MemoryLedger& memory, EngineOptions options);
    ~Engine();  // shutdown(immediate)
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Queues a request. `wait_for_room` empty: QUEUE_FULL at once when the queue is full; else
    // waits that long for room. Throws INVALID_ARGUMENT / TOO_LONG for a bad request,
    // OUT_OF_BUDGET for one that could never fit, SHUTTING_DOWN after shutdown began, and the
    // failure's status (DEVICE for a lost device) once the engine failed.
    std::shared_ptr<Request> submit(RequestInput input, std::optional<std::chrono::duration<double>> wait_for_room);

    enum class ShutdownMode { drain, immediate };
    // drain: no new requests; queued and running ones finish, until `timeout` (then immediate).
    // immediate: queued and running requests end as cancelled. Returns when the scheduler stopped.
    void shutdown(ShutdownMode mode, std::chrono::duration<double> timeout = std::chrono::hours(24 * 365));

    EngineStats stats() const;
    Health health() const;

private:
    void schedule();
    void admit(std::unique_lock<std::mutex>& lock);
    void run_step();
    void end(const std::shared_ptr<Request>& request, RequestFinish finish, Status status = Status::ok,
             std::string error = {});
    void record_outcome(const Request& request, const RequestResult& result);

    const Model& model_;
    MemoryLedger& memory_;
    EngineOptions options_;
    BackendKind backend_kind_;  // options_.placement's, as the memory is planned
    uint64_t memory_base_ = 0;  // reserved before requests: weights and scratch
    std::unique_ptr<MemoryLedger> scratch_;
    std::vector<std::unique_ptr<Backend>> devices_;
    std::unique_ptr<Forward> forward_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;  // the scheduler: a submission, a shutdown
    std::condition_variable room_;  // blocked submitters: room in the queue
    std::condition_variable stopped_;  // a draining shutdown: the scheduler has finished
    std::mutex shutdown_mutex_;        // one shutdown at a time
    std::deque<std::shared_ptr<Request>> queue_;
    std::vector<std::shared_ptr<Request>> running_;  // the scheduler's; size read under mutex_
    uint64_t next_id_ = 1;
    Health health_ = Health::loading;
    std::pair<Status, std::string> failure_;  // why health_ is failed: what submit then answers
    bool draining_ = false, stopping_ = false;
    EngineStats stats_;
    std::thread scheduler_;
};

}  // namespace unmask
