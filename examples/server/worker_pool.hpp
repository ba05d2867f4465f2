// The HTTP front's threads for handlers that may block: a fixed number, and as many tasks again
// may wait; beyond, a task is refused (the front answers 503) rather than queued without bound.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace unmask_server::http {

class WorkerPool {
public:
    explicit WorkerPool(size_t threads) : capacity_(2 * std::max<size_t>(1, threads)) {
        for (size_t i = 0; i < std::max<size_t>(1, threads); ++i) threads_.emplace_back([this] { work(); });
    }
    ~WorkerPool() { stop(); }

    bool try_post(std::function<void()> task) {
        std::lock_guard lock(mutex_);
        if (stopping_ || tasks_.size() + running_ >= capacity_) return false;
        tasks_.push_back(std::move(task));
        changed_.notify_one();
        return true;
    }
    // Runs what was posted, then joins.
    void stop() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
            changed_.notify_all();
        }
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }

private:
    void work() {
        std::unique_lock lock(mutex_);
        for (;;) {
            changed_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
            if (tasks_.empty()) return;
            auto task = std::move(tasks_.front());
            tasks_.pop_front();
            ++running_;
            lock.unlock();
            task();
            task = nullptr;
            lock.lock();
            --running_;
        }
    }

    const size_t capacity_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::function<void()>> tasks_;
    size_t running_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace unmask_server::http
