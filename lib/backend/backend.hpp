// The Backend interface: what the one forward pass needs from a device. Activations are fp32
// buffers the backend allocates, every byte charged to its memory ledger (the tracking
// allocator); weights are the model's (in their stored dtype). The CPU backend is the reference
// every other backend is checked against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/types.hpp"
#include "candidate.hpp"
#include "candidate_params.hpp"
#include "candidate_shares.hpp"
#include "core/memory_ledger.hpp"
#include "element_type.hpp"
#include "route_params.hpp"

namespace unmask {

using kernels::Candidate;
using kernels::CandidateParams;
using kernels::CandidatePeaks;
using kernels::CandidateSums;

// Activations of one device, released when the last owner lets go.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(std::shared_ptr<void> memory, size_t bytes) : memory_(std::move(memory)), bytes_(bytes) {}
    float* floats() const noexcept { return static_cast<float*>(memory_.get()); }
    int32_t* ints() const noexcept { return static_cast<int32_t*>(memory_.get()); }
    size_t bytes() const noexcept { return bytes_; }

private:
    std::shared_ptr<void> memory_;
    size_t bytes_ = 0;
};

// The most rows one candidates call takes: workspaces are sized for it, and forwards hand their
// output rows over this many at a time.
inline constexpr int64_t max_candidate_rows = 128;

// What an allocation of `bytes` really takes: 64-byte granules, at least one.
constexpr uint64_t allocation_bytes(uint64_t bytes) noexcept { return bytes <= 64 ? 64 : (bytes + 63) / 64 * 64; }

// The largest work the backend's own workspace (attention scores, packed panels, sampling
// buffers, staging for the device) must serve: sequences of up to `sequence_length` keys, `vocab`
// logits per row, forwards of up to `tokens` rows, matmul inputs of up to `matmul_input` floats,
// routing among `experts` experts (0: a dense model) with `expert_weight_lists` distinct lists of
// expert weights in grouped_matmuls calls (gate, up and down of every layer that routes), and
// attention over `attention_heads` query heads of `head_dim`.
struct WorkspaceLimits {
    int64_t sequence_length = 0;
    int64_t vocab = 0;
    int64_t tokens = 0;
    int64_t matmul_input = 0;
    int64_t experts = 0;
    int64_t expert_weight_lists = 0;
    int64_t attention_heads = 0, head_dim = 0;  // of the query heads
};

// One sequence's queries within a packed batch of activations, and the keys they attend to:
// its own rows of k and v, or a view of `key_count` keys in which the queries sit at
// query_position.. (a K/V cache, when only part of the canvas is fed; or, for the last layer's
// kept rows, the canvas's rows of k and v, queries at any of its positions under bidirectional
// attention, which reads none).
struct SequenceRows {
    int64_t first_row = 0;
    int64_t rows = 0;
    const void* cached_keys = nullptr;  // null: the sequence's own rows of k and v, where its queries are
    const void* cached_values = nullptr;
    int64_t key_count = 0;       // with a cache
    int64_t query_position = 0;  // the position of the first query (block-causal masks)
    int64_t block_origin = 0;    // block-causal masks: where the first block starts
    kernels::ElementType cached_type = kernels::ElementType::f32;  // the cache's elements: f32 or bf16
};

// A device's share of rows of logits when the devices split the vocabulary (the LM head of
// tensor parallelism): tokens first..first + count of `rows` rows, `stride` floats apart.
// Backend::candidate_peaks scales them in place (banned tokens, temperature), for candidate_sums.
struct LogitShare {
    float* logits = nullptr;
    int64_t rows = 0, stride = 0, first = 0, count = 0;
};

// One output of Backend::matmuls: out = x · weightᵀ (+ bias).
struct MatmulOutput {
    const Weight* weight = nullptr;
    const Weight* bias = nullptr;  // optional
    float* out = nullptr;
};

// One output of Backend::grouped_matmuls: group e's rows of out = the same rows of x · weights[e]ᵀ.
struct GroupedMatmulOutput {
    std::span<const Weight* const> weights;  // one per group (a mixture-of-experts layer: per expert)
    float* out = nullptr;
};

struct AttentionParams {
    int64_t heads = 0, kv_heads = 0, head_dim = 0;
    int64_t block_size = 0;  // 0: bidirectional; else block-causal with blocks of this many positions
                             // from each sequence's block_origin (the positions before it: one block)
    // q·kᵀ and p·v may round their inputs to bf16 (tensor cores, AVX512-BF16): for bf16 models,
    // whose matmuls round activations so anyway.
    bool bf16_products = false;
};

struct RopeSpec {
    double theta = 10000.0;
    int64_t rotary_dims = 0;
    bool interleaved = false;
};

using RouterParams = kernels::RouteParams<const Weight*>;  // expert_bias null: none

class Backend {
public:
    virtual ~Backend() = default;
    virtual const char* name() const noexcept = 0;
    // What memory the backend computes on: host memory (cpu), so it can read the model's weights
    // where they were loaded, or a GPU's.
    virtual BackendKind kind() const noexcept = 0;

    // Throws Error(OUT_OF_BUDGET) when the ledger cannot take allocation_bytes(bytes).
    virtual DeviceBuffer allocate(size_t bytes) = 0;
    // The same charged to `ledger` (a sequence's own state, e.g. its K/V cache), which must
    // outlive the buffer.
    virtual DeviceBuffer allocate_in(MemoryLedger& ledger, size_t bytes) = 0;
    // Sizes the per-thread workspace for `limits` up front and charges it to the ledger; work
    // beyond the limits is refused rather than grown into untracked memory.
    virtual void reserve_workspace(const WorkspaceLimits& limits) = 0;
    virtual void copy_to_device(DeviceBuffer& destination, const void* source, size_t bytes) = 0;
    virtual void copy_to_host(void* destination, const DeviceBuffer& source, size_t bytes) = 0;
    // Waits until the device has done the work issued so far (the CPU backend's calls return
    // done). A fault the device found in that work is thrown here, as by copy_to_host.
    virtual void synchronize() {}

    // Work (a sequence of this backend's calls) whose device work depends only on `key` and on
    // device memory: no call reads host memory after that call returns, no result comes to the
    // host, and the same key always makes the same calls with the same arguments. A backend may
    // record it and replay the recording for the same key instead of calling `work` again (the
    // CUDA backend: CUDA graphs), and runs it as it comes when one of its own calls needs the host
    // for the key's shapes (the CUDA grouped matmuls of many slots over fp32 experts). The default
    // calls it.
    virtual void run_replayable(std::span<const int64_t> key, const std::function<void()>& work) {
        (void)key;
        work();
    }

    // out[r] = table[ids[r]]
    virtual void embedding(const Weight& table, const int32_t* ids, int64_t rows, float* out) = 0;
    // out = rmsnorm(x) * w per row of `dim` (strides in floats; in place allowed)
    virtual void rmsnorm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, const Weight& w, double eps,
                         float* out, int64_t out_stride) = 0;
    // out[rows, n] = x[rows, k] · wᵀ (+ bias)
    virtual void matmul(const float* x, int64_t rows, const Weight& w, const Weight* bias, float* out) = 0;
    // Several matmuls of one input (q, k and v; gate and up), each as matmul computes it; a backend
    // may prepare x once for all of them (the CUDA backend rounds it to bf16/fp16 once).
    virtual void matmuls(const float* x, int64_t rows, std::span<const MatmulOutput> outputs) {
        for (const MatmulOutput& o : outputs) matmul(x, rows, *o.weight, o.bias, o.out);
    }
    virtual void rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions,
                      const RopeSpec& rope) = 0;
    // destination[0, n) = source[0, n) stored as `type`: f32 (a copy) or bf16 (rounded to nearest
    // even), device memory both. How forwards write their keys and values into a K/V cache.
    virtual void store(const float* source, int64_t n, kernels::ElementType type, void* destination) = 0;
    // out[t] for every sequence: attention over that sequence's keys.
    virtual void attention(const float* q, const float* k, const float* v, std::span<const SequenceRows> sequences,
                           const AttentionParams& params, float* out) = 0;
    // gate = silu(gate) * up
    virtual void swiglu(float* gate, const float* up, int64_t n) = 0;
    // x += y
    virtual void add(float* x, const float* y, int64_t n) = 0;
    // x[0, n) = 0 (a sum accumulated in place, as a tensor-parallel MoE layer's partial output)
    virtual void zero(float* x, int64_t n) = 0;
    // The residual add fused with the next norm: x += y, then out = rmsnorm(x) * w, for `rows`
    // contiguous rows of `dim`; the same arithmetic as add then rmsnorm.
    virtual void add_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, const Weight& w, double eps,
                             float* out) = 0;
    // Mixture-of-experts layers, in four steps: route, group_by_expert, grouped_matmuls (the
    // experts' SwiGLU, over all of their rows at once) and unpermute_add.
    // For every token: the experts_per_token chosen experts and their weights ([rows, k] each):
    // the highest scores first, ties to the lower expert, a NaN score as the lowest.
    virtual void route(const float* router_logits, int64_t rows, const RouterParams& params, int32_t* experts,
                       float* weights) = 0;
    // Lays route's output out by expert. Writes `offsets` (device memory, expert_count + 1 ints):
    // slots offsets[e]..offsets[e+1] are expert e's, its tokens in row order, slot_rows[s] the token
    // of slot s. token_slots[t * k + i] and token_scales[t * k + i] are token t's k slots in
    // ascending expert order and their weights: what unpermute_add sums, in that order. Nothing
    // comes to the host, so the MoE steps can be replayed (run_replayable). A table route could not
    // have made (an expert out of range, or twice for a token) is INTERNAL, thrown by this call or,
    // where the device checks it, by the backend's next copy to the host (whatever work that copy
    // belongs to); the buffers it leaves are safe for the steps after it to read.
    virtual void group_by_expert(const int32_t* experts, const float* weights, int64_t rows, int64_t k,
                                 int64_t expert_count, int32_t* slot_rows, int32_t* token_slots, float* token_scales,
                                 int32_t* offsets) = 0;
    // matmuls per group: for every group e with rows, rows offsets[e]..offsets[e+1] of each output
    // = the same rows of x · weights[e]ᵀ, as matmul computes them. `offsets` (device memory, one
    // more than the groups) are group_by_expert's, within the `slots` rows of x. Every output has a
    // weight per group; null weights make a group another device's (expert parallelism): the
    // default leaves its rows as they are, the CUDA backend refuses it (UNSUPPORTED). The default reads the offsets on the host (device memory that is host
    // memory: the CPU backend); the CUDA backend reads them on the device, except for many slots
    // per group over fp32 (or odd-width) weights, where it copies them to the host.
    virtual void grouped_matmuls(const float* x, int64_t slots, const int32_t* offsets,
                                 std::span<const GroupedMatmulOutput> outputs);
    // x[t] += token_scales[t * k + i] * y[token_slots[t * k + i]] for i = 0, 1, .. k - 1 in turn,
    // for `rows` tokens of `dim` (the weighted un-permute of the experts' outputs).
    virtual void unpermute_add(float* x, int64_t rows, int64_t dim, int64_t k, const int32_t* token_slots,
                               const float* token_scales, const float* y) = 0;
    // out[i] = x[rows[i]]
    virtual void gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out) = 0;
    // Classifier-free guidance: cond = uncond + (scale + 1) * (cond - uncond)
    virtual void combine_guidance(float* cond, const float* uncond, double scale, int64_t n) = 0;
    // One candidate per row of logits; positions[r] keys the random stream; params per row.
    virtual void candidates(const float* logits, int64_t rows, int64_t vocab, const uint32_t* positions,
                            std::span<const CandidateParams* const> params, Candidate* out) = 0;
    // The same over a vocabulary split among devices (kernels/candidate_shares.hpp), in three
    // steps with the devices' collectives between them, the same bits as candidates() gives on the
    // whole rows; no top-k or top-p filters. The peaks of this device's share of each row (scaling
    // the share in place); then its sums, given every device's peaks (device d's rows at
    // peaks[d * rows]); then, on one device, the candidates from every device's peaks and sums. The
    // defaults throw Error(UNSUPPORTED), and splits_candidates() says whether a backend has them
    // (devices without gather whole rows).
    virtual bool splits_candidates() const noexcept { return false; }
    virtual void candidate_peaks(const LogitShare& share, std::span<const CandidateParams* const> params,
                                 CandidatePeaks* out);
    virtual void candidate_sums(const LogitShare& share, const uint32_t* positions,
                                std::span<const CandidateParams* const> params, const CandidatePeaks* peaks,
                                int devices, CandidateSums* out);
    virtual void merge_candidates(const CandidatePeaks* peaks, const CandidateSums* sums, int devices, int64_t rows,
                                  int64_t vocab, std::span<const CandidateParams* const> params, Candidate* out);
};

// Throws Error(INTERNAL) when a copy of `bytes` would run past `buffer`.
void check_copy_bytes(size_t bytes, const DeviceBuffer& buffer);
// The groups of a grouped_matmuls call (its outputs' weights each); throws Error(INTERNAL) unless
// every output has the same number of weights.
int64_t grouped_matmul_groups(std::span<const GroupedMatmulOutput> outputs);
// Throws Error(INTERNAL) unless group `group`'s rows first..first + rows lie within `slots` rows.
void check_group_rows(int64_t group, int64_t first, int64_t rows, int64_t slots);

// How the kernels read a weight stored as `dtype`; throws Error(INTERNAL) for a non-weight type.
kernels::ElementType element_type(DType dtype);

// The CPU backend with `threads` threads (>= 1), charging `memory`, which must outlive it and
// every buffer it allocates.
std::unique_ptr<Backend> make_cpu_backend(int threads, MemoryLedger& memory);
// The same with a ledger of its own and no limit (tests, benchmarks). Work beyond the workspace
// needs reserve_workspace first (a Forward does it). bf16_products false keeps fp32 activations in
// bf16 and quantized weights' products (kernels/cpu/matmul.hpp), as on a CPU without AVX512-BF16
// or AVX512-VNNI.
std::unique_ptr<Backend> make_cpu_backend(int threads, bool bf16_products = true);
// Whether the CPU backend multiplies `w` through panels packed once (kernels/cpu/matmul.hpp
// pack_panels): a bf16 matrix whose products take bf16 activations on this CPU (AVX512-BF16), in
// whole runs of 32 rows, and not the embedding (whose rows are also looked up). Its panels take
// the bytes the matrix takes. pack_cpu_panels writes them (the matrix's bytes / 4 words).
bool cpu_packs_panels(const Weight& w);
void pack_cpu_panels(const Weight& w, uint32_t* panels);
// The bytes reserve_workspace charges on a CPU backend of `threads` threads.
uint64_t cpu_workspace_bytes(int threads, const WorkspaceLimits& limits);
// The bytes a CUDA backend holds for `limits` (its cuBLASLt workspace and staging buffers).
uint64_t cuda_workspace_bytes(const WorkspaceLimits& limits);

}  // namespace unmask
