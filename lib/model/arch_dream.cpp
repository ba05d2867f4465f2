// Dream (DreamModel): Qwen2.5 layers (q/k/v biases, GQA) with shifted logits.
#include "core/error.hpp"
#include "model/architecture.hpp"

namespace unmask {
namespace {

ModelSpec read_dream_config(const ConfigReader& config) {
    ModelSpec spec;
    spec.architecture = Architecture::dream;
    spec.architecture_name = "dream";
    spec.hidden_size = config.positive_integer("hidden_size");
    spec.intermediate_size = config.positive_integer("intermediate_size");
    spec.layers = config.positive_integer("num_hidden_layers");
    spec.attention_heads = config.positive_integer("num_attention_heads");
    spec.kv_heads = config.optional_integer("num_key_value_heads").value_or(spec.attention_heads);
    if (spec.hidden_size % spec.attention_heads != 0)
        config.fail_field("hidden_size", fmt::format("({}) must be a multiple of num_attention_heads ({})",
                                                     spec.hidden_size, spec.attention_heads));
    spec.head_dim = spec.hidden_size / spec.attention_heads;
    spec.vocab_size = config.positive_integer("vocab_size");
    spec.embedding_rows = spec.vocab_size;
    spec.max_sequence_length = config.optional_integer("max_position_embeddings").value_or(32768);
    spec.rms_norm_eps = config.number("rms_norm_eps");
    spec.rope_theta = config.number("rope_theta");
    spec.mask_token_id = config.integer("mask_token_id");
    spec.eos_token_id = config.optional_token_id("eos_token_id").value_or(-1);
    spec.tie_word_embeddings = config.boolean("tie_word_embeddings", false);
    spec.qkv_bias = true;
    spec.logits_shift = true;
    return spec;
}

}  // namespace

const ArchitectureBinding dream_binding{Architecture::dream, "DreamModel", read_dream_config, hf_model_tensors};

}  // namespace unmask
