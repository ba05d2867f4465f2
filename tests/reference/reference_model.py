"""A PyTorch reference of the architectures' forward passes, written from the published model
definitions (LLaDA, LLaDA-MoE, Dream, LLaDA2, SDAR, SDAR-MoE, RND1; docs/architectures.md), in float64 so that it is the precise
side of every comparison. Weights are looked up by their Hugging Face names.

    logits = forward(config, weights, tokens)   # tokens: 1-D LongTensor, logits: [len, rows]
"""
import math

import torch


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, theta, rotary_dims):
    """x: [T, heads, head_dim]; rotates the leading rotary_dims of each head (NEOX / rotate_half)."""
    positions = torch.arange(x.shape[0], dtype=torch.float64)
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dims, 2, dtype=torch.float64) / rotary_dims))
    freqs = torch.outer(positions, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    rot, rest = x[..., :rotary_dims], x[..., rotary_dims:]
    return torch.cat((rot * cos + rotate_half(rot) * sin, rest), dim=-1)


def block_index(position, block_size, origin):
    """Block diffusion: the positions before `origin` (the prompt) form block -1, then blocks of block_size."""
    return -1 if position < origin else (position - origin) // block_size


def attention(q, k, v, heads, kv_heads, block_size=0, origin=0):
    """Bidirectional attention, or block-causal (key j visible to query i when block(j) <= block(i)).
    q: [T, H, d], k/v: [T, KV, d]."""
    group = heads // kv_heads
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, k) / (q.shape[-1] ** 0.5)
    if block_size > 0:
        T = q.shape[0]
        blocks = torch.tensor([block_index(p, block_size, origin) for p in range(T)])
        hidden = blocks[None, :] > blocks[:, None]  # [query, key]
        scores = scores.masked_fill(hidden[None, :, :], -math.inf)
    return torch.einsum("hqk,khd->qhd", scores.softmax(-1), v)


def swiglu(x, gate, up, down):
    return torch.nn.functional.silu(x @ gate.T) * (x @ up.T) @ down.T


QWEN3_FAMILY = ("SDARForCausalLM", "SDARMoeForCausalLM", "RND1")


def names(config):
    """Per-architecture tensor names (their published modeling code; docs/architectures.md).
    LLaDA2's q/k/v are one fused tensor (`qkv`, rows Q | K | V)."""
    arch = config["architectures"][0]
    if arch == "LLaDAModelLM":
        p = "model.transformer.blocks.%d."
        return dict(embed="model.transformer.wte.weight", final_norm="model.transformer.ln_f.weight",
                    lm_head="model.transformer.ff_out.weight", attn_norm=p + "attn_norm.weight",
                    mlp_norm=p + "ff_norm.weight", q=p + "q_proj.weight", k=p + "k_proj.weight",
                    v=p + "v_proj.weight", o=p + "attn_out.weight", gate=p + "ff_proj.weight",
                    up=p + "up_proj.weight", down=p + "ff_out.weight")
    p = "model.layers.%d."
    n = dict(embed="model.embed_tokens.weight", final_norm="model.norm.weight", lm_head="lm_head.weight",
             attn_norm=p + "input_layernorm.weight", mlp_norm=p + "post_attention_layernorm.weight",
             q=p + "self_attn.q_proj.weight", k=p + "self_attn.k_proj.weight", v=p + "self_attn.v_proj.weight",
             o=p + "self_attn.o_proj.weight", gate=p + "mlp.gate_proj.weight", up=p + "mlp.up_proj.weight",
             down=p + "mlp.down_proj.weight", q_norm=p + "self_attn.q_norm.weight", k_norm=p + "self_attn.k_norm.weight")
    if arch == "LLaDA2MoeModelLM":
        n.update(embed="model.word_embeddings.weight", qkv=p + "attention.query_key_value.weight",
                 o=p + "attention.dense.weight", q_norm=p + "attention.query_layernorm.weight",
                 k_norm=p + "attention.key_layernorm.weight")
        del n["q"], n["k"], n["v"]
    return n


def dims(config):
    arch = config["architectures"][0]
    if arch == "LLaDAModelLM":
        heads = config["n_heads"]
        return dict(hidden=config["d_model"], layers=config["n_layers"], heads=heads,
                    kv_heads=config.get("n_kv_heads") or heads, eps=config["rms_norm_eps"], theta=config["rope_theta"],
                    partial=1.0, tie=config.get("weight_tying", False), head_dim=config["d_model"] // heads)
    heads = config["num_attention_heads"]
    partial = config.get("partial_rotary_factor", 1.0) or 1.0
    return dict(hidden=config["hidden_size"], layers=config["num_hidden_layers"], heads=heads,
                kv_heads=config.get("num_key_value_heads") or heads, eps=config["rms_norm_eps"],
                theta=config["rope_theta"], partial=partial if partial > 0 else 1.0,
                tie=config.get("tie_word_embeddings", False),
                head_dim=config.get("head_dim") or config["hidden_size"] // heads)


def qk_norm(config):
    arch = config["architectures"][0]
    return arch in QWEN3_FAMILY or arch == "LLaDA2MoeModelLM" or (
        arch == "LLaDAMoEModelLM" and config.get("qk_layernorm", False))


def block_size(config):
    """Block-causal attention's block (0: bidirectional): LLaDA2 decodes in blocks of 32 (its
    generate() default), SDAR in its config's block_size; any model may set diffusion_block_size."""
    arch = config["architectures"][0]
    default = 32 if arch == "LLaDA2MoeModelLM" else config.get("block_size", 0) if arch.startswith("SDAR") else 0
    return config.get("diffusion_block_size", default)


def moe_layer(config, i):
    """Whether layer i routes to experts (each family's rule)."""
    arch = config["architectures"][0]
    if arch == "LLaDAMoEModelLM":
        return config["moe_layer_freq"][i] == 1
    if arch == "LLaDA2MoeModelLM":
        return i >= config.get("first_k_dense_replace", 0)
    if arch in ("SDARMoeForCausalLM", "RND1"):  # Qwen3-MoE
        return i not in config.get("mlp_only_layers", []) and (i + 1) % config.get("decoder_sparse_step", 1) == 0
    return False


def router(config):
    """The router of each MoE family: score function, selection bias, renormalisation, scaling,
    expert groups, shared expert width."""
    arch = config["architectures"][0]
    if arch == "LLaDAMoEModelLM":  # the published code ignores norm_topk_prob
        return dict(sigmoid=config.get("moe_router_score_function", "softmax") == "sigmoid",
                    bias=config.get("moe_router_enable_expert_bias", False), normalize=False, scaling=1.0,
                    groups=1, top_groups=1, shared=config.get("shared_expert_intermediate_size") or 0,
                    width=config["expert_intermediate_size"])
    if arch == "LLaDA2MoeModelLM":
        return dict(sigmoid=config.get("score_function", "sigmoid") == "sigmoid",
                    bias=config.get("moe_router_enable_expert_bias", False),
                    normalize=config.get("norm_topk_prob", True), scaling=config.get("routed_scaling_factor", 1.0),
                    groups=config.get("n_group", 1), top_groups=config.get("topk_group", config.get("n_group", 1)),
                    shared=config["moe_intermediate_size"] * (config.get("num_shared_experts") or 0),
                    width=config["moe_intermediate_size"])
    return dict(sigmoid=False, bias=False, normalize=config.get("norm_topk_prob", False), scaling=1.0, groups=1,
                top_groups=1, shared=0, width=config["moe_intermediate_size"])


def moe_block(config, weights, layer, x, router_log=None):
    """Scores (softmax or sigmoid, float64 here, fp32 in the published code) plus an optional
    bias for selection only; with expert groups, each group scored by the sum of its two best
    selection scores and only the top_groups best groups eligible; the top k by selection score,
    weighted by their unbiased scores, renormalised and scaled as the family says; plus the
    shared expert. router_log collects the smallest gaps at each discrete choice."""
    r = router(config)
    p = "model.layers.%d.mlp." % layer
    logits = x @ weights[p + "gate.weight"].T
    scores = logits.sigmoid() if r["sigmoid"] else logits.softmax(-1)
    selection = scores + weights[p + "gate.expert_bias"] if r["bias"] else scores
    k, experts = config["num_experts_per_tok"], selection.shape[-1]
    if r["groups"] > 1:
        grouped = selection.view(x.shape[0], r["groups"], -1)
        group_scores = grouped.topk(2, dim=-1).values.sum(-1)
        if router_log is not None and r["top_groups"] < r["groups"]:
            top = group_scores.topk(r["top_groups"] + 1, dim=-1).values
            router_log.append((top[:, -2] - top[:, -1]).min().item())
        kept = group_scores.topk(r["top_groups"], dim=-1).indices
        allowed = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, kept, True)
        allowed = allowed[:, :, None].expand_as(grouped).reshape(x.shape[0], experts)
        selection = selection.masked_fill(~allowed, -math.inf)
    top = selection.topk(k + 1 if k < experts else k, dim=-1)
    if router_log is not None and k < experts:
        gaps = top.values[:, k - 1] - top.values[:, k]
        router_log.append(gaps[torch.isfinite(gaps)].min().item() if torch.isfinite(gaps).any() else 1.0)
    chosen = top.indices[:, :k]
    weight = scores.gather(1, chosen)
    if r["normalize"]:
        weight = weight / weight.sum(-1, keepdim=True)
    weight = weight * r["scaling"]
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(k):
            e = int(chosen[t, j])
            q = "%sexperts.%d." % (p, e)
            y = swiglu(x[t:t + 1], weights[q + "gate_proj.weight"], weights[q + "up_proj.weight"],
                       weights[q + "down_proj.weight"])
            out[t] += weight[t, j] * y[0]
    if r["shared"] > 0:
        s = p + "shared_experts."
        out += swiglu(x, weights[s + "gate_proj.weight"], weights[s + "up_proj.weight"], weights[s + "down_proj.weight"])
    return out


def forward(config, weights, tokens, router_log=None, block_origin=0, kv_dtype=None):
    """weights: name -> float64 tensor. Returns [len(tokens), rows] float64 logits. Block-causal
    attention (block_size(config) > 0) counts blocks from block_origin. kv_dtype (torch.bfloat16):
    keys and values rounded to it after RoPE, as a K/V cache of that type stores them."""
    n, d = names(config), dims(config)
    arch = config["architectures"][0]
    heads, kv_heads, head_dim = d["heads"], d["kv_heads"], d["head_dim"]
    rotary = int(round(head_dim * d["partial"])) // 2 * 2
    qkv_bias = arch == "DreamModel"
    x = weights[n["embed"]][tokens]
    T = x.shape[0]
    for i in range(d["layers"]):
        h = rms_norm(x, weights[n["attn_norm"] % i], d["eps"])
        if "qkv" in n:  # fused, rows Q | K | V
            q, k, v = (h @ weights[n["qkv"] % i].T).split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], -1)
        else:
            q, k, v = (h @ weights[n[key] % i].T for key in ("q", "k", "v"))
        if qkv_bias:
            q = q + weights[(n["q"] % i).replace(".weight", ".bias")]
            k = k + weights[(n["k"] % i).replace(".weight", ".bias")]
            v = v + weights[(n["v"] % i).replace(".weight", ".bias")]
        q, k, v = q.reshape(T, heads, head_dim), k.reshape(T, kv_heads, head_dim), v.reshape(T, kv_heads, head_dim)
        if qk_norm(config):
            q = rms_norm(q, weights[n["q_norm"] % i], d["eps"])
            k = rms_norm(k, weights[n["k_norm"] % i], d["eps"])
        q, k = apply_rope(q, d["theta"], rotary), apply_rope(k, d["theta"], rotary)
        if kv_dtype is not None:
            k, v = k.to(kv_dtype).to(k.dtype), v.to(kv_dtype).to(v.dtype)
        attended = attention(q, k, v, heads, kv_heads, block_size(config), block_origin)
        x = x + attended.reshape(T, heads * head_dim) @ weights[n["o"] % i].T
        h = rms_norm(x, weights[n["mlp_norm"] % i], d["eps"])
        if moe_layer(config, i):
            x = x + moe_block(config, weights, i, h, router_log)
        else:
            x = x + swiglu(h, weights[n["gate"] % i], weights[n["up"] % i], weights[n["down"] % i])
    x = rms_norm(x, weights[n["final_norm"]], d["eps"])
    logits = x @ (weights[n["embed"]] if d["tie"] else weights[n["lm_head"]]).T
    if arch in ("DreamModel", "RND1"):  # shifted: position i is predicted from hidden state i-1
        logits = torch.cat((logits[:1], logits[:-1]), dim=0)
    return logits
