#include "engine/engine.hpp"

#include <algorithm>
#include <cmath>

#include "memory/batch_memory.hpp"
#include "memory/memory_plan.hpp"

namespace unmask {
namespace {

// Waits and deadlines beyond this many seconds (about 31 years) mean "no limit": longer ones would
// overflow the clocks' nanosecond counts.
constexpr double max_wait_seconds = 1e9;
constexpr auto idle_poll = std::chrono::milliseconds(20);  // queued but blocked on memory: recheck

RequestFinish finish_of(FinishReason reason) {
    switch (reason) {
        case FinishReason::length: return RequestFinish::length;
        case FinishReason::eos: return RequestFinish::eos;
        case FinishReason::cancelled: return RequestFinish::cancelled;
        case FinishReason::none: break;
    }
    return RequestFinish::error;
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

}  // namespace

const char* health_name(Health health) noexcept {
    switch (health) {
        case Health::loading: return "loading";
        case Health::ready: return "ready";
        case Health::draining: return "draining";
        case Health::failed: return "failed";
        case Health::stopped: return "stopped";
    }
    return "unknown";
}

Engine::Engine(const Model& model, MemoryLedger& memory, EngineOptions options)
    : model_(model), memory_(memory), options_(std::move(options)) {
    const ModelSpec& spec = model.spec();
    if (options_.max_concurrent_requests < 1 || options_.max_concurrent_requests > 65536)
        fail(Status::invalid_argument, "max_concurrent_requests {} is outside 1..65536", options_.max_concurrent_requests);
    if (options_.max_queued_requests < 1 || options_.max_queued_requests > 10'000'000)
        fail(Status::invalid_argument, "max_queued_requests {} is outside 1..10000000", options_.max_queued_requests);
    if (options_.max_sequence_length == 0) options_.max_sequence_length = spec.max_sequence_length;
    if (options_.max_sequence_length < 1 || options_.max_sequence_length > spec.max_sequence_length)
        fail(Status::invalid_argument, "max_sequence_length {} is outside 1..{} (the model's maximum)",
             options_.max_sequence_length, spec.max_sequence_length);
    // Sized for the positions a request of the longest length occupies while it is decoded.
    options_.max_sequence_length = std::min(spec.max_sequence_length, spec.decoded_positions(options_.max_sequence_length));
    if (options_.max_tokens_per_forward < 0 || options_.max_tokens_per_forward > max_forward_rows)
        fail(Status::invalid_argument, "max_tokens_per_forward {} is outside 0..{}", options_.max_tokens_per_forward,
             max_forward_rows);
    if (!(options_.request_timeout_seconds >= 0) || !std::isfinite(options_.request_timeout_seconds))
        fail(Status::invalid_argument, "request_timeout_seconds must be finite and not negative, got {}",
             options_.request_timeout_seconds);
    if (options_.min_steps < 0 || options_.max_steps < 0 || (options_.max_steps > 0 && options_.min_steps > options_.max_steps))
        fail(Status::invalid_argument, "min_steps {} and max_steps {} do not form a range", options_.min_steps,
             options_.max_steps);
    if (options_.threads == 0) options_.threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 1024u));
    if (!options_.placement) options_.placement = cpu_placement();
    backend_kind_ = options_.placement->kind();
    if (options_.devices < 1 || options_.devices > max_devices)
        fail(Status::invalid_argument, "devices {} is outside 1..{}", options_.devices, max_devices);
    if (options_.devices > 1 && backend_kind_ != BackendKind::cpu)
        fail(Status::unsupported, "an engine on {} devices needs host (CPU) devices: GPUs share a model only through "
             "NCCL, which the forward does not use yet", options_.devices);
    const int devices = options_.devices;
    if (!model.has_data()) fail(Status::unsupported, "the model was loaded with metadata_only and cannot generate");

    // Scratch for forwards of `rows` rows: every running request at the longest length when the
    // budget allows, else as many rows as fit beside max_concurrent_requests such states.
    const int64_t length = options_.max_sequence_length;
    const uint64_t states =
        uint64_t(options_.max_concurrent_requests) * shared_ledger_state_bytes(spec, length, {}, backend_kind_, devices);
    // Every device's run state and workspace, and its copies of its weight shares.
    const LedgerDevices shared = ledger_devices(model, devices);
    auto scratch_for = [&](int64_t rows) {
        return shared_ledger_scratch_bytes(spec, {rows, length}, backend_kind_, options_.threads, shared);
    };
    const uint64_t available = memory.available();
    int64_t rows = options_.max_tokens_per_forward;
    if (rows == 0) {
        // At least two canvases, so a CFG request of the longest length fits one forward.
        const int64_t wanted = std::min(std::max(options_.max_concurrent_requests, int64_t(2)) * length, max_forward_rows);
        rows = largest_fitting(length, wanted, [&](int64_t r) { return states + scratch_for(r) <= available; });
        if (rows < length) {
            const int64_t fitting = longest_fitting_sequence(spec, available, {}, backend_kind_, options_.threads,
                                                             options_.max_concurrent_requests, shared);
            fail(Status::out_of_budget,
                 "an engine for {} requests of {} positions needs {} bytes of state and at least {} of scratch, "
                 "but {} has {} bytes left; lower max_concurrent_requests or max_sequence_length ({})",
                 options_.max_concurrent_requests, length, states, scratch_for(length), memory.name(), available,
                 fitting > 0 ? fmt::format("the longest sequence that fits now has {} positions", fitting)
                             : std::string("no sequence fits now"));
        }
    }
    scratch_ = memory.pool(memory.name() + " engine scratch", scratch_for(rows));
    std::vector<Backend*> backends;
    for (int d = 0; d < devices; ++d) {
        devices_.push_back(options_.placement->make_backend(shared.threads_each(options_.threads), *scratch_));
        backends.push_back(devices_.back().get());
    }
    forward_ = std::make_unique<Forward>(model, backends, ForwardLimits{rows, length});
    memory_base_ = memory.reserved();
    stats_.memory_planned = memory_base_ + states;
    stats_.max_tokens_per_forward = rows;
    stats_.max_sequence_length = length;
    options_.logger.info("engine ready: {} concurrent requests of up to {} positions, forwards of {} rows, {} threads{}",
                         options_.max_concurrent_requests, length, rows, options_.threads,
                         devices > 1 ? fmt::format(" on {} devices", devices) : std::string());
    health_ = Health::ready;
    scheduler_ = std::thread([this] { schedule(); });
}

Engine::~Engine() { shutdown(ShutdownMode::immediate); }

std::shared_ptr<Request> Engine::submit(RequestInput input, std::optional<std::chrono::duration<double>> wait_for_room) {
    if (!(input.timeout_seconds >= 0) || !std::isfinite(input.timeout_seconds))
        fail(Status::invalid_argument, "timeout_seconds must be finite and not negative, got {}", input.timeout_seconds);
    if (input.params.min_steps == 0 && input.params.max_steps == 0) {
        input.params.min_steps = options_.min_steps;
        input.params.max_steps = options_.max_steps;
    }
    const ModelSpec& spec = model_.spec();
    if (static_cast<int64_t>(input.canvas.size()) > options_.max_sequence_length)
        fail(Status::too_long, "the request takes {} positions; the engine admits {}", input.canvas.size(),
             options_.max_sequence_length);
    DecodeSequence sequence(spec, input.params, input.canvas);
    // Block diffusion decodes up to the end of the last block.
    const auto length = static_cast<int64_t>(sequence.canvas().size());
    if (length > options_.max_sequence_length)
        fail(Status::too_long, "the request takes {} positions up to the end of its last block; the engine admits {}",
             length, options_.max_sequence_length);
    if (sequence.max_fed_rows() > forward_->limits().tokens)
        fail(Status::out_of_budget, "the request feeds {} rows to each forward; the engine's forwards hold {}",
             sequence.max_fed_rows(), forward_->limits().tokens);
    const int devices = options_.devices;
    const uint64_t state = shared_ledger_state_bytes(spec, length, sequence.memory_options(), backend_kind_, devices);
    const uint64_t for_requests = memory_.capacity() - std::min(memory_.capacity(), memory_base_);
    if (state > for_requests) {
        const int64_t longest = largest_fitting(1, options_.max_sequence_length, [&](int64_t n) {
            return shared_ledger_state_bytes(spec, n, sequence.memory_options(), backend_kind_, devices) <= for_requests;
        });
        fail(Status::out_of_budget, "the request's state needs {} bytes but the engine has {} for requests; the longest "
             "sequence that fits has {} positions", state, for_requests, longest);
    }
    const double timeout = input.timeout_seconds > 0 ? input.timeout_seconds : options_.request_timeout_seconds;
    const Clock::time_point deadline =
        timeout > 0 && timeout <= max_wait_seconds
            ? Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout))
            : Clock::time_point::max();
    const int64_t prompt_tokens = sequence.region_begin();

    std::unique_lock lock(mutex_);
    auto shutting_down = [&] { return draining_ || stopping_ || health_ == Health::failed; };
    // A request that finds a free running slot does not count against the queue, even before the
    // scheduler wakes up to admit it: the engine holds max_concurrent + max_queued requests in all.
    auto full = [&] {
        const int64_t free_slots =
            std::max<int64_t>(0, options_.max_concurrent_requests - static_cast<int64_t>(running_.size()));
        return static_cast<int64_t>(queue_.size()) >= options_.max_queued_requests + free_slots;
    };
    if (!shutting_down() && full() && wait_for_room)
        room_.wait_for(lock, std::min(*wait_for_room, std::chrono::duration<double>(max_wait_seconds)),
                       [&] { return shutting_down() || !full(); });
    if (health_ == Health::failed) {
        ++stats_.rejected;
        fail(failure_.first, "the engine failed and takes no new requests: {}", failure_.second);
    }
    if (shutting_down()) {
        ++stats_.rejected;
        fail(Status::shutting_down, "the engine is {} and takes no new requests", health_name(health_));
    }
    if (full()) {
        ++stats_.rejected;
        fail(Status::queue_full, "the queue holds its maximum of {} requests{}", options_.max_queued_requests,
             wait_for_room ? fmt::format(" (still after {} s)", wait_for_room->count()) : std::string());
    }
    auto request = std::make_shared<Request>(next_id_++, std::move(input), std::move(sequence), deadline);
    queue_.push_back(request);
    ++stats_.submitted;
    stats_.prompt_tokens += uint64_t(prompt_tokens);
    lock.unlock();
    wake_.notify_one();
    return request;
}

void Engine::admit(std::unique_lock<std::mutex>&) {
    const ModelSpec& spec = model_.spec();
    while (!queue_.empty() && static_cast<int64_t>(running_.size()) < options_.max_concurrent_requests) {
        const std::shared_ptr<Request>& head = queue_.front();
        const auto length = static_cast<int64_t>(head->sequence_.canvas().size());
        auto memory = try_reserve_sequence(memory_, spec, {length, head->sequence_.memory_options()}, backend_kind_,
                                           fmt::format("request {}", head->id()), options_.devices);
        if (!memory) break;  // first come, first served: the head waits for memory, and so do the others
        head->state_ = std::move(*memory);
        head->admitted_ = Clock::now();
        head->admitted_flag_ = true;
        stats_.queue_time.record(seconds_between(head->submitted_, head->admitted_));
        running_.push_back(head);
        ++stats_.running;
        queue_.pop_front();
        room_.notify_one();
    }
}

void Engine::schedule() {
    std::unique_lock lock(mutex_);
    try {
        for (;;) {
            std::vector<std::pair<std::shared_ptr<Request>, RequestFinish>> ended;
            const auto now = Clock::now();
            for (auto it = queue_.begin(); it != queue_.end();) {
                const auto& r = *it;
                if (stopping_ || r->cancel_requested() || now >= r->deadline_) {
                    ended.emplace_back(r, r->cancel_requested() ? r->requested_end()
                                          : stopping_           ? RequestFinish::cancelled
                                                                : RequestFinish::timeout);
                    it = queue_.erase(it);
                    room_.notify_one();
                } else {
                    ++it;
                }
            }
            if (stopping_) {
                for (auto& r : running_) ended.emplace_back(r, RequestFinish::cancelled);
                running_.clear();
            } else {
                admit(lock);
            }
            if (!ended.empty()) {
                lock.unlock();
                for (auto& [r, finish] : ended) end(r, finish);
                lock.lock();
                continue;
            }
            if ((stopping_ || draining_) && running_.empty() && queue_.empty()) break;
            if (running_.empty()) {
                if (queue_.empty()) wake_.wait(lock);
                else wake_.wait_for(lock, idle_poll);
                continue;
            }
            lock.unlock();
            run_step();
            lock.lock();
            std::erase_if(running_, [](const std::shared_ptr<Request>& r) { return r->finished(); });
        }
        health_ = Health::stopped;
    } catch (const std::exception& e) {
        // Only a lost device should come past run_step: no step can run after it, so every request
        // fails and the engine stays failed (as on any other escape, rather than hang).
        const Status status = dynamic_cast<const DeviceLost*>(&e) != nullptr ? Status::device : Status::internal;
        if (!lock.owns_lock()) lock.lock();
        health_ = Health::failed;
        failure_ = {status, e.what()};
        std::vector<std::shared_ptr<Request>> all(queue_.begin(), queue_.end());
        all.insert(all.end(), running_.begin(), running_.end());
        queue_.clear();
        running_.clear();
        lock.unlock();
        options_.logger.error("the engine failed{}: {}", status == Status::device ? " (its device is lost)" : "", e.what());
        for (auto& r : all) end(r, RequestFinish::error, status, e.what());
        lock.lock();
    }
    lock.unlock();
    room_.notify_all();
    stopped_.notify_all();
}

void Engine::run_step() {
    const auto now = Clock::now();
    std::vector<std::shared_ptr<Request>> active;
    std::vector<DecodeSequence*> sequences;
    std::vector<SequenceState*> states;
    for (const auto& r : running_) {
        if (r->cancel_requested()) end(r, r->requested_end());
        else if (now >= r->deadline_) end(r, RequestFinish::timeout);
        else {
            try {
                // A new request's caches come from its state pool, sized for them at admission.
                r->state_.make_caches(forward_->devices(), model_.spec(), static_cast<int64_t>(r->sequence_.canvas().size()),
                                      r->sequence_.memory_options());
            } catch (const DeviceLost&) {
                throw;  // the engine fails (schedule): no later step could run
            } catch (const Error& e) {
                end(r, RequestFinish::error, e.status(), e.what());
                continue;
            } catch (const std::exception& e) {  // the system refused memory the pool had room for
                end(r, RequestFinish::error, Status::out_of_budget, e.what());
                continue;
            }
            active.push_back(r);
            sequences.push_back(&r->sequence_);
            states.push_back(&r->state_);
        }
    }
    if (active.empty()) return;
    std::vector<GenerationStats> step_stats(active.size());
    auto observe = [&](size_t i, const DecodeSequence& s, int64_t committed) {
        Request& r = *active[i];
        const bool block_completed = s.completed_blocks() > r.blocks_seen_;
        r.blocks_seen_ = s.completed_blocks();
        if (block_completed && !r.first_block_) r.first_block_ = Clock::now();
        if (!r.input_.stream) return true;
        const auto tokens = s.output().subspan(size_t(r.input_.first_output));
        // A step event for every step when asked, then a block event when the step completed one.
        // A callback that throws cancels its own request, not the batch.
        try {
            if (r.input_.stream_steps &&
                !r.input_.stream({r.id(), false, s.steps() - 1, s.completed_blocks(), committed, tokens}))
                return false;
            return !block_completed ||
                   r.input_.stream({r.id(), true, s.steps() - 1, s.completed_blocks(), committed, tokens});
        } catch (const std::exception& e) {
            options_.logger.warn("the stream callback of request {} threw ({}); the request is cancelled", r.id(), e.what());
            return false;
        }
    };
    try {
        step(*forward_, sequences, states, step_stats, observe);
    } catch (const DeviceLost&) {
        throw;
    } catch (const Error& e) {
        options_.logger.error("a step of {} requests failed: {}", active.size(), e.what());
        for (auto& r : active) end(r, RequestFinish::error, e.status(), e.what());
        return;
    } catch (const std::exception& e) {
        options_.logger.error("a step of {} requests failed: {}", active.size(), e.what());
        for (auto& r : active) end(r, RequestFinish::error, Status::internal, e.what());
        return;
    }
    uint64_t steps = 0, forwards = 0;
    for (size_t i = 0; i < active.size(); ++i) {
        Request& r = *active[i];
        r.stats_.steps += step_stats[i].steps;
        r.stats_.forwards += step_stats[i].forwards;
        steps += uint64_t(step_stats[i].steps);
        forwards += uint64_t(step_stats[i].forwards);
    }
    {
        // Counted before any outcome is published, so the stats never lag a finished request.
        std::lock_guard lock(mutex_);
        stats_.steps += steps;
        stats_.forwards += forwards;
    }
    for (auto& r : active)
        if (r->sequence_.finished()) end(r, finish_of(r->sequence_.finish_reason()));
}

void Engine::end(const std::shared_ptr<Request>& request, RequestFinish finish, Status status, std::string error) {
    Request& r = *request;
    if (r.finished()) return;  // only the scheduler ends requests: this check cannot race
    const auto now = Clock::now();
    RequestResult result;
    result.finish = finish;
    result.error_status = status;
    result.error = std::move(error);
    const auto canvas = r.sequence_.output();
    result.tokens.assign(canvas.begin() + r.input_.first_output, canvas.end());
    result.steps = r.stats_.steps;
    result.forwards = r.stats_.forwards;
    const bool admitted = r.admitted_ != Clock::time_point{};
    result.timings.queue = seconds_between(r.submitted_, admitted ? r.admitted_ : now);
    result.timings.compute = admitted ? seconds_between(r.admitted_, now) : 0.0;
    result.timings.first_block = r.first_block_ ? seconds_between(r.submitted_, *r.first_block_) : -1.0;
    result.timings.end_to_end = seconds_between(r.submitted_, now);
    r.state_.release();
    {
        std::lock_guard lock(mutex_);
        if (admitted) --stats_.running;
        ++stats_.finished[static_cast<int>(finish)];
        stats_.end_to_end_time.record(result.timings.end_to_end);
        if (result.timings.first_block >= 0) stats_.first_block_time.record(result.timings.first_block);
        if (finish == RequestFinish::length || finish == RequestFinish::eos)
            stats_.generated_tokens += uint64_t(canvas.size()) - uint64_t(r.sequence_.region_begin());
    }
    r.finish(std::move(result));
}

void Engine::shutdown(ShutdownMode mode, std::chrono::duration<double> timeout) {
    {
        // Set before waiting for another shutdown, so an immediate one overrides a drain in progress.
        std::lock_guard lock(mutex_);
        if (mode == ShutdownMode::immediate) stopping_ = true;
        draining_ = true;
        if (health_ == Health::ready) health_ = Health::draining;
    }
    wake_.notify_all();
    room_.notify_all();
    std::lock_guard serial(shutdown_mutex_);
    if (!scheduler_.joinable()) return;
    if (mode == ShutdownMode::drain) {
        bool drained = false;
        {
            std::unique_lock lock(mutex_);
            drained = stopped_.wait_for(lock, std::min(timeout, std::chrono::duration<double>(max_wait_seconds)), [&] {
                return health_ == Health::stopped || health_ == Health::failed;
            });
            if (!drained) stopping_ = true;
        }
        if (!drained) options_.logger.warn("draining took longer than {} s; cancelling what is left", timeout.count());
    }
    wake_.notify_all();
    scheduler_.join();
}

EngineStats Engine::stats() const {
    std::lock_guard lock(mutex_);
    EngineStats s = stats_;
    s.health = health_;
    s.waiting = static_cast<int64_t>(queue_.size());
    s.memory_capacity = memory_.capacity();
    s.memory_reserved = memory_.reserved();
    s.memory_in_use = memory_.in_use();
    s.memory_peak_in_use = memory_.peak_in_use();
    return s;
}

Health Engine::health() const {
    std::lock_guard lock(mutex_);
    return health_;
}

}  // namespace unmask
