// The forward pass against the PyTorch reference (tests/reference): every architecture, a batch
// of sequences of different lengths, fp32 and bf16 weights; plus the properties decoding relies
// on: identical results alone or batched and for any thread count, and exact top-1 candidates.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/profiled_backend.hpp"
#include "compare.hpp"
#include "fixtures.hpp"
#include "core/error.hpp"
#include "format/safetensors.hpp"
#include "model/forward.hpp"
#include "model/kv_cache.hpp"
#include "model/model.hpp"
#include "model/run_state.hpp"

using namespace unmask;

namespace {

std::string reference_dir(const std::string& name) { return test_data_path("reference/" + name); }

struct ReferenceCase {
    std::vector<std::vector<int32_t>> tokens;
    std::vector<std::vector<double>> logits;       // [length * rows] per sequence, fp32 weights
    std::vector<std::vector<double>> logits_bf16;  // the same with the weights rounded to bf16
    std::vector<std::vector<double>> logits_kv_bf16;  // fp32 weights, keys and values rounded to bf16
    std::vector<std::vector<double>> logits_unquantized;  // fp8 checkpoints: of the float weights they were made from
    std::vector<std::vector<double>> logits_int8, logits_q4;  // the weights precision int8 and q4 make (llada)
};

ReferenceCase read_reference(const std::string& dir) {
    const SafetensorsFile file(dir + "/reference.safetensors");
    ReferenceCase out;
    for (size_t i = 0;; ++i) {
        const auto& tensors = file.header().tensors;
        auto find = [&](const std::string& name) {
            return std::find_if(tensors.begin(), tensors.end(), [&](const TensorInfo& t) { return t.name == name; });
        };
        const auto tokens = find("tokens." + std::to_string(i));
        if (tokens == tensors.end()) break;
        std::vector<int64_t> ids(tokens->elements);
        std::memcpy(ids.data(), file.tensor_bytes(*tokens), ids.size() * 8);
        out.tokens.emplace_back(ids.begin(), ids.end());
        for (auto [prefix, into] : {std::pair{"logits.", &out.logits}, std::pair{"logits_bf16.", &out.logits_bf16},
                                    std::pair{"logits_kv_bf16.", &out.logits_kv_bf16}}) {
            const auto logits = find(prefix + std::to_string(i));
            REQUIRE(logits != tensors.end());
            std::vector<float> values(logits->elements);
            std::memcpy(values.data(), file.tensor_bytes(*logits), values.size() * 4);
            into->emplace_back(values.begin(), values.end());
        }
        for (auto [prefix, into] : {std::pair{"logits_unquantized.", &out.logits_unquantized},
                                    std::pair{"logits_int8.", &out.logits_int8}, std::pair{"logits_q4.", &out.logits_q4}}) {
            const auto optional = find(prefix + std::to_string(i));
            if (optional == tensors.end()) continue;
            std::vector<float> values(optional->elements);
            std::memcpy(values.data(), file.tensor_bytes(*optional), values.size() * 4);
            into->emplace_back(values.begin(), values.end());
        }
    }
    REQUIRE(out.tokens.size() == 3);
    return out;
}

std::unique_ptr<Model> load(const std::string& name, Precision precision, bool quantize_embeddings = false) {
    LoadOptions options;
    options.precision = precision;
    options.quantize_embeddings = quantize_embeddings;
    return load_model(reference_dir(name), options);
}

// One forward of `sequences` on the CPU, with fp32 products (the reference's arithmetic) unless
// bf16_products (kernels/cpu/matmul.hpp).
ForwardOutput run(const Model& model, const std::vector<std::vector<int32_t>>& sequences, int threads,
                  const CandidateParams* sampling = nullptr, bool bf16_products = false) {
    auto backend = make_cpu_backend(threads, bf16_products);
    ForwardLimits limits;
    for (const auto& s : sequences) {
        limits.tokens += static_cast<int64_t>(s.size());
        limits.sequence_length = std::max(limits.sequence_length, static_cast<int64_t>(s.size()));
    }
    Forward forward(model, *backend, limits);
    std::vector<ForwardSequence> batch;
    for (const auto& s : sequences) batch.push_back({s, {}, sampling, {}, 0.0});
    return forward.run(batch, sampling == nullptr);
}

// llada-moe-sigmoid: sigmoid router with an expert bias for selection, no shared expert, a dense last layer.
// llada-block: block diffusion (block-causal attention over blocks of 8 from position 0).
// llada2-moe: fused QKV, q/k norms, partial RoPE, a dense first layer, group-limited sigmoid routing
// with a bias, renormalised and scaled, a shared expert; block-causal. sdar: Qwen3 layers,
// block-causal over blocks of 4. sdar-moe: Qwen3-MoE routing with a dense middle layer. rnd1:
// Qwen3-MoE, bidirectional, shifted predictions, tied embeddings. llada-fp8: an fp8 checkpoint with
// per-tensor scales (and activation scales, not used); llada-fp8-block: 128x128 blocks with bf16
// scales, the embedding and LM head in fp8 too. Their references run on the weights the codes
// and scales stand for; here they are decoded at load, below they run on their blocks.
const char* const architectures[] = {"llada", "llada-block", "llada-moe", "llada-moe-sigmoid", "dream",
                                     "llada2-moe", "sdar", "sdar-moe", "rnd1", "llada-fp8", "llada-fp8-block"};

}  // namespace

// bf16: the weights are rounded to bf16 while loading, and compared with the reference run on
// the same rounded weights (comparing with the fp32 model instead would mostly measure how far
// rounding moves a random MoE router, not whether unmask computes correctly). Their products
// keep fp32 activations here, the reference's arithmetic; the next test rounds them too.
TEST_CASE("the forward pass matches the PyTorch reference for every architecture in fp32 and bf16") {
    for (const std::string name : architectures) {
        const ReferenceCase reference = read_reference(reference_dir(name));
        for (const auto& [precision, tolerance] :
             {std::pair{Precision::fp32, 1e-4}, std::pair{Precision::bf16, 2e-2}}) {
            CAPTURE(name);
            CAPTURE(static_cast<int>(precision));
            const auto model = load(name, precision);
            const ForwardOutput out = run(*model, reference.tokens, 2);
            const auto& expected = precision == Precision::fp32 ? reference.logits : reference.logits_bf16;
            size_t offset = 0;
            for (size_t s = 0; s < reference.tokens.size(); ++s) {
                CAPTURE(s);
                const double error = relative_error(out.logits.data() + offset, expected[s].data(), expected[s].size());
                MESSAGE(name << " precision " << static_cast<int>(precision) << " sequence " << s
                             << ": max relative error " << error);
                CHECK(error <= tolerance);
                offset += reference.logits[s].size();
            }
            CHECK(offset == out.logits.size());
        }
    }
}

// bf16 products (on a CPU with AVX512-BF16; elsewhere this repeats the test above): the
// activations rounded to bf16 in every matrix product but the router's. That moves the logits by
// 0.3-0.8% of the largest; but it also moves the hidden state each MoE router sees, and these
// random routers have near ties that such a move flips, changing that position's experts (one
// position of each of three MoE models then differs by 9-32%). So: each position within the tolerance for
// the dense architectures, and at least 90% of positions for those with experts.
TEST_CASE("the forward pass with bf16 products stays within the bf16 tolerance of the reference") {
    constexpr double tolerance = 2e-2;
    for (const std::string name : architectures) {
        CAPTURE(name);
        const ReferenceCase reference = read_reference(reference_dir(name));
        const auto model = load(name, Precision::bf16);
        const bool experts = model->spec().is_moe();
        const ForwardOutput out = run(*model, reference.tokens, 2, nullptr, true);
        size_t offset = 0, positions = 0, within = 0;
        double worst = 0;
        for (size_t s = 0; s < reference.tokens.size(); ++s)
            for (size_t p = 0, vocab = reference.logits_bf16[s].size() / reference.tokens[s].size();
                 p < reference.tokens[s].size(); ++p, offset += vocab, ++positions) {
                const double error =
                    relative_error(out.logits.data() + offset, reference.logits_bf16[s].data() + p * vocab, vocab);
                worst = std::max(worst, error);
                within += error <= tolerance;
                if (!experts) CHECK(error <= tolerance);
            }
        CHECK(offset == out.logits.size());
        MESSAGE(name << ": " << within << " of " << positions << " positions within " << tolerance << ", worst " << worst);
        CHECK(double(within) >= 0.9 * double(positions));
    }
}

// Loaded as they are, an fp8 checkpoint's matrices stay F8_E4M3 (groups of 128 values with their
// scale): the matmuls decode them per K block, with the same products as decoding at load, so the
// logits are those of the model decoded to fp32 bit for bit.
TEST_CASE("fp8 checkpoints run on their blocks and match the reference on the weights they stand for") {
    for (const std::string name : {"llada-fp8", "llada-fp8-block"}) {
        CAPTURE(name);
        const ReferenceCase reference = read_reference(reference_dir(name));
        const auto blocks = load(name, Precision::automatic);
        const auto decoded = load(name, Precision::fp32);
        int64_t fp8 = 0;
        for (const Weight& w : blocks->weights()) {
            CAPTURE(w.name);
            if (w.file_dtype != DType::f8_e4m3) continue;
            ++fp8;
            CHECK(w.dtype == DType::f8_e4m3_b128);
            CHECK(decoded->weight(w.name).dtype == DType::f32);
        }
        CHECK(fp8 == (name == "llada-fp8" ? 14 : 16));  // 7 matrices per layer, and the embedding and LM head
        const ForwardOutput out = run(*blocks, reference.tokens, 2);
        const ForwardOutput wide = run(*decoded, reference.tokens, 2);
        CHECK(out.logits == wide.logits);
        REQUIRE(reference.logits_unquantized.size() == reference.tokens.size());
        size_t offset = 0;
        for (size_t s = 0; s < reference.tokens.size(); ++s) {
            CAPTURE(s);
            const double error = relative_error(out.logits.data() + offset, reference.logits[s].data(), reference.logits[s].size());
            const double quantization = relative_error(out.logits.data() + offset, reference.logits_unquantized[s].data(),
                                                       reference.logits_unquantized[s].size());
            MESSAGE(name << " sequence " << s << ": max relative error " << error
                         << "; against the float model it was made from (fp8's own error) " << quantization);
            CHECK(error <= 1e-4);
            offset += reference.logits[s].size();
        }
    }
}

// precision int8 and q4 quantize the matrices at load (Q8_0 and Q4_0 blocks, as ggml's reference
// quantizer makes them); the reference runs on the same blocks decoded, in float64.
TEST_CASE("int8 and q4 made at load match the PyTorch reference on the weights they quantize to") {
    const ReferenceCase reference = read_reference(reference_dir("llada"));
    for (const auto& [precision, expected] : {std::pair{Precision::int8, &reference.logits_int8},
                                              std::pair{Precision::q4, &reference.logits_q4}}) {
        CAPTURE(static_cast<int>(precision));
        REQUIRE(expected->size() == reference.tokens.size());
        const auto model = load("llada", precision);
        const ForwardOutput out = run(*model, reference.tokens, 2);
        size_t offset = 0;
        for (size_t s = 0; s < reference.tokens.size(); ++s) {
            CAPTURE(s);
            const double error = relative_error(out.logits.data() + offset, (*expected)[s].data(), (*expected)[s].size());
            const double quantization =
                relative_error(out.logits.data() + offset, reference.logits[s].data(), reference.logits[s].size());
            MESSAGE("llada precision " << static_cast<int>(precision) << " sequence " << s << ": max relative error "
                                       << error << "; against the float model (the quantization's own) " << quantization);
            CHECK(error <= 1e-4);
            offset += reference.logits[s].size();
        }
    }
}

// quantize_embeddings also quantizes the embedding (its lookup decodes the rows it gathers) and
// the LM head. No reference quantizes those, so: the logits move from the matrices-only ones, and
// stay near the float model: int8 1.2-1.6% of the largest logit (1.0-1.2% for the matrices
// alone), q4 20-28% (16-19%) on these random weights.
TEST_CASE("quantize_embeddings: the embedding and LM head quantized too stay near the float model") {
    const ReferenceCase reference = read_reference(reference_dir("llada"));
    for (const auto& [precision, bound] : {std::pair{Precision::int8, 0.03}, std::pair{Precision::q4, 0.4}}) {
        CAPTURE(static_cast<int>(precision));
        const auto all = load("llada", precision, true);
        CHECK(all->weight("model.transformer.wte.weight").dtype != DType::f32);
        const ForwardOutput out = run(*all, reference.tokens, 2);
        const ForwardOutput matrices = run(*load("llada", precision), reference.tokens, 2);
        CHECK(out.logits != matrices.logits);
        size_t offset = 0;
        for (size_t s = 0; s < reference.tokens.size(); ++s) {
            CAPTURE(s);
            const double quantization =
                relative_error(out.logits.data() + offset, reference.logits[s].data(), reference.logits[s].size());
            const double without = relative_error(matrices.logits.data() + offset, reference.logits[s].data(),
                                                  reference.logits[s].size());
            MESSAGE("llada precision " << static_cast<int>(precision) << " sequence " << s
                                       << ": against the float model " << quantization << " (matrices only " << without << ")");
            CHECK(quantization <= bound);
            offset += reference.logits[s].size();
        }
    }
}

// A bf16 K/V cache rounds each key and value as it is stored, and a forward reads every key from
// its sequence's cache: feeding the whole canvas gives the reference with K/V rounded to bf16.
// Mostly within 1e-4; but a key computed in fp32 can round to the other neighbouring bf16
// value than the float64 reference's (a few of the ~50,000 per model), and one such flip moves
// the 7-token Dream sequence's logits by 1.2e-3. So: within 2e-3 each, and over an
// architecture's sequences at least 3x closer to this reference than to the unrounded one.
TEST_CASE("a forward through a bf16 K/V cache matches the reference with keys and values rounded to bf16") {
    for (const std::string name : architectures) {
        CAPTURE(name);
        const ReferenceCase reference = read_reference(reference_dir(name));
        const auto model = load(name, Precision::fp32);
        auto backend = make_cpu_backend(2);
        double total_error = 0, total_unrounded = 0;
        for (size_t s = 0; s < reference.tokens.size(); ++s) {
            CAPTURE(s);
            const std::vector<int32_t>& tokens = reference.tokens[s];
            const auto length = static_cast<int64_t>(tokens.size());
            Forward forward(*model, *backend, {length, length});
            KVCache cache(*backend, nullptr, model->spec(), length, DType::bf16);
            const ForwardSequence sequence{tokens, {}, nullptr, {}, 0.0, &cache, nullptr, 0, -1};
            const std::vector<float> logits = forward.run(std::vector{sequence}, true).logits;
            const double error = relative_error(logits.data(), reference.logits_kv_bf16[s].data(), logits.size());
            const double unrounded = relative_error(logits.data(), reference.logits[s].data(), logits.size());
            MESSAGE(name << " sequence " << s << ": max relative error " << error << " (" << unrounded
                         << " from the fp32 K/V reference)");
            CHECK(error <= 2e-3);
            total_error += error;
            total_unrounded += unrounded;
        }
        CHECK(3 * total_error < total_unrounded);  // the rounding is visible: the test tells the two apart
    }
}

TEST_CASE("a sequence gets bit-identical logits alone, batched, and with any thread count") {
    for (const std::string name : architectures) {
        CAPTURE(name);
        const ReferenceCase reference = read_reference(reference_dir(name));
        const auto model = load(name, Precision::bf16);
        std::vector<ForwardOutput> alone;
        for (const auto& tokens : reference.tokens) alone.push_back(run(*model, {tokens}, 1));
        // The reference batch, and the same sequences repeated beyond one chunk of the MoE
        // layers' tokens (moe_chunk_tokens), so that some sequences straddle two chunks.
        std::vector<std::vector<int32_t>> many;
        size_t tokens = 0;
        while (tokens <= size_t(moe_chunk_tokens))
            for (const auto& sequence : reference.tokens) {
                many.push_back(sequence);
                tokens += sequence.size();
            }
        for (const auto& batch : {reference.tokens, many}) {
            CAPTURE(batch.size());
            const ForwardOutput batched = run(*model, batch, 3);
            size_t offset = 0;
            for (size_t s = 0; s < batch.size(); ++s) {
                const std::vector<float>& expected = alone[s % alone.size()].logits;
                REQUIRE(std::equal(expected.begin(), expected.end(), batched.logits.begin() + long(offset)));
                offset += expected.size();
            }
            CHECK(offset == batched.logits.size());
        }
    }
}

// The last layer computes queries, attention and MLP only for the rows outputs read (PackedBatch
// in model/forward_rank.hpp): what it leaves out must change no output's bits, whatever the
// architecture (shifted outputs, block-causal masks), batch, cache, guidance or device count.
TEST_CASE("outputs at some positions are bit-identical to the same positions of a whole forward") {
    // All of the 7-token sequence, three positions of the 70-token one (two query segments under
    // block-causal masks) and one of the 131-token one (Dream's shift reads position 99).
    const std::vector<std::vector<int32_t>> positions = {{}, {40, 33, 41}, {100}};
    for (const std::string name : architectures) {
        CAPTURE(name);
        const ReferenceCase reference = read_reference(reference_dir(name));
        const auto model = load(name, Precision::bf16);
        const size_t vocab = size_t(model->spec().embedding_rows);
        int64_t routed_layers = 0;
        for (int64_t layer = 0; layer < model->spec().layers; ++layer) routed_layers += model->spec().routed(layer);
        std::vector<std::vector<int32_t>> unconditional;  // CFG twins: the canvases reversed
        for (const auto& tokens : reference.tokens) unconditional.emplace_back(tokens.rbegin(), tokens.rend());
        auto inner = make_cpu_backend(2);
        auto second = make_cpu_backend(1);
        ProfiledBackend profiled(*inner);
        ForwardLimits limits;
        for (const auto& tokens : reference.tokens) {
            limits.tokens += 2 * int64_t(tokens.size());
            limits.sequence_length = std::max(limits.sequence_length, int64_t(tokens.size()));
        }
        Forward one_device(*model, profiled, limits);
        const std::array<Backend*, 2> pair = {inner.get(), second.get()};
        Forward two_devices(*model, pair, limits);
        for (Forward* forward : {&one_device, &two_devices}) {
            for (const bool cached : {false, true}) {
                for (const bool guided : {false, true}) {
                    CAPTURE(forward->devices().size());
                    CAPTURE(cached);
                    CAPTURE(guided);
                    std::vector<std::unique_ptr<KVCache>> caches;
                    std::vector<ForwardSequence> batch;
                    for (size_t s = 0; s < reference.tokens.size(); ++s) {
                        const auto length = int64_t(reference.tokens[s].size());
                        ForwardSequence sequence{reference.tokens[s], {}, nullptr, {}, 0.0};
                        if (guided) sequence.unconditional_tokens = unconditional[s], sequence.cfg_scale = 1.5;
                        for (int twin = 0; cached && twin < (guided ? 2 : 1); ++twin)
                            caches.push_back(std::make_unique<KVCache>(forward->devices(), nullptr, model->spec(), length));
                        if (cached) {
                            sequence.cache = caches[caches.size() - (guided ? 2 : 1)].get();
                            if (guided) sequence.unconditional_cache = caches.back().get();
                        }
                        batch.push_back(sequence);
                    }
                    const std::vector<float> whole = forward->run(batch, true).logits;
                    for (size_t s = 0; s < batch.size(); ++s) batch[s].output_positions = positions[s];
                    profiled.reset();
                    const std::vector<float> some = forward->run(batch, true).logits;
                    if (forward == &one_device)  // the outputs', the kept rows' two and one per routed layer
                        CHECK(profiled.times().at("gather_rows").calls == 3 + routed_layers);
                    size_t row = 0, first = 0;
                    for (size_t s = 0; s < batch.size(); ++s) {
                        const size_t length = reference.tokens[s].size();
                        const std::vector<int32_t>& wanted = positions[s];
                        for (size_t i = 0; i < (wanted.empty() ? length : wanted.size()); ++i, ++row) {
                            const size_t p = wanted.empty() ? i : size_t(wanted[i]);
                            CAPTURE(p);
                            REQUIRE(std::equal(some.begin() + long(row * vocab), some.begin() + long((row + 1) * vocab),
                                               whole.begin() + long((first + p) * vocab)));
                        }
                        first += length;
                    }
                    CHECK(row * vocab == some.size());
                }
            }
        }
    }
}

TEST_CASE("the residual add fused with the norm is add then rmsnorm, bit for bit") {
    const int64_t rows = 70, dim = 48;  // more rows than one task takes
    std::vector<float> x(static_cast<size_t>(rows * dim)), y(x.size()), norm(static_cast<size_t>(dim));
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = std::sin(0.37f * float(i));
        y[i] = std::cos(0.11f * float(i)) * 2.0f;
    }
    for (size_t i = 0; i < norm.size(); ++i) norm[i] = 0.5f + 0.01f * float(i);
    Weight w;
    w.name = "norm";
    w.shape = {dim};
    w.elements = uint64_t(dim);
    w.data = norm.data();
    auto backend = make_cpu_backend(2);
    std::vector<float> fused_x = x, fused_out(x.size()), plain_x = x, plain_out(x.size());
    backend->add_rmsnorm(fused_x.data(), y.data(), rows, dim, w, 1e-5, fused_out.data());
    backend->add(plain_x.data(), y.data(), rows * dim);
    backend->rmsnorm(plain_x.data(), rows, dim, dim, w, 1e-5, plain_out.data(), dim);
    CHECK(fused_x == plain_x);
    CHECK(fused_out == plain_out);
    CHECK(fused_x != x);  // it added
}

TEST_CASE("tokens grouped by expert run each expert over its rows and sum back in ascending expert order") {
    const int64_t rows = 37, k = 3, experts = 8, dim = 16, width = 6;
    std::vector<float> router_logits(static_cast<size_t>(rows * experts)), x(static_cast<size_t>(rows * dim));
    for (size_t i = 0; i < router_logits.size(); ++i) router_logits[i] = std::sin(1.7f * float(i));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.3f * float(i));
    std::vector<std::vector<float>> weight_data(static_cast<size_t>(experts));
    std::vector<Weight> weights(static_cast<size_t>(experts));
    std::vector<const Weight*> expert_weights;
    for (int64_t e = 0; e < experts; ++e) {
        auto& data = weight_data[size_t(e)];
        data.resize(size_t(width * dim));
        for (size_t i = 0; i < data.size(); ++i) data[i] = std::sin(0.05f * float(i) + float(e));
        Weight& w = weights[size_t(e)];
        w.name = "expert";
        w.shape = {width, dim};
        w.elements = data.size();
        w.data = data.data();
        expert_weights.push_back(&w);
    }
    auto backend = make_cpu_backend(2);
    const size_t slots = size_t(rows * k);
    std::vector<int32_t> chosen(slots), slot_rows(slots), token_slots(slots);
    std::vector<float> chosen_weights(slots), token_scales(slots);
    backend->route(router_logits.data(), rows, RouterParams{experts, k, false, true, 1.0, nullptr}, chosen.data(),
                   chosen_weights.data());
    std::vector<int32_t> offsets(size_t(experts + 1));
    backend->group_by_expert(chosen.data(), chosen_weights.data(), rows, k, experts, slot_rows.data(),
                             token_slots.data(), token_scales.data(), offsets.data());
    REQUIRE(offsets.front() == 0);
    REQUIRE(offsets.back() == int32_t(slots));
    auto expert_of_slot = [&](int32_t slot) {
        return int64_t(std::upper_bound(offsets.begin(), offsets.end(), slot) - offsets.begin()) - 1;
    };
    for (int64_t e = 0; e < experts; ++e) {
        CAPTURE(e);
        REQUIRE(offsets[size_t(e)] <= offsets[size_t(e) + 1]);
        const auto routed = std::count(chosen.begin(), chosen.end(), int32_t(e));
        CHECK(offsets[size_t(e) + 1] - offsets[size_t(e)] == routed);
        for (int32_t s = offsets[size_t(e)]; s < offsets[size_t(e) + 1]; ++s) {
            const int32_t t = slot_rows[size_t(s)];
            if (s > offsets[size_t(e)]) CHECK(slot_rows[size_t(s) - 1] < t);  // row order
            const int32_t* picked = chosen.data() + t * k;
            CHECK(std::find(picked, picked + k, int32_t(e)) != picked + k);
        }
    }
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t i = 0; i < k; ++i) {
            const int32_t slot = token_slots[size_t(t * k + i)];
            CHECK(slot_rows[size_t(slot)] == t);
            const int64_t e = expert_of_slot(slot);
            if (i > 0) CHECK(expert_of_slot(token_slots[size_t(t * k + i - 1)]) < e);
            const auto j = std::find(chosen.begin() + t * k, chosen.begin() + (t + 1) * k, int32_t(e)) - chosen.begin();
            CHECK(token_scales[size_t(t * k + i)] == chosen_weights[size_t(j)]);
        }

    // The experts over their gathered rows, summed back: against a direct sum per token.
    std::vector<float> gathered(slots * size_t(dim)), expert_out(slots * size_t(width));
    backend->gather_rows(x.data(), dim, slot_rows.data(), int64_t(slots), gathered.data());
    const GroupedMatmulOutput outputs[] = {{expert_weights, expert_out.data()}};
    backend->grouped_matmuls(gathered.data(), int64_t(slots), offsets.data(), outputs);
    std::vector<float> sum(static_cast<size_t>(rows * width), 1.0f);
    backend->unpermute_add(sum.data(), rows, width, k, token_slots.data(), token_scales.data(), expert_out.data());
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t c = 0; c < width; ++c) {
            double expected = 1.0;
            for (int64_t j = 0; j < k; ++j) {
                const auto& w = weight_data[size_t(chosen[size_t(t * k + j)])];
                double dot = 0;
                for (int64_t i = 0; i < dim; ++i) dot += double(w[size_t(c * dim + i)]) * x[size_t(t * dim + i)];
                expected += chosen_weights[size_t(t * k + j)] * dot;
            }
            CHECK(std::abs(sum[size_t(t * width + c)] - expected) < 1e-4 * (1 + std::abs(expected)));
        }

    // A NaN score ranks lowest (ties to the lower expert): the row still gets k distinct experts.
    std::vector<float> nan_row(static_cast<size_t>(experts), std::nanf(""));
    nan_row[5] = 1.0f;
    int32_t nan_chosen[k];
    float nan_weights[k];
    backend->route(nan_row.data(), 1, RouterParams{experts, k, true, false, 1.0, nullptr}, nan_chosen, nan_weights);
    CHECK(std::vector<int32_t>(nan_chosen, nan_chosen + k) == std::vector<int32_t>{5, 0, 1});

    // Routing tables route could not have made are refused.
    chosen[1] = chosen[0];
    CHECK_THROWS_WITH(backend->group_by_expert(chosen.data(), chosen_weights.data(), rows, k, experts, slot_rows.data(),
                                               token_slots.data(), token_scales.data(), offsets.data()),
                      doctest::Contains("twice"));
    chosen[1] = int32_t(experts);
    CHECK_THROWS_WITH(backend->group_by_expert(chosen.data(), chosen_weights.data(), rows, k, experts, slot_rows.data(),
                                               token_slots.data(), token_scales.data(), offsets.data()),
                      doctest::Contains("expert 8 of 8"));
}

TEST_CASE("candidates at temperature 0 give the reference top-1 exactly and its probabilities closely") {
    CandidateParams greedy;  // distribution temperature 1, no noise
    for (const std::string name : architectures) {
        CAPTURE(name);
        const ReferenceCase reference = read_reference(reference_dir(name));
        const auto model = load(name, Precision::fp32);
        const ForwardOutput out = run(*model, reference.tokens, 2, &greedy);
        size_t row = 0;
        for (size_t s = 0; s < reference.tokens.size(); ++s) {
            const size_t vocab = reference.logits[s].size() / reference.tokens[s].size();
            for (size_t p = 0; p < reference.tokens[s].size(); ++p, ++row) {
                const double* logits = reference.logits[s].data() + p * vocab;
                const double max = *std::max_element(logits, logits + vocab);
                double total = 0;
                for (size_t i = 0; i < vocab; ++i) total += std::exp(logits[i] - max);
                std::vector<double> prob(vocab);
                double negative_entropy = 0;
                for (size_t i = 0; i < vocab; ++i) {
                    prob[i] = std::exp(logits[i] - max) / total;
                    negative_entropy += prob[i] * std::log(prob[i]);
                }
                std::vector<double> sorted = prob;
                std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
                const auto top1 = static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
                const Candidate& c = out.candidates[row];
                REQUIRE(c.top1_token == top1);
                REQUIRE(c.token == top1);
                CHECK(std::abs(c.top1_probability - sorted[0]) < 1e-4);
                CHECK(std::abs(c.probability - sorted[0]) < 1e-4);
                CHECK(std::abs((c.top1_probability - c.top2_probability) - (sorted[0] - sorted[1])) < 1e-4);
                CHECK(std::abs(c.negative_entropy - negative_entropy) < 1e-3);
            }
        }
        CHECK(row == out.candidates.size());
    }
}

TEST_CASE("outputs can be limited to some positions, and Dream's shift reads the previous hidden state") {
    const ReferenceCase reference = read_reference(reference_dir("dream"));
    const auto model = load("dream", Precision::fp32);
    auto backend = make_cpu_backend(2);
    const auto length = static_cast<int64_t>(reference.tokens[1].size());
    Forward forward(*model, *backend, {length, length});
    const std::vector<int32_t> positions = {0, 5, 69};
    const std::vector<ForwardSequence> batch = {{reference.tokens[1], positions, nullptr, {}, 0.0}};
    const ForwardOutput out = forward.run(batch, true);
    const size_t vocab = reference.logits[1].size() / reference.tokens[1].size();
    REQUIRE(out.logits.size() == positions.size() * vocab);
    for (size_t i = 0; i < positions.size(); ++i) {
        const std::vector<double> expected(reference.logits[1].begin() + long(size_t(positions[i]) * vocab),
                                           reference.logits[1].begin() + long(size_t(positions[i] + 1) * vocab));
        CHECK(relative_error(out.logits.data() + i * vocab, expected.data(), expected.size()) <= 1e-4);
    }
}

TEST_CASE("repeated output positions beyond the token count stay within the run state") {
    const auto model = load("llada", Precision::fp32);
    auto backend = make_cpu_backend(1);
    Forward forward(*model, *backend, {3, 3});
    const std::vector<int32_t> tokens = {1, 2, 3};
    const std::vector<int32_t> positions = {0, 1, 2, 2, 1, 0, 0, 2};  // 8 outputs from 3 tokens
    const std::vector<ForwardSequence> batch = {{tokens, positions, nullptr, {}, 0.0}};
    const ForwardOutput out = forward.run(batch, true);
    const size_t vocab = out.logits.size() / positions.size();
    auto row = [&](size_t i) {
        return std::vector<float>(out.logits.begin() + long(i * vocab), out.logits.begin() + long((i + 1) * vocab));
    };
    CHECK(row(0) == row(5));
    CHECK(row(2) == row(7));
    CHECK(row(1) == row(4));
}

TEST_CASE("bad forward inputs are rejected with a clear status") {
    const auto model = load("llada", Precision::fp32);
    auto backend = make_cpu_backend(1);
    Forward forward(*model, *backend, {8, 4});
    const std::vector<int32_t> bad_token = {1, 2, 5000};
    const std::vector<ForwardSequence> batch = {{bad_token, {}, nullptr, {}, 0.0}};
    CHECK_THROWS_WITH_AS(forward.run(batch, true), doctest::Contains("token id 5000"), Error);
    const std::vector<int32_t> ok = {1, 2, 3};
    const std::vector<int32_t> bad_position = {3};
    const std::vector<ForwardSequence> batch2 = {{ok, bad_position, nullptr, {}, 0.0}};
    CHECK_THROWS_WITH_AS(forward.run(batch2, true), doctest::Contains("output position 3"), Error);
    CHECK_THROWS_AS(forward.run({}, true), Error);
    const std::vector<ForwardSequence> no_sampling = {{ok, {}, nullptr, {}, 0.0}};
    CHECK_THROWS_WITH_AS(forward.run(no_sampling, false), doctest::Contains("without sampling parameters"), Error);
    const std::vector<int32_t> five = {1, 2, 3, 4, 5};
    const std::vector<ForwardSequence> too_long = {{five, {}, nullptr, {}, 0.0}};
    CHECK_THROWS_WITH_AS(forward.run(too_long, true), doctest::Contains("sized for 4"), Error);
    const std::vector<ForwardSequence> too_many = {{ok, {}, nullptr, {}, 0.0}, {ok, {}, nullptr, {}, 0.0},
                                                   {ok, {}, nullptr, {}, 0.0}};
    CHECK_THROWS_WITH_AS(forward.run(too_many, true), doctest::Contains("9 tokens"), Error);
}
