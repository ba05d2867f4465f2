// LLaDA (LLaDAModelLM): a LLaMA-like transformer stored with OLMo's config keys and tensor names.
#include "core/error.hpp"
#include "model/architecture.hpp"

namespace unmask {
namespace {

void require_supported(const ConfigReader& config, bool supported, std::string_view what) {
    if (!supported) fail(Status::unsupported, "{}: LLaDA with {} is not supported", config.label(), what);
}

ModelSpec read_llada_config(const ConfigReader& config) {
    ModelSpec spec;
    spec.architecture = Architecture::llada;
    spec.architecture_name = "llada";
    spec.hidden_size = config.positive_integer("d_model");
    spec.layers = config.positive_integer("n_layers");
    spec.attention_heads = config.positive_integer("n_heads");
    spec.kv_heads = config.optional_integer("n_kv_heads").value_or(spec.attention_heads);
    if (spec.hidden_size % spec.attention_heads != 0)
        config.fail_field("d_model", fmt::format("({}) must be a multiple of n_heads ({})", spec.hidden_size, spec.attention_heads));
    spec.head_dim = spec.hidden_size / spec.attention_heads;
    spec.intermediate_size = config.positive_integer("mlp_hidden_size");
    spec.vocab_size = config.positive_integer("vocab_size");
    spec.embedding_rows = config.optional_integer("embedding_size").value_or(spec.vocab_size);
    spec.max_sequence_length = config.positive_integer("max_sequence_length");
    spec.rope_theta = config.number("rope_theta");
    spec.rms_norm_eps = config.optional_number("rms_norm_eps").value_or(1e-5);
    spec.mask_token_id = config.integer("mask_token_id");
    spec.eos_token_id = config.optional_token_id("eos_token_id").value_or(-1);
    spec.tie_word_embeddings = config.boolean("weight_tying", false);

    require_supported(config, !config.boolean("include_bias", false), "include_bias=true");
    require_supported(config, config.boolean("rope", true), "rope=false");
    require_supported(config, !config.boolean("alibi", false), "alibi=true");
    const auto norm = config.optional_string("layer_norm_type").value_or("rms");
    require_supported(config, norm == "rms", fmt::format("layer_norm_type '{}'", norm));
    const auto activation = config.optional_string("activation_type").value_or("silu");
    require_supported(config, activation == "silu" || activation == "swiglu",
                      fmt::format("activation_type '{}'", activation));
    return spec;
}

std::vector<ExpectedTensor> llada_tensors(const ModelSpec& spec) {
    const int64_t h = spec.hidden_size, q = spec.attention_heads * spec.head_dim, kv = spec.kv_heads * spec.head_dim;
    const int64_t mlp = spec.intermediate_size;
    std::vector<ExpectedTensor> out;
    out.push_back({"model.transformer.wte.weight", {spec.embedding_rows, h}, Role::embedding});
    for (int64_t i = 0; i < spec.layers; ++i) {
        const std::string p = fmt::format("model.transformer.blocks.{}.", i);
        const auto l = static_cast<int32_t>(i);
        out.push_back({p + "attn_norm.weight", {h}, Role::attention_norm, l});
        out.push_back({p + "ff_norm.weight", {h}, Role::mlp_norm, l});
        out.push_back({p + "q_proj.weight", {q, h}, Role::q_proj, l});
        out.push_back({p + "k_proj.weight", {kv, h}, Role::k_proj, l});
        out.push_back({p + "v_proj.weight", {kv, h}, Role::v_proj, l});
        out.push_back({p + "attn_out.weight", {h, q}, Role::o_proj, l});
        out.push_back({p + "ff_proj.weight", {mlp, h}, Role::mlp_gate, l});  // silu(ff_proj x) * up_proj x
        out.push_back({p + "up_proj.weight", {mlp, h}, Role::mlp_up, l});
        out.push_back({p + "ff_out.weight", {h, mlp}, Role::mlp_down, l});
    }
    out.push_back({"model.transformer.ln_f.weight", {h}, Role::final_norm});
    if (!spec.tie_word_embeddings)
        out.push_back({"model.transformer.ff_out.weight", {spec.embedding_rows, h}, Role::lm_head});
    return out;
}

}  // namespace

const ArchitectureBinding llada_binding{Architecture::llada, "LLaDAModelLM", read_llada_config, llada_tensors};

}  // namespace unmask
