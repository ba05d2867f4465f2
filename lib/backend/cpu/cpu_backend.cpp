// The CPU backend: kernels/cpu on a thread pool. Work is split so that each output element is
// computed by exactly one task with the same arithmetic, whatever the thread count.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "core/thread_pool.hpp"
#include "cpu/attention.hpp"
#include "cpu/candidates.hpp"
#include "cpu/matmul.hpp"
#include "cpu/ops.hpp"
#include "cpu/route.hpp"

namespace unmask {
namespace {

namespace k = kernels::cpu;

k::WeightMatrix matrix(const Weight& w) {
    return {w.data, element_type(w.dtype), w.shape.at(0), w.shape.at(1), w.shape.at(1)};
}

k::WeightVector vector(const Weight& w) { return {w.data, element_type(w.dtype), w.shape.at(0)}; }

// A model matrix: bf16 and quantized weights may take bf16 activations, and Q8_0 and Q4_0 ones
// int8 activations (matmul.hpp), except the router's, whose logits choose experts: rounding there can
// flip a near tie and move a whole token. Panels packed at load are read in place of the weights.
k::WeightMatrix model_matrix(const Weight& w, bool bf16_products) {
    k::WeightMatrix m = matrix(w);
    m.bf16_products = bf16_products && w.role != Role::router &&
                      (m.type == k::ElementType::bf16 || kernels::is_quantized(m.type));
    m.int8_products = m.bf16_products;  // taken by the types the int8 kernel multiplies (Q8_0, Q4_0)
    if (m.bf16_products && k::matmul_packs_panels(m)) m.panels = w.panels;
    return m;
}

constexpr int64_t row_chunk = 32;        // rows per task for row-wise ops
constexpr int64_t attention_tile = 256;  // query rows per attention task (scores: tile x keys floats)

// What one thread reuses across calls, sized by reserve_workspace.
// A worker runs one task at a time: its matmul tasks and its attention tasks share one packing
// panel (attention.panel).
struct WorkerScratch {
    k::AttentionScratch attention;
    k::CandidateScratch candidates;
};

// Floats of one WorkerScratch for `limits`: attention scores, the packing panel, the scaled and
// sorted logits of one row.
uint64_t worker_scratch_floats(const WorkspaceLimits& limits) {
    return uint64_t(attention_tile * limits.sequence_length) + k::matmul_scratch_floats(true) +
           2 * uint64_t(limits.vocab);
}

// Words of the input of matmuls prepared once, rounded to bf16 pairs or quantized to int8 blocks
// (matmul.hpp; at most half a word per value), where this CPU prepares them.
uint64_t prepared_words(const WorkspaceLimits& limits) {
    return k::matmul_prepares_activations() ? (uint64_t(limits.matmul_input) + 1) / 2 : 0;
}

class CpuBackend final : public Backend {
public:
    // `memory` must outlive the backend and every buffer it allocates; a ledger of its own (no
    // deleter) is shared with the buffers, so they may outlive the backend.
    CpuBackend(int threads, std::shared_ptr<MemoryLedger> memory, bool bf16_products = true)
        : memory_(std::move(memory)), pool_(threads), scratch_(size_t(pool_.size())), bf16_products_(bf16_products) {
        try {
            reserve_workspace({});  // the matmul panels, which every call needs
        } catch (...) {
            memory_->discharge(workspace_bytes_);
            throw;
        }
    }
    ~CpuBackend() override { memory_->discharge(workspace_bytes_); }

    const char* name() const noexcept override { return "cpu"; }
    BackendKind kind() const noexcept override { return BackendKind::cpu; }

    DeviceBuffer allocate(size_t bytes) override { return allocate_in(*memory_, bytes); }

    DeviceBuffer allocate_in(MemoryLedger& ledger, size_t bytes) override {
        const uint64_t size = allocation_bytes(bytes);
        ledger.charge(size, "an activation buffer");
        void* memory = std::aligned_alloc(64, size);
        if (memory == nullptr) {
            ledger.discharge(size);
            fail(Status::out_of_budget, "the system refused {} bytes of activations", size);
        }
        // The backend's own ledger is shared with its buffers, which may outlive the backend.
        std::shared_ptr<MemoryLedger> keep = &ledger == memory_.get() ? memory_ : nullptr;
        return DeviceBuffer(std::shared_ptr<void>(memory, [charged = &ledger, keep, size](void* p) {
                                std::free(p);
                                charged->discharge(size);
                            }),
                            bytes);
    }

    // Grows to the largest limits asked for so far; never shrinks while the backend lives.
    void reserve_workspace(const WorkspaceLimits& limits) override {
        WorkspaceLimits wanted_limits;
        wanted_limits.sequence_length = std::max(limits_.sequence_length, limits.sequence_length);
        wanted_limits.vocab = std::max(limits_.vocab, limits.vocab);
        wanted_limits.tokens = std::max(limits_.tokens, limits.tokens);
        wanted_limits.matmul_input = std::max(limits_.matmul_input, limits.matmul_input);
        wanted_limits.head_dim = std::max(limits_.head_dim, limits.head_dim);
        const uint64_t wanted = cpu_workspace_bytes(pool_.size(), wanted_limits);
        if (wanted > workspace_bytes_) memory_->charge(wanted - workspace_bytes_, "the CPU backend's workspace");
        workspace_bytes_ = std::max(workspace_bytes_, wanted);
        limits_ = wanted_limits;
        for (WorkerScratch& s : scratch_) {
            s.attention.scores.reserve(size_t(attention_tile * limits_.sequence_length));
            s.attention.panel.resize(k::matmul_scratch_floats(true));
            s.candidates.scaled.reserve(size_t(limits_.vocab));
            s.candidates.sorted.reserve(size_t(limits_.vocab));
        }
        prepared_.resize(prepared_words(limits_));
        rope_positions_.reserve(size_t(limits_.tokens));
        rope_table_.reserve(size_t(limits_.tokens * limits_.head_dim));
    }
    void copy_to_device(DeviceBuffer& destination, const void* source, size_t bytes) override {
        check_copy_bytes(bytes, destination);
        std::memcpy(destination.floats(), source, bytes);
    }
    void copy_to_host(void* destination, const DeviceBuffer& source, size_t bytes) override {
        check_copy_bytes(bytes, source);
        std::memcpy(destination, source.floats(), bytes);
    }

    void embedding(const Weight& table, const int32_t* ids, int64_t rows, float* out) override {
        const auto m = matrix(table);
        for_row_chunks(rows, [&](int64_t begin, int64_t end) {
            k::embedding_rows(m, ids + begin, end - begin, out + begin * m.cols);
        });
    }

    void rmsnorm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, const Weight& w, double eps, float* out,
                 int64_t out_stride) override {
        const auto weight = vector(w);
        for_row_chunks(rows, [&](int64_t begin, int64_t end) {
            k::rmsnorm(x + begin * x_stride, end - begin, dim, weight, eps, out + begin * out_stride, x_stride, out_stride);
        });
    }

    void matmul(const float* x, int64_t rows, const Weight& w, const Weight* bias, float* out) override {
        const MatmulOutput output{&w, bias, out};
        matmuls(x, rows, std::span(&output, 1));
    }

    // Products of one input (q, k and v; gate and up): where they take bf16 or int8 activations
    // (matmul.hpp), the input is prepared once for all of them and every column run reads it.
    void matmuls(const float* x, int64_t rows, std::span<const MatmulOutput> outputs) override {
        Form prepared = Form::floats;  // what prepared_ holds of x
        for (const MatmulOutput& output : outputs) {
            const k::WeightMatrix m = model_matrix(*output.weight, bf16_products_);
            const Form form = prepare(x, rows, m, prepared);
            const int64_t per_task = std::max<int64_t>(1, k::matmul_task_columns(m, pool_.size()));
            pool_.parallel_for((m.rows + per_task - 1) / per_task, [&](int64_t task) {
                const int64_t begin = task * per_task, end = std::min(m.rows, begin + per_task);
                columns(x, 0, rows, m, form, begin, end, output.out);
            });
            if (output.bias != nullptr) {
                const auto b = vector(*output.bias);
                for_row_chunks(rows, [&](int64_t begin, int64_t end) {
                    k::add_bias(output.out + begin * m.rows, end - begin, m.rows, m.rows, b);
                });
            }
        }
    }

    // Every group's products at once: the input prepared once for all groups (a layer's experts
    // are stored alike), then one task per group, output and run of columns, all in one parallel
    // loop, so that experts with few rows keep every thread busy rather than each running alone.
    void grouped_matmuls(const float* x, int64_t slots, const int32_t* offsets,
                         std::span<const GroupedMatmulOutput> outputs) override {
        const int64_t groups = grouped_matmul_groups(outputs);
        struct Task {
            k::WeightMatrix m;
            Form form;
            int64_t first, rows, begin, end;
            float* out;
        };
        std::vector<Task> tasks;
        Form prepared = Form::floats;
        for (const GroupedMatmulOutput& output : outputs)
            for (int64_t e = 0; e < groups; ++e) {
                const int64_t first = offsets[e], rows = offsets[e + 1] - first;
                check_group_rows(e, first, rows, slots);
                const Weight* w = outputs.front().weights[size_t(e)];
                if (rows == 0 || w == nullptr) continue;  // another device's group
                const k::WeightMatrix m = model_matrix(*output.weights[size_t(e)], bf16_products_);
                const Form form = prepare(x, slots, m, prepared, true);  // the tasks run after
                for (int64_t begin = 0; begin < m.rows; begin += k::matmul_column_block)
                    tasks.push_back({m, form, first, rows, begin, std::min(m.rows, begin + k::matmul_column_block),
                                     output.out + first * m.rows});
            }
        pool_.parallel_for(int64_t(tasks.size()), [&](int64_t i) {
            const Task& t = tasks[size_t(i)];
            columns(x, t.first, t.rows, t.m, t.form, t.begin, t.end, t.out);
        });
    }

    // Every layer rotates q and k at the same positions: the table of rotations is made on the
    // first call for a set of positions and reused while calls repeat them. Beyond the reserved
    // workspace, each call makes its own.
    void rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions,
              const RopeSpec& rope) override {
        const k::RopeParams params{rope.theta, rope.rotary_dims, rope.interleaved};
        const int64_t stride = heads * head_dim;
        if (size_t(rows * params.rotary_dims) > rope_table_.capacity()) {
            for_row_chunks(rows, [&](int64_t begin, int64_t end) {
                k::rope(x + begin * stride, end - begin, heads, head_dim, stride, positions + begin, params);
            });
            return;
        }
        const bool same = rope_theta_ == params.theta && rope_dims_ == params.rotary_dims &&
                          rope_positions_.size() == size_t(rows) &&
                          std::equal(positions, positions + rows, rope_positions_.begin());
        if (!same) {
            rope_positions_.assign(positions, positions + rows);
            rope_table_.resize(size_t(rows * params.rotary_dims));
            rope_theta_ = params.theta;
            rope_dims_ = params.rotary_dims;
            for_row_chunks(rows, [&](int64_t begin, int64_t end) {
                k::rope_table(positions + begin, end - begin, params, rope_table_.data() + begin * params.rotary_dims);
            });
        }
        for_row_chunks(rows, [&](int64_t begin, int64_t end) {
            k::rope_rotate(x + begin * stride, end - begin, heads, head_dim, stride,
                           rope_table_.data() + begin * params.rotary_dims, params);
        });
    }

    void store(const float* source, int64_t n, k::ElementType type, void* destination) override {
        for_row_chunks(n, [&](int64_t begin, int64_t end) {
            uint16_t* half = static_cast<uint16_t*>(destination);
            if (type == k::ElementType::f32)
                std::memcpy(static_cast<float*>(destination) + begin, source + begin, size_t(end - begin) * sizeof(float));
            else if (type == k::ElementType::bf16)
                for (int64_t i = begin; i < end; ++i) half[i] = float_to_bf16(source[i]);
            else
                for (int64_t i = begin; i < end; ++i) half[i] = float_to_fp16(source[i]);
        }, 16384);
    }

    void attention(const float* q, const float* kv_k, const float* v, std::span<const SequenceRows> sequences,
                   const AttentionParams& params, float* out) override {
        struct Task {
            int64_t sequence, head, q_begin, q_end;
        };
        const int64_t q_stride = params.heads * params.head_dim, kv_stride = params.kv_heads * params.head_dim;
        auto keys_of = [](const SequenceRows& seq) { return seq.cached_keys != nullptr ? seq.key_count : seq.rows; };
        std::vector<Task> tasks;
        for (const SequenceRows& seq : sequences)
            if (keys_of(seq) > limits_.sequence_length)
                fail(Status::internal, "attention over {} keys exceeds the workspace reserved for {}", keys_of(seq),
                     limits_.sequence_length);
        for (size_t s = 0; s < sequences.size(); ++s)
            for (int64_t h = 0; h < params.heads; ++h)
                for (int64_t q0 = 0; q0 < sequences[s].rows; q0 += attention_tile)
                    tasks.push_back({static_cast<int64_t>(s), h, q0, std::min(sequences[s].rows, q0 + attention_tile)});
        pool_.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t i) {
            k::AttentionScratch& scratch = worker().attention;
            const Task& t = tasks[static_cast<size_t>(i)];
            const SequenceRows& seq = sequences[static_cast<size_t>(t.sequence)];
            const bool cached = seq.cached_keys != nullptr;
            const k::AttentionShape shape{seq.rows,
                                          keys_of(seq),
                                          params.heads,
                                          params.kv_heads,
                                          params.head_dim,
                                          q_stride,
                                          kv_stride,
                                          params.block_size,
                                          seq.block_origin,
                                          seq.query_position,
                                          cached ? seq.cached_type : k::ElementType::f32,
                                          bf16_products_ && params.bf16_products};
            k::attention_tile(q + seq.first_row * q_stride, cached ? seq.cached_keys : kv_k + seq.first_row * kv_stride,
                              cached ? seq.cached_values : v + seq.first_row * kv_stride, shape, t.head, t.q_begin,
                              t.q_end, out + seq.first_row * q_stride, scratch);
        });
    }

    void swiglu(float* gate, const float* up, int64_t n) override {
        for_row_chunks(n, [&](int64_t begin, int64_t end) { k::swiglu(gate + begin, up + begin, end - begin); }, 4096);
    }

    void add(float* x, const float* y, int64_t n) override {
        for_row_chunks(n, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) x[i] += y[i];
        }, 4096);
    }

    void zero(float* x, int64_t n) override { std::fill(x, x + n, 0.0f); }

    void add_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, const Weight& w, double eps,
                     float* out) override {
        const auto weight = vector(w);
        for_row_chunks(rows, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin * dim; i < end * dim; ++i) x[i] += y[i];
            k::rmsnorm(x + begin * dim, end - begin, dim, weight, eps, out + begin * dim, dim, dim);
        });
    }

    void route(const float* logits, int64_t rows, const RouterParams& p, int32_t* experts, float* weights) override {
        const k::RouteParams params = p.with_bias(p.expert_bias != nullptr ? vector(*p.expert_bias) : k::WeightVector{});
        for_row_chunks(rows, [&](int64_t begin, int64_t end) { k::route(logits, begin, end, params, experts, weights); });
    }

    void gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out) override {
        for_row_chunks(count, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i)
                std::memcpy(out + i * dim, x + int64_t(rows[i]) * dim, size_t(dim) * sizeof(float));
        });
    }

    // A counting sort by expert: slots in row order within each expert.
    void group_by_expert(const int32_t* experts, const float* weights, int64_t rows, int64_t k, int64_t expert_count,
                         int32_t* slot_rows, int32_t* token_slots, float* token_scales, int32_t* offsets) override {
        std::vector<int64_t> next(static_cast<size_t>(expert_count) + 1, 0);
        for (int64_t i = 0; i < rows * k; ++i) {
            if (experts[i] < 0 || experts[i] >= expert_count)
                fail(Status::internal, "token {} was routed to expert {} of {}", i / k, experts[i], expert_count);
            ++next[size_t(experts[i]) + 1];
        }
        for (size_t e = 1; e < next.size(); ++e) next[e] += next[e - 1];
        for (size_t e = 0; e < next.size(); ++e) offsets[e] = static_cast<int32_t>(next[e]);
        for (int64_t t = 0; t < rows; ++t)
            for (int64_t j = 0; j < k; ++j) {
                const int32_t expert = experts[t * k + j];
                const auto slot = static_cast<int32_t>(next[size_t(expert)]++);
                slot_rows[slot] = static_cast<int32_t>(t);
                // The rank of this expert among the token's: its place in ascending expert order.
                int64_t rank = 0;
                for (int64_t other = 0; other < k; ++other) {
                    if (other != j && experts[t * k + other] == expert)
                        fail(Status::internal, "token {} was routed to expert {} twice", t, expert);
                    rank += experts[t * k + other] < expert;
                }
                token_slots[t * k + rank] = slot;
                token_scales[t * k + rank] = weights[t * k + j];
            }
    }

    void unpermute_add(float* x, int64_t rows, int64_t dim, int64_t k, const int32_t* token_slots,
                       const float* token_scales, const float* y) override {
        for_row_chunks(rows, [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t)
                for (int64_t i = 0; i < k; ++i) {
                    float* dst = x + t * dim;
                    const float scale = token_scales[t * k + i];
                    const float* src = y + int64_t(token_slots[t * k + i]) * dim;
                    for (int64_t c = 0; c < dim; ++c) dst[c] += scale * src[c];
                }
        });
    }

    void combine_guidance(float* cond, const float* uncond, double scale, int64_t n) override {
        const auto s = static_cast<float>(scale + 1.0);
        for_row_chunks(n, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) cond[i] = uncond[i] + s * (cond[i] - uncond[i]);
        }, 4096);
    }

    void candidates(const float* logits, int64_t rows, int64_t vocab, const uint32_t* positions,
                    std::span<const CandidateParams* const> params, Candidate* out) override {
        if (vocab > limits_.vocab)
            fail(Status::internal, "{} logits per row exceed the workspace reserved for {}", vocab, limits_.vocab);
        pool_.parallel_for(rows, [&](int64_t r) {
            out[r] = k::logits_to_candidate(logits + r * vocab, vocab, positions[r], *params[size_t(r)],
                                            worker().candidates);
        });
    }

    bool splits_candidates() const noexcept override { return true; }
    void candidate_peaks(const LogitShare& share, std::span<const CandidateParams* const> params,
                         CandidatePeaks* out) override {
        check_share(share);
        pool_.parallel_for(share.rows, [&](int64_t r) {
            float* z = share.logits + r * share.stride;
            k::scale_share(z, share.first, share.count, *params[size_t(r)]);
            out[r] = k::share_peaks(std::span(z, size_t(share.count)), share.first);
        });
    }

    void candidate_sums(const LogitShare& share, const uint32_t* positions,
                        std::span<const CandidateParams* const> params, const CandidatePeaks* peaks, int devices,
                        CandidateSums* out) override {
        check_share(share);
        pool_.parallel_for(share.rows, [&](int64_t r) {
            const std::span z(share.logits + r * share.stride, size_t(share.count));  // scaled by candidate_peaks
            out[r] = k::share_sums(z, share.first, merged_peaks(peaks, devices, share.rows, r), positions[r],
                                   *params[size_t(r)]);
        });
    }

    void merge_candidates(const CandidatePeaks* peaks, const CandidateSums* sums, int devices, int64_t rows,
                          int64_t vocab, std::span<const CandidateParams* const> params, Candidate* out) override {
        for (int64_t r = 0; r < rows; ++r) {
            CandidateSums merged = sums[r];
            for (int d = 1; d < devices; ++d) merged = k::merge_sums(merged, sums[d * rows + r]);
            out[r] = k::finish_candidate(merged_peaks(peaks, devices, rows, r), merged, vocab, *params[size_t(r)]);
        }
    }

private:
    WorkerScratch& worker() { return scratch_[size_t(ThreadPool::worker_index())]; }

    // The form a product's input takes (matmul.hpp): as it is, rounded to bf16 pairs, or quantized
    // to int8 blocks; prepared once into prepared_ where it fits.
    enum class Form { floats, bf16_pairs, int8_blocks };
    static int64_t prepared_row_words(Form form, int64_t k) {
        return form == Form::int8_blocks ? k::quantized_row_words(k) : k / 2;
    }

    // The form products with `m` take of x's `rows` rows, prepared into prepared_ unless `prepared`
    // (what prepared_ holds of x, updated) has it already; floats where it does not fit, or where
    // prepared_ holds another form that `keep` says is still to be read.
    Form prepare(const float* x, int64_t rows, const k::WeightMatrix& m, Form& prepared, bool keep = false) {
        const Form form = k::matmul_takes_int8(m)      ? Form::int8_blocks
                          : k::matmul_takes_rounded(m) ? Form::bf16_pairs
                                                       : Form::floats;
        const int64_t words = prepared_row_words(form, m.cols);
        if (form == Form::floats || uint64_t(rows) * uint64_t(words) > prepared_.size()) return Form::floats;
        if (keep && prepared != Form::floats && prepared != form) return Form::floats;
        if (prepared != form) {
            for_row_chunks(rows, [&](int64_t begin, int64_t end) {
                uint32_t* out = prepared_.data() + begin * words;
                if (form == Form::int8_blocks)
                    k::quantize_activations(x + begin * m.cols, m.cols, end - begin, m.cols, out);
                else
                    k::round_activations(x + begin * m.cols, m.cols, end - begin, m.cols, out);
            });
            prepared = form;
        }
        return form;
    }

    // Columns [begin, end) of x's rows [first, first + rows) · mᵀ into out (those rows' outputs),
    // reading x in `form` (prepared_ unless floats).
    void columns(const float* x, int64_t first, int64_t rows, const k::WeightMatrix& m, Form form, int64_t begin,
                 int64_t end, float* out) {
        float* panel = worker().attention.panel.data();
        if (form == Form::floats) {
            k::matmul_columns(x + first * m.cols, m.cols, rows, m, begin, end, out, m.rows, panel);
            return;
        }
        const uint32_t* prepared = prepared_.data() + first * prepared_row_words(form, m.cols);
        if (form == Form::int8_blocks)
            k::matmul_columns_quantized(prepared, rows, m, begin, end, out, m.rows, panel);
        else
            k::matmul_columns_rounded(prepared, rows, m, begin, end, out, m.rows, panel);
    }

    void check_share(const LogitShare& share) const {
        if (share.count > limits_.vocab || share.count > share.stride)
            fail(Status::internal, "a share of {} logits per row ({} apart) exceeds the workspace reserved for {}",
                 share.count, share.stride, limits_.vocab);
    }

    // Row r's peaks over every device's share, merged in device order.
    static CandidatePeaks merged_peaks(const CandidatePeaks* peaks, int devices, int64_t rows, int64_t r) {
        CandidatePeaks merged = peaks[r];
        for (int d = 1; d < devices; ++d) merged = k::merge_peaks(merged, peaks[d * rows + r]);
        return merged;
    }

    template <typename Body>
    void for_row_chunks(int64_t rows, const Body& body, int64_t chunk = row_chunk) {
        const int64_t tasks = (rows + chunk - 1) / chunk;
        pool_.parallel_for(tasks, [&](int64_t t) { body(t * chunk, std::min(rows, (t + 1) * chunk)); });
    }

    std::shared_ptr<MemoryLedger> memory_;
    ThreadPool pool_;
    std::vector<WorkerScratch> scratch_;  // one per pool thread
    std::vector<uint32_t> prepared_;      // a product's input as its kernel takes it, shared by its column runs
    WorkspaceLimits limits_;
    uint64_t workspace_bytes_ = 0;
    // The rotations of the positions rope was last called with (rope()).
    std::vector<int32_t> rope_positions_;
    std::vector<float> rope_table_;
    double rope_theta_ = 0.0;
    int64_t rope_dims_ = 0;
    bool bf16_products_;
};

}  // namespace

bool cpu_packs_panels(const Weight& w) {
    return w.role != Role::embedding && w.shape.size() == 2 && k::matmul_packs_panels(model_matrix(w, true));
}

void pack_cpu_panels(const Weight& w, uint32_t* panels) {
    if (!cpu_packs_panels(w)) fail(Status::internal, "'{}' cannot be packed for the CPU's bf16 kernel", w.name);
    k::pack_panels(model_matrix(w, true), panels);
}

uint64_t cpu_workspace_bytes(int threads, const WorkspaceLimits& limits) {
    const uint64_t rope_table = uint64_t(limits.tokens) * uint64_t(limits.head_dim) * sizeof(float) +
                                uint64_t(limits.tokens) * sizeof(int32_t);
    return uint64_t(threads) * worker_scratch_floats(limits) * sizeof(float) + rope_table +
           prepared_words(limits) * sizeof(uint32_t);
}

std::unique_ptr<Backend> make_cpu_backend(int threads, MemoryLedger& memory) {
    return std::make_unique<CpuBackend>(threads, std::shared_ptr<MemoryLedger>(&memory, [](MemoryLedger*) {}));
}

std::unique_ptr<Backend> make_cpu_backend(int threads, bool bf16_products) {
    return std::make_unique<CpuBackend>(threads, std::make_shared<MemoryLedger>("cpu", UINT64_MAX), bf16_products);
}

}  // namespace unmask
