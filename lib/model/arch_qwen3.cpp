// Diffusion models built on Qwen3 layers (Hugging Face names, per-head q_norm / k_norm before a
// whole-head half-split RoPE, GQA, head_dim from the config):
// - SDAR (SDARForCausalLM): dense, trained for block diffusion with the config's block_size;
// - SDAR-MoE (SDARMoeForCausalLM): the same attention with Qwen3-MoE's sparse MLP;
// - RND1 (RND1): Qwen3-MoE with bidirectional attention and shifted predictions (position i is
//   predicted from hidden state i - 1).
// Qwen3-MoE's router: a softmax over the experts, the top k, renormalised when norm_topk_prob; no
// shared expert, no bias. Facts and their sources: docs/architectures.md.
#include "core/error.hpp"
#include "model/architecture.hpp"

namespace unmask {
namespace {

// The mask token of the Qwen3 tokenizer these models extend ("<|MASK|>").
constexpr int64_t qwen3_diffusion_mask_token_id = 151669;

void read_qwen3_layers(const ConfigReader& config, ModelSpec& spec) {
    read_hf_shape(config, spec);
    spec.max_sequence_length = config.positive_integer("max_position_embeddings");
    spec.rope_theta = config.number("rope_theta");
    spec.rms_norm_eps = config.optional_number("rms_norm_eps").value_or(1e-6);
    spec.qk_norm = true;
    spec.tie_word_embeddings = config.boolean("tie_word_embeddings", false);
    spec.mask_token_id = config.optional_integer("mask_token_id").value_or(qwen3_diffusion_mask_token_id);
    spec.eos_token_id = config.optional_token_id("eos_token_id").value_or(-1);
    spec.pad_token_id = config.optional_token_id("pad_token_id").value_or(-1);
    if (config.boolean("attention_bias", false))
        config.fail_field("attention_bias", "true (biases on q, k, v and o) is not supported");
    if (const nlohmann::json* scaling = config.find("rope_scaling"); scaling != nullptr && *scaling != false)
        config.fail_field("rope_scaling", fmt::format("{} is not supported (only plain RoPE)", scaling->dump()));
    if (config.boolean("use_sliding_window", false))
        config.fail_field("use_sliding_window", "true is not supported");
}

// Qwen3-MoE's sparse MLP: layer i routes unless it is in mlp_only_layers, when
// (i + 1) % decoder_sparse_step == 0.
void read_qwen3_moe(const ConfigReader& config, ModelSpec& spec) {
    spec.experts = config.positive_integer("num_experts");
    spec.experts_per_token = config.positive_integer("num_experts_per_tok");
    spec.expert_intermediate_size = config.positive_integer("moe_intermediate_size");
    spec.norm_topk_prob = config.boolean("norm_topk_prob", false);
    const int64_t step = config.optional_integer("decoder_sparse_step").value_or(1);
    if (step < 1) config.fail_field("decoder_sparse_step", fmt::format("must be at least 1, got {}", step));
    spec.moe_layer.assign(static_cast<size_t>(spec.layers), false);
    for (int64_t i = 0; i < spec.layers; ++i) spec.moe_layer[size_t(i)] = (i + 1) % step == 0;
    if (const nlohmann::json* dense = config.find("mlp_only_layers")) {
        if (!dense->is_array()) config.fail_field("mlp_only_layers", fmt::format("must be a list of layers, got {}", dense->dump()));
        for (const auto& entry : *dense) {
            if (!entry.is_number_integer() || entry.get<int64_t>() < 0 || entry.get<int64_t>() >= spec.layers)
                config.fail_field("mlp_only_layers", fmt::format("entries must be layers 0..{}, got {}", spec.layers - 1, entry.dump()));
            spec.moe_layer[size_t(entry.get<int64_t>())] = false;
        }
    }
    const bool any_dense = std::find(spec.moe_layer.begin(), spec.moe_layer.end(), false) != spec.moe_layer.end();
    spec.intermediate_size = any_dense ? config.positive_integer("intermediate_size") : 0;
}

ModelSpec read_sdar_config(const ConfigReader& config) {
    ModelSpec spec;
    spec.architecture = Architecture::sdar;
    spec.architecture_name = "sdar";
    read_qwen3_layers(config, spec);
    spec.intermediate_size = config.positive_integer("intermediate_size");
    spec.diffusion_block_size = config.positive_integer("block_size");
    return spec;
}

ModelSpec read_sdar_moe_config(const ConfigReader& config) {
    ModelSpec spec;
    spec.architecture = Architecture::sdar_moe;
    spec.architecture_name = "sdar-moe";
    read_qwen3_layers(config, spec);
    read_qwen3_moe(config, spec);
    spec.diffusion_block_size = config.positive_integer("block_size");
    return spec;
}

ModelSpec read_rnd1_config(const ConfigReader& config) {
    ModelSpec spec;
    spec.architecture = Architecture::rnd1;
    spec.architecture_name = "rnd1";
    read_qwen3_layers(config, spec);
    read_qwen3_moe(config, spec);
    spec.logits_shift = true;
    return spec;
}

}  // namespace

const ArchitectureBinding sdar_binding{Architecture::sdar, "SDARForCausalLM", read_sdar_config, hf_model_tensors};
const ArchitectureBinding sdar_moe_binding{Architecture::sdar_moe, "SDARMoeForCausalLM", read_sdar_moe_config,
                                           hf_model_tensors};
const ArchitectureBinding rnd1_binding{Architecture::rnd1, "RND1", read_rnd1_config, hf_model_tensors};

}  // namespace unmask
