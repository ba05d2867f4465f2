#include "backend/profiled_backend.hpp"

#include <chrono>

namespace unmask {

template <typename Call>
void ProfiledBackend::timed(const char* kind, Call&& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    inner_.synchronize();
    CallTime& time = times_[kind];
    ++time.calls;
    time.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double ProfiledBackend::total_seconds() const noexcept {
    double seconds = 0;
    for (const auto& [kind, time] : times_) seconds += time.seconds;
    return seconds;
}

void ProfiledBackend::copy_to_device(DeviceBuffer& destination, const void* source, size_t bytes) {
    timed("copy_to_device", [&] { inner_.copy_to_device(destination, source, bytes); });
}
void ProfiledBackend::copy_to_host(void* destination, const DeviceBuffer& source, size_t bytes) {
    timed("copy_to_host", [&] { inner_.copy_to_host(destination, source, bytes); });
}
void ProfiledBackend::embedding(const Weight& table, const int32_t* ids, int64_t rows, float* out) {
    timed("embedding", [&] { inner_.embedding(table, ids, rows, out); });
}
void ProfiledBackend::rmsnorm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, const Weight& w, double eps,
                              float* out, int64_t out_stride) {
    timed("rmsnorm", [&] { inner_.rmsnorm(x, rows, dim, x_stride, w, eps, out, out_stride); });
}
void ProfiledBackend::matmul(const float* x, int64_t rows, const Weight& w, const Weight* bias, float* out) {
    timed("matmul", [&] { inner_.matmul(x, rows, w, bias, out); });
}
void ProfiledBackend::matmuls(const float* x, int64_t rows, std::span<const MatmulOutput> outputs) {
    timed("matmuls", [&] { inner_.matmuls(x, rows, outputs); });
}
void ProfiledBackend::rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions,
                           const RopeSpec& rope) {
    timed("rope", [&] { inner_.rope(x, rows, heads, head_dim, positions, rope); });
}
void ProfiledBackend::store(const float* source, int64_t n, kernels::ElementType type, void* destination) {
    timed("store", [&] { inner_.store(source, n, type, destination); });
}
void ProfiledBackend::attention(const float* q, const float* k, const float* v, std::span<const SequenceRows> sequences,
                                const AttentionParams& params, float* out) {
    timed("attention", [&] { inner_.attention(q, k, v, sequences, params, out); });
}
void ProfiledBackend::swiglu(float* gate, const float* up, int64_t n) {
    timed("swiglu", [&] { inner_.swiglu(gate, up, n); });
}
void ProfiledBackend::add(float* x, const float* y, int64_t n) {
    timed("add", [&] { inner_.add(x, y, n); });
}
void ProfiledBackend::zero(float* x, int64_t n) {
    timed("zero", [&] { inner_.zero(x, n); });
}
void ProfiledBackend::add_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, const Weight& w, double eps,
                                  float* out) {
    timed("add_rmsnorm", [&] { inner_.add_rmsnorm(x, y, rows, dim, w, eps, out); });
}
void ProfiledBackend::route(const float* router_logits, int64_t rows, const RouterParams& params, int32_t* experts,
                            float* weights) {
    timed("route", [&] { inner_.route(router_logits, rows, params, experts, weights); });
}
void ProfiledBackend::group_by_expert(const int32_t* experts, const float* weights, int64_t rows, int64_t k,
                                      int64_t expert_count, int32_t* slot_rows, int32_t* token_slots,
                                      float* token_scales, int32_t* offsets) {
    timed("group_by_expert", [&] {
        inner_.group_by_expert(experts, weights, rows, k, expert_count, slot_rows, token_slots, token_scales, offsets);
    });
}
void ProfiledBackend::grouped_matmuls(const float* x, int64_t slots, const int32_t* offsets,
                                      std::span<const GroupedMatmulOutput> outputs) {
    timed("grouped_matmuls", [&] { inner_.grouped_matmuls(x, slots, offsets, outputs); });
}
void ProfiledBackend::unpermute_add(float* x, int64_t rows, int64_t dim, int64_t k, const int32_t* token_slots,
                                    const float* token_scales, const float* y) {
    timed("unpermute_add", [&] { inner_.unpermute_add(x, rows, dim, k, token_slots, token_scales, y); });
}
void ProfiledBackend::gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out) {
    timed("gather_rows", [&] { inner_.gather_rows(x, dim, rows, count, out); });
}
void ProfiledBackend::combine_guidance(float* cond, const float* uncond, double scale, int64_t n) {
    timed("combine_guidance", [&] { inner_.combine_guidance(cond, uncond, scale, n); });
}
void ProfiledBackend::candidates(const float* logits, int64_t rows, int64_t vocab, const uint32_t* positions,
                                 std::span<const CandidateParams* const> params, Candidate* out) {
    timed("candidates", [&] { inner_.candidates(logits, rows, vocab, positions, params, out); });
}
void ProfiledBackend::candidate_peaks(const LogitShare& share, std::span<const CandidateParams* const> params,
                                      CandidatePeaks* out) {
    timed("candidate_peaks", [&] { inner_.candidate_peaks(share, params, out); });
}
void ProfiledBackend::candidate_sums(const LogitShare& share, const uint32_t* positions,
                                     std::span<const CandidateParams* const> params, const CandidatePeaks* peaks,
                                     int devices, CandidateSums* out) {
    timed("candidate_sums", [&] { inner_.candidate_sums(share, positions, params, peaks, devices, out); });
}
void ProfiledBackend::merge_candidates(const CandidatePeaks* peaks, const CandidateSums* sums, int devices,
                                       int64_t rows, int64_t vocab, std::span<const CandidateParams* const> params,
                                       Candidate* out) {
    timed("merge_candidates", [&] { inner_.merge_candidates(peaks, sums, devices, rows, vocab, params, out); });
}

}  // namespace unmask
