// A fixed set of worker threads that run `parallel_for` loops. The caller's thread takes part,
// so a pool of N threads has N-1 workers. Owned by whoever sets the thread count (an engine, a
// benchmark), never global. Results never depend on the thread count: each task index computes
// the same thing whichever thread runs it. A thread that waits (a worker for a loop, the caller
// for its loop's last task) spins for a few microseconds before it sleeps: a forward's loops
// follow each other closely, and waking a sleeping thread takes tens of microseconds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace unmask {

class ThreadPool {
public:
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }

    // Inside a task: which of the pool's threads runs it, in [0, size()) (0: the caller), so a
    // task can use per-thread buffers allocated up front.
    static int worker_index() noexcept;

    // Runs task(i) for i in [0, tasks) and returns when all are done; if tasks threw, rethrows the
    // first exception after every task has finished. Not reentrant: a task must not call
    // parallel_for on the same pool.
    void parallel_for(int64_t tasks, const std::function<void(int64_t)>& task);

private:
    void work_loop(int index);
    void run_tasks();
    void stop_workers() noexcept;

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    const std::function<void(int64_t)>* task_ = nullptr;
    int64_t task_count_ = 0;
    int64_t next_task_ = 0;
    // Written under mutex_; read without it while spinning.
    std::atomic<int64_t> finished_tasks_ = 0;
    std::atomic<uint64_t> generation_ = 0;
    std::atomic<bool> stopping_ = false;
    std::exception_ptr failure_;
};

}  // namespace unmask
