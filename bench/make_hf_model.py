#!/usr/bin/env python3
"""Writes a random LLaDA as a Hugging Face directory for benchmarks against llama.cpp: config.json,
model.safetensors (BF16 matrices, F32 norms) and a byte-level BPE tokenizer.json whose vocabulary
fills the model's (256 byte symbols, one merge, filler tokens, then <|startoftext|>, <|endoftext|> and
<|mdm_mask|> as its last three ids: bos, eos and mask). The shapes and the seed's weights are
make_gguf_model.py's (d 512, 8 layers, mlp 1536, vocab 4096 by default), in Hugging Face's names
and row order, so llama.cpp's own converter turns it into the GGUF files llama.cpp runs.

usage: make_hf_model.py OUT_DIR [--hidden 512 --layers 8 --heads 8 --mlp 1536 --vocab 4096]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from make_model_fixtures import byte_level_alphabet  # noqa: E402


def bf16(values):
    bits = values.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # to nearest even


def write_safetensors(path, tensors):
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for blob in blobs:
            f.write(blob)


def tokenizer(vocab):
    alphabet = byte_level_alphabet()
    ids = {alphabet[b]: b for b in range(256)}
    ids["he"] = 256  # llama.cpp wants at least one merge
    ids.update({"<filler%d>" % i: i for i in range(257, vocab - 3)})
    specials = [(vocab - 3, "<|startoftext|>"), (vocab - 2, "<|endoftext|>"), (vocab - 1, "<|mdm_mask|>")]
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    return {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, c in specials],
        "normalizer": None, "pre_tokenizer": level, "decoder": level,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<|startoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<|startoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<|startoftext|>": {"id": "<|startoftext|>", "ids": [vocab - 3],
                                                   "tokens": ["<|startoftext|>"]}}},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "byte_fallback": False, "ignore_merges": False,
                  "vocab": ids, "merges": [["h", "e"]]},
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--mlp", type=int, default=1536)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    h, mlp, vocab = a.hidden, a.mlp, a.vocab
    t = "model.transformer."
    shapes = [(t + "wte.weight", [vocab, h])]
    for i in range(a.layers):
        b = t + "blocks.%d." % i
        shapes += [(b + "attn_norm.weight", [h]), (b + "ff_norm.weight", [h]), (b + "q_proj.weight", [h, h]),
                   (b + "k_proj.weight", [h, h]), (b + "v_proj.weight", [h, h]), (b + "attn_out.weight", [h, h]),
                   (b + "ff_proj.weight", [mlp, h]), (b + "up_proj.weight", [mlp, h]), (b + "ff_out.weight", [h, mlp])]
    shapes += [(t + "ln_f.weight", [h]), (t + "ff_out.weight", [vocab, h])]
    tensors = []
    for name, shape in shapes:  # make_gguf_model.py's draws, in its order
        if len(shape) == 1:
            values = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
            tensors.append((name, "F32", shape, values.tobytes()))
        else:
            values = (rng.standard_normal(shape) * (1 / np.sqrt(shape[1]))).astype(np.float32)
            tensors.append((name, "BF16", shape, bf16(values).tobytes()))
    config = {
        "architectures": ["LLaDAModelLM"], "model_type": "llada", "d_model": h, "n_layers": a.layers,
        "n_heads": a.heads, "n_kv_heads": a.heads, "mlp_hidden_size": mlp, "vocab_size": vocab,
        "embedding_size": vocab, "max_sequence_length": 4096, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
        "mask_token_id": vocab - 1, "eos_token_id": vocab - 2, "pad_token_id": vocab - 2, "include_bias": False,
        "weight_tying": False, "layer_norm_type": "rms", "activation_type": "silu", "rope": True, "alibi": False,
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    write_safetensors(os.path.join(a.out, "model.safetensors"), tensors)
    with open(os.path.join(a.out, "tokenizer.json"), "w") as f:
        json.dump(tokenizer(vocab), f)
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        # The prompt as it is: llama-diffusion-cli applies a model's chat template (ChatML without one).
        json.dump({"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>", "mask_token": "<|mdm_mask|>",
                   "chat_template": "{% for message in messages %}{{ message['content'] }}{% endfor %}"}, f)


if __name__ == "__main__":
    main()
