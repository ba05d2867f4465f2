// LLaDA2.0 / LLaDA2.1 (LLaDA2MoeModelLM, model_type "llada2_moe"): Ling-2.0 (BailingMoeV2) layers
// trained for block diffusion. A fused query_key_value projection (rows Q | K | V), per-head
// query/key RMSNorm before a partial half-split RoPE, a dense MLP in the first
// first_k_dense_replace layers, then routed experts chosen by sigmoid scores plus an expert bias,
// group-limited, with shared experts. Facts and their sources: docs/architectures.md.
#include <cstdint>

#include "core/error.hpp"
#include "model/architecture.hpp"

namespace unmask {
namespace {

// generate()'s defaults in the published modeling code, used when config.json does not say.
constexpr int64_t llada2_default_mask_token_id = 156895;
constexpr int64_t llada2_default_eos_token_id = 156892;
constexpr int64_t llada2_default_block_size = 32;

ModelSpec read_llada2_moe_config(const ConfigReader& config) {
    ModelSpec spec;
    spec.architecture = Architecture::llada2_moe;
    spec.architecture_name = "llada2-moe";
    read_hf_shape(config, spec);
    spec.max_sequence_length = config.positive_integer("max_position_embeddings");
    spec.rope_theta = config.number("rope_theta");
    spec.rms_norm_eps = config.optional_number("rms_norm_eps").value_or(1e-6);
    // The rotated width: partial_rotary_factor of each head (rotary_dim says the same in dims).
    if (const auto factor = config.optional_number("partial_rotary_factor")) {
        spec.partial_rotary_factor = *factor;
    } else if (const auto dims = config.optional_integer("rotary_dim")) {
        spec.partial_rotary_factor = double(*dims) / double(spec.head_dim);
    }
    if (const auto dims = config.optional_integer("rotary_dim");
        dims && *dims != std::lround(double(spec.head_dim) * spec.partial_rotary_factor))
        config.fail_field("rotary_dim", fmt::format("({}) disagrees with partial_rotary_factor {} of head_dim {}", *dims,
                                                    spec.partial_rotary_factor, spec.head_dim));
    spec.qkv_bias = config.boolean("use_qkv_bias", false);
    if (config.boolean("use_bias", false))
        config.fail_field("use_bias", "true (a bias on the attention output and dense MLPs) is not supported");
    spec.qk_norm = true;  // the modeling code makes query_layernorm / key_layernorm whatever use_qk_norm says
    spec.tie_word_embeddings = config.boolean("tie_word_embeddings", false);
    spec.mask_token_id = config.optional_integer("mask_token_id").value_or(llada2_default_mask_token_id);
    spec.eos_token_id = config.optional_token_id("eos_token_id").value_or(llada2_default_eos_token_id);
    spec.diffusion_block_size = llada2_default_block_size;

    spec.experts = config.positive_integer("num_experts");
    spec.experts_per_token = config.positive_integer("num_experts_per_tok");
    spec.expert_intermediate_size = config.positive_integer("moe_intermediate_size");
    const int64_t shared = std::max<int64_t>(0, config.optional_integer("num_shared_experts").value_or(0));
    if (shared > 0 && spec.expert_intermediate_size > INT64_MAX / shared)
        config.fail_field("num_shared_experts", fmt::format("({}) times moe_intermediate_size ({}) overflows", shared,
                                                            spec.expert_intermediate_size));
    spec.shared_expert_intermediate_size = spec.expert_intermediate_size * shared;
    const int64_t dense_layers = std::max<int64_t>(0, config.optional_integer("first_k_dense_replace").value_or(0));
    spec.moe_layer.resize(static_cast<size_t>(spec.layers));
    for (int64_t i = 0; i < spec.layers; ++i) spec.moe_layer[size_t(i)] = i >= dense_layers;
    spec.intermediate_size = dense_layers > 0 ? config.positive_integer("intermediate_size") : 0;
    spec.router_score = read_router_score(config, "score_function", RouterScore::sigmoid);
    spec.router_expert_bias = config.boolean("moe_router_enable_expert_bias", false);
    spec.norm_topk_prob = config.boolean("norm_topk_prob", true);
    spec.routed_scaling_factor = config.optional_number("routed_scaling_factor").value_or(1.0);
    spec.router_groups = config.optional_integer("n_group").value_or(1);
    spec.router_top_groups = config.optional_integer("topk_group").value_or(spec.router_groups);
    return spec;
}

std::vector<ExpectedTensor> llada2_moe_tensors(const ModelSpec& spec) {
    const int64_t h = spec.hidden_size, q = spec.attention_heads * spec.head_dim, kv = spec.kv_heads * spec.head_dim;
    std::vector<ExpectedTensor> out;
    out.push_back({"model.word_embeddings.weight", {spec.embedding_rows, h}, Role::embedding});
    for (int64_t i = 0; i < spec.layers; ++i) {
        const std::string p = fmt::format("model.layers.{}.", i);
        const auto l = static_cast<int32_t>(i);
        out.push_back({p + "input_layernorm.weight", {h}, Role::attention_norm, l});
        out.push_back({p + "post_attention_layernorm.weight", {h}, Role::mlp_norm, l});
        out.push_back({p + "attention.query_key_value.weight", {q + 2 * kv, h}, Role::q_proj, l, -1,
                       {{Role::q_proj, q}, {Role::k_proj, kv}, {Role::v_proj, kv}}});
        if (spec.qkv_bias)
            out.push_back({p + "attention.query_key_value.bias", {q + 2 * kv}, Role::q_bias, l, -1,
                           {{Role::q_bias, q}, {Role::k_bias, kv}, {Role::v_bias, kv}}});
        out.push_back({p + "attention.query_layernorm.weight", {spec.head_dim}, Role::q_norm, l});
        out.push_back({p + "attention.key_layernorm.weight", {spec.head_dim}, Role::k_norm, l});
        out.push_back({p + "attention.dense.weight", {h, q}, Role::o_proj, l});
        add_mlp_tensors(out, spec, i);
    }
    out.push_back({"model.norm.weight", {h}, Role::final_norm});
    if (!spec.tie_word_embeddings) out.push_back({"lm_head.weight", {spec.embedding_rows, h}, Role::lm_head});
    return out;
}

}  // namespace

const ArchitectureBinding llada2_moe_binding{Architecture::llada2_moe, "LLaDA2MoeModelLM", read_llada2_moe_config,
                                             llada2_moe_tensors};

}  // namespace unmask
