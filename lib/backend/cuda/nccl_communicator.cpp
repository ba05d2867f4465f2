#include "backend/cuda/nccl_communicator.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>

#include <cuda_runtime.h>
#if UNMASK_WITH_NCCL
#include <nccl.h>
#endif

#include "backend/cuda/cuda_runtime_info.hpp"
#include "core/error.hpp"

namespace unmask {

std::vector<size_t> segment_offsets(std::span<const size_t> counts) {
    std::vector<size_t> offsets(counts.size());
    size_t offset = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        offsets[i] = offset;
        offset += counts[i];
    }
    return offsets;
}

namespace {

void check_devices(std::span<const int> devices, std::span<void* const> streams) {
    if (devices.empty()) fail(Status::invalid_argument, "a device group needs at least one device");
    if (streams.size() != devices.size())
        fail(Status::invalid_argument, "{} streams for {} devices", streams.size(), devices.size());
    const int available = cuda::device_count();
    for (size_t r = 0; r < devices.size(); ++r) {
        if (devices[r] < 0 || devices[r] >= available)
            fail(Status::device, "GPU {} (rank {}) does not exist: this machine has {} CUDA device{}", devices[r], r,
                 available, available == 1 ? "" : "s");
        if (std::find(devices.begin(), devices.begin() + long(r), devices[r]) != devices.begin() + long(r))
            fail(Status::invalid_argument, "GPU {} is listed twice in the device group", devices[r]);
    }
}

#if UNMASK_WITH_NCCL

// What the ranks of one group share: their communicators, whether the group was aborted and the
// first failure's reason. Each communicator is used, aborted and freed by its own rank's thread
// only (NCCL does not allow two threads on one communicator), or by the group's destructor.
struct NcclGroup {
    std::vector<ncclComm_t> comms;  // null once its rank aborted it
    std::mutex mutex;
    std::string failure;  // empty: none
    std::atomic<bool> aborted{false};

    ~NcclGroup() {
        for (ncclComm_t comm : comms)
            if (comm != nullptr) ncclCommDestroy(comm);
    }
};

class NcclCommunicator final : public Communicator {
public:
    NcclCommunicator(std::shared_ptr<NcclGroup> group, int rank, int device, cudaStream_t stream)
        : group_(std::move(group)), rank_(rank), device_(device), stream_(stream) {
        if (cudaSetDevice(device_) != cudaSuccess || cudaMalloc(&token_, sizeof(float)) != cudaSuccess ||
            cudaMemset(token_, 0, sizeof(float)) != cudaSuccess)
            fail(Status::device, "GPU {} (rank {}) refused the 4 bytes of its barrier", device_, rank_);
    }
    ~NcclCommunicator() override {
        cudaSetDevice(device_);
        cudaFree(token_);
    }
    NcclCommunicator(const NcclCommunicator&) = delete;
    NcclCommunicator& operator=(const NcclCommunicator&) = delete;

    int rank() const noexcept override { return rank_; }
    int size() const noexcept override { return int(group_->comms.size()); }

    void all_reduce_sum(float* data, size_t count) override {
        enqueue("all_reduce_sum", [&] { return ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm(), stream_); });
    }
    void all_gather(const float* in, size_t count, float* out) override {
        enqueue("all_gather", [&] { return ncclAllGather(in, out, count, ncclFloat, comm(), stream_); });
    }
    void reduce_scatter_sum(const float* in, size_t count, float* out) override {
        enqueue("reduce_scatter_sum",
                [&] { return ncclReduceScatter(in, out, count, ncclFloat, ncclSum, comm(), stream_); });
    }
    void all_to_all(const float* in, const size_t* send_counts, float* out, const size_t* receive_counts) override {
        const std::span sends(send_counts, size_t(size())), receives(receive_counts, size_t(size()));
        const std::vector<size_t> send_at = segment_offsets(sends), receive_at = segment_offsets(receives);
        enqueue("all_to_all", [&] {
            ncclResult_t result = ncclGroupStart();
            for (int peer = 0; peer < size() && result == ncclSuccess; ++peer) {
                if (sends[size_t(peer)] > 0)
                    result = ncclSend(in + send_at[size_t(peer)], sends[size_t(peer)], ncclFloat, peer, comm(), stream_);
                if (result == ncclSuccess && receives[size_t(peer)] > 0)
                    result = ncclRecv(out + receive_at[size_t(peer)], receives[size_t(peer)], ncclFloat, peer, comm(),
                                      stream_);
            }
            const ncclResult_t ended = ncclGroupEnd();
            return result != ncclSuccess ? result : ended;
        });
    }
    void broadcast(float* data, size_t count, int root) override {
        if (root < 0 || root >= size())
            fail(Status::internal, "mismatched collectives: broadcast from rank {} in a group of {}", root, size());
        enqueue("broadcast", [&] { return ncclBroadcast(data, data, count, ncclFloat, root, comm(), stream_); });
    }
    void barrier() override {
        // An all-reduce of one value orders the ranks' streams; waiting for it orders their hosts.
        enqueue("barrier", [&] { return ncclAllReduce(token_, token_, 1, ncclFloat, ncclSum, comm(), stream_); });
        if (const cudaError_t error = cudaStreamSynchronize(stream_); error != cudaSuccess)
            failed_on_device("barrier", cudaGetErrorString(error));
    }

    // From this rank's thread: the group is marked aborted and this rank's communicator aborted;
    // each other rank aborts its own at its next call.
    void abort(const std::string& reason) noexcept override {
        NcclGroup& group = *group_;
        {
            std::lock_guard lock(group.mutex);
            if (group.failure.empty()) group.failure = "rank " + std::to_string(rank_) + " (GPU " +
                                                       std::to_string(device_) + ") failed: " + reason;
        }
        group.aborted = true;
        abort_own();
    }

private:
    ncclComm_t comm() const noexcept { return group_->comms[size_t(rank_)]; }

    void abort_own() noexcept {
        if (comm() == nullptr) return;
        ncclCommAbort(comm());
        group_->comms[size_t(rank_)] = nullptr;
    }

    template <typename Call>
    void enqueue(const char* what, Call&& call) {
        throw_if_aborted();
        if (const cudaError_t error = cudaSetDevice(device_); error != cudaSuccess)
            failed_on_device(what, cudaGetErrorString(error));
        if (const ncclResult_t result = call(); result != ncclSuccess) failed_on_device(what, ncclGetErrorString(result));
    }

    void throw_if_aborted() {
        if (!group_->aborted.load()) return;
        abort_own();
        std::lock_guard lock(group_->mutex);
        throw Error(Status::device, "the device group was aborted: " + group_->failure);
    }

    [[noreturn]] void failed_on_device(const char* what, const char* why) {
        const std::string message = fmt::format("NCCL {} on GPU {} (rank {}): {}", what, device_, rank_, why);
        abort(message);
        throw Error(Status::device, message);
    }

    std::shared_ptr<NcclGroup> group_;
    int rank_, device_;
    cudaStream_t stream_;
    float* token_ = nullptr;  // the barrier's value, on the device
};

#endif

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(std::span<const int> devices,
                                                                   std::span<void* const> streams) {
    check_devices(devices, streams);
#if UNMASK_WITH_NCCL
    auto group = std::make_shared<NcclGroup>();
    group->comms.resize(devices.size());
    if (const ncclResult_t result = ncclCommInitAll(group->comms.data(), int(devices.size()), devices.data());
        result != ncclSuccess) {
        std::fill(group->comms.begin(), group->comms.end(), nullptr);  // nothing to destroy
        fail(Status::device, "NCCL could not make a group of {} GPUs: {}", devices.size(), ncclGetErrorString(result));
    }
    std::vector<std::unique_ptr<Communicator>> out;
    for (size_t r = 0; r < devices.size(); ++r)
        out.push_back(std::make_unique<NcclCommunicator>(group, int(r), devices[r], static_cast<cudaStream_t>(streams[r])));
    return out;
#else
    fail(Status::unsupported, "this build has no NCCL: configure with -DUNMASK_NCCL=ON (needs UNMASK_CUDA)");
#endif
}

}  // namespace unmask
