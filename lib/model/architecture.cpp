#include "model/architecture.hpp"

#include "core/error.hpp"
#include "expert_groups.hpp"

namespace unmask {
namespace {

constexpr int64_t max_layers = 4096;  // far above any real model: a hostile config cannot make us plan absurd work

const ArchitectureBinding* const bindings[] = {&llada_binding,      &llada_moe_binding, &dream_binding, &llada2_moe_binding,
                                               &sdar_binding,       &sdar_moe_binding,  &rnd1_binding};

// Checks that make the shapes consistent, whatever the family.
void validate_spec(const ModelSpec& spec, const std::string& label) {
    auto bad = [&](std::string_view what) { fail(Status::model_format, "{}: {}", label, what); };
    // Bounds far above any real model, so a hostile config cannot make us plan absurd work.
    if (spec.layers > max_layers) bad(fmt::format("{} layers is more than the supported {}", spec.layers, max_layers));
    if (spec.experts > 65536) bad(fmt::format("{} experts is more than the supported 65536", spec.experts));
    if (spec.hidden_size > (1 << 20) || spec.attention_heads > 4096 || spec.head_dim > 4096)
        bad(fmt::format("hidden size {} / heads {} / head_dim {} are beyond supported bounds", spec.hidden_size,
                        spec.attention_heads, spec.head_dim));
    if (spec.embedding_rows > (int64_t{1} << 24)) bad(fmt::format("{} vocabulary rows is beyond the supported 16M", spec.embedding_rows));
    if (spec.kv_heads <= 0 || spec.attention_heads % spec.kv_heads != 0)
        bad(fmt::format("attention heads ({}) must be a multiple of key/value heads ({})", spec.attention_heads,
                        spec.kv_heads));
    if (spec.head_dim <= 0 || spec.head_dim % 2 != 0) bad(fmt::format("head_dim {} must be positive and even", spec.head_dim));
    if (spec.embedding_rows < spec.vocab_size)
        bad(fmt::format("embedding rows ({}) are fewer than vocab_size ({})", spec.embedding_rows, spec.vocab_size));
    if (spec.mask_token_id < 0 || spec.mask_token_id >= spec.embedding_rows)
        bad(fmt::format("mask_token_id {} is outside the vocabulary of {} rows", spec.mask_token_id, spec.embedding_rows));
    if (spec.pad_token_id < -1 || spec.pad_token_id >= spec.embedding_rows)
        bad(fmt::format("pad_token_id {} is outside the vocabulary of {} rows", spec.pad_token_id, spec.embedding_rows));
    if (spec.rms_norm_eps <= 0) bad(fmt::format("rms_norm_eps {} must be positive", spec.rms_norm_eps));
    if (spec.rope_theta <= 0) bad(fmt::format("rope_theta {} must be positive", spec.rope_theta));
    if (spec.partial_rotary_factor <= 0 || spec.partial_rotary_factor > 1)
        bad(fmt::format("partial_rotary_factor {} must be in (0, 1]", spec.partial_rotary_factor));
    if (spec.is_moe()) {
        if (spec.experts_per_token <= 0 || spec.experts_per_token > spec.experts)
            bad(fmt::format("num_experts_per_tok {} must be in 1..{}", spec.experts_per_token, spec.experts));
        if (static_cast<int64_t>(spec.moe_layer.size()) != spec.layers)
            bad(fmt::format("moe_layer_freq has {} entries for {} layers", spec.moe_layer.size(), spec.layers));
        const int64_t groups = spec.router_groups, top = spec.router_top_groups;
        if (groups < 1 || groups > kernels::max_expert_groups || spec.experts % groups != 0 ||
            (groups > 1 && spec.experts / groups < 2))
            bad(fmt::format("n_group {} must be in 1..{} and divide the {} experts into groups of 2 or more", groups,
                            kernels::max_expert_groups, spec.experts));
        if (top < 1 || top > groups || top * (spec.experts / groups) < spec.experts_per_token)
            bad(fmt::format("topk_group {} must be in 1..{} (n_group) and leave at least num_experts_per_tok ({}) experts",
                            top, groups, spec.experts_per_token));
    }
}

// config.json's quantization_config: fp8 checkpoints ("quant_method": "fp8", as vLLM, SGLang and
// DeepSeek-V3's and Qwen3-FP8's configs write it: e4m3 weights, per tensor or with
// "weight_block_size" [rows, cols]); every other method is UNSUPPORTED, naming it. The activation
// scheme "dynamic" is kept for the backends that quantize activations (Weight::fp8_w8a8); any
// other ("static", with a per-tensor input_scale) is not used: activations stay unquantized.
void read_quantization_config(const ConfigReader& config, ModelSpec& spec) {
    const nlohmann::json* q = config.find("quantization_config");
    if (q == nullptr) return;
    if (!q->is_object()) config.fail_field("quantization_config", fmt::format("must be an object, got {}", q->dump()));
    const ConfigReader fields(*q, config.label() + " quantization_config");
    const auto method = fields.optional_string("quant_method");
    if (!method) fields.fail_field("quant_method", "is missing");
    if (*method != "fp8")
        fail(Status::unsupported, "{}: quantization_config's quant_method '{}' is not supported (fp8 checkpoints are; "
             "for int8 or 4-bit weights load a float checkpoint with precision int8 or q4, or a GGUF file)",
             config.label(), *method);
    if (const auto format = fields.optional_string("fmt"); format && *format != "e4m3")
        fail(Status::unsupported, "{}: quantization_config's fmt '{}' is not supported (e4m3 is)", config.label(), *format);
    spec.fp8_weights = true;
    const nlohmann::json* scheme = fields.find("activation_scheme");
    spec.fp8_dynamic_activations = scheme != nullptr && *scheme == "dynamic";
    const nlohmann::json* block = fields.find("weight_block_size");
    if (block == nullptr) return;  // one scale per tensor
    const auto extent = [](const nlohmann::json& v) { return v.is_number_integer() ? v.get<int64_t>() : int64_t{0}; };
    if (!block->is_array() || block->size() != 2 || extent((*block)[0]) < 1 || extent((*block)[1]) < 1 ||
        extent((*block)[0]) > (1 << 20) || extent((*block)[1]) > (1 << 20))
        fields.fail_field("weight_block_size", fmt::format("must be two positive integers [rows, cols], got {}", block->dump()));
    spec.fp8_block_rows = extent((*block)[0]);
    spec.fp8_block_cols = extent((*block)[1]);
    if (spec.fp8_block_cols % 128 != 0)
        fail(Status::unsupported, "{}: quantization_config's weight_block_size [{}, {}] is not supported: its columns "
             "must be a multiple of 128", config.label(), spec.fp8_block_rows, spec.fp8_block_cols);
}

}  // namespace

const ArchitectureBinding& select_architecture(const ConfigReader& config) {
    const nlohmann::json* architectures = config.find("architectures");
    if (architectures == nullptr) config.fail_field("architectures", "is missing");
    if (!architectures->is_array() || architectures->empty() || !(*architectures)[0].is_string())
        config.fail_field("architectures", fmt::format("must be a non-empty list of names, got {}", architectures->dump()));
    const auto name = (*architectures)[0].get<std::string>();
    for (const ArchitectureBinding* binding : bindings)
        if (binding->hf_name == name) return *binding;
    std::vector<std::string_view> supported;
    for (const ArchitectureBinding* binding : bindings) supported.push_back(binding->hf_name);
    fail(Status::unsupported, "{}: architecture '{}' is not supported (supported: {})", config.label(), name,
         fmt::join(supported, ", "));
}

ModelSpec read_model_spec(const ConfigReader& config) {
    const ArchitectureBinding& binding = select_architecture(config);
    ModelSpec spec = binding.read_config(config);
    if (const auto block = config.optional_integer("diffusion_block_size")) {
        if (*block < 1 || *block > spec.max_sequence_length)
            config.fail_field("diffusion_block_size", fmt::format("({}) must be in 1..max_sequence_length ({})", *block,
                                                                 spec.max_sequence_length));
        spec.diffusion_block_size = *block;
    }
    read_quantization_config(config, spec);
    validate_spec(spec, config.label());
    return spec;
}

void add_hf_attention_tensors(std::vector<ExpectedTensor>& out, const ModelSpec& spec, int64_t layer) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    const int64_t h = spec.hidden_size, q = spec.attention_heads * spec.head_dim, kv = spec.kv_heads * spec.head_dim;
    const auto l = static_cast<int32_t>(layer);
    out.push_back({p + "input_layernorm.weight", {h}, Role::attention_norm, l});
    out.push_back({p + "post_attention_layernorm.weight", {h}, Role::mlp_norm, l});
    out.push_back({p + "self_attn.q_proj.weight", {q, h}, Role::q_proj, l});
    out.push_back({p + "self_attn.k_proj.weight", {kv, h}, Role::k_proj, l});
    out.push_back({p + "self_attn.v_proj.weight", {kv, h}, Role::v_proj, l});
    out.push_back({p + "self_attn.o_proj.weight", {h, q}, Role::o_proj, l});
    if (spec.qkv_bias) {
        out.push_back({p + "self_attn.q_proj.bias", {q}, Role::q_bias, l});
        out.push_back({p + "self_attn.k_proj.bias", {kv}, Role::k_bias, l});
        out.push_back({p + "self_attn.v_proj.bias", {kv}, Role::v_bias, l});
    }
    if (spec.qk_norm) {
        out.push_back({p + "self_attn.q_norm.weight", {spec.head_dim}, Role::q_norm, l});
        out.push_back({p + "self_attn.k_norm.weight", {spec.head_dim}, Role::k_norm, l});
    }
}

void add_mlp_tensors(std::vector<ExpectedTensor>& out, const ModelSpec& spec, int64_t layer) {
    const int64_t h = spec.hidden_size;
    const std::string p = fmt::format("model.layers.{}.mlp.", layer);
    if (!spec.routed(layer)) {
        add_swiglu_tensors(out, p, h, spec.intermediate_size, SwigluKind::dense, layer);
        return;
    }
    const auto l = static_cast<int32_t>(layer);
    out.push_back({p + "gate.weight", {spec.experts, h}, Role::router, l});
    if (spec.router_expert_bias) out.push_back({p + "gate.expert_bias", {spec.experts}, Role::router_bias, l});
    for (int64_t e = 0; e < spec.experts; ++e)
        add_swiglu_tensors(out, fmt::format("{}experts.{}.", p, e), h, spec.expert_intermediate_size, SwigluKind::expert,
                           layer, e);
    if (spec.shared_expert_intermediate_size > 0)
        add_swiglu_tensors(out, p + "shared_experts.", h, spec.shared_expert_intermediate_size, SwigluKind::shared, layer);
}

void read_hf_shape(const ConfigReader& config, ModelSpec& spec) {
    spec.hidden_size = config.positive_integer("hidden_size");
    spec.layers = config.positive_integer("num_hidden_layers");
    // Checked here too: the families size per-layer lists from it before the spec is validated.
    if (spec.layers > max_layers)
        config.fail_field("num_hidden_layers", fmt::format("({}) is more than the supported {}", spec.layers, max_layers));
    spec.attention_heads = config.positive_integer("num_attention_heads");
    spec.kv_heads = config.optional_integer("num_key_value_heads").value_or(spec.attention_heads);
    spec.head_dim = config.optional_integer("head_dim").value_or(spec.hidden_size / spec.attention_heads);
    spec.vocab_size = config.positive_integer("vocab_size");
    spec.embedding_rows = spec.vocab_size;
}

std::vector<ExpectedTensor> hf_model_tensors(const ModelSpec& spec) {
    const int64_t h = spec.hidden_size;
    std::vector<ExpectedTensor> out;
    out.push_back({"model.embed_tokens.weight", {spec.embedding_rows, h}, Role::embedding});
    for (int64_t i = 0; i < spec.layers; ++i) {
        add_hf_attention_tensors(out, spec, i);
        add_mlp_tensors(out, spec, i);
    }
    out.push_back({"model.norm.weight", {h}, Role::final_norm});
    if (!spec.tie_word_embeddings) out.push_back({"lm_head.weight", {spec.embedding_rows, h}, Role::lm_head});
    return out;
}

RouterScore read_router_score(const ConfigReader& config, std::string_view key, RouterScore fallback) {
    const auto score = config.optional_string(key);
    if (!score) return fallback;
    if (*score != "softmax" && *score != "sigmoid")
        config.fail_field(key, fmt::format("must be \"softmax\" or \"sigmoid\", got \"{}\"", *score));
    return *score == "softmax" ? RouterScore::softmax : RouterScore::sigmoid;
}

void add_swiglu_tensors(std::vector<ExpectedTensor>& out, const std::string& prefix, int64_t hidden, int64_t width,
                        SwigluKind kind, int64_t layer, int64_t expert) {
    static constexpr Role roles[3][3] = {{Role::mlp_gate, Role::mlp_up, Role::mlp_down},
                                         {Role::expert_gate, Role::expert_up, Role::expert_down},
                                         {Role::shared_gate, Role::shared_up, Role::shared_down}};
    const Role* r = roles[static_cast<int>(kind)];
    const auto l = static_cast<int32_t>(layer), e = static_cast<int32_t>(expert);
    out.push_back({prefix + "gate_proj.weight", {width, hidden}, r[0], l, e});
    out.push_back({prefix + "up_proj.weight", {width, hidden}, r[1], l, e});
    out.push_back({prefix + "down_proj.weight", {hidden, width}, r[2], l, e});
}

std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec) {
    for (const ArchitectureBinding* binding : bindings)
        if (binding->architecture == spec.architecture) return binding->expected_tensors(spec);
    fail(Status::internal, "unknown architecture {}", static_cast<int>(spec.architecture));
}

}  // namespace unmask
