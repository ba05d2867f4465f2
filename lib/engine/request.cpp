#include "engine/request.hpp"

namespace unmask {

const char* finish_name(RequestFinish finish) noexcept {
    switch (finish) {
        case RequestFinish::none: return "none";
        case RequestFinish::length: return "length";
        case RequestFinish::eos: return "eos";
        case RequestFinish::cancelled: return "cancelled";
        case RequestFinish::timeout: return "timeout";
        case RequestFinish::error: return "error";
    }
    return "unknown";
}

Request::Request(uint64_t id, RequestInput input, DecodeSequence sequence, Clock::time_point deadline)
    : id_(id), input_(std::move(input)), sequence_(std::move(sequence)), submitted_(Clock::now()), deadline_(deadline) {}

bool Request::wait(std::optional<std::chrono::duration<double>> timeout) const {
    std::unique_lock lock(mutex_);
    if (!timeout) {
        done_.wait(lock, [&] { return finished_; });
        return true;
    }
    return done_.wait_for(lock, *timeout, [&] { return finished_; });
}

bool Request::finished() const {
    std::lock_guard lock(mutex_);
    return finished_;
}

RequestResult Request::result() const {
    std::lock_guard lock(mutex_);
    if (!finished_) fail(Status::invalid_argument, "request {} has not finished yet", id_);
    return result_;
}

void Request::finish(RequestResult result) {
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;
        result_ = std::move(result);
        finished_ = true;
    }
    done_.notify_all();
}

}  // namespace unmask
