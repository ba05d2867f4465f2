// LLaDA-MoE (LLaDAMoEModelLM): OLMoE-like layers with Hugging Face names, per-head q/k RMSNorm and
// a softmax (or sigmoid) router over routed experts.
#include "core/error.hpp"
#include "model/architecture.hpp"

namespace unmask {
namespace {

// The published LLaDA-MoE config may lack mask_token_id; this is the id its tokenizer uses.
constexpr int64_t llada_moe_default_mask_token_id = 156895;

std::vector<bool> read_moe_layers(const ConfigReader& config, int64_t layers) {
    const nlohmann::json* freq = config.find("moe_layer_freq");
    if (freq == nullptr) return std::vector<bool>(static_cast<size_t>(layers), true);
    if (freq->is_number_integer() && freq->get<int64_t>() == 1) return std::vector<bool>(static_cast<size_t>(layers), true);
    if (!freq->is_array()) config.fail_field("moe_layer_freq", fmt::format("must be a list of 0/1 per layer, got {}", freq->dump()));
    std::vector<bool> moe;
    for (const auto& entry : *freq) {
        if (!entry.is_number_integer() || (entry.get<int64_t>() != 0 && entry.get<int64_t>() != 1))
            config.fail_field("moe_layer_freq", fmt::format("entries must be 0 or 1, got {}", entry.dump()));
        moe.push_back(entry.get<int64_t>() == 1);
    }
    return moe;
}

ModelSpec read_llada_moe_config(const ConfigReader& config) {
    ModelSpec spec;
    spec.architecture = Architecture::llada_moe;
    spec.architecture_name = "llada-moe";
    read_hf_shape(config, spec);
    spec.max_sequence_length = config.optional_integer("max_position_embeddings").value_or(4096);
    spec.rope_theta = config.number("rope_theta");
    spec.rms_norm_eps = config.optional_number("rms_norm_eps").value_or(1e-5);
    // Older configs write -1 for "whole head rotated".
    const double partial = config.optional_number("partial_rotary_factor").value_or(1.0);
    spec.partial_rotary_factor = partial <= 0 ? 1.0 : partial;
    spec.qk_norm = config.boolean("qk_layernorm", false);
    spec.tie_word_embeddings = config.boolean("tie_word_embeddings", false);
    spec.mask_token_id = config.optional_integer("mask_token_id").value_or(llada_moe_default_mask_token_id);
    spec.eos_token_id = config.optional_token_id("eos_token_id").value_or(-1);

    spec.experts = config.positive_integer("num_experts");
    spec.experts_per_token = config.positive_integer("num_experts_per_tok");
    spec.expert_intermediate_size = config.positive_integer("expert_intermediate_size");
    spec.shared_expert_intermediate_size = std::max<int64_t>(0, config.optional_integer("shared_expert_intermediate_size").value_or(0));
    spec.moe_layer = read_moe_layers(config, spec.layers);
    const bool any_dense = std::find(spec.moe_layer.begin(), spec.moe_layer.end(), false) != spec.moe_layer.end();
    spec.intermediate_size = any_dense ? config.positive_integer("dense_intermediate_size")
                                       : std::max<int64_t>(0, config.optional_integer("dense_intermediate_size").value_or(0));
    spec.router_score = read_router_score(config, "moe_router_score_function", RouterScore::softmax);
    spec.router_expert_bias = config.boolean("moe_router_enable_expert_bias", false);
    // The published modeling code ignores norm_topk_prob and routed_scaling_factor (it never
    // renormalises or scales the top-k weights); we reproduce that.
    spec.norm_topk_prob = false;
    spec.routed_scaling_factor = 1.0;
    return spec;
}

}  // namespace

const ArchitectureBinding llada_moe_binding{Architecture::llada_moe, "LLaDAMoEModelLM", read_llada_moe_config,
                                            hf_model_tensors};

}  // namespace unmask
