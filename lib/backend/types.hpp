// The value types the Backend interface shares with the model above it: what a weight is (its
// role in the forward pass, the component it is counted under, its data), how routers score
// experts, and which kind of device a backend computes on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/dtype.hpp"

namespace unmask {

enum class BackendKind : int32_t { cpu = 0, cuda = 1 };
enum class RouterScore : int32_t { softmax, sigmoid };

// What a weight is for: parameter counts and memory are reported per component, and MoE experts
// are kept apart so they can be sharded across devices.
enum class Component : int32_t { embedding, attention, norm, mlp, router, experts, shared_experts, lm_head };
inline constexpr int component_count = 8;
std::string_view component_name(Component component) noexcept;

// What a weight does in the forward pass. Bindings map tensor names onto roles; the forward pass
// finds its weights by (role, layer, expert), so it never sees an architecture's names.
enum class Role : int32_t {
    embedding, final_norm, lm_head,
    attention_norm, mlp_norm, q_proj, k_proj, v_proj, o_proj, q_bias, k_bias, v_bias, q_norm, k_norm,
    mlp_gate, mlp_up, mlp_down,
    router, router_bias, expert_gate, expert_up, expert_down, shared_gate, shared_up, shared_down,
};
inline constexpr int role_count = static_cast<int>(Role::shared_down) + 1;
Component component_of(Role role) noexcept;

// One tensor of a model, as the backends read it: in memory as `dtype`, or on a device as the
// backend placed it.
struct Weight {
    std::string name;
    Role role = Role::embedding;
    int32_t layer = -1;
    int32_t expert = -1;
    Component component = Component::embedding;
    DType dtype = DType::f32;  // in memory
    DType file_dtype = DType::f32;
    std::vector<int64_t> shape;
    uint64_t elements = 0;
    const void* data = nullptr;  // nullptr when the model was opened for metadata only
    // A dense matrix of an fp8 checkpoint made as DeepSeek-V3's is (128x128 weight blocks, and
    // activations quantized to e4m3 as they come, quantization_config's activation_scheme
    // "dynamic"): a backend with block-scaled fp8 products (CUDA on sm_90) multiplies it so, the
    // others (the CPU among them) multiply its F8_E4M3_B128 rows by unquantized activations
    // (docs/loading.md).
    bool fp8_w8a8 = false;
    // The same matrix as the CPU's bf16 kernel reads it, packed once where the model was loaded
    // for one host device (cpu_packs_panels); the CPU backend reads these in place of `data`.
    const uint32_t* panels = nullptr;
};

}  // namespace unmask
