// The CUDA backend's figures (built with UNMASK_CUDA; skipped without a device):
// - BM_cuda_forward: one forward over `tokens` positions of a model of LLaDA-8B's shape (hidden
//   4096, 32 heads, MLP 12288, vocab 126464, all 32 layers; the generation step's model, so no
//   second upload), random bf16 weights, candidates at every position; model FLOPs per second
//   against the H200's 790 TFLOP/s (dense bf16). BM_cuda_forward_profile: the same forward
//   through the profiling backend, each kind of backend call's share of the time.
// - BM_cuda_generation_step: one denoising step with the dual cache at batch 1 on the whole
//   LLaDA-8B shape (32 layers, random bf16): the current block of 32 positions fed, every other
//   position read from the K/V cache, candidates for the block; its time against the
//   weight-streaming bound (the bytes of every weight but the embedding table, which is only
//   gathered from, over 4.3 TB/s, the issue's achievable figure; the fp32 K/V cache adds about
//   0.5 GB of reads per step, 3.5% of the weights, which the bound leaves out). graphs=1: the
//   layer stack launched as a CUDA graph (the default), graphs=0: as it comes, call by call.
//   kv_bf16=1: the cache in bf16 (half its reads and bytes).
//   moe=1: the same step on 4 of the 16 layers of LLaDA-MoE-7B-A1B's shape (64 experts, 8 per
//   token: 32 tokens touch nearly every expert, so the bound still counts every weight), where the
//   routing stays on the device and the step is one graph too.
// - BM_cuda_attention: one layer's attention of LLaDA-8B's shape (32 heads of 128) over `tokens`
//   positions, bidirectional, on CUDA cores in fp32 (tensor_cores=0) or on tensor cores in bf16
//   (tensor_cores=1, what bf16 models take); FLOP/s of q·kᵀ and p·v.
// - BM_cuda_candidates: logits -> candidates over rows x 126464 fp32 logits; the kernel timed with
//   CUDA events over back-to-back launches, its bytes read per second against the H200's 4.3 TB/s
//   (call_us: the backend's whole call, with its copies and wait, timed on the host). rows=32: a
//   dual-cache step's block. sampled=0: greedy, one pass over each row (the target's case);
//   sampled=1: LLaDA's sampler at T = 1, whose Gumbel noise costs a Philox draw and two float64
//   logs for every token within reach of the maximum (all of them on these logits): a compute
//   figure, not a bandwidth one. top_p=1 adds a nucleus of 0.95 (as Dream samples), whose
//   threshold is found by bisection: 32 more passes over the row, each with a float64 exp per
//   token, to tell whether a radix select would be worth it.
// - BM_cuda_moe_experts: the routed experts of one MoE layer of LLaDA-MoE-7B-A1B's shape (hidden
//   2048, 64 experts of width 1024, 8 per token; random bf16 weights and router logits) over
//   `tokens` tokens: route, group by expert, gather, the grouped SwiGLU and the weighted
//   un-permute; the bytes of the experts the tokens chose over the time, against 4.3 TB/s. At 32
//   tokens the experts get ~4 rows each (the few-row grouped kernel), at 512 ~64 (the tensor-core
//   grouped kernel; both read the offsets on the device).
// - BM_cuda_engine: the engine on one GPU at concurrency 1, 8 and 32 (dual cache, threshold 0.9),
//   generated tokens/s and the ratio to concurrency 1.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.hpp"
#include "backend/profiled_backend.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_runtime_info.hpp"
#include "cuda/candidate_rows.hpp"
#include "cuda/candidates.hpp"
#include "core/float_convert.hpp"
#include "format/dtype.hpp"
#include "model/forward.hpp"
#include "model/kv_cache.hpp"
#include "model/model.hpp"
#include "profile_counters.hpp"
#include "synthetic_model.hpp"
#include "unmask.h"

using namespace unmask;

namespace {

namespace k = kernels::cuda;

constexpr double h200_bf16_flops = 790e12;
constexpr double h200_bytes_per_second = 4.3e12;

bool have_device(benchmark::State& state) {
    if (cuda::device_count() > 0) return true;
    state.SkipWithError("no CUDA device");
    return false;
}

// A model with LLaDA-8B's shape (or LLaDA-MoE-7B-A1B's) but `layers` layers (random bf16 weights)
// on GPU 0, backends for it with CUDA graphs (the default) and without, and `tokens` random ids.
struct DeviceModel {
    DeviceModel(bool moe, int64_t layers, int64_t tokens) {
        LoadOptions options;
        options.checksum_mode = ChecksumMode::skip;
        model = load_model(moe ? unmask_bench::synthetic_llada_moe(layers)
                               : unmask_bench::synthetic_llada({4096, layers, 32, 12288, 126464}),
                           options);
        const auto weights = CudaWeights::upload(model->weights(), 0, &ledger);
        backend = make_cuda_backend(weights);
        eager = make_cuda_backend(weights, {.graphs = false});
        std::mt19937 rng(5);
        ids.resize(static_cast<size_t>(tokens));
        for (auto& id : ids) id = static_cast<int32_t>(rng() % uint32_t(model->spec().vocab_size));
    }
    MemoryLedger ledger{"cuda", UINT64_MAX};
    std::unique_ptr<Model> model;
    std::unique_ptr<Backend> backend, eager;
    std::vector<int32_t> ids;
};

// One DeviceModel per (shape, layers, tokens) for the whole run: Google Benchmark calls a
// benchmark several times, and uploading 15 GB each time would spend the device's time on copies.
// Never freed (a CUDA backend must not outlive the runtime at exit).
const DeviceModel& device_model(bool moe, int64_t layers, int64_t tokens) {
    static auto* models = new std::map<std::tuple<bool, int64_t, int64_t>, std::unique_ptr<DeviceModel>>();
    std::unique_ptr<DeviceModel>& model = (*models)[{moe, layers, tokens}];
    if (model == nullptr) model = std::make_unique<DeviceModel>(moe, layers, tokens);
    return *model;
}

// args: tokens, layers
void BM_cuda_forward(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t tokens = state.range(0);
    const DeviceModel& device = device_model(false, state.range(1), tokens);
    const ModelSpec& spec = device.model->spec();
    const std::vector<int32_t>& ids = device.ids;
    Forward forward(*device.model, *device.backend, {tokens, tokens});
    const CandidateParams greedy;
    const std::vector<ForwardSequence> batch = {{ids, {}, &greedy, {}, 0.0}};
    for (int i = 0; i < 2; ++i) forward.run(batch, false);  // warm-up: cuBLASLt plans, staging, the graph

    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) benchmark::DoNotOptimize(forward.run(batch, false));  // ends with a synchronising copy
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double d = double(spec.hidden_size), m = double(spec.intermediate_size), t = double(tokens);
    const double flops = double(spec.layers) * (2.0 * t * (4.0 * d * d + 3.0 * d * m) + 4.0 * t * t * d) +
                         2.0 * t * d * double(spec.vocab_size);
    const double iterations = double(state.iterations());
    state.counters["tokens/s"] = t * iterations / seconds;
    state.counters["model_TFLOP/s"] = flops * iterations / seconds / 1e12;
    state.counters["peak_fraction"] = flops * iterations / seconds / h200_bf16_flops;
}

// The same forward through the profiling backend: each kind of call's share of the time.
// args: tokens, layers
void BM_cuda_forward_profile(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t tokens = state.range(0);
    const DeviceModel& device = device_model(false, state.range(1), tokens);
    ProfiledBackend profiled(*device.backend);
    Forward forward(*device.model, profiled, {tokens, tokens});
    const CandidateParams greedy;
    const std::vector<ForwardSequence> batch = {{device.ids, {}, &greedy, {}, 0.0}};
    forward.run(batch, false);  // warm-up: cuBLASLt plans, staging
    profiled.reset();
    for (auto _ : state) benchmark::DoNotOptimize(forward.run(batch, false));
    unmask_bench::report_profile(state, profiled);
}

// args: layers, canvas, block, graphs, moe, kv_bf16
void BM_cuda_generation_step(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t layers = state.range(0), canvas = state.range(1), block = state.range(2);
    const DeviceModel& device = device_model(state.range(4) != 0, layers, canvas);
    Backend& backend = state.range(3) != 0 ? *device.backend : *device.eager;
    const Model& model = *device.model;
    const std::vector<int32_t>& ids = device.ids;
    Forward forward(model, backend, {canvas, canvas});
    KVCache cache(backend, nullptr, model.spec(), canvas, state.range(5) != 0 ? DType::bf16 : DType::f32);
    const CandidateParams greedy;
    // The block's first step: the whole canvas fed, filling the cache.
    const std::vector<int32_t> first = {0};
    ForwardSequence refresh{ids, first, &greedy, {}, 0.0};
    refresh.cache = &cache;
    forward.run(std::span(&refresh, 1), false);
    // The steps after it: one block in the generated half fed, candidates at its positions.
    const int64_t begin = canvas / 2;
    std::vector<int32_t> outputs(static_cast<size_t>(block));
    for (int64_t i = 0; i < block; ++i) outputs[size_t(i)] = static_cast<int32_t>(begin + i);
    ForwardSequence step{ids, outputs, &greedy, {}, 0.0};
    step.cache = &cache;
    step.feed_begin = begin;
    step.feed_end = begin + block;
    // Warm-up: cuBLASLt plans for these shapes; with graphs, the step's shape seen, then recorded.
    for (int i = 0; i < 2; ++i) forward.run(std::span(&step, 1), false);

    const int64_t replayed = cuda_graph_stats(backend).replayed;
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) benchmark::DoNotOptimize(forward.run(std::span(&step, 1), false));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                           double(state.iterations());
    double streamed = 0;
    for (const Weight& w : model.weights())
        if (w.role != Role::embedding) streamed += double(dtype_bytes(w.dtype, w.elements));
    const double bound = streamed / h200_bytes_per_second;
    state.counters["step_ms"] = seconds * 1e3;
    state.counters["bound_ms"] = bound * 1e3;
    state.counters["bound_ratio"] = seconds / bound;
    state.counters["graph_launches"] = double(cuda_graph_stats(backend).replayed - replayed);  // iterations with graphs
}

// args: tokens, tensor_cores
void BM_cuda_attention(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t tokens = state.range(0), heads = 32, head_dim = 128, width = heads * head_dim;
    MemoryLedger ledger("cuda", UINT64_MAX);
    auto backend = make_cuda_backend(CudaWeights::upload(std::span<const Weight>{}, 0, &ledger));
    std::mt19937 rng(8);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(size_t(tokens * width));
    auto upload = [&] {
        for (float& v : values) v = normal(rng);
        DeviceBuffer buffer = backend->allocate(values.size() * sizeof(float));
        backend->copy_to_device(buffer, values.data(), values.size() * sizeof(float));
        return buffer;
    };
    const DeviceBuffer q = upload(), k = upload(), v = upload(), out = backend->allocate(values.size() * sizeof(float));
    backend->reserve_workspace({tokens, 1, tokens, 1, 0, 0});
    const SequenceRows sequence{0, tokens, nullptr, nullptr, 0, 0, 0};
    const AttentionParams params{heads, heads, head_dim, 0, state.range(1) != 0};
    auto run = [&] {
        backend->attention(q.floats(), k.floats(), v.floats(), std::span(&sequence, 1), params, out.floats());
        float last = 0;
        backend->copy_to_host(&last, out, sizeof last);  // waits for the device
    };
    run();  // warm-up: the shared-memory opt-in
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) run();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                           double(state.iterations());
    const double flops = 4.0 * double(tokens) * double(tokens) * double(width);  // q·kᵀ and p·v
    state.counters["attention_ms"] = seconds * 1e3;
    state.counters["TFLOP/s"] = flops / seconds / 1e12;
}

// args: rows, sampled, top_p
void BM_cuda_candidates(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t rows = state.range(0), vocab = 126464;
    MemoryLedger ledger("cuda", UINT64_MAX);
    auto backend = make_cuda_backend(CudaWeights::upload(std::span<const Weight>{}, 0, &ledger));
    std::mt19937 rng(6);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(size_t(rows * vocab));
    for (float& v : logits) v = normal(rng);
    DeviceBuffer device_logits = backend->allocate(logits.size() * sizeof(float));
    backend->copy_to_device(device_logits, logits.data(), logits.size() * sizeof(float));
    CandidateParams sampling;  // greedy, or LLaDA's sampler at T = 1
    sampling.noise_temperature = state.range(1) != 0 ? 1.0 : 0.0;
    sampling.top_p = state.range(2) != 0 ? 0.95 : 1.0;
    std::vector<uint32_t> positions(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) positions[size_t(r)] = uint32_t(r);
    const std::vector<const CandidateParams*> params(size_t(rows), &sampling);
    std::vector<Candidate> out(static_cast<size_t>(rows));

    // The kernel alone: its parameters on the device once, launches back to back between two
    // events (no upload, copy or synchronisation in the figure).
    std::vector<k::CandidateRow> flat;
    for (int64_t r = 0; r < rows; ++r) flat.push_back(k::candidate_row(sampling, positions[size_t(r)], 0));
    const int32_t no_banned = -1;
    DeviceBuffer device_rows = backend->allocate(flat.size() * sizeof(k::CandidateRow)),
                 device_banned = backend->allocate(sizeof no_banned),
                 device_out = backend->allocate(out.size() * sizeof(Candidate));
    backend->copy_to_device(device_rows, flat.data(), flat.size() * sizeof(k::CandidateRow));
    backend->copy_to_device(device_banned, &no_banned, sizeof no_banned);
    backend->synchronize();
    cudaStream_t stream = nullptr;
    cudaEvent_t begin = nullptr, end = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&begin) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess)
        return state.SkipWithError("cannot create a stream and events");
    const k::GumbelRange gumbel = k::gumbel_range();
    const auto* row_params = reinterpret_cast<const k::CandidateRow*>(device_rows.floats());
    auto* candidates = reinterpret_cast<Candidate*>(device_out.floats());
    auto launch = [&] {
        return k::candidates(device_logits.floats(), rows, vocab, row_params, device_banned.ints(), gumbel, candidates,
                             stream);
    };
    if (launch() != cudaSuccess || cudaStreamSynchronize(stream) != cudaSuccess)
        return state.SkipWithError("the candidates kernel failed");
    double kernel_seconds = 0;
    int64_t launches = 0;
    for (auto _ : state) {
        constexpr int batch = 20;
        cudaEventRecord(begin, stream);
        for (int i = 0; i < batch; ++i)
            if (launch() != cudaSuccess) return state.SkipWithError("the candidates kernel failed");
        cudaEventRecord(end, stream);
        cudaEventSynchronize(end);
        float ms = 0;
        cudaEventElapsedTime(&ms, begin, end);
        kernel_seconds += ms / 1e3;
        launches += batch;
    }
    // The backend's call as the forward makes it (parameters up, candidates down, a wait), timed
    // on the host: what the kernel's figure leaves out.
    const int64_t calls = 20;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < calls; ++i)
        backend->candidates(device_logits.floats(), rows, vocab, positions.data(), params, out.data());
    const double call_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
    cudaStreamDestroy(stream);

    const double per_kernel = kernel_seconds / double(launches), bytes = double(rows * vocab) * sizeof(float);
    state.counters["kernel_us"] = per_kernel * 1e6;
    state.counters["call_us"] = call_seconds * 1e6;
    state.counters["GB/s"] = bytes / per_kernel / 1e9;
    state.counters["bandwidth_fraction"] = bytes / per_kernel / h200_bytes_per_second;
}

// args: tokens
void BM_cuda_moe_experts(benchmark::State& state) {
    if (!have_device(state)) return;
    const int64_t tokens = state.range(0), hidden = 2048, experts = 64, width = 1024, k = 8;
    // Every expert's gate, up and down in bf16, uniform in +-0.02 from a xorshift (quick to make:
    // 805 MB of weights whose values do not matter to the time).
    std::vector<uint16_t> table(size_t(3 * experts * width * hidden));
    uint32_t bits = 7;
    for (uint16_t& v : table) {
        bits ^= bits << 13;
        bits ^= bits >> 17;
        bits ^= bits << 5;
        v = float_to_bf16((float(bits) / 4294967296.0f - 0.5f) * 0.04f);
    }
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<Weight> weights(size_t(3 * experts));
    for (size_t i = 0; i < weights.size(); ++i) {
        Weight& w = weights[i];
        w.name = "expert";
        w.dtype = w.file_dtype = DType::bf16;
        w.shape = i < size_t(2 * experts) ? std::vector<int64_t>{width, hidden} : std::vector<int64_t>{hidden, width};
        w.elements = uint64_t(width * hidden);
        w.data = table.data() + i * w.elements;
    }
    std::vector<const Weight*> gate, up, down;
    for (int64_t e = 0; e < experts; ++e) {
        gate.push_back(&weights[size_t(e)]);
        up.push_back(&weights[size_t(experts + e)]);
        down.push_back(&weights[size_t(2 * experts + e)]);
    }
    MemoryLedger ledger("cuda", UINT64_MAX);
    auto backend = make_cuda_backend(CudaWeights::upload(weights, 0, &ledger));
    Backend& b = *backend;
    auto upload = [&](const std::vector<float>& v) {
        DeviceBuffer buffer = b.allocate(v.size() * sizeof(float));
        b.copy_to_device(buffer, v.data(), v.size() * sizeof(float));
        return buffer;
    };
    std::vector<float> logits(size_t(tokens * experts)), x(size_t(tokens * hidden));
    for (float& v : logits) v = normal(rng);
    for (float& v : x) v = normal(rng);
    const DeviceBuffer router_logits = upload(logits), hidden_states = upload(x);
    const auto slots = size_t(tokens * k);
    const DeviceBuffer chosen = b.allocate(slots * 4), chosen_weights = b.allocate(slots * 4),
                       slot_rows = b.allocate(slots * 4), token_slots = b.allocate(slots * 4),
                       token_scales = b.allocate(slots * 4), gathered = b.allocate(slots * size_t(hidden) * 4),
                       g = b.allocate(slots * size_t(width) * 4), u = b.allocate(slots * size_t(width) * 4),
                       y = b.allocate(slots * size_t(hidden) * 4), offsets = b.allocate(size_t(experts + 1) * 4);
    b.reserve_workspace({1, 1, tokens, int64_t(slots) * hidden, experts, 3});
    const RouterParams params{experts, k, false, false, 1.0, nullptr};
    auto layer = [&] {
        b.route(router_logits.floats(), tokens, params, chosen.ints(), chosen_weights.floats());
        b.group_by_expert(chosen.ints(), chosen_weights.floats(), tokens, k, experts, slot_rows.ints(),
                          token_slots.ints(), token_scales.floats(), offsets.ints());
        b.gather_rows(hidden_states.floats(), hidden, slot_rows.ints(), int64_t(slots), gathered.floats());
        const GroupedMatmulOutput gate_up[] = {{gate, g.floats()}, {up, u.floats()}};
        b.grouped_matmuls(gathered.floats(), int64_t(slots), offsets.ints(), gate_up);
        b.swiglu(g.floats(), u.floats(), int64_t(slots) * width);
        const GroupedMatmulOutput out[] = {{down, y.floats()}};
        b.grouped_matmuls(g.floats(), int64_t(slots), offsets.ints(), out);
        // Into a scratch copy of the hidden states (the values do not matter to the time).
        b.unpermute_add(gathered.floats(), tokens, hidden, k, token_slots.ints(), token_scales.floats(), y.floats());
        float last = 0;
        b.copy_to_host(&last, y, sizeof(float));  // waits for the device
    };
    layer();  // warm-up: cuBLASLt plans, the experts' weight tables
    std::vector<int32_t> host_offsets(size_t(experts + 1));
    b.copy_to_host(host_offsets.data(), offsets, host_offsets.size() * sizeof(int32_t));
    int64_t touched = 0;
    for (int64_t e = 0; e < experts; ++e) touched += host_offsets[size_t(e) + 1] > host_offsets[size_t(e)];

    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) layer();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                           double(state.iterations());
    const double bytes = double(touched * 3 * width * hidden * 2);
    state.counters["layer_ms"] = seconds * 1e3;
    state.counters["experts_used"] = double(touched);
    state.counters["bandwidth_fraction"] = bytes / seconds / h200_bytes_per_second;
}

// args: layers. The same 32 requests (16-token prompts, 64 generated in blocks of 32, the dual
// cache, threshold 0.9) served at 1, 8 and 32 concurrent on one GPU through the C API, as a
// service runs them; generated tokens/s at each level and the ratio to concurrency 1 (target:
// >= 4 at 8). `layers` of the LLaDA-8B shape (fewer than 32 to keep the upload short: batching's
// gain is per layer).
void BM_cuda_engine(benchmark::State& state) {
    if (!have_device(state)) return;
    unmask_model_params model_params;
    unmask_model_params_init(&model_params);
    model_params.precision = UNMASK_PRECISION_BF16;
    model_params.backend = UNMASK_BACKEND_CUDA;
    model_params.checksum_mode = UNMASK_CHECKSUM_SKIP;
    unmask_model* model = nullptr;
    const auto path = unmask_bench::synthetic_llada({4096, state.range(0), 32, 12288, 126464});
    if (unmask_model_load(path.c_str(), &model_params, &model) != UNMASK_OK)
        return state.SkipWithError(unmask_last_error());
    unmask_generate_params params;
    unmask_generate_params_init(&params);
    params.gen_length = 64;
    params.steps = 64;
    params.block_length = 32;
    params.threshold = 0.9;
    params.cache_mode = UNMASK_CACHE_DUAL;
    const int requests = 32;
    for (auto _ : state) {
        double baseline = 0;
        for (int32_t concurrency : {1, 8, 32}) {
            unmask_engine_params engine_params;
            unmask_engine_params_init(&engine_params);
            engine_params.max_concurrent_requests = concurrency;
            engine_params.max_queued_requests = requests;
            engine_params.max_sequence_length = 80;
            unmask_engine* engine = nullptr;
            if (unmask_engine_create(model, &engine_params, &engine) != UNMASK_OK) {
                state.SkipWithError(unmask_last_error());
                break;
            }
            std::vector<unmask_request*> submitted;
            const auto start = std::chrono::steady_clock::now();
            for (int i = 0; i < requests; ++i) {
                std::vector<int32_t> prompt(16);
                for (size_t j = 0; j < prompt.size(); ++j)
                    prompt[j] = static_cast<int32_t>(100 + 37 * j + 11 * size_t(i));
                unmask_request* r = nullptr;
                if (unmask_engine_submit(engine, &params, prompt.data(), 16, 60.0, &r) == UNMASK_OK)
                    submitted.push_back(r);
            }
            int64_t generated = 0, finished = 0;
            for (unmask_request* r : submitted) {
                unmask_request_wait(r, -1);
                unmask_request_info info{};
                info.struct_size = sizeof info;
                if (unmask_request_info_get(r, &info) == UNMASK_OK &&
                    (info.finish_reason == UNMASK_FINISH_LENGTH || info.finish_reason == UNMASK_FINISH_EOS)) {
                    generated += info.token_count;
                    ++finished;
                }
                unmask_request_free(r);
            }
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            unmask_engine_free(engine);
            const double rate = double(generated) / seconds;
            if (concurrency == 1) baseline = rate;
            state.counters["tokens/s@" + std::to_string(concurrency)] = rate;
            state.counters["ratio@" + std::to_string(concurrency)] = baseline > 0 ? rate / baseline : 0.0;
            state.counters["finished@" + std::to_string(concurrency)] = double(finished);  // of 32
        }
    }
    unmask_model_free(model);
}

}  // namespace

BENCHMARK(BM_cuda_forward)
    ->Args({512, 32})
    ->ArgNames({"tokens", "layers"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_cuda_forward_profile)
    ->Args({512, 32})
    ->ArgNames({"tokens", "layers"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_cuda_generation_step)
    ->Args({32, 512, 32, 1, 0, 0})
    ->Args({32, 512, 32, 0, 0, 0})
    ->Args({32, 512, 32, 1, 0, 1})
    ->Args({4, 512, 32, 1, 1, 0})
    ->Args({4, 512, 32, 0, 1, 0})
    ->ArgNames({"layers", "canvas", "block", "graphs", "moe", "kv_bf16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_cuda_attention)
    ->Args({512, 0})
    ->Args({512, 1})
    ->ArgNames({"tokens", "tensor_cores"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_cuda_candidates)
    ->Args({32, 0, 0})
    ->Args({512, 0, 0})
    ->Args({512, 1, 0})
    ->Args({512, 1, 1})
    ->ArgNames({"rows", "sampled", "top_p"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_cuda_engine)->Arg(8)->ArgNames({"layers"})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_cuda_moe_experts)->Arg(32)->Arg(512)->ArgNames({"tokens"})->Unit(benchmark::kMillisecond)->UseRealTime();
