#!/usr/bin/env python3
"""Writes tiny random models of each architecture in Hugging Face layout (real tensor names,
config.json + safetensors, Dream sharded with an index) and the reference logits of
reference_model.py for a batch of sequences of different lengths.

Three sets of expected logits: `logits.N` from the fp32 weights, `logits_bf16.N` from the same
weights rounded to bf16 (what unmask computes with when it loads them at bf16), and `logits_kv_bf16.N`
from the fp32 weights with keys and values rounded to bf16 after RoPE (what a bf16 K/V cache holds),
all evaluated in float64. Weights are scaled so that logits are well separated; seeds are retried until no position
has a near-tie between its top two logits and no MoE token a near-tie at its k-th expert, for
either weight set, so exact top-1 and routing comparisons are meaningful.

usage: /usr/bin/python3 make_reference_fixtures.py OUTPUT_DIR
"""
import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import fp8_e4m3  # noqa: E402
import gguf_dequantize  # noqa: E402
import make_model_fixtures as fixtures  # noqa: E402  (the safetensors writer)
import reference_decode  # noqa: E402
import reference_model  # noqa: E402

LENGTHS = [7, 70, 131]
MIN_DECODE_LOGIT_GAP = 1e-3
MIN_DECODE_SELECTION_GAP = 1e-5

# Decoding cases: (name, parameters). LLaDA-family models run LLaDA's policies and the adaptive
# rules; Dream runs its own algorithms. gen_length 16 after an 8-token prompt.
LLADA_CASES = [
    ("low_confidence, pure diffusion", {"gen_length": 16, "steps": 16}),
    ("low_confidence, 2 blocks, 2 per step", {"gen_length": 16, "block_length": 8, "steps": 8}),
    ("low_confidence, uneven transfer counts", {"gen_length": 16, "block_length": 8, "steps": 6}),
    ("random order", {"gen_length": 16, "block_length": 8, "steps": 8, "policy": "random", "seed": 7}),
    ("classifier-free guidance", {"gen_length": 16, "block_length": 8, "steps": 8, "cfg_scale": 1.5}),
    # 232 is the random LLaDA model's favourite token: as EOT or EOS it changes the outcome.
    ("EOS banned, reference EOS/EOT confidence", {"gen_length": 16, "steps": 8, "logits_eos_inf": True,
                                                  "eos_confidence": "reference", "eot_token_id": 232}),
    ("EOS and EOT confidence -inf", {"gen_length": 16, "steps": 8, "eos_confidence": "both", "eot_token_id": 232}),
    ("early stop", {"gen_length": 16, "block_length": 4, "steps": 8, "early_stop": True, "eos_token_id": 232}),
    ("threshold 0.5", {"gen_length": 16, "block_length": 8, "steps": 16, "threshold": 0.5}),
    ("threshold 0.9 within 3..4 steps", {"gen_length": 16, "block_length": 8, "steps": 16, "threshold": 0.9,
                                         "min_steps": 6, "max_steps": 8}),
    ("factor 1.0", {"gen_length": 16, "block_length": 8, "steps": 16, "factor": 1.0}),
]
DREAM_CASES = [
    ("origin", {"gen_length": 16, "steps": 8, "policy": "origin", "seed": 3}),
    ("maskgit_plus", {"gen_length": 16, "steps": 8, "policy": "maskgit_plus"}),
    ("topk_margin", {"gen_length": 16, "steps": 8, "policy": "topk_margin"}),
    ("entropy", {"gen_length": 16, "steps": 8, "policy": "entropy"}),
    ("entropy, alg_temp 0.5", {"gen_length": 16, "steps": 8, "policy": "entropy", "alg_temp": 0.5, "seed": 11}),
    ("maskgit_plus, top_p 0.9, top_k 20", {"gen_length": 16, "steps": 8, "policy": "maskgit_plus", "top_p": 0.9,
                                           "top_k": 20}),
]
# RND1's sampler: fewer masks than steps (steps that commit nothing), more, and one of each filter.
RND1_CASES = [
    ("rnd1, 8 steps", {"gen_length": 16, "steps": 8, "policy": "rnd1"}),
    ("rnd1, 20 steps for 11 masks", {"gen_length": 12, "steps": 20, "policy": "rnd1"}),
    ("rnd1, top_k 20", {"gen_length": 16, "steps": 6, "policy": "rnd1", "top_k": 20}),
    ("rnd1, top_p 0.9", {"gen_length": 16, "steps": 6, "policy": "rnd1", "top_p": 0.9}),
]
# Block diffusion (a LLaDA model with diffusion_block_size 8): the published layout (blocks aligned
# to position 0), with prompts of 8 tokens (a whole block) and of 5 and 11 (the prompt's last block
# decoded with the first masked positions). A third element: the prompt's length (default 8).
LLADA_BLOCK_CASES = [
    ("block diffusion, 3 blocks, 2 per step", {"gen_length": 24, "block_length": 8, "steps": 12}),
    ("block diffusion, random order", {"gen_length": 16, "block_length": 8, "steps": 8, "policy": "random", "seed": 5}),
    ("block diffusion, classifier-free guidance", {"gen_length": 16, "block_length": 8, "steps": 8, "cfg_scale": 1.5}),
    ("block diffusion, threshold 0.5", {"gen_length": 24, "block_length": 8, "steps": 24, "threshold": 0.5}),
    ("block diffusion, early stop", {"gen_length": 24, "block_length": 8, "steps": 12, "early_stop": True,
                                     "eos_token_id": 159}),
    ("prompt of 5: a partial first block", {"gen_length": 16, "block_length": 8, "steps": 8}, 5),
    ("prompt of 11, 4 per step", {"gen_length": 24, "block_length": 8, "steps": 6}, 11),
    ("prompt of 13, threshold 0.7", {"gen_length": 16, "block_length": 8, "steps": 16, "threshold": 0.7}, 13),
    # The prompt of "prompt of 5: a partial first block" (a fourth element: the name to seed the
    # prompt from), whose second block holds a 25: as EOS it ends generation there.
    ("prompt of 5, EOS 25 ends block 1", {"gen_length": 16, "block_length": 8, "steps": 8, "eos_token_id": 25}, 5,
     "prompt of 5: a partial first block"),
]
# LLaDA2 (its fixture decodes in blocks of 8) and SDAR (blocks of 4), in the same layout.
LLADA2_CASES = [
    ("LLaDA2, prompt of 8", {"gen_length": 16, "steps": 16}),
    ("LLaDA2, prompt of 6, threshold 0.9", {"gen_length": 16, "steps": 16, "threshold": 0.9}, 6),
    ("LLaDA2, prompt of 10, 2 per step", {"gen_length": 16, "steps": 8}, 10),
    ("LLaDA2, prompt of 6, gen_length 13", {"gen_length": 13, "steps": 16}, 6),
    ("LLaDA2, threshold 0.9, 4 steps a block", {"gen_length": 16, "steps": 8, "threshold": 0.9}, 9),
    # LLaDA2.1's token editing (each case edits tokens: the generator checks).
    ("LLaDA2.1 editing, threshold 0.5, edit 0.3", {"gen_length": 16, "steps": 16, "threshold": 0.5,
                                                  "edit_threshold": 0.3}),
    ("LLaDA2.1 editing, prompt of 5, 1 post step", {"gen_length": 16, "steps": 16, "threshold": 0.7,
                                                    "edit_threshold": 0.2, "max_post_edit_steps": 1}, 5),
]
SDAR_CASES = [
    ("SDAR, prompt of 8, one per step", {"gen_length": 12, "steps": 12}),
    ("SDAR, prompt of 7, 2 per step", {"gen_length": 16, "steps": 8}, 7),
    ("SDAR, prompt of 9, threshold 0.85", {"gen_length": 12, "steps": 12, "threshold": 0.85}, 9),
]
MIN_LOGIT_GAP = 2e-3
MIN_ROUTER_GAP = 1e-4


def llada_config():
    return {"architectures": ["LLaDAModelLM"], "model_type": "llada", "d_model": 64, "n_layers": 2, "n_heads": 4,
            "n_kv_heads": 2, "mlp_hidden_size": 320, "vocab_size": 290, "embedding_size": 300,
            "max_sequence_length": 512, "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "mask_token_id": 299,
            "eos_token_id": 297, "include_bias": False, "weight_tying": False, "rope": True, "alibi": False}


def llada_fp8_config(block):
    """An fp8 checkpoint of a LLaDA whose matrices' rows are whole groups of 128: per-tensor
    scales (vLLM's `weight_scale`), or 128x128 blocks (DeepSeek-V3's `weight_scale_inv`)."""
    config = dict(llada_config(), d_model=128, mlp_hidden_size=256)
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    if block:
        config["quantization_config"].update(fmt="e4m3", weight_block_size=[128, 128])
    return config


def fp8_tensors(config, weights):
    """The tensors of an fp8 checkpoint of `weights` (the matrices, and with blocks also the
    embedding and LM head, in F8_E4M3 with their scales; norms F32) and the weights they stand for."""
    block = config["quantization_config"].get("weight_block_size")
    tensors, dequantized = [], {}
    for name, w in weights.items():
        embedding = name in ("model.transformer.wte.weight", "model.transformer.ff_out.weight")
        if w.dim() != 2 or (embedding and not block):
            tensors.append((name, "F32", list(w.shape), w.flatten().tolist()))
            dequantized[name] = w
            continue
        codes, scales, values = fp8_e4m3.quantize_checkpoint(w, block, torch.bfloat16 if block else torch.float32)
        tensors.append((name, "F8_E4M3", list(w.shape), codes.flatten().tolist()))
        tensors.append((name + ("_scale_inv" if block else "_scale"), "BF16" if block else "F32", list(scales.shape),
                        scales.flatten().tolist()))
        if not block:  # with per-tensor scales, activation scales as static-scheme checkpoints carry (not used)
            tensors.append((name.replace(".weight", ".input_scale"), "F32", [], [1.0]))
        dequantized[name] = values.double()
    return tensors, dequantized


def llada_block_config():
    config = llada_config()
    config["diffusion_block_size"] = 8
    return config


def llada_moe_config():
    return {"architectures": ["LLaDAMoEModelLM"], "model_type": "llada", "hidden_size": 64, "num_hidden_layers": 3,
            "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 256, "num_experts": 8,
            "num_experts_per_tok": 2, "expert_intermediate_size": 48, "dense_intermediate_size": 96,
            "shared_expert_intermediate_size": 32, "moe_layer_freq": [0, 1, 1], "qk_layernorm": True,
            "partial_rotary_factor": 0.5, "moe_router_score_function": "softmax",
            "moe_router_enable_expert_bias": False, "norm_topk_prob": True, "rope_theta": 10000.0,
            "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "max_position_embeddings": 512,
            "mask_token_id": 255, "eos_token_id": 254}


def llada_moe_sigmoid_config():
    """The router variants: sigmoid scores and a per-expert bias that only steers selection."""
    config = llada_moe_config()
    config.update({"moe_router_score_function": "sigmoid", "moe_router_enable_expert_bias": True,
                   "shared_expert_intermediate_size": 0, "moe_layer_freq": [1, 1, 0]})
    return config


def dream_config():
    return {"architectures": ["DreamModel"], "model_type": "Dream", "hidden_size": 64, "intermediate_size": 160,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0, "vocab_size": 300, "mask_token_id": 299, "eos_token_id": 297,
            "tie_word_embeddings": False, "max_position_embeddings": 512}


def llada2_moe_config():
    """LLaDA2's layout at toy size: a dense first layer, then sigmoid routing with an expert bias over
    4 groups of 4 experts (2 groups kept), renormalised and scaled, a shared expert, partial RoPE."""
    return {"architectures": ["LLaDA2MoeModelLM"], "model_type": "llada2_moe", "hidden_size": 64,
            "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
            "intermediate_size": 96, "first_k_dense_replace": 1, "num_experts": 16, "num_experts_per_tok": 3,
            "moe_intermediate_size": 24, "num_shared_experts": 1, "n_group": 4, "topk_group": 2,
            "score_function": "sigmoid", "moe_router_enable_expert_bias": True, "norm_topk_prob": True,
            "routed_scaling_factor": 2.5, "partial_rotary_factor": 0.5, "rotary_dim": 8, "rope_theta": 600000.0,
            "rms_norm_eps": 1e-6, "vocab_size": 300, "max_position_embeddings": 512, "tie_word_embeddings": False,
            "use_qkv_bias": False, "use_bias": False, "router_dtype": "fp32", "diffusion_block_size": 8,
            "mask_token_id": 299, "eos_token_id": 297}


def sdar_config():
    return {"architectures": ["SDARForCausalLM"], "model_type": "sdar", "hidden_size": 64, "intermediate_size": 160,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
            "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "vocab_size": 300, "max_position_embeddings": 512,
            "tie_word_embeddings": False, "attention_bias": False, "rope_scaling": None, "block_size": 4,
            "mask_token_id": 299, "eos_token_id": 297}


def sdar_moe_config():
    """Qwen3-MoE's sparse block: softmax top-k renormalised; layer 1 dense (mlp_only_layers)."""
    config = sdar_config()
    config.update({"architectures": ["SDARMoeForCausalLM"], "model_type": "sdar_moe", "num_hidden_layers": 3,
                   "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 24, "norm_topk_prob": True,
                   "decoder_sparse_step": 1, "mlp_only_layers": [1], "intermediate_size": 96})
    return config


def rnd1_config():
    """Qwen3-MoE with bidirectional attention and shifted predictions; weights not renormalised."""
    return {"architectures": ["RND1"], "model_type": "rnd1", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "num_experts": 8,
            "num_experts_per_tok": 3, "moe_intermediate_size": 32, "norm_topk_prob": False, "intermediate_size": 96,
            "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "vocab_size": 300, "max_position_embeddings": 512,
            "tie_word_embeddings": True, "attention_bias": False, "mask_token_id": 299, "eos_token_id": 297,
            "pad_token_id": 298}


def shapes(config):
    """(name, shape) of every tensor, from the same facts the reference uses."""
    n, d = reference_model.names(config), reference_model.dims(config)
    arch = config["architectures"][0]
    h, heads, kv, hd = d["hidden"], d["heads"], d["kv_heads"], d["head_dim"]
    rows = config.get("embedding_size") or config["vocab_size"]
    out = [(n["embed"], [rows, h])]
    for i in range(d["layers"]):
        out += [(n["attn_norm"] % i, [h]), (n["mlp_norm"] % i, [h]), (n["o"] % i, [h, heads * hd])]
        if "qkv" in n:
            out.append((n["qkv"] % i, [(heads + 2 * kv) * hd, h]))
        else:
            out += [(n["q"] % i, [heads * hd, h]), (n["k"] % i, [kv * hd, h]), (n["v"] % i, [kv * hd, h])]
        if arch == "DreamModel":
            out += [((n[key] % i).replace(".weight", ".bias"), [size]) for key, size in
                    (("q", heads * hd), ("k", kv * hd), ("v", kv * hd))]
        if reference_model.qk_norm(config):
            out += [(n["q_norm"] % i, [hd]), (n["k_norm"] % i, [hd])]
        if reference_model.moe_layer(config, i):
            r = reference_model.router(config)
            p = "model.layers.%d.mlp." % i
            out.append((p + "gate.weight", [config["num_experts"], h]))
            if r["bias"]:
                out.append((p + "gate.expert_bias", [config["num_experts"]]))
            for e in range(config["num_experts"]):
                out += fixtures.swiglu("%sexperts.%d." % (p, e), h, r["width"])
            if r["shared"] > 0:
                out += fixtures.swiglu(p + "shared_experts.", h, r["shared"])
        else:
            width = config.get("mlp_hidden_size") or config.get("intermediate_size") or config["dense_intermediate_size"]
            out += [(n["gate"] % i, [width, h]), (n["up"] % i, [width, h]), (n["down"] % i, [h, width])]
    out.append((n["final_norm"], [h]))
    if not d["tie"]:
        out.append((n["lm_head"], [rows, h]))
    return out


def random_weights(config, generator):
    weights = {}
    for name, shape in shapes(config):
        if len(shape) == 1:
            if name.endswith(".expert_bias"):  # selection offsets comparable to the score gaps
                w = 0.05 * torch.randn(shape, generator=generator, dtype=torch.float64)
            elif name.endswith(".bias"):
                w = 0.1 * torch.randn(shape, generator=generator, dtype=torch.float64)
            else:  # norm scales
                w = 1.0 + 0.1 * torch.randn(shape, generator=generator, dtype=torch.float64)
        elif "embed" in name or "wte" in name or "word_embeddings" in name:
            w = torch.randn(shape, generator=generator, dtype=torch.float64)
        elif "lm_head" in name or name == "model.transformer.ff_out.weight":
            w = 0.6 * torch.randn(shape, generator=generator, dtype=torch.float64)  # logits with std ~5
        elif name.endswith("gate.weight"):  # routers: spread scores apart
            w = 2.0 * torch.randn(shape, generator=generator, dtype=torch.float64) / shape[1] ** 0.5
        else:
            w = torch.randn(shape, generator=generator, dtype=torch.float64) / shape[1] ** 0.5
        # Round to fp32 once: the file holds fp32 and the reference must use exactly those values.
        weights[name] = w.float().double()
    return weights


def quantized_weights(weights, kind):
    """The weights `precision` int8 (kind q8_0) or q4 (q4_0) leaves: each matrix whose rows are whole
    groups of 32, but the embedding and the LM head, quantized by ggml's reference quantizer and
    decoded (gguf_dequantize, which the C++ quantizer matches bit for bit)."""
    out = {}
    for name, w in weights.items():
        keep = w.dim() != 2 or w.shape[1] % 32 != 0 or "wte" in name or name == "model.transformer.ff_out.weight"
        if keep:
            out[name] = w
            continue
        flat = w.float().flatten()
        blocks = [gguf_dequantize.quantize_block(kind, flat[i:i + 32]) for i in range(0, flat.numel(), 32)]
        out[name] = torch.cat([gguf_dequantize.decode_block(kind, b) for b in blocks]).double().reshape(w.shape)
    return out


def make(name, config, out, shards, load_time_quantized=False):
    """The model's files and its reference logits. An fp8 checkpoint (config's quantization_config)
    is compared on the weights its codes and scales stand for; `logits_unquantized.N` are those of
    the float weights it was made from (how far quantization moves them: reported, not asserted).
    load_time_quantized: also `logits_int8.N` and `logits_q4.N`, on the weights precision int8 and
    q4 make of the file's (quantized_weights)."""
    fp8 = "quantization_config" in config
    for attempt in range(100):
        generator = torch.Generator().manual_seed(1000 * attempt + len(name))
        weights = random_weights(config, generator)
        if fp8:
            original = weights
            tensors, weights = fp8_tensors(config, weights)
        rows = config.get("embedding_size") or config["vocab_size"]
        sequences = [torch.randint(0, rows, (length,), generator=generator) for length in LENGTHS]
        for s in sequences:
            s[torch.rand(len(s), generator=generator) < 0.4] = config["mask_token_id"]  # a canvas with masks
        rounded = {n: w.to(torch.bfloat16).double() for n, w in weights.items()}
        router_gaps = []
        logits = [reference_model.forward(config, weights, s, router_gaps) for s in sequences]
        logits_bf16 = [reference_model.forward(config, rounded, s, router_gaps) for s in sequences]
        logit_gap = min(float((l.topk(2, dim=-1).values[:, 0] - l.topk(2, dim=-1).values[:, 1]).min()) for l in logits)
        router_gap = min(router_gaps) if router_gaps else 1.0
        if logit_gap > MIN_LOGIT_GAP and router_gap > MIN_ROUTER_GAP:
            break
    else:
        raise SystemExit("%s: no seed without near-ties" % name)
    directory = os.path.join(out, name)
    if not fp8:
        tensors = [(n, "F32", list(w.shape), w.flatten().tolist()) for n, w in weights.items()]
    fixtures.write_model(directory, config, tensors, shards=shards)
    if fp8 and "weight_block_size" not in config["quantization_config"]:  # the float model it was made from
        float_config = {k: v for k, v in config.items() if k != "quantization_config"}
        fixtures.write_model(directory + "-original", float_config,
                             [(n, "F32", list(w.shape), w.flatten().tolist()) for n, w in original.items()])
    expected = []
    quantized = {kind: quantized_weights(weights, kind) for kind in ("q8_0", "q4_0")} if load_time_quantized else {}
    for i, (s, l, b) in enumerate(zip(sequences, logits, logits_bf16)):
        kv = reference_model.forward(config, weights, s, kv_dtype=torch.bfloat16)
        expected.append(("tokens.%d" % i, "I64", [len(s)], s.tolist()))
        expected.append(("logits.%d" % i, "F32", list(l.shape), l.flatten().tolist()))
        expected.append(("logits_bf16.%d" % i, "F32", list(b.shape), b.flatten().tolist()))
        expected.append(("logits_kv_bf16.%d" % i, "F32", list(kv.shape), kv.flatten().tolist()))
        if fp8:
            u = reference_model.forward(config, original, s)
            expected.append(("logits_unquantized.%d" % i, "F32", list(u.shape), u.flatten().tolist()))
        for kind, label in (("q8_0", "int8"), ("q4_0", "q4")) if load_time_quantized else ():
            q = reference_model.forward(config, quantized[kind], s)
            expected.append(("logits_%s.%d" % (label, i), "F32", list(q.shape), q.flatten().tolist()))
    fixtures.write(os.path.join(directory, "reference.safetensors"), fixtures.safetensors_bytes(expected))
    print("%s: seed attempt %d, min top-2 logit gap %.4f, min router gap %.5f" % (name, attempt, logit_gap, router_gap))
    return weights


def make_decoding(name, config, weights, cases, generate, out):
    """Expected tokens of each decoding case for a prompt without near-ties in any decision, with
    fp32 keys and values and with a bf16 K/V cache (`tokens_kv_bf16`, `steps_kv_bf16`)."""
    rows = config.get("embedding_size") or config["vocab_size"]
    results = []
    for case in cases:
        case_name, params = case[0], case[1]
        prompt_length = case[2] if len(case) > 2 else 8
        seed_name = case[3] if len(case) > 3 else case_name
        for attempt in range(60):
            generator = torch.Generator().manual_seed(7000 + 31 * attempt + len(seed_name))
            prompt = [int(t) for t in torch.randint(0, rows, (prompt_length,), generator=generator)]
            if config["mask_token_id"] in prompt:
                continue
            gaps = reference_decode.Gaps()
            tokens, steps, *forwards = generate(config, weights, prompt, params, gaps)
            tokens_kv, steps_kv, *_ = generate(config, weights, prompt, dict(params, cache_precision="bf16"), gaps)
            if gaps.logit > MIN_DECODE_LOGIT_GAP and gaps.selection > MIN_DECODE_SELECTION_GAP and (
                    gaps.edits > 0 or params.get("edit_threshold", 0) == 0):
                break
        else:
            raise SystemExit("%s / %s: no prompt without near-ties" % (name, case_name))
        results.append({"name": case_name, "prompt": prompt, "params": params, "tokens": tokens, "steps": steps,
                        "forwards": forwards[0] if forwards else steps, "tokens_kv_bf16": tokens_kv,
                        "steps_kv_bf16": steps_kv})
    fixtures.write(os.path.join(out, name, "decoding.json"), json.dumps(results, indent=1).encode())
    print("%s: %d decoding cases" % (name, len(results)))


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    torch.set_num_threads(1)
    weights = make("llada", llada_config(), out, shards=1, load_time_quantized=True)
    make_decoding("llada", llada_config(), weights, LLADA_CASES, reference_decode.llada_generate, out)
    weights = make("llada-block", llada_block_config(), out, shards=1)
    make_decoding("llada-block", llada_block_config(), weights, LLADA_BLOCK_CASES, reference_decode.llada_generate, out)
    weights = make("llada-moe", llada_moe_config(), out, shards=1)
    make_decoding("llada-moe", llada_moe_config(), weights, LLADA_CASES[:3], reference_decode.llada_generate, out)
    make("llada-moe-sigmoid", llada_moe_sigmoid_config(), out, shards=1)
    weights = make("llada2-moe", llada2_moe_config(), out, shards=2)
    make_decoding("llada2-moe", llada2_moe_config(), weights, LLADA2_CASES, reference_decode.llada_generate, out)
    weights = make("sdar", sdar_config(), out, shards=1)
    make_decoding("sdar", sdar_config(), weights, SDAR_CASES, reference_decode.llada_generate, out)
    make("sdar-moe", sdar_moe_config(), out, shards=1)
    weights = make("rnd1", rnd1_config(), out, shards=1)
    make_decoding("rnd1", rnd1_config(), weights, RND1_CASES, reference_decode.rnd1_generate, out)
    weights = make("dream", dream_config(), out, shards=2)
    make_decoding("dream", dream_config(), weights, DREAM_CASES, reference_decode.dream_generate, out)
    make("llada-fp8", llada_fp8_config(block=False), out, shards=1)
    make("llada-fp8-block", llada_fp8_config(block=True), out, shards=1)
    fp8_e4m3.write_cases(os.path.join(out, "fp8"))
    gguf_dequantize.write_cases(os.path.join(out, "dequantize"))
    gguf_dequantize.write_quantize_cases(os.path.join(out, "quantize"))


if __name__ == "__main__":
    main()
