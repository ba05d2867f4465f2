#include "synthetic_model.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format/config_reader.hpp"
#include "model/architecture.hpp"

namespace unmask_bench {
namespace {

// Chunk `index` of the weights: small random bf16 values (sign, exponent near 2^-6, random
// mantissa), four from each draw of one splitmix64 sequence, the chunk starting at its own place
// in it, so chunks can be filled in any order by any thread and still give the same file.
void fill_weights(std::vector<uint16_t>& chunk, uint64_t index) {
    uint64_t state = 0x9E3779B97F4A7C15ull * (index * ((chunk.size() + 3) / 4));
    for (size_t i = 0; i < chunk.size(); i += 4) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        for (size_t j = 0; j < 4 && i + j < chunk.size(); ++j)
            chunk[i + j] = static_cast<uint16_t>(0x3C00u | ((z >> (16 * j)) & 0x807Fu));
    }
}

}  // namespace

std::filesystem::path synthetic_model(const std::string& name, const nlohmann::json& config) {
    const auto dir = std::filesystem::temp_directory_path() / ("unmask-bench-" + name);
    if (std::filesystem::exists(dir / "model.safetensors")) return dir;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json") << config.dump(1);

    // Every tensor the architecture's binding expects, by the library's own list.
    const unmask::ConfigReader reader(config, "config.json");
    const auto tensors = unmask::select_architecture(reader).expected_tensors(unmask::read_model_spec(reader));
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const unmask::ExpectedTensor& tensor : tensors) {
        uint64_t elements = 1;
        for (int64_t d : tensor.shape) elements *= static_cast<uint64_t>(d);
        header[tensor.name] = {
            {"dtype", "BF16"}, {"shape", tensor.shape}, {"data_offsets", {offset, offset + 2 * elements}}};
        offset += 2 * elements;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    const auto temporary = dir / "model.safetensors.partial";
    {
        std::ofstream out(temporary, std::ios::binary);
        const uint64_t length = text.size();
        out.write(reinterpret_cast<const char*>(&length), 8);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        // Chunks filled on every core, a batch at a time, and written in order: the 16 GB of an
        // LLaDA-8B shape take seconds, not the minute of one thread (GPU machines' time is short).
        constexpr uint64_t chunk_values = uint64_t(1) << 22;
        const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
        std::vector<std::vector<uint16_t>> batch(workers, std::vector<uint16_t>(chunk_values));
        for (uint64_t first = 0; 2 * first * chunk_values < offset; first += workers) {
            std::vector<std::thread> threads;
            for (unsigned w = 0; w < workers; ++w)
                threads.emplace_back([&, w] { fill_weights(batch[w], first + w); });
            for (std::thread& t : threads) t.join();
            for (unsigned w = 0; w < workers; ++w) {
                const uint64_t written = 2 * (first + w) * chunk_values;
                if (written >= offset) break;
                const uint64_t bytes = std::min<uint64_t>(2 * chunk_values, offset - written);
                out.write(reinterpret_cast<const char*>(batch[w].data()), static_cast<std::streamsize>(bytes));
            }
        }
    }
    std::filesystem::rename(temporary, dir / "model.safetensors");
    return dir;
}

std::filesystem::path synthetic_llada(const LladaShape& s) {
    const nlohmann::json config = {{"architectures", {"LLaDAModelLM"}}, {"model_type", "llada"},
                                   {"d_model", s.hidden}, {"n_layers", s.layers}, {"n_heads", s.heads},
                                   {"n_kv_heads", s.heads}, {"mlp_hidden_size", s.mlp}, {"vocab_size", s.vocab},
                                   {"embedding_size", s.vocab}, {"max_sequence_length", 4096},
                                   {"rope_theta", 500000.0}, {"rms_norm_eps", 1e-5}, {"mask_token_id", s.vocab - 1},
                                   {"eos_token_id", s.vocab - 2}, {"weight_tying", false}};
    return synthetic_model(fmt::format("llada-{}x{}-{}-{}-{}", s.hidden, s.layers, s.heads, s.mlp, s.vocab), config);
}

std::filesystem::path synthetic_llada_moe(int64_t layers) {
    const int64_t vocab = 157184;
    const nlohmann::json config = {{"architectures", {"LLaDAMoEModelLM"}}, {"model_type", "llada"},
                                   {"hidden_size", 2048}, {"num_hidden_layers", layers},
                                   {"num_attention_heads", 16}, {"num_key_value_heads", 16}, {"vocab_size", vocab},
                                   {"num_experts", 64}, {"num_experts_per_tok", 8},
                                   {"expert_intermediate_size", 1024}, {"qk_layernorm", true},
                                   {"moe_router_score_function", "softmax"}, {"rope_theta", 50000.0},
                                   {"rms_norm_eps", 1e-5}, {"max_position_embeddings", 4096},
                                   {"mask_token_id", 156895}, {"eos_token_id", 156892}};
    return synthetic_model(fmt::format("llada-moe-7b-a1b-{}-layers", layers), config);
}

unmask_model* synthetic_llada_model() {
    static unmask_model* model = [] {
        unmask_model_params params;
        unmask_model_params_init(&params);
        params.precision = UNMASK_PRECISION_BF16;
        unmask_model* m = nullptr;
        unmask_model_load(synthetic_llada({}).c_str(), &params, &m);
        return m;
    }();
    return model;
}

void run_generations(benchmark::State& state, const unmask_generate_params& params) {
    unmask_model* model = synthetic_llada_model();
    if (model == nullptr) {
        state.SkipWithError(unmask_last_error());
        return;
    }
    std::vector<int32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(100 + 37 * i);
    std::vector<int32_t> tokens(static_cast<size_t>(params.gen_length));
    unmask_generation result{sizeof result, 0, tokens.data(), params.gen_length, 0, 0, 0};
    int64_t steps = 0, forwards = 0;
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        if (unmask_generate(model, &params, prompt.data(), static_cast<int64_t>(prompt.size()), &result) != UNMASK_OK) {
            state.SkipWithError(unmask_last_error());
            return;
        }
        steps += result.steps;
        forwards += result.forwards;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double generated = double(params.gen_length) * double(state.iterations());
    state.counters["steps/s"] = double(steps) / seconds;
    state.counters["tokens/s"] = generated / seconds;
    state.counters["NFE/token"] = double(forwards) / generated;
}

}  // namespace unmask_bench
