#include "core/thread_pool.hpp"

#include <chrono>
#include <system_error>
#include <utility>

#include "core/error.hpp"

namespace unmask {
namespace {
thread_local int current_worker = 0;

// How long a waiting thread spins before it sleeps: about the time a sleeping one takes to wake.
constexpr auto spin_limit = std::chrono::microseconds(50);

// Spins until ready() or spin_limit has passed; whether ready() held.
template <typename Ready>
bool spin_until(const Ready& ready) {
    const auto deadline = std::chrono::steady_clock::now() + spin_limit;
    for (int i = 1;; ++i) {
        if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return false;
    }
}
}  // namespace

int ThreadPool::worker_index() noexcept { return current_worker; }

ThreadPool::ThreadPool(int threads) {
    if (threads < 1 || threads > 1024) fail(Status::invalid_argument, "thread count {} is outside 1..1024", threads);
    try {
        for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work_loop(i); });
    } catch (const std::system_error& e) {
        stop_workers();  // the threads that did start must be joined before the vector goes away
        fail(Status::out_of_budget, "cannot start {} threads: {}", threads, e.what());
    }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() noexcept {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
    workers_.clear();
}

void ThreadPool::run_tasks() {
    std::unique_lock lock(mutex_);
    while (next_task_ < task_count_) {
        const int64_t index = next_task_++;
        const auto* task = task_;
        lock.unlock();
        try {
            (*task)(index);
        } catch (...) {
            // Keep the first failure for the caller; the loop still counts the task as finished
            // so parallel_for never returns while another thread runs a task.
            lock.lock();
            if (!failure_) failure_ = std::current_exception();
            lock.unlock();
        }
        lock.lock();
        if (++finished_tasks_ == task_count_) done_.notify_all();
    }
}

void ThreadPool::work_loop(int index) {
    current_worker = index;
    uint64_t seen = 0;
    for (;;) {
        const auto woken = [&] { return stopping_ || generation_ != seen; };
        spin_until(woken);
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, woken);
            if (stopping_) return;
            seen = generation_;
        }
        run_tasks();
    }
}

void ThreadPool::parallel_for(int64_t tasks, const std::function<void(int64_t)>& task) {
    if (tasks <= 0) return;
    // The caller is worker 0 for the loop's duration (it may be another pool's worker).
    struct CallerIndex {
        int saved = std::exchange(current_worker, 0);
        ~CallerIndex() { current_worker = saved; }
    } caller_index;
    if (workers_.empty() || tasks == 1) {
        for (int64_t i = 0; i < tasks; ++i) task(i);
        return;
    }
    {
        std::lock_guard lock(mutex_);
        task_ = &task;
        task_count_ = tasks;
        next_task_ = 0;
        finished_tasks_ = 0;
        failure_ = nullptr;
        ++generation_;
    }
    wake_.notify_all();
    run_tasks();
    const auto done = [&] { return finished_tasks_ == task_count_; };
    spin_until(done);
    std::unique_lock lock(mutex_);
    done_.wait(lock, done);
    task_ = nullptr;
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

}  // namespace unmask
