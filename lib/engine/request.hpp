// One generation request inside the engine: what was asked, where it is (queued, running,
// finished), and its one outcome. The handle a caller holds is shared with the engine; wait,
// poll and cancel are safe from any thread, and the outcome never changes once set.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/memory_ledger.hpp"
#include "decode/generate.hpp"
#include "decode/sequence.hpp"
#include "memory/sequence_state.hpp"

namespace unmask {

using Clock = std::chrono::steady_clock;

// Equals UNMASK_FINISH_* (capi/abi_enums.cpp).
enum class RequestFinish : int32_t { none = 0, length = 1, eos = 2, cancelled = 3, timeout = 4, error = 5 };
inline constexpr int request_finish_count = 6;
const char* finish_name(RequestFinish finish) noexcept;

// A streaming event: a block was committed (or, when asked for, a step ran). `tokens` is the
// generated region as it stands (masks where nothing is committed yet).
struct StreamEvent {
    uint64_t request_id = 0;
    bool block_completed = false;
    int64_t step = 0;
    int64_t completed_blocks = 0;
    int64_t committed = 0;  // positions committed by this step
    std::span<const int32_t> tokens;
};
// Returning false cancels the request. Called on the engine's scheduler thread.
using StreamFn = std::function<bool(const StreamEvent& event)>;

struct RequestInput {
    DecodeParams params;
    std::vector<int32_t> canvas;  // prompt and masks (or an infilling canvas)
    int64_t first_output = 0;     // the result's tokens start here in the canvas
    double timeout_seconds = 0;   // 0: the engine's default; counted from submission
    StreamFn stream;
    bool stream_steps = false;    // also call `stream` after every step, not only per block
};

struct RequestTimings {
    double queue = 0;        // submission to admission
    double compute = 0;      // admission to the end
    double first_block = -1; // submission to the first committed block; -1: none
    double end_to_end = 0;   // submission to the end
};

struct RequestResult {
    RequestFinish finish = RequestFinish::none;
    Status error_status = Status::ok;  // for RequestFinish::error
    std::string error;
    std::vector<int32_t> tokens;
    int64_t steps = 0, forwards = 0;
    RequestTimings timings;
};

class Request {
public:
    Request(uint64_t id, RequestInput input, DecodeSequence sequence, Clock::time_point deadline);

    uint64_t id() const noexcept { return id_; }
    // Waits until the request has its outcome; false when `timeout` passed first (none: forever).
    bool wait(std::optional<std::chrono::duration<double>> timeout) const;
    bool finished() const;
    // Asks the engine to stop it (between steps); a no-op once finished. cancel() ends it as
    // cancelled; stop() as an answer that ended (eos): the caller found its end, a stop string.
    // The first request wins.
    void cancel() noexcept { request_end(RequestFinish::cancelled); }
    void stop() noexcept { request_end(RequestFinish::eos); }
    bool cancel_requested() const noexcept { return requested_end_ != RequestFinish::none; }
    // How a caller asked it to end (none: it did not).
    RequestFinish requested_end() const noexcept { return requested_end_; }
    bool admitted() const noexcept { return admitted_flag_; }
    // The outcome; throws Error(INVALID_ARGUMENT) before it exists.
    RequestResult result() const;

private:
    friend class Engine;
    void finish(RequestResult result);

    const uint64_t id_;
    mutable std::mutex mutex_;
    mutable std::condition_variable done_;
    bool finished_ = false;
    RequestResult result_;
    void request_end(RequestFinish finish) noexcept {
        RequestFinish none = RequestFinish::none;
        requested_end_.compare_exchange_strong(none, finish);
    }
    std::atomic<RequestFinish> requested_end_{RequestFinish::none};
    std::atomic<bool> admitted_flag_{false};

    // The scheduler's side, touched only by the engine.
    RequestInput input_;
    SequenceState state_;  // lent to sequence_'s steps
    DecodeSequence sequence_;
    Clock::time_point submitted_, admitted_, deadline_;
    std::optional<Clock::time_point> first_block_;
    GenerationStats stats_;
    int64_t blocks_seen_ = 0;
};

}  // namespace unmask
