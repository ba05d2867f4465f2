// ModelSpec: everything the one forward pass needs to know about an architecture, read from
// config.json. Architectures differ only in how their config and tensor names map onto this.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/types.hpp"

namespace unmask {

enum class Architecture : int32_t { llada, llada_moe, dream, llada2_moe, sdar, sdar_moe, rnd1 };
enum class RopeStyle : int32_t { half_split, interleaved };

struct ModelSpec {
    Architecture architecture = Architecture::llada;
    std::string architecture_name;  // "llada", "llada-moe", "dream", "llada2-moe", "sdar", "sdar-moe", "rnd1"

    int64_t vocab_size = 0;      // tokens the tokenizer may produce
    int64_t embedding_rows = 0;  // rows of the embedding and LM head (LLaDA pads beyond vocab_size)
    int64_t hidden_size = 0;
    int64_t layers = 0;
    int64_t attention_heads = 0;
    int64_t kv_heads = 0;
    int64_t head_dim = 0;
    int64_t intermediate_size = 0;  // dense SwiGLU width (0 when every layer is MoE)

    double rms_norm_eps = 1e-5;
    double rope_theta = 10000.0;
    double partial_rotary_factor = 1.0;  // fraction of head_dim rotated
    RopeStyle rope_style = RopeStyle::half_split;

    bool qkv_bias = false;
    bool qk_norm = false;  // per-head RMSNorm of q and k (weights of shape [head_dim])
    bool tie_word_embeddings = false;
    bool logits_shift = false;  // Dream: position i is predicted from hidden state i-1

    // Mixture of experts (experts == 0: dense model).
    int64_t experts = 0;
    int64_t experts_per_token = 0;
    int64_t expert_intermediate_size = 0;
    int64_t shared_expert_intermediate_size = 0;  // 0: no shared expert
    std::vector<bool> moe_layer;                  // per layer: MoE (true) or dense MLP
    RouterScore router_score = RouterScore::softmax;
    bool norm_topk_prob = false;
    bool router_expert_bias = false;
    double routed_scaling_factor = 1.0;
    int64_t router_groups = 1;      // > 1: experts in this many groups, ...
    int64_t router_top_groups = 1;  // ... of which the best this many are eligible (n_group, topk_group)

    // Block diffusion (LLaDA2 and SDAR): attention is block-causal over blocks of this many
    // positions aligned to position 0; 0: bidirectional.
    int64_t diffusion_block_size = 0;

    // An fp8 checkpoint (config.json's quantization_config, quant_method "fp8"): its F8_E4M3
    // weights are multiplied by a per-tensor `weight_scale` (fp8_block_rows 0) or, with
    // weight_block_size [rows, cols], by the `weight_scale_inv` of their block of rows x cols.
    bool fp8_weights = false;
    int64_t fp8_block_rows = 0;
    int64_t fp8_block_cols = 0;
    // Its quantization_config's activation_scheme is "dynamic": activations quantized to e4m3 as
    // they come, per 128 inputs (as DeepSeek-V3's act_quant does), where a backend can (Weight::fp8_w8a8).
    bool fp8_dynamic_activations = false;

    int64_t mask_token_id = 0;
    int64_t eos_token_id = -1;  // -1: none declared
    int64_t pad_token_id = -1;  // -1: none declared; RND1's sampler leaves it at the end of the canvas
    int64_t max_sequence_length = 0;

    bool is_moe() const noexcept { return experts > 0; }
    // Whether `layer` routes its tokens to experts (else it has a dense MLP), and whether any does.
    bool routed(int64_t layer) const noexcept { return is_moe() && moe_layer[static_cast<size_t>(layer)]; }
    bool any_routed_layer() const noexcept {
        return is_moe() && std::find(moe_layer.begin(), moe_layer.end(), true) != moe_layer.end();
    }
    // The positions a canvas of `positions` occupies while it is decoded: block diffusion models
    // decode up to the end of its last block, as their published generate() does.
    int64_t decoded_positions(int64_t positions) const noexcept {
        const int64_t block = diffusion_block_size;
        return block > 0 ? (positions + block - 1) / block * block : positions;
    }
};

}  // namespace unmask
