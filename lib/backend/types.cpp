#include "backend/types.hpp"

namespace unmask {

std::string_view component_name(Component component) noexcept {
    switch (component) {
        case Component::embedding: return "embedding";
        case Component::attention: return "attention";
        case Component::norm: return "norm";
        case Component::mlp: return "mlp";
        case Component::router: return "router";
        case Component::experts: return "experts";
        case Component::shared_experts: return "shared_experts";
        case Component::lm_head: return "lm_head";
    }
    return "?";
}

Component component_of(Role role) noexcept {
    switch (role) {
        case Role::embedding: return Component::embedding;
        case Role::lm_head: return Component::lm_head;
        case Role::final_norm:
        case Role::attention_norm:
        case Role::mlp_norm:
        case Role::q_norm:
        case Role::k_norm: return Component::norm;
        case Role::q_proj:
        case Role::k_proj:
        case Role::v_proj:
        case Role::o_proj:
        case Role::q_bias:
        case Role::k_bias:
        case Role::v_bias: return Component::attention;
        case Role::mlp_gate:
        case Role::mlp_up:
        case Role::mlp_down: return Component::mlp;
        case Role::router:
        case Role::router_bias: return Component::router;
        case Role::expert_gate:
        case Role::expert_up:
        case Role::expert_down: return Component::experts;
        case Role::shared_gate:
        case Role::shared_up:
        case Role::shared_down: return Component::shared_experts;
    }
    return Component::embedding;
}

}  // namespace unmask
