// Where a forward's time goes, call by call: a Backend that forwards each call to another, waits
// for the device to finish it (Backend::synchronize) and adds the wall time to that kind of call's
// total. The waits cost a few microseconds a call on a GPU (nothing on the CPU, whose calls return
// done) and keep the device from overlapping calls, so the totals add up to more than an
// unprofiled forward takes; their shares are what to read. Work handed to run_replayable is done
// call by call, never recorded or replayed (CUDA graphs), so every call is seen.
#pragma once

#include <map>
#include <string>

#include "backend/backend.hpp"

namespace unmask {

// The calls of one kind (a Backend method: "matmuls", "attention", ...) and their seconds.
struct CallTime {
    int64_t calls = 0;
    double seconds = 0;
};

class ProfiledBackend : public Backend {
public:
    explicit ProfiledBackend(Backend& inner) : inner_(inner) {}

    // Every kind of call made so far, by method name; allocations and workspace reservations are
    // not timed.
    const std::map<std::string, CallTime>& times() const noexcept { return times_; }
    double total_seconds() const noexcept;
    void reset() { times_.clear(); }

    const char* name() const noexcept override { return inner_.name(); }
    BackendKind kind() const noexcept override { return inner_.kind(); }
    DeviceBuffer allocate(size_t bytes) override { return inner_.allocate(bytes); }
    DeviceBuffer allocate_in(MemoryLedger& ledger, size_t bytes) override { return inner_.allocate_in(ledger, bytes); }
    void reserve_workspace(const WorkspaceLimits& limits) override { inner_.reserve_workspace(limits); }
    void copy_to_device(DeviceBuffer& destination, const void* source, size_t bytes) override;
    void copy_to_host(void* destination, const DeviceBuffer& source, size_t bytes) override;
    void synchronize() override { inner_.synchronize(); }
    // Done as it comes, never handed to the inner backend to record or replay.
    void run_replayable(std::span<const int64_t> key, const std::function<void()>& work) override {
        (void)key;
        work();
    }

    void embedding(const Weight& table, const int32_t* ids, int64_t rows, float* out) override;
    void rmsnorm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, const Weight& w, double eps, float* out,
                 int64_t out_stride) override;
    void matmul(const float* x, int64_t rows, const Weight& w, const Weight* bias, float* out) override;
    void matmuls(const float* x, int64_t rows, std::span<const MatmulOutput> outputs) override;
    void rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions,
              const RopeSpec& rope) override;
    void store(const float* source, int64_t n, kernels::ElementType type, void* destination) override;
    void attention(const float* q, const float* k, const float* v, std::span<const SequenceRows> sequences,
                   const AttentionParams& params, float* out) override;
    void swiglu(float* gate, const float* up, int64_t n) override;
    void add(float* x, const float* y, int64_t n) override;
    void zero(float* x, int64_t n) override;
    void add_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, const Weight& w, double eps,
                     float* out) override;
    void route(const float* router_logits, int64_t rows, const RouterParams& params, int32_t* experts,
               float* weights) override;
    void group_by_expert(const int32_t* experts, const float* weights, int64_t rows, int64_t k, int64_t expert_count,
                         int32_t* slot_rows, int32_t* token_slots, float* token_scales, int32_t* offsets) override;
    void grouped_matmuls(const float* x, int64_t slots, const int32_t* offsets,
                         std::span<const GroupedMatmulOutput> outputs) override;
    void unpermute_add(float* x, int64_t rows, int64_t dim, int64_t k, const int32_t* token_slots,
                       const float* token_scales, const float* y) override;
    void gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out) override;
    void combine_guidance(float* cond, const float* uncond, double scale, int64_t n) override;
    void candidates(const float* logits, int64_t rows, int64_t vocab, const uint32_t* positions,
                    std::span<const CandidateParams* const> params, Candidate* out) override;
    bool splits_candidates() const noexcept override { return inner_.splits_candidates(); }
    void candidate_peaks(const LogitShare& share, std::span<const CandidateParams* const> params,
                         CandidatePeaks* out) override;
    void candidate_sums(const LogitShare& share, const uint32_t* positions,
                        std::span<const CandidateParams* const> params, const CandidatePeaks* peaks, int devices,
                        CandidateSums* out) override;
    void merge_candidates(const CandidatePeaks* peaks, const CandidateSums* sums, int devices, int64_t rows,
                          int64_t vocab, std::span<const CandidateParams* const> params, Candidate* out) override;

private:
    // Does `call` on the inner backend, waits for the device and adds the time to `kind`.
    template <typename Call>
    void timed(const char* kind, Call&& call);

    Backend& inner_;
    std::map<std::string, CallTime> times_;
};

}  // namespace unmask
