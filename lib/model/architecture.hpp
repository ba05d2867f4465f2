// How a Hugging Face architecture maps onto ModelSpec and which tensors (names, shapes) it must
// provide. One small binding per family; the forward pass is shared.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/types.hpp"
#include "format/config_reader.hpp"
#include "model/model_spec.hpp"

namespace unmask {

// A part of a tensor the file stores fused (LLaDA2's attention.query_key_value): that many of its
// rows, following the parts before it, used as a weight of this role.
struct TensorPart {
    Role role;
    int64_t rows;
};

struct ExpectedTensor {
    std::string name;
    std::vector<int64_t> shape;
    Role role;
    int32_t layer = -1;   // -1: not per layer
    int32_t expert = -1;  // -1: not per expert
    std::vector<TensorPart> parts = {};  // empty: one weight; else the weights "name[begin:end]" of these row ranges
};

struct ArchitectureBinding {
    Architecture architecture;
    std::string_view hf_name;  // config.json "architectures"[0]
    ModelSpec (*read_config)(const ConfigReader& config);
    std::vector<ExpectedTensor> (*expected_tensors)(const ModelSpec& spec);
};

// Selects the binding from config.json's "architectures"[0] (never from model_type alone:
// LLaDA and LLaDA-MoE share model_type "llada"), reads the spec and validates it.
// Throws UNSUPPORTED for an unknown architecture, MODEL_FORMAT for a bad config.
const ArchitectureBinding& select_architecture(const ConfigReader& config);
ModelSpec read_model_spec(const ConfigReader& config);

// The bindings (defined in arch_*.cpp).
extern const ArchitectureBinding llada_binding;
extern const ArchitectureBinding llada_moe_binding;
extern const ArchitectureBinding dream_binding;
extern const ArchitectureBinding llada2_moe_binding;
extern const ArchitectureBinding sdar_binding;
extern const ArchitectureBinding sdar_moe_binding;
extern const ArchitectureBinding rnd1_binding;

// Helpers shared by the bindings that use Hugging Face LLaMA-style names ("model.layers.{i}...").
void add_hf_attention_tensors(std::vector<ExpectedTensor>& out, const ModelSpec& spec, int64_t layer);
// gate_proj / up_proj / down_proj under `prefix`, as the dense MLP, one routed expert or the shared expert.
enum class SwigluKind { dense, expert, shared };
void add_swiglu_tensors(std::vector<ExpectedTensor>& out, const std::string& prefix, int64_t hidden, int64_t width,
                        SwigluKind kind, int64_t layer, int64_t expert = -1);
// The MLP of `layer` under "model.layers.{i}.mlp.": a dense SwiGLU, or the router ("gate.weight",
// and "gate.expert_bias" when the spec has one), the routed experts and the shared expert.
void add_mlp_tensors(std::vector<ExpectedTensor>& out, const ModelSpec& spec, int64_t layer);
// The shape keys of Hugging Face LLaMA-style configs: hidden_size, num_hidden_layers,
// num_attention_heads, num_key_value_heads (default: the heads), head_dim (default: hidden / heads),
// vocab_size (the embedding's rows too).
void read_hf_shape(const ConfigReader& config, ModelSpec& spec);
// The tensors of a model with Hugging Face LLaMA-style names throughout: model.embed_tokens, each
// layer's attention and MLP (add_hf_attention_tensors, add_mlp_tensors), model.norm, lm_head
// unless tied.
std::vector<ExpectedTensor> hf_model_tensors(const ModelSpec& spec);
// The router's score function from config key `key` ("softmax" or "sigmoid"), `fallback` when absent.
RouterScore read_router_score(const ConfigReader& config, std::string_view key, RouterScore fallback);

}  // namespace unmask

namespace unmask {
// The tensors the spec's architecture must provide, in binding order.
std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec);
}  // namespace unmask
