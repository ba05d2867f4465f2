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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from make_model_fixtures import byte_level_alphabet  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_gguf_model import add_shape_arguments, bf16_bits, random_llada  # noqa: E402


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
    add_shape_arguments(p)
    a = p.parse_args()
    h, mlp, vocab = a.hidden, a.mlp, a.vocab
    names = {"embedding": "wte", "final_norm": "ln_f", "head": "ff_out", "attn_norm": "attn_norm",
             "ffn_norm": "ff_norm", "q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "attn_out",
             "gate": "ff_proj", "up": "up_proj", "down": "ff_out"}
    tensors = []
    for role, layer, shape, values in random_llada(a):
        name = "model.transformer." + ("" if layer is None else "blocks.%d." % layer) + names[role] + ".weight"
        if len(shape) == 1:
            tensors.append((name, "F32", shape, values.tobytes()))
        else:
            tensors.append((name, "BF16", shape, bf16_bits(values).tobytes()))
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
