#include "model/gguf_model.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace unmask {
namespace {

// One GGUF architecture: the Hugging Face class it was converted from, the mask token's text in
// the family's vocabulary (for files that do not name its id), and whether its converter
// interleaved the q/k rows.
struct GgufArchitecture {
    std::string_view gguf_name;
    std::string_view hf_name;
    std::string_view mask_token;
    bool interleaved_qk;
};

// llama.cpp's converter: LLaDAModel sets undo_permute (so q and k are permuted as for LLaMA);
// DreamModel and LLaDAMoEModel keep Hugging Face's rows (ggml applies NEOX-style RoPE to them).
// Mask tokens: the models' tokenizers (ALGORITHMS.md's mask ids 126336 and 151666; LLaDA-MoE's
// converter writes tokenizer.ggml.mask_token_id 156895 itself).
constexpr GgufArchitecture architectures[] = {
    {"llada", "LLaDAModelLM", "<|mdm_mask|>", true},
    {"dream", "DreamModel", "<|mask|>", false},
    {"llada-moe", "LLaDAMoEModelLM", "<|mdm_mask|>", false},
};

const GgufArchitecture& architecture_of(const GgufHeader& header) {
    const auto name = header.string("general.architecture");
    if (!name) fail(Status::model_format, "{}: no general.architecture key", header.label);
    for (const auto& a : architectures)
        if (a.gguf_name == *name) return a;
    fail(Status::unsupported, "{}: GGUF architecture '{}' is not supported (supported: llada, dream, llada-moe)",
         header.label, *name);
}

// The architecture's key `{arch}.{suffix}`.
std::string arch_key(const GgufArchitecture& a, std::string_view suffix) { return fmt::format("{}.{}", a.gguf_name, suffix); }

int64_t required_integer(const GgufHeader& header, const std::string& key) {
    const auto value = header.integer(key);
    if (!value) fail(Status::model_format, "{}: metadata key '{}' is missing", header.label, key);
    return *value;
}

int64_t mask_token_id(const GgufHeader& header, const GgufArchitecture& a, const std::optional<std::vector<std::string_view>>& tokens) {
    if (const auto id = header.integer("tokenizer.ggml.mask_token_id")) return *id;
    if (tokens) {
        const auto it = std::find(tokens->begin(), tokens->end(), a.mask_token);
        if (it != tokens->end()) return it - tokens->begin();
    }
    fail(Status::model_format, "{}: no mask token: neither tokenizer.ggml.mask_token_id nor a '{}' token in the vocabulary",
         header.label, a.mask_token);
}

// Rows of the embedding: the tensor's when present (the binding checks the rest), else the vocabulary's.
std::optional<int64_t> embedding_rows(const GgufHeader& header) {
    const GgufTensor* embedding = header.find_tensor("token_embd.weight");
    if (embedding == nullptr || embedding->shape.size() != 2) return std::nullopt;
    return embedding->shape[0];
}

}  // namespace

nlohmann::json gguf_model_config(const GgufHeader& header) {
    const GgufArchitecture& a = architecture_of(header);
    auto integer = [&](std::string_view suffix) { return required_integer(header, arch_key(a, suffix)); };
    const int64_t heads = integer("attention.head_count");
    const int64_t kv_heads = header.integer(arch_key(a, "attention.head_count_kv")).value_or(heads);
    const int64_t hidden = integer("embedding_length");
    if (const auto rope_dims = header.integer(arch_key(a, "rope.dimension_count")); rope_dims && heads > 0 && *rope_dims != hidden / heads)
        fail(Status::unsupported, "{}: RoPE over {} of each head's {} dimensions is not supported", header.label, *rope_dims,
             hidden / heads);
    const std::optional<int64_t> rows = embedding_rows(header);
    const auto tokens = header.strings("tokenizer.ggml.tokens");
    const int64_t vocab = header.integer(arch_key(a, "vocab_size")).value_or(tokens ? int64_t(tokens->size()) : rows.value_or(0));
    const double rope_theta = header.number(arch_key(a, "rope.freq_base")).value_or(10000.0);  // ggml's default
    const double eps = header.number(arch_key(a, "attention.layer_norm_rms_epsilon"))
                           .value_or(a.gguf_name == "dream" ? 1e-6 : 1e-5);
    const bool tied = header.find_tensor("output.weight") == nullptr;
    nlohmann::json config = {{"architectures", {a.hf_name}}, {"mask_token_id", mask_token_id(header, a, tokens)},
                             {"rope_theta", rope_theta}, {"rms_norm_eps", eps}, {"vocab_size", vocab}};
    if (const auto eos = header.integer("tokenizer.ggml.eos_token_id")) config["eos_token_id"] = *eos;
    if (a.gguf_name == "llada") {
        config.update({{"d_model", hidden}, {"n_layers", integer("block_count")}, {"n_heads", heads}, {"n_kv_heads", kv_heads},
                       {"mlp_hidden_size", integer("feed_forward_length")}, {"embedding_size", rows.value_or(vocab)},
                       {"max_sequence_length", integer("context_length")}, {"weight_tying", tied}});
    } else {
        config.update({{"hidden_size", hidden}, {"num_hidden_layers", integer("block_count")}, {"num_attention_heads", heads},
                       {"num_key_value_heads", kv_heads}, {"max_position_embeddings", integer("context_length")},
                       {"tie_word_embeddings", tied}});
    }
    if (a.gguf_name == "dream") config["intermediate_size"] = integer("feed_forward_length");
    if (a.gguf_name == "llada-moe") {
        // llama.cpp's llada-moe (src/models/llada-moe.cpp): every layer routed, softmax over the
        // router's scores, top-k weights neither renormalised nor scaled (as the published modeling
        // code does), per-head q/k RMSNorm, no shared expert; the experts' width is
        // expert_feed_forward_length, else feed_forward_length / expert_used_count.
        const int64_t used = integer("expert_used_count");
        const auto width = header.integer(arch_key(a, "expert_feed_forward_length"));
        config.update({{"num_experts", integer("expert_count")}, {"num_experts_per_tok", used}, {"qk_layernorm", true},
                       {"expert_intermediate_size", width ? *width : used > 0 ? integer("feed_forward_length") / used : 0}});
    }
    return config;
}

ModelSpec read_gguf_model_spec(const GgufHeader& header) {
    const nlohmann::json config = gguf_model_config(header);
    ModelSpec spec = read_model_spec(ConfigReader(config, fmt::format("{} (its metadata as config.json)", header.label)));
    if (const auto shift = header.boolean("diffusion.shift_logits")) spec.logits_shift = *shift;
    return spec;
}

std::string gguf_tensor_name(const ExpectedTensor& tensor) {
    // llama.cpp's tensor names (gguf-py's constants), by role.
    std::string_view name;
    switch (tensor.role) {
        case Role::embedding: return "token_embd.weight";
        case Role::final_norm: return "output_norm.weight";
        case Role::lm_head: return "output.weight";
        case Role::attention_norm: name = "attn_norm.weight"; break;
        case Role::mlp_norm: name = "ffn_norm.weight"; break;
        case Role::q_proj: name = "attn_q.weight"; break;
        case Role::k_proj: name = "attn_k.weight"; break;
        case Role::v_proj: name = "attn_v.weight"; break;
        case Role::o_proj: name = "attn_output.weight"; break;
        case Role::q_bias: name = "attn_q.bias"; break;
        case Role::k_bias: name = "attn_k.bias"; break;
        case Role::v_bias: name = "attn_v.bias"; break;
        case Role::q_norm: name = "attn_q_norm.weight"; break;
        case Role::k_norm: name = "attn_k_norm.weight"; break;
        case Role::mlp_gate: name = "ffn_gate.weight"; break;
        case Role::mlp_up: name = "ffn_up.weight"; break;
        case Role::mlp_down: name = "ffn_down.weight"; break;
        case Role::router: name = "ffn_gate_inp.weight"; break;
        case Role::shared_gate: name = "ffn_gate_shexp.weight"; break;
        case Role::shared_up: name = "ffn_up_shexp.weight"; break;
        case Role::shared_down: name = "ffn_down_shexp.weight"; break;
        // Routed experts are stacked, one tensor of [experts, rows, columns] per layer and matrix.
        case Role::expert_gate: name = "ffn_gate_exps.weight"; break;
        case Role::expert_up: name = "ffn_up_exps.weight"; break;
        case Role::expert_down: name = "ffn_down_exps.weight"; break;
        case Role::router_bias: name = "exp_probs_b.bias"; break;
    }
    return fmt::format("blk.{}.{}", tensor.layer, name);
}

int64_t gguf_interleaved_heads(const GgufHeader& header, const ModelSpec& spec, Role role) {
    if (!architecture_of(header).interleaved_qk) return 0;
    if (role == Role::q_proj || role == Role::q_bias) return spec.attention_heads;
    if (role == Role::k_proj || role == Role::k_bias) return spec.kv_heads;
    return 0;
}

}  // namespace unmask
