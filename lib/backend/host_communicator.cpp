// The host communicator: the ranks are threads of one process sharing a Group. Every collective
// begins with a meeting after each rank has posted its part (then every rank checks the posts,
// reaching the same verdict, and computes its own result reading the others' inputs) and ends
// with one after every rank has computed, so that no rank returns, frees or changes a buffer
// another may still read. The all-reduce, in place, meets once more between the two: each rank
// first sums the segment of its own buffer that no other rank reads, then copies the others'
// sums. Only the first meeting can fail (an aborted group, a rank that does not come); once every
// rank is past it, the computing cannot fail, so the later ones wait for all without a timeout.
#include <algorithm>
#include <condition_variable>
#include <mutex>

#include <fmt/format.h>

#include "backend/communicator.hpp"
#include "core/error.hpp"

namespace unmask {
namespace {

enum class Op { all_reduce_sum, all_gather, reduce_scatter_sum, all_to_all, broadcast, barrier };

const char* op_name(Op op) {
    switch (op) {
        case Op::all_reduce_sum: return "all_reduce_sum";
        case Op::all_gather: return "all_gather";
        case Op::reduce_scatter_sum: return "reduce_scatter_sum";
        case Op::all_to_all: return "all_to_all";
        case Op::broadcast: return "broadcast";
        case Op::barrier: return "barrier";
    }
    return "?";
}

// What one rank brings to a collective. The counts are copied: the checks read only the group's
// memory, so a rank that throws on a mismatch frees nothing the others still read.
struct Post {
    Op op = Op::barrier;
    size_t count = 0;
    int root = 0;
    const float* in = nullptr;
    std::vector<size_t> send_counts = {}, receive_counts = {};
};

class Group {
public:
    Group(int ranks, std::chrono::milliseconds timeout)
        : posts(size_t(ranks)), arrived_(size_t(ranks), false), timeout_(timeout) {}

    std::vector<Post> posts;  // each rank's, written at the first meeting, read between the two

    // The first meeting: posts `post` and returns once every rank has; throws Error(DEVICE) if the
    // group was aborted (before or while waiting) or a rank does not come within the timeout.
    void join(int rank, Post post) {
        std::unique_lock lock(mutex_);
        throw_if_failed();
        posts[size_t(rank)] = std::move(post);
        const Op op = posts[size_t(rank)].op;
        const uint64_t generation = generation_;
        if (arrive(rank)) return;
        const bool met = changed_.wait_for(lock, timeout_, [&] { return generation_ != generation || !failure_.empty(); });
        if (!met) {
            std::string absent;
            for (size_t r = 0; r < arrived_.size(); ++r)
                if (!arrived_[r]) absent += (absent.empty() ? "" : ", ") + std::to_string(r);
            failure_ = fmt::format("rank(s) {} did not join {} within {} ms", absent, op_name(op), timeout_.count());
            changed_.notify_all();
        }
        if (generation_ == generation) throw_if_failed();
    }

    // The second meeting: returns once every rank has finished reading the others' buffers.
    void done(int rank) {
        std::unique_lock lock(mutex_);
        const uint64_t generation = generation_;
        if (arrive(rank)) return;
        changed_.wait(lock, [&] { return generation_ != generation; });
    }

    void abort(int rank, const std::string& reason) noexcept {
        std::lock_guard lock(mutex_);
        if (failure_.empty()) failure_ = fmt::format("rank {} stopped: {}", rank, reason);
        changed_.notify_all();
    }

private:
    // Marks `rank` arrived; true when it was the last, which opens the meeting for all.
    bool arrive(int rank) {
        arrived_[size_t(rank)] = true;
        if (++count_ < int(arrived_.size())) return false;
        count_ = 0;
        std::fill(arrived_.begin(), arrived_.end(), false);
        ++generation_;
        changed_.notify_all();
        return true;
    }

    void throw_if_failed() const {
        if (!failure_.empty()) throw Error(Status::device, "the device group has failed: " + failure_);
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<bool> arrived_;  // at the current meeting
    int count_ = 0;
    uint64_t generation_ = 0;
    std::string failure_;
    std::chrono::milliseconds timeout_;
};

// out[i] = the sum of the posted inputs' [first + i], rank 0 first: the same bits on every rank.
void rank_order_sum(const std::vector<Post>& posts, size_t first, size_t count, float* out) {
    for (size_t i = 0; i < count; ++i) {
        float sum = posts[0].in[first + i];
        for (size_t r = 1; r < posts.size(); ++r) sum += posts[r].in[first + i];
        out[i] = sum;
    }
}

class HostCommunicator final : public Communicator {
public:
    HostCommunicator(std::shared_ptr<Group> group, int rank) : group_(std::move(group)), rank_(rank) {}

    int rank() const noexcept override { return rank_; }
    int size() const noexcept override { return int(group_->posts.size()); }

    // In place, without scratch: rank r sums segment r of every rank's data into its own (no other
    // rank reads that segment of rank r's data), and once all have, copies the other ranks' sums
    // of their segments. Each sum is made once, in rank order: the same bits on every rank.
    void all_reduce_sum(float* data, size_t count) override {
        const auto& posts = start({Op::all_reduce_sum, count, 0, data});
        const auto ranks = posts.size();
        auto segment_begin = [&](size_t r) { return r * count / ranks; };
        const size_t mine = segment_begin(size_t(rank_));
        rank_order_sum(posts, mine, segment_begin(size_t(rank_) + 1) - mine, data + mine);
        group_->done(rank_);  // every segment summed
        for (size_t r = 0; r < ranks; ++r)
            if (r != size_t(rank_))
                std::copy(posts[r].in + segment_begin(r), posts[r].in + segment_begin(r + 1), data + segment_begin(r));
        group_->done(rank_);  // every rank has copied: none may change its data before
    }

    void all_gather(const float* in, size_t count, float* out) override {
        const auto& posts = start({Op::all_gather, count, 0, in});
        for (size_t r = 0; r < posts.size(); ++r) std::copy(posts[r].in, posts[r].in + count, out + r * count);
        group_->done(rank_);
    }

    void reduce_scatter_sum(const float* in, size_t count, float* out) override {
        const auto& posts = start({Op::reduce_scatter_sum, count, 0, in});
        rank_order_sum(posts, size_t(rank_) * count, count, out);
        group_->done(rank_);
    }

    void all_to_all(const float* in, const size_t* send_counts, float* out, const size_t* receive_counts) override {
        const auto& posts = start({Op::all_to_all, 0, 0, in, std::vector<size_t>(send_counts, send_counts + size()),
                                   std::vector<size_t>(receive_counts, receive_counts + size())});
        size_t written = 0;
        for (size_t source = 0; source < posts.size(); ++source) {
            size_t offset = 0;  // where the source's segment for this rank starts in its input
            for (int d = 0; d < rank_; ++d) offset += posts[source].send_counts[d];
            const size_t n = posts[source].send_counts[rank_];
            std::copy(posts[source].in + offset, posts[source].in + offset + n, out + written);
            written += n;
        }
        group_->done(rank_);
    }

    void broadcast(float* data, size_t count, int root) override {
        const auto& posts = start({Op::broadcast, count, root, data});
        if (rank_ != root) std::copy(posts[size_t(root)].in, posts[size_t(root)].in + count, data);
        group_->done(rank_);
    }

    void barrier() override {
        start({Op::barrier});
        group_->done(rank_);  // the others have checked the posts before any rank posts again
    }

    void abort(const std::string& reason) noexcept override { group_->abort(rank_, reason); }

private:
    // Posts this rank's part and meets the others; then every rank checks that all posted the same
    // collective with sizes that fit (each reaches the same verdict, so none waits for another).
    const std::vector<Post>& start(Post post) {
        const Op op = post.op;
        group_->join(rank_, std::move(post));
        const std::vector<Post>& posts = group_->posts;
        if (posts[0].root < 0 || posts[0].root >= size())
            fail(fmt::format("{} from rank {} in a group of {}", op_name(op), posts[0].root, size()));
        for (size_t r = 0; r < posts.size(); ++r) {
            const Post& other = posts[r];
            if (other.op != posts[0].op || other.count != posts[0].count || other.root != posts[0].root)
                fail(fmt::format("rank {} called {} (count {}, root {}) while rank 0 called {} (count {}, root {})", r,
                                 op_name(other.op), other.count, other.root, op_name(posts[0].op), posts[0].count,
                                 posts[0].root));
            if (op != Op::all_to_all) continue;
            for (size_t d = 0; d < posts.size(); ++d)
                if (posts[d].receive_counts[r] != other.send_counts[d])
                    fail(fmt::format("all_to_all: rank {} sends {} values to rank {}, which expects {}", r,
                                     other.send_counts[d], d, posts[d].receive_counts[r]));
        }
        return posts;
    }

    [[noreturn]] void fail(const std::string& message) {
        group_->abort(rank_, message);
        throw Error(Status::internal, "mismatched collectives: " + message);
    }

    std::shared_ptr<Group> group_;
    int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_host_communicators(int ranks, std::chrono::milliseconds timeout) {
    if (ranks < 1) throw Error(Status::invalid_argument, fmt::format("a device group needs at least one rank, got {}", ranks));
    auto group = std::make_shared<Group>(ranks, timeout);
    std::vector<std::unique_ptr<Communicator>> out;
    for (int r = 0; r < ranks; ++r) out.push_back(std::make_unique<HostCommunicator>(group, r));
    return out;
}

}  // namespace unmask
