#include "backend/cuda/cuda_backend.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda/cublaslt_matmul.hpp"
#include "backend/cuda/device_loss.hpp"
#include "backend/replay_cache.hpp"
#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "cuda/alignment.hpp"
#include "cuda/attention.hpp"
#include "cuda/candidate_rows.hpp"
#include "cuda/candidates.hpp"
#include "cuda/grouped_matmul.hpp"
#include "cuda/moe.hpp"
#include "cuda/query_tiles.hpp"
#include "cuda/ops.hpp"
#include "format/dtype.hpp"
#include "fp8_tiles.hpp"

namespace unmask {
namespace {

namespace k = kernels::cuda;

static_assert(sizeof(k::AttentionSequence) == CudaWorkspace::attention_sequence_bytes);
static_assert(k::attention_max_splits == CudaWorkspace::attention_max_splits);
static_assert(sizeof(k::CandidateRow) == CudaWorkspace::candidate_row_bytes);

void check(cudaError_t error, const char* what) {
    if (error == cudaSuccess) return;
    cudaGetLastError();  // clear a non-sticky error, or the next launch's check would report it again
    if (cuda::corrupts_context(error)) {
        int device = -1;
        const std::string reason = fmt::format("CUDA {} failed: {}", what, cudaGetErrorString(error));
        if (cudaGetDevice(&device) == cudaSuccess) cuda::mark_device_lost(device, reason);
        throw DeviceLost(fmt::format("GPU {} is lost ({}); this process can no longer use it", device, reason));
    }
    fail(Status::device, "CUDA {} failed: {}", what, cudaGetErrorString(error));
}

// An allocation's error: OUT_OF_BUDGET when the memory was refused, else DEVICE.
void check_allocation(cudaError_t error, const char* what, uint64_t bytes) {
    if (error == cudaSuccess) return;
    cudaGetLastError();  // not sticky: clear it
    if (error == cudaErrorMemoryAllocation) fail(Status::out_of_budget, "{} of {} bytes was refused", what, bytes);
    check(error, fmt::format("{} of {} bytes", what, bytes).c_str());
}

// Makes `device` the calling thread's current device (cudaSetDevice only when it is not: every
// call of a backend comes here, and the check costs less).
void select_device(int device) {
    if (const auto reason = cuda::device_lost(device))
        throw DeviceLost(fmt::format("GPU {} was lost earlier ({}); this process can no longer use it", device, *reason));
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == device) return;
    check(cudaSetDevice(device), "cudaSetDevice");
}

// Thrown while a CUDA graph is captured by a call that cannot be captured: the capture is
// abandoned and the work runs as it comes. `retry`: the next capture of the same work may succeed
// (a staging buffer had to grow, which running the work does).
struct CaptureRefused {
    bool retry = false;
};

// Frees device memory of `device` from any thread: on that device (a thread that never chose
// one would otherwise free it from device 0's context, making that context if it has none), the
// thread's own device restored after.
void free_on(int device, void* memory) {
    int current = -1;
    const bool switched = cudaGetDevice(&current) != cudaSuccess || current != device;
    if (switched) cudaSetDevice(device);
    cudaFree(memory);
    if (switched && current >= 0) cudaSetDevice(current);
}

// `bytes` of device memory on the current device, charged to `ledger` (if any) while the buffer
// lives.
DeviceBuffer device_allocate(MemoryLedger* ledger, size_t bytes, std::shared_ptr<MemoryLedger> keep = nullptr) {
    const uint64_t size = allocation_bytes(bytes);
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    if (ledger != nullptr) ledger->charge(size, "device memory");
    void* memory = nullptr;
    const cudaError_t e = cudaMalloc(&memory, size);
    if (e != cudaSuccess && ledger != nullptr) ledger->discharge(size);
    check_allocation(e, "cudaMalloc", size);
    return DeviceBuffer(std::shared_ptr<void>(memory, [ledger, keep, size, device](void* p) {
                            free_on(device, p);
                            if (ledger != nullptr) ledger->discharge(size);
                        }),
                        bytes);
}

// Host -> device copies through a ring of pinned buffers: the caller's memory may go as soon as a
// call returns (a copy from pageable memory promises no such thing), and the host waits only for
// the copy `slots` uploads back, long done in practice. A copy larger than a slot's most goes in
// pieces, so the ring never holds more than slots x max_slot_bytes of pinned memory (32 MiB).
class UploadRing {
public:
    UploadRing() {
        try {
            for (Slot& slot : slots_)
                check(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming), "cudaEventCreate");
        } catch (...) {
            release();
            throw;
        }
    }
    ~UploadRing() { release(); }
    UploadRing(const UploadRing&) = delete;
    UploadRing& operator=(const UploadRing&) = delete;

    static constexpr size_t max_slot_bytes = size_t(4) << 20;

    void copy(void* destination, const void* source, size_t bytes, cudaStream_t stream) {
        for (size_t done = 0; done < bytes;) {
            const size_t piece = std::min(bytes - done, max_slot_bytes);
            Slot& slot = slots_[next_++ % slots_.size()];
            check(cudaEventSynchronize(slot.done), "an earlier copy to the device");
            if (slot.bytes < piece) {
                if (slot.buffer != nullptr) cudaFreeHost(slot.buffer);
                slot.buffer = nullptr;
                slot.bytes = 0;
                check_allocation(cudaMallocHost(&slot.buffer, piece), "cudaMallocHost", piece);
                slot.bytes = piece;
            }
            std::memcpy(slot.buffer, static_cast<const char*>(source) + done, piece);
            check(cudaMemcpyAsync(static_cast<char*>(destination) + done, slot.buffer, piece, cudaMemcpyHostToDevice,
                                  stream),
                  "copy to device");
            check(cudaEventRecord(slot.done, stream), "cudaEventRecord");
            done += piece;
        }
    }

private:
    struct Slot {
        void* buffer = nullptr;
        size_t bytes = 0;
        cudaEvent_t done = nullptr;
    };
    void release() noexcept {
        for (Slot& slot : slots_) {
            if (slot.done == nullptr) continue;
            cudaEventSynchronize(slot.done);
            if (slot.buffer != nullptr) cudaFreeHost(slot.buffer);
            cudaEventDestroy(slot.done);
        }
    }
    std::array<Slot, 8> slots_;
    size_t next_ = 0;
};

// Host memory the device copies into directly (a copy to pageable memory goes through a staging
// buffer of the driver's, and waits for it), grown as needed and kept.
class PinnedHostBuffer {
public:
    PinnedHostBuffer() = default;
    ~PinnedHostBuffer() {
        if (memory_ != nullptr) cudaFreeHost(memory_);
    }
    PinnedHostBuffer(const PinnedHostBuffer&) = delete;
    PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

    void* at_least(size_t bytes) {
        if (bytes <= bytes_) return memory_;
        if (memory_ != nullptr) cudaFreeHost(memory_);
        memory_ = nullptr;
        bytes_ = 0;
        check_allocation(cudaMallocHost(&memory_, bytes), "cudaMallocHost", bytes);
        bytes_ = bytes;
        return memory_;
    }

private:
    void* memory_ = nullptr;
    size_t bytes_ = 0;
};

class CudaBackend final : public Backend {
public:
    CudaBackend(std::shared_ptr<const CudaWeights> weights, std::shared_ptr<MemoryLedger> memory,
                const CudaBackendOptions& options)
        : weights_(std::move(weights)), memory_(std::move(memory)), device_(weights_->device()),
          replays_(options.graphs ? CudaWorkspace::graph_slots : 0) {
        select_device(device_);
        check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        try {
            uploads_ = std::make_unique<UploadRing>();
            matmul_workspace_ = allocate(CudaWorkspace::matmul_bytes);
            matmul_ = std::make_unique<cuda::CublasLtMatmul>(matmul_workspace_.floats(), CudaWorkspace::matmul_bytes);
        } catch (...) {
            cudaStreamDestroy(stream_);
            throw;
        }
    }
    ~CudaBackend() override {
        cudaSetDevice(device_);
        cudaStreamSynchronize(stream_);
        drop_graphs();
        matmul_.reset();
        uploads_.reset();
        cudaStreamDestroy(stream_);
    }

    const char* name() const noexcept override { return "cuda"; }
    BackendKind kind() const noexcept override { return BackendKind::cuda; }

    DeviceBuffer allocate(size_t bytes) override {
        not_while_capturing();
        begin();
        return device_allocate(memory_.get(), bytes, memory_);
    }
    DeviceBuffer allocate_in(MemoryLedger& ledger, size_t bytes) override {
        not_while_capturing();
        begin();
        return device_allocate(&ledger, bytes, &ledger == memory_.get() ? memory_ : nullptr);
    }
    // Sizes the staging buffers up front (cuda_workspace_bytes), so planned forwards allocate nothing.
    void reserve_workspace(const WorkspaceLimits& limits) override {
        const CudaWorkspace w = cuda_workspace(limits);
        staging(rounded_, w.rounded);
        staging(attention_sequences_, w.attention);
        staging(attention_partials_, w.attention_partials);
        staging(candidate_io_, w.candidates);
        staging(routing_, w.routing);
        if (w.routing_fault > 0) routing_fault();
        if (expert_tables_.bytes() < w.expert_tables) {  // the tables in the old region go with it
            std::erase_if(expert_tables_by_first_, [](const auto& entry) { return entry.second.own.bytes() == 0; });
            expert_tables_used_ = 0;
            staging(expert_tables_, w.expert_tables);
        }
        if (replays_.slots() > 0) staging(graph_constants_, w.graphs);
    }

    // CUDA graphs: a key's work is captured the second time it comes (ReplayCache) and launched
    // as one graph from then on. Its attention descriptors go into the graph's own share of the
    // constants (the upload ring's pinned slots are reused). A call that cannot be captured (a
    // synchronisation, more descriptors than the largest share holds) abandons the capture and that
    // key runs as it comes; a capture broken by something that may not happen again (a staging
    // buffer or the constants' share that had to grow, another thread's device-wide
    // synchronisation) is tried again the next time, up to ReplayCache's attempts.
    void run_replayable(std::span<const int64_t> key, const std::function<void()>& work) override {
        if (capture_ || replays_.slots() == 0) return work();
        char* constants = graph_constants();
        const ReplayCache::Decision decision = replays_.decide(key);
        if (decision.action == ReplayCache::Action::run) return work();
        begin();
        cudaGraphExec_t& graph = graphs_.at(decision.slot);
        if (decision.action == ReplayCache::Action::record) {
            // The slot's old graph stays until the new one is made (its constants are rewritten
            // only then, after its launches on the stream).
            bool retry = false;
            cudaGraphExec_t made = nullptr;
            try {
                made = capture(constants + decision.slot * graph_share_, work, retry);
            } catch (...) {
                replays_.abandon(decision.slot);
                throw;
            }
            if (made == nullptr) {
                if (retry) replays_.abandon(decision.slot);
                else replays_.refuse(decision.slot);
                ++graph_stats_.refused;
                return work();
            }
            if (graph != nullptr) cudaGraphExecDestroy(graph);  // one still running is freed when it ends
            graph = made;
            replays_.recorded(decision.slot);
            ++graph_stats_.recorded;
        } else {
            ++graph_stats_.replayed;
        }
        check(cudaGraphLaunch(graph, stream_), "cudaGraphLaunch");
    }

    CudaGraphStats graph_stats() const noexcept { return graph_stats_; }

    void copy_to_device(DeviceBuffer& destination, const void* source, size_t bytes) override {
        check_copy_bytes(bytes, destination);
        not_while_capturing();
        begin();
        uploads_->copy(destination.floats(), source, bytes, stream_);
    }
    void copy_to_host(void* destination, const DeviceBuffer& source, size_t bytes) override {
        check_copy_bytes(bytes, source);
        not_while_capturing();
        begin();
        check(cudaMemcpyAsync(destination, source.floats(), bytes, cudaMemcpyDeviceToHost, stream_), "copy to host");
        synchronize();
    }
    // Waits for the stream's work; a bad routing table it met is then Error(INTERNAL) (and the
    // flag is cleared for the work after).
    void synchronize() override {
        not_while_capturing();
        begin();
        int32_t fault = 0;
        if (routing_fault_.bytes() > 0)
            check(cudaMemcpyAsync(&fault, routing_fault_.ints(), sizeof fault, cudaMemcpyDeviceToHost, stream_),
                  "copy of the routing flag");
        check(cudaStreamSynchronize(stream_), "the device's work");
        if (fault != 0) {
            check(cudaMemsetAsync(routing_fault_.ints(), 0, sizeof(int32_t), stream_), "cudaMemset");
            fail(Status::internal, "a routing table named an expert out of range, or one expert twice for a token");
        }
    }

    void embedding(const Weight& table, const int32_t* ids, int64_t rows, float* out) override {
        begin();
        check(k::embedding(view(table), table.shape.at(1), ids, rows, out, stream_), "embedding");
    }
    void rmsnorm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, const Weight& w, double eps, float* out,
                 int64_t out_stride) override {
        begin();
        // In place it is a per-head norm of q or k (attention reads them), or the final norm of the
        // few output rows: a copy for a matmul only out of place.
        const k::Rounded rounded = rounding_for(rows * dim, out_stride == dim && out != x);
        check(k::rmsnorm(x, rows, dim, x_stride, view(w), eps, out, out_stride, stream_, rounded), "rmsnorm");
        remember_rounded(out, rows * dim, rounded);
    }
    void matmul(const float* x, int64_t rows, const Weight& w, const Weight* bias, float* out) override {
        const Consuming consuming(*this);
        const MatmulJob job{&w, bias, out, 0, rows};
        MatmulInput input{x, rows, w.shape.at(1)};
        run_matmuls(input, std::span(&job, 1));
    }
    void matmuls(const float* x, int64_t rows, std::span<const MatmulOutput> outputs) override {
        const Consuming consuming(*this);
        if (outputs.empty()) return;
        std::vector<MatmulJob> jobs;
        for (const MatmulOutput& o : outputs) jobs.push_back({o.weight, o.bias, o.out, 0, rows});
        MatmulInput input{x, rows, outputs.front().weight->shape.at(1)};
        run_matmuls(input, jobs);
    }
    // The rows rounded once for every group, and one launch per output that reads the offsets on
    // the device (no synchronisation: the step can be a CUDA graph): for a decoding step's few
    // slots per group (32 tokens choosing 8 of 64 experts make 4 on average; up to max_few_rows),
    // the few-row kernel; for more, the tensor-core kernel (bf16/fp16 weights, k a multiple of 8).
    // Other weights with more slots: the offsets come to the host (once per grouping), groups of
    // more than max_few_rows rows go to cuBLASLt, the others to the few-row kernel.
    void grouped_matmuls(const float* x, int64_t slots, const int32_t* offsets,
                         std::span<const GroupedMatmulOutput> outputs) override {
        const int64_t groups = grouped_matmul_groups(outputs);
        if (groups == 0 || slots == 0) return;
        for (const GroupedMatmulOutput& o : outputs)
            if (std::ranges::find(o.weights, nullptr) != o.weights.end())
                fail(Status::unsupported, "grouped matmuls over another device's experts (expert parallelism) are "
                     "not built for CUDA");
        select_device(device_);
        const Consuming consuming(*this);
        MatmulInput input{x, slots, outputs.front().weights.front()->shape.at(1)};
        std::vector<const ExpertTable*> tables;
        bool kernel = input.inner > 0 && groups <= 65535 && slots <= INT32_MAX;
        for (const GroupedMatmulOutput& o : outputs) {
            tables.push_back(&expert_table(o.weights));
            kernel = kernel && tables.back()->uniform && o.weights.front()->shape.at(1) == input.inner;
        }
        auto launch = [&](bool every_group) {
            for (size_t o = 0; o < outputs.size(); ++o) {
                const ExpertTable& t = *tables[o];
                check(k::few_row_grouped_matmul(input_for(input, t.dtype), t.pointers, offsets, groups,
                                                element_type(t.dtype), outputs[o].weights.front()->shape.at(0),
                                                input.inner, t.aligned, every_group, outputs[o].out, stream_),
                      "grouped matmul");
            }
        };
        if (kernel && k::few_rows_on_average(slots, groups)) return launch(true);
        const auto on_tensor_cores = [&](const ExpertTable* t) {
            return t->aligned && k::grouped_matmul_on_tensor_cores(element_type(t->dtype), slots, groups, input.inner);
        };
        if (kernel && std::ranges::all_of(tables, on_tensor_cores)) {
            for (size_t o = 0; o < outputs.size(); ++o) {
                const ExpertTable& t = *tables[o];
                check(k::grouped_matmul_tensor_cores(input_for(input, t.dtype), slots, t.pointers, offsets, groups,
                                                     element_type(t.dtype), outputs[o].weights.front()->shape.at(0),
                                                     input.inner, outputs[o].out, stream_),
                      "grouped matmul on tensor cores");
            }
            return;
        }

        not_while_capturing();
        const std::vector<int32_t>& host = host_offsets(offsets, groups);
        std::vector<MatmulJob> jobs;
        bool few = false;
        for (int64_t e = 0; e < groups; ++e) {
            const int64_t first = host[size_t(e)], rows = host[size_t(e) + 1] - first;
            check_group_rows(e, first, rows, slots);
            if (rows == 0) continue;
            if (kernel && rows <= k::max_few_rows) {
                few = true;
                continue;
            }
            for (const GroupedMatmulOutput& o : outputs) {
                const Weight* w = o.weights[size_t(e)];
                jobs.push_back({w, nullptr, o.out + first * w->shape.at(0), first, rows});
            }
        }
        run_matmuls(input, jobs);
        if (few) launch(false);
    }
    void rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions,
              const RopeSpec& rope) override {
        begin();
        check(k::rope(x, rows, heads, head_dim, positions, rope.theta, rope.rotary_dims, rope.interleaved, stream_),
              "rope");
    }
    void store(const float* source, int64_t n, k::ElementType type, void* destination) override {
        begin();
        if (type == k::ElementType::f32)
            check(cudaMemcpyAsync(destination, source, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
                  "store");
        else
            check(k::round_to(source, n, type, destination, stream_), "store");
    }
    void attention(const float* q, const float* kv_k, const float* v, std::span<const SequenceRows> sequences,
                   const AttentionParams& params, float* out) override {
        begin();
        if (params.head_dim > k::max_attention_head_dim)
            fail(Status::unsupported, "the CUDA attention kernel takes heads of up to {} dimensions, not {}",
                 k::max_attention_head_dim, params.head_dim);
        std::vector<k::AttentionSequence> rows;
        int64_t tokens = 0;
        using k::on_16_bytes;
        bool aligned = on_16_bytes(q) && on_16_bytes(kv_k) && on_16_bytes(v);  // the tensor-core kernel's loads
        for (const SequenceRows& seq : sequences) {
            if (seq.rows == 0) continue;  // no queries: nothing to write
            if (seq.first_row < tokens) fail(Status::internal, "attention sequences overlap or are out of row order");
            aligned = aligned && on_16_bytes(seq.cached_keys) && on_16_bytes(seq.cached_values);
            rows.push_back({seq.first_row, seq.rows, seq.cached_keys, seq.cached_values, seq.key_count,
                            seq.query_position, seq.block_origin, 0, seq.cached_type});
            tokens = seq.first_row + seq.rows;
        }
        if (rows.empty()) return;
        const int64_t tiles = k::number_query_tiles(rows.data(), static_cast<int64_t>(rows.size()));
        // Room for the partial softmaxes of sequences whose keys are split across blocks.
        float* partials = nullptr;
        if (std::ranges::any_of(rows, [](const k::AttentionSequence& s) { return k::key_splits(s) > 1; }))
            partials = static_cast<float*>(staging(
                attention_partials_,
                size_t(k::attention_partial_floats(tokens, params.heads, params.head_dim)) * sizeof(float)));
        const void* device_rows =
            upload_parameters(attention_sequences_, rows.data(), rows.size() * sizeof(k::AttentionSequence));
        const k::AttentionDims dims{params.heads, params.kv_heads, params.head_dim, params.block_size};
        const auto* described = static_cast<const k::AttentionSequence*>(device_rows);
        const auto count = static_cast<int64_t>(rows.size());
        if (params.bf16_products && k::attention_on_tensor_cores(params.head_dim) && aligned) {
            check(k::attention_tensor_cores(q, kv_k, v, described, count, tiles, dims, out, partials, stream_),
                  "attention");
            return;
        }
        check(k::attention(q, kv_k, v, described, count, tiles, dims, out, partials, stream_), "attention");
    }
    void swiglu(float* gate, const float* up, int64_t n) override {
        begin();
        const k::Rounded rounded = rounding_for(n, true);
        check(k::swiglu(gate, up, n, stream_, rounded), "swiglu");
        remember_rounded(gate, n, rounded);
    }
    void add(float* x, const float* y, int64_t n) override {
        begin();
        check(k::add(x, y, n, stream_), "add");
    }
    void zero(float* x, int64_t n) override {
        begin();
        check(cudaMemsetAsync(x, 0, size_t(n) * sizeof(float), stream_), "zero");
    }
    void add_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, const Weight& w, double eps,
                     float* out) override {
        begin();
        const k::Rounded rounded = rounding_for(rows * dim, true);
        check(k::add_rmsnorm(x, y, rows, dim, view(w), eps, out, stream_, rounded), "add_rmsnorm");
        remember_rounded(out, rows * dim, rounded);
    }
    void route(const float* router_logits, int64_t rows, const RouterParams& params, int32_t* experts,
               float* weights) override {
        begin();
        if (params.experts > k::max_route_experts || params.experts_per_token > k::max_experts_per_token)
            fail(Status::unsupported, "the CUDA router takes up to {} experts and {} per token, not {} and {}",
                 k::max_route_experts, k::max_experts_per_token, params.experts, params.experts_per_token);
        const k::RouteParams p =
            params.with_bias(params.expert_bias != nullptr ? view(*params.expert_bias) : k::WeightView{});
        check(k::route(router_logits, rows, p, experts, weights, stream_), "route");
    }
    // Nothing comes to the host: a routing table route could not have made (an expert out of
    // range, or twice for a token) sets the device's flag, which the next synchronisation reports.
    void group_by_expert(const int32_t* experts, const float* weights, int64_t rows, int64_t per_token,
                         int64_t expert_count, int32_t* slot_rows, int32_t* token_slots, float* token_scales,
                         int32_t* offsets) override {
        begin();
        int32_t* fault = routing_fault();
        ++groupings_;
        auto* counts = static_cast<int32_t*>(staging(routing_, size_t(expert_count) * sizeof(int32_t)));
        check(k::group_by_expert(experts, weights, rows, per_token, expert_count, counts, offsets, fault, slot_rows,
                                 token_slots, token_scales, stream_),
              "group_by_expert");
    }
    void unpermute_add(float* x, int64_t rows, int64_t dim, int64_t per_token, const int32_t* token_slots,
                       const float* token_scales, const float* y) override {
        begin();
        check(k::unpermute_add(x, rows, dim, per_token, token_slots, token_scales, y, stream_), "unpermute_add");
    }
    void gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out) override {
        begin();
        check(k::gather_rows(x, dim, rows, count, out, stream_), "gather_rows");
    }
    void combine_guidance(float* cond, const float* uncond, double scale, int64_t n) override {
        begin();
        check(k::combine_guidance(cond, uncond, static_cast<float>(scale + 1.0), n, stream_), "combine_guidance");
    }
    void candidates(const float* logits, int64_t rows, int64_t vocab, const uint32_t* positions,
                    std::span<const CandidateParams* const> params, Candidate* out) override {
        not_while_capturing();
        begin();
        if (rows == 0) return;
        std::vector<k::CandidateRow> flat(static_cast<size_t>(rows));
        std::vector<int32_t> banned;
        for (int64_t r = 0; r < rows; ++r) {
            const CandidateParams& p = *params[size_t(r)];
            flat[size_t(r)] = k::candidate_row(p, positions[r], static_cast<int32_t>(banned.size()));
            banned.insert(banned.end(), p.banned_tokens.begin(), p.banned_tokens.end());
        }
        if (banned.empty()) banned.push_back(-1);
        const size_t params_bytes = flat.size() * sizeof(k::CandidateRow), banned_bytes = banned.size() * sizeof(int32_t);
        const size_t out_bytes = size_t(rows) * sizeof(Candidate);
        auto* staged = static_cast<char*>(staging(candidate_io_, params_bytes + banned_bytes + out_bytes));
        uploads_->copy(staged, flat.data(), params_bytes, stream_);
        uploads_->copy(staged + params_bytes, banned.data(), banned_bytes, stream_);
        auto* device_out = reinterpret_cast<Candidate*>(staged + params_bytes + banned_bytes);
        static const k::GumbelRange gumbel = k::gumbel_range();
        check(k::candidates(logits, rows, vocab, reinterpret_cast<const k::CandidateRow*>(staged),
                            reinterpret_cast<const int32_t*>(staged + params_bytes), gumbel, device_out, stream_),
              "candidates");
        void* results = pinned_results_.at_least(out_bytes);
        check(cudaMemcpyAsync(results, device_out, out_bytes, cudaMemcpyDeviceToHost, stream_), "copy of candidates");
        synchronize();
        std::memcpy(out, results, out_bytes);
    }

private:
    // out = rows first_row.. of x · weightᵀ (+ bias)
    struct MatmulJob {
        const Weight* weight;
        const Weight* bias;
        float* out;
        int64_t first_row, rows;
    };

    // The input of matmuls: x ([rows, inner], fp32), and x rounded to the last precision a weight
    // needed (input_for).
    struct MatmulInput {
        const float* x;
        int64_t rows, inner;
        const void* rounded = nullptr;
        DType rounded_as = DType::f32;  // F8_E4M3: rows fp8_first_row.. quantized by fp8_input
        int64_t fp8_first_row = 0, fp8_rows = 0;
    };

    // The input as a matmul with weights of `dtype` reads it: x for fp32; else rounded to bf16/fp16
    // in the staging buffer, once for every use in a row of that precision (q, k and v; gate and
    // up; the groups of an expert layer).
    const void* input_for(MatmulInput& input, DType dtype) {
        if (dtype == DType::f32 || is_quantized_dtype(dtype)) return input.x;  // weight-only quantization
        if (input.rounded == nullptr || input.rounded_as != dtype) {
            const RoundedOutput& last = rounded_output_;
            if (last.of == input.x && last.dtype == dtype && last.floats >= input.rows * input.inner) {
                input.rounded = last.data;  // written by the norm or SwiGLU that made x
            } else {
                void* staged = staging(rounded_, size_t(input.rows * input.inner) * 2);
                rounded_output_ = {};  // its copy is overwritten
                check(k::round_to(input.x, input.rows * input.inner, element_type(dtype), staged, stream_),
                      "rounding activations");
                input.rounded = staged;
            }
            input.rounded_as = dtype;
            rounded_as_ = dtype;
        }
        return input.rounded;
    }

    // Rows first_row.. of the input quantized for a block-scaled fp8 product (kernels/fp8_tiles.hpp)
    // in the staging buffer, once for every use of those rows (q, k and v; gate and up): the rows
    // in whole multiples of 4 (cuBLASLt's product), then the last up to 3 (matmul_fp8_rows), each
    // part's codes followed by its scales.
    struct Fp8Rows {
        uint8_t* values;  // rows x k codes
        float* scales;    // then their scales
    };
    static Fp8Rows fp8_rows_at(uint8_t* at, int64_t rows, int64_t k) {
        return {at, reinterpret_cast<float*>(at + rows * k)};
    }
    std::pair<Fp8Rows, Fp8Rows> fp8_input(MatmulInput& input, int64_t first_row, int64_t rows) {
        const int64_t k = input.inner, main = rows / 4 * 4;
        const bool done = input.rounded_as == DType::f8_e4m3 && input.fp8_first_row == first_row &&
                          input.fp8_rows == rows;
        auto* staged = static_cast<uint8_t*>(done ? const_cast<void*>(input.rounded)
                                                  : staging(rounded_, size_t(kernels::fp8_activation_bytes(rows, k))));
        const Fp8Rows head = fp8_rows_at(staged, main, k);
        const Fp8Rows tail = fp8_rows_at(staged + kernels::fp8_activation_bytes(main, k), rows - main, k);
        if (!done) {
            rounded_output_ = {};  // its copy is overwritten
            check(k::quantize_fp8_groups(input.x + first_row * k, main, k, head.values, head.scales, stream_),
                  "quantizing activations to fp8");
            check(k::quantize_fp8_groups(input.x + (first_row + main) * k, rows - main, k, tail.values, tail.scales,
                                         stream_),
                  "quantizing activations to fp8");
            input.rounded = staged;
            input.rounded_as = DType::f8_e4m3;
            input.fp8_first_row = first_row;
            input.fp8_rows = rows;
        }
        return {head, tail};
    }

    // A block-scaled fp8 product: cuBLASLt for the job's rows in whole multiples of 4 (its
    // activation scales must be), the kernel for the last up to 3.
    void run_fp8_matmul(MatmulInput& input, const MatmulJob& job, const CudaWeights::Copy& weight) {
        const int64_t n = job.weight->shape.at(0), k = input.inner, main = job.rows / 4 * 4;
        const auto [head, tail] = fp8_input(input, job.first_row, job.rows);
        const auto* codes = reinterpret_cast<const uint8_t*>(weight.buffer.floats());
        matmul_->run_fp8(head.values, head.scales, codes, weight.tile_scales, main, n, k, job.out, stream_);
        check(k::matmul_fp8_rows(tail.values, tail.scales, job.rows - main, codes, weight.tile_scales, n, k,
                                 job.out + main * n, stream_),
              "fp8 matmul of the last rows");
    }

    // Every call but the matmuls' begins here: on the device, and the last call's rounded output
    // forgotten (this call may write over what it was rounded from).
    void begin() {
        select_device(device_);
        rounded_output_ = {};
    }
    // A matmul call: it may read the last call's rounded output, which is forgotten after it.
    struct Consuming {
        CudaBackend& backend;
        explicit Consuming(CudaBackend& b) : backend(b) {}
        ~Consuming() { backend.rounded_output_ = {}; }
        Consuming(const Consuming&) = delete;
        Consuming& operator=(const Consuming&) = delete;
    };
    // Where a norm or SwiGLU about to write `floats` floats (contiguous: in rows that a matmul
    // reads as they are) also writes them rounded: the staging buffer the matmuls round into, at
    // the precision they last rounded to; nowhere before any matmul rounded, or for fp32 weights.
    k::Rounded rounding_for(int64_t floats, bool contiguous) {
        if (rounded_as_ == DType::f32 || !contiguous || floats == 0) return {};
        return {staging(rounded_, size_t(floats) * 2), element_type(rounded_as_)};
    }
    void remember_rounded(const float* out, int64_t floats, const k::Rounded& rounded) {
        if (rounded.data != nullptr) rounded_output_ = {out, floats, rounded_as_, rounded.data};
    }

    // Jobs over the input's rows, all of its width.
    void run_matmuls(MatmulInput& input, std::span<const MatmulJob> jobs) {
        select_device(device_);
        const int64_t inner = input.inner;
        for (const MatmulJob& job : jobs)  // checked before any work is queued
            if (job.weight->shape.at(1) != inner || job.first_row + job.rows > input.rows)
                fail(Status::internal, "a matmul of rows {}..{} of width {} in {} rows of width {}", job.first_row,
                     job.first_row + job.rows, job.weight->shape.at(1), input.rows, inner);
        for (const MatmulJob& job : jobs) {
            const CudaWeights::Copy& weight = weights_->find(*job.weight);
            const int64_t n = job.weight->shape.at(0);
            if (weight.dtype == DType::f8_e4m3 && inner > 0) {  // fp8 tiles (CudaWeights::upload)
                run_fp8_matmul(input, job, weight);
                if (job.bias != nullptr) check(k::add_bias(job.out, job.rows, n, view(*job.bias), stream_), "bias");
                continue;
            }
            if (is_quantized_dtype(weight.dtype) && inner > 0) {
                run_quantized_matmul(input, job);
                if (job.bias != nullptr) check(k::add_bias(job.out, job.rows, n, view(*job.bias), stream_), "bias");
                continue;
            }
            const cudaDataType_t type = weight.dtype == DType::f32    ? CUDA_R_32F
                                        : weight.dtype == DType::bf16 ? CUDA_R_16BF
                                                                      : CUDA_R_16F;
            const auto* rows = static_cast<const char*>(input_for(input, weight.dtype)) +
                               job.first_row * inner * int64_t(dtype_size(weight.dtype));
            if (inner == 0) {  // an empty sum, as the CPU writes it
                check(cudaMemsetAsync(job.out, 0, size_t(job.rows * n) * sizeof(float), stream_), "cudaMemset");
            } else {
                matmul_->run(rows, weight.buffer.floats(), type, job.rows, n, inner, job.out, stream_);
            }
            if (job.bias != nullptr) check(k::add_bias(job.out, job.rows, n, view(*job.bias), stream_), "bias");
        }
    }

    // A block-type weight (weight-only quantization): the few-row kernel over the job's rows as one
    // group, in passes of max_few_rows, decoding the blocks in registers; fp32 activations.
    void run_quantized_matmul(const MatmulInput& input, const MatmulJob& job) {
        if (job.rows > INT32_MAX) fail(Status::internal, "a matmul of {} rows", job.rows);
        const Weight* weight = job.weight;
        const ExpertTable& table = expert_table(std::span(&weight, 1));
        const int32_t offsets[2] = {0, static_cast<int32_t>(job.rows)};
        const auto* device_offsets =
            static_cast<const int32_t*>(upload_parameters(quantized_offsets_, offsets, sizeof offsets));
        check(k::few_row_grouped_matmul(input.x + job.first_row * input.inner, table.pointers, device_offsets, 1,
                                        element_type(table.dtype), weight->shape.at(0), input.inner, false, true,
                                        job.out, stream_),
              "quantized matmul");
    }

    k::WeightView view(const Weight& w) const {
        const CudaWeights::Copy& copy = weights_->find(w);
        return {copy.buffer.floats(), element_type(copy.dtype)};
    }

    // The device's table of a list of expert weights (grouped_matmuls' kernel reads a group's
    // weight from it), made the first time the list comes and kept: in the planned region while
    // it has room, else in a buffer of its own.
    struct ExpertTable {
        std::vector<const Weight*> weights;
        const void* const* pointers = nullptr;  // on the device, one per weight
        DeviceBuffer own;                       // when the planned region was full
        DType dtype = DType::f32;
        bool uniform = true;  // one shape and precision: the kernel can take every group
        bool aligned = true;  // every weight starts on 16 bytes
    };
    const ExpertTable& expert_table(std::span<const Weight* const> weights) {
        const auto [begin, end] = expert_tables_by_first_.equal_range(weights.front());
        for (auto it = begin; it != end; ++it)
            if (std::ranges::equal(it->second.weights, weights)) return it->second;
        if (capture_) throw CaptureRefused{.retry = true};  // made as the work runs, then captured
        ExpertTable table;
        table.weights.assign(weights.begin(), weights.end());
        table.dtype = weights_->find(*weights.front()).dtype;
        std::vector<const void*> pointers;
        for (const Weight* w : weights) {
            const CudaWeights::Copy& copy = weights_->find(*w);
            table.uniform = table.uniform && w->shape == weights.front()->shape && copy.dtype == table.dtype;
            table.aligned = table.aligned && k::on_16_bytes(copy.buffer.floats());
            pointers.push_back(copy.buffer.floats());
        }
        const size_t bytes = pointers.size() * sizeof(void*);
        char* at = nullptr;
        if (expert_tables_used_ + allocation_bytes(bytes) <= expert_tables_.bytes()) {
            at = reinterpret_cast<char*>(expert_tables_.floats()) + expert_tables_used_;
            expert_tables_used_ += allocation_bytes(bytes);
        } else {
            table.own = allocate(bytes);
            at = reinterpret_cast<char*>(table.own.floats());
        }
        uploads_->copy(at, pointers.data(), bytes, stream_);
        table.pointers = reinterpret_cast<const void* const*>(at);
        return expert_tables_by_first_.emplace(weights.front(), std::move(table))->second;
    }

    // The offsets group_by_expert wrote at `offsets`, on the host: copied (a synchronisation) once
    // per grouping, for its first grouped_matmuls call; the calls after it (down after gate and up)
    // reuse the copy.
    const std::vector<int32_t>& host_offsets(const int32_t* offsets, int64_t groups) {
        HostOffsets& h = host_offsets_;
        if (h.device != offsets || h.grouping != groupings_ || int64_t(h.values.size()) != groups + 1) {
            h.values.resize(static_cast<size_t>(groups) + 1);
            h.device = nullptr;  // until the copy below has arrived
            check(cudaMemcpyAsync(h.values.data(), offsets, h.values.size() * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, stream_),
                  "copy of the expert offsets");
            synchronize();
            h.device = offsets;
            h.grouping = groupings_;
        }
        return h.values;
    }

    // group_by_expert's flag of a bad routing table, kept until a synchronisation reports it.
    int32_t* routing_fault() {
        if (routing_fault_.bytes() == 0) {
            if (capture_) throw CaptureRefused{.retry = true};  // made as the work runs, then captured
            routing_fault_ = allocate(sizeof(int32_t));
            check(cudaMemsetAsync(routing_fault_.ints(), 0, sizeof(int32_t), stream_), "cudaMemset");
        }
        return routing_fault_.ints();
    }

    // The graphs' constants: graph_slots shares of graph_share_ bytes each. A share grows (every
    // graph dropped) after a capture needed more; when the ledger cannot give the larger shares,
    // they go back to the planned size and the capture that needed them is abandoned again.
    char* graph_constants() {
        try {
            return static_cast<char*>(staging(graph_constants_, CudaWorkspace::graph_slots * graph_share_));
        } catch (const Error& e) {
            if (e.status() != Status::out_of_budget || graph_share_ == CudaWorkspace::graph_constant_bytes) throw;
        }
        graph_share_ = CudaWorkspace::graph_constant_bytes;
        return static_cast<char*>(staging(graph_constants_, CudaWorkspace::graph_bytes));
    }

    // A device buffer of at least `bytes` (charged to the backend's ledger): reserve_workspace
    // sizes it for planned work; beyond that it grows, never shrinks. Work already queued on the
    // stream finishes before a replaced buffer is freed, and the graphs, which may read it, go.
    void* staging(DeviceBuffer& buffer, size_t bytes) {
        if (buffer.bytes() < bytes) {
            if (capture_) throw CaptureRefused{.retry = true};
            check(cudaStreamSynchronize(stream_), "the device's work");
            drop_graphs();
            buffer = DeviceBuffer();
            buffer = allocate(bytes);
        }
        return buffer.floats();
    }

    // Kernel parameters copied to the device: through the upload ring into `buffer`, or, while a
    // graph is captured, into that graph's constants, which its every launch reads. Past the
    // graph's share the capture goes on only to learn the share it needs (capture then abandons
    // it); past the largest share it is refused.
    const void* upload_parameters(DeviceBuffer& buffer, const void* data, size_t bytes) {
        if (capture_) {
            std::vector<char>& host = capture_->host;
            const size_t at = host.size();
            if (at + allocation_bytes(bytes) > CudaWorkspace::max_graph_constant_bytes) throw CaptureRefused{};
            host.resize(at + allocation_bytes(bytes));
            std::memcpy(host.data() + at, data, bytes);
            return host.size() <= graph_share_ ? capture_->constants + at : capture_->constants;
        }
        void* staged = staging(buffer, bytes);
        uploads_->copy(staged, data, bytes, stream_);
        return staged;
    }

    // `work` captured as a graph with `constants` (graph_share_ bytes of device memory) for its
    // kernels' parameters, their values queued for copying there; null when some call could not
    // be captured (`retry`: it may be next time, as when the share was too small: it grows).
    cudaGraphExec_t capture(char* constants, const std::function<void()>& work, bool& retry) {
        check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        capture_.emplace(Capture{constants, {}});
        bool captured = true;
        try {
            work();
        } catch (const CaptureRefused& refused) {
            captured = false;
            retry = refused.retry;
        } catch (...) {  // a real error comes again when the work is run
            captured = false;
            // A launch that failed because another thread broke the capture may succeed next time.
            cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
            retry = cudaStreamIsCapturing(stream_, &status) == cudaSuccess &&
                    status == cudaStreamCaptureStatusInvalidated;
        }
        rounded_output_ = {};  // a captured producer's copy exists only once the graph runs
        const std::vector<char> host = std::move(capture_->host);
        capture_.reset();
        if (host.size() > graph_share_ && (captured || retry)) {  // else the work cannot be captured anyway
            captured = false;
            retry = true;
            graph_share_ = std::bit_ceil(host.size());  // at most max_graph_constant_bytes, a power of two
        }
        cudaGraph_t graph = nullptr;
        if (cudaStreamEndCapture(stream_, &graph) != cudaSuccess && captured) {
            captured = false;
            retry = true;  // invalidated from outside the work
        }
        cudaGraphExec_t exec = nullptr;
        if (captured && cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) exec = nullptr;
        if (graph != nullptr) cudaGraphDestroy(graph);
        cudaGetLastError();  // a failed capture's error is not sticky: clear it
        if (exec == nullptr) return nullptr;
        try {
            uploads_->copy(constants, host.data(), host.size(), stream_);
        } catch (...) {
            cudaGraphExecDestroy(exec);
            throw;
        }
        return exec;
    }

    // Calls that read host memory after they return, or wait for the device, cannot be captured.
    void not_while_capturing() const {
        if (capture_) throw CaptureRefused{};
    }

    // Forgets every graph (the caller has waited for the stream).
    void drop_graphs() noexcept {
        for (cudaGraphExec_t& graph : graphs_)
            if (graph != nullptr) cudaGraphExecDestroy(graph);
        graphs_.fill(nullptr);
        replays_.clear();
    }

    std::shared_ptr<const CudaWeights> weights_;
    std::shared_ptr<MemoryLedger> memory_;
    int device_;
    cudaStream_t stream_ = nullptr;
    DeviceBuffer matmul_workspace_;
    std::unique_ptr<cuda::CublasLtMatmul> matmul_;
    // The last call's output when a norm or SwiGLU wrote it rounded too (rounding_for): the matmul
    // call right after it reads that copy instead of rounding x again. Any other call forgets it.
    struct RoundedOutput {
        const float* of = nullptr;
        int64_t floats = 0;
        DType dtype = DType::f32;
        const void* data = nullptr;
    };
    RoundedOutput rounded_output_;
    DType rounded_as_ = DType::f32;  // the precision the matmuls last rounded their input to
    std::unique_ptr<UploadRing> uploads_;  // made on the device, after the stream
    PinnedHostBuffer pinned_results_;      // the candidates, on their way to the caller
    DeviceBuffer rounded_, attention_sequences_, attention_partials_, candidate_io_, routing_, routing_fault_;
    DeviceBuffer expert_tables_;  // the planned region of expert tables, filled from the front
    DeviceBuffer quantized_offsets_;  // a quantized matmul's rows, {0, rows}
    size_t expert_tables_used_ = 0;
    std::unordered_multimap<const Weight*, ExpertTable> expert_tables_by_first_;
    int64_t groupings_ = 0;  // group_by_expert calls so far
    struct HostOffsets {
        const int32_t* device = nullptr;
        int64_t grouping = -1;
        std::vector<int32_t> values;
    } host_offsets_;
    ReplayCache replays_;
    std::array<cudaGraphExec_t, CudaWorkspace::graph_slots> graphs_{};
    DeviceBuffer graph_constants_;  // graph_share_ bytes per slot
    uint64_t graph_share_ = CudaWorkspace::graph_constant_bytes;
    struct Capture {
        char* constants;         // the graph's, on the device
        std::vector<char> host;  // their values, copied there once the capture succeeds
    };
    std::optional<Capture> capture_;
    CudaGraphStats graph_stats_;
};

// Weight::fp8_w8a8's F8_E4M3_B128 rows as cuBLASLt's block-scaled operand, where they split into
// tiles: in a buffer of the size planned for them (or of the split's, if larger); none where they
// do not split. `tiles` is the host staging, reused.
std::optional<CudaWeights::Copy> fp8_tiles_copy(const Weight& w, MemoryLedger* ledger, cudaStream_t stream,
                                                std::vector<uint8_t>& tiles) {
    if (w.shape.size() != 2 || w.shape[0] % 4 != 0) return std::nullopt;  // cuBLASLt's outputs: multiples of 4
    const int64_t n = w.shape[0], k = w.shape[1];
    const uint64_t scales_at = uint64_t(n * k + 255) / 256 * 256;
    const uint64_t split = scales_at + uint64_t(kernels::fp8_tile_scales(n, k)) * sizeof(float);
    tiles.resize(split);
    if (!kernels::split_fp8_tiles(static_cast<const uint8_t*>(w.data), n, k, tiles.data(),
                                  reinterpret_cast<float*>(tiles.data() + scales_at)))
        return std::nullopt;
    CudaWeights::Copy copy{device_allocate(ledger, std::max(dtype_bytes(w.dtype, w.elements), split)), DType::f8_e4m3};
    copy.tile_scales = reinterpret_cast<const float*>(reinterpret_cast<const char*>(copy.buffer.floats()) + scales_at);
    // From pageable memory, as upload's other copies: `tiles` may be reused once this returns.
    check(cudaMemcpyAsync(copy.buffer.floats(), tiles.data(), split, cudaMemcpyHostToDevice, stream),
          "upload of the weights");
    return copy;
}

}  // namespace

std::shared_ptr<const CudaWeights> CudaWeights::upload(std::span<const Weight> all, int device, MemoryLedger* ledger) {
    select_device(device);
    auto weights = std::shared_ptr<CudaWeights>(new CudaWeights());
    weights->device_ = device;
    std::vector<float> widened;
    // A stream of its own: a device-wide synchronisation would break a CUDA graph being captured
    // by another thread's backend on this device. Declared last, so that on a throw the copies
    // are waited for before the buffers they write go.
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    const std::unique_ptr<CUstream_st, void (*)(cudaStream_t)> own(stream, [](cudaStream_t s) {
        cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
    });
    const bool fp8_products = cuda::CublasLtMatmul::block_scaled_fp8(device);
    std::vector<uint8_t> tiles;
    for (const Weight& w : all) {
        if (w.data == nullptr) fail(Status::invalid_argument, "weight '{}' has no data to upload", w.name);
        element_type(w.dtype);  // a weight type, or INTERNAL
        // The router stays fp32 on the device: its matmul then takes unrounded activations, and
        // routing (a discrete choice) follows the CPU's as closely as it can.
        const bool widen = w.role == Role::router && w.dtype != DType::f32;
        const void* source = w.data;
        if (widen) {
            widened.resize(w.elements);
            const auto* half = static_cast<const uint16_t*>(w.data);
            for (uint64_t i = 0; i < w.elements; ++i)
                widened[i] = w.dtype == DType::bf16 ? bf16_to_float(half[i]) : fp16_to_float(half[i]);
            source = widened.data();
        }
        if (w.fp8_w8a8 && fp8_products) {
            if (auto copy = fp8_tiles_copy(w, ledger, stream, tiles)) {
                weights->copies_.emplace(&w, std::move(*copy));
                continue;
            }
        }
        const DType dtype = widen ? DType::f32 : w.dtype;
        const uint64_t bytes = dtype_bytes(dtype, w.elements);
        Copy copy{device_allocate(ledger, bytes), dtype};
        // From pageable memory: the call returns once `source` is staged, so `widened` may be reused.
        check(cudaMemcpyAsync(copy.buffer.floats(), source, bytes, cudaMemcpyHostToDevice, stream),
              "upload of the weights");
        weights->copies_.emplace(&w, std::move(copy));
    }
    // The copies may still be in flight; the backends' streams do not wait for this one.
    check(cudaStreamSynchronize(stream), "upload of the weights");
    return weights;
}

const CudaWeights::Copy& CudaWeights::find(const Weight& weight) const {
    const auto found = copies_.find(&weight);
    if (found == copies_.end()) fail(Status::internal, "weight '{}' is not on the device", weight.name);
    return found->second;
}

CudaGraphStats cuda_graph_stats(const Backend& backend) {
    const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
    if (cuda == nullptr) fail(Status::invalid_argument, "the {} backend keeps no CUDA graphs", backend.name());
    return cuda->graph_stats();
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const CudaWeights> weights, MemoryLedger& memory,
                                           CudaBackendOptions options) {
    return std::make_unique<CudaBackend>(std::move(weights),
                                         std::shared_ptr<MemoryLedger>(&memory, [](MemoryLedger*) {}), options);
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const CudaWeights> weights, CudaBackendOptions options) {
    return std::make_unique<CudaBackend>(std::move(weights), std::make_shared<MemoryLedger>("cuda", UINT64_MAX),
                                         options);
}

}  // namespace unmask
