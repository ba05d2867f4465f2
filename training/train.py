#!/usr/bin/env python3
"""Trains the bundled masked-diffusion model (LLaDA architecture) on the tool-call data, on the
CPU, deterministically from --seed, and writes it in Hugging Face layout.

Objective (LLaDA's SFT variant): the prompt stays, every answer position (the EOS padding
included) is masked with probability t ~ U(eps, 1) per sequence, and the loss is the
cross-entropy on masked positions weighted by 1/t, normalised by the answer's length (--padding-weight
weighs the EOS padding after the answer's own EOS down).

Each batch has one canvas length, drawn from --lengths (length:weight,...): short canvases are
cheap, long ones teach the model to fill a long canvas with end-of-text after the answer, as
generation with a large gen_length asks. Deterministic from --seed for a fixed --steps (the
learning rate follows a cosine over the steps after a short warm-up).

--block B trains for block diffusion instead (block_diffusion_loss; config.json gets
diffusion_block_size B, so unmask decodes block by block with block-causal attention): each batch
takes examples of one length in whole blocks, and only the answer's own blocks carry loss.

usage: train.py DATA_DIR TOKENIZER_JSON OUT_DIR [--steps N] [--seed N] [--d 256] [--layers 6] ...
"""
import argparse
import hashlib
import json
import math
import os
import random
import struct
import time

import torch

from bpe import Tokenizer
from model import Llada

# The prompt format load() trains on, as a Hugging Face chat template (Jinja): user turns, then the
# answer after <|assistant|>, ended by EOS; an earlier assistant turn's tool calls are written as
# the model writes them. No system or tool role: the model never saw one.
CHAT_TEMPLATE = ("{%- for message in messages -%}"
                 "{%- if message['role'] == 'user' -%}<|user|>{{ message['content'] }}"
                 "{%- elif message['role'] == 'assistant' -%}<|assistant|>"
                 "{%- if message['content'] -%}{{ message['content'] }}{%- endif -%}"
                 "{%- for call in message['tool_calls'] or [] -%}"
                 "{%- set function = call['function'] if call['function'] is defined else call -%}"
                 "{{ '{\"name\": \"' ~ function['name'] ~ '\", \"arguments\": ' }}"
                 "{{- function['arguments'] if function['arguments'] is string else function['arguments'] | tojson }}}"
                 "{%- endfor -%}{{ eos_token }}"
                 "{%- else -%}{{ raise_exception('this model was trained on user and assistant turns only, not ' ~ message['role']) }}"
                 "{%- endif -%}"
                 "{%- endfor -%}"
                 "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}")


def load(path, tokenizer, length):
    """(prompt ids, answer ids + EOS) per row; padding to a canvas length happens per batch."""
    rows = []
    eos, user, assistant = (tokenizer.special[t] for t in ("<|endoftext|>", "<|user|>", "<|assistant|>"))
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            prompt = [user] + tokenizer.encode(row["prompt"]) + [assistant]
            answer = tokenizer.encode(row["answer"]) + [eos]
            if len(prompt) + len(answer) > length:
                raise SystemExit("an example needs %d positions; the longest --lengths is %d"
                                 % (len(prompt) + len(answer), length))
            rows.append((prompt, answer))
    return rows


def batch_tensors(rows, length, eos, padding_weight=1.0):
    """The canvases of a batch: prompt, answer, then EOS padding (part of the answer) to `length`;
    and each position's loss weight: 0 in the prompt, 1 in the answer and its EOS, padding_weight
    in the EOS padding after it."""
    tokens = torch.tensor([p + a + [eos] * (length - len(p) - len(a)) for p, a in rows])
    weight = torch.tensor([[0.0] * len(p) + [1.0] * len(a) + [padding_weight] * (length - len(p) - len(a))
                           for p, a in rows])
    return tokens, weight


def block_end(row, block):
    """Where the block that holds a (prompt, answer) row's last position ends."""
    return -(-(len(row[0]) + len(row[1])) // block) * block


def block_batch_tensors(rows, block, eos):
    """Block diffusion canvases: prompt, answer and EOS to the end of the answer's last block (blocks
    of `block` positions aligned to position 0, as unmask decodes them), then EOS padding to the
    batch's longest; each position's loss weight: 0 in the prompt and in the whole blocks after the
    answer's (generation stops after the block that holds EOS, so they are never decoded), 1 in
    between."""
    ends = [block_end(row, block) for row in rows]
    length = max(ends)
    tokens = torch.tensor([p + a + [eos] * (length - len(p) - len(a)) for p, a in rows])
    weight = torch.tensor([[0.0] * len(p) + [1.0] * (end - len(p)) + [0.0] * (length - end)
                           for (p, _), end in zip(rows, ends)])
    return tokens, weight


def block_diffusion_loss(model, tokens, weight, mask_id, block, generator, eps=1e-3):
    """The block diffusion objective (BD3-LM's: Arriola et al., "Block Diffusion", ICLR 2025, which
    trains on the noisy and the clean sequence together): each block is masked with its own
    t ~ U(eps, 1), and the model reads the noisy canvas beside the clean one (both at their RoPE
    positions): a noisy block attends to itself and to the clean blocks before it, a clean block to
    the clean blocks up to itself. Every block learns, in one forward, to denoise given the committed
    blocks before it, which is what block-causal decoding shows it. The noisy canvas starts at the
    first block that carries loss in some row: the blocks before it (all prompt) would be computed
    for nothing, since no query attends to a noisy block but its own. Loss: cross-entropy on the
    masked positions weighted by 1/t, normalised by the weight's sum."""
    n, length = tokens.shape
    t = eps + (1 - eps) * torch.rand(n, length // block, generator=generator)
    t = t.repeat_interleave(block, dim=1)
    masked = (torch.rand(tokens.shape, generator=generator) < t) & (weight > 0)
    start = int((weight > 0).any(0).nonzero()[0]) // block * block
    target, masked, weight, t = tokens[:, start:], masked[:, start:], weight[:, start:], t[:, start:]
    noisy = torch.where(masked, torch.full_like(target, mask_id), target)
    blocks, noisy_blocks = torch.arange(length) // block, torch.arange(start, length) // block
    same = noisy_blocks[:, None] == noisy_blocks[None, :]
    before = blocks[None, :] < noisy_blocks[:, None]
    clean = blocks[None, :] <= blocks[:, None]
    allowed = torch.cat((torch.cat((same, before), 1),
                         torch.cat((torch.zeros(length, length - start, dtype=torch.bool), clean), 1)), 0)
    positions = torch.cat((torch.arange(start, length), torch.arange(length)))
    logits = model(torch.cat((noisy, tokens), 1), positions, allowed)[:, :length - start].float()
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none")
    return ((ce * masked * weight / t).sum(1) / weight.sum(1)).mean()


def parse_lengths(text):
    pairs = [item.split(":") for item in text.split(",")]
    return [int(length) for length, _ in pairs], [float(weight) for _, weight in pairs]


def diffusion_loss(model, tokens, weight, mask_id, generator, eps=1e-3):
    """weight: per position, 0 in the prompt (never masked); the loss is normalised by its sum."""
    t = eps + (1 - eps) * torch.rand(tokens.shape[0], 1, generator=generator)
    masked = (torch.rand(tokens.shape, generator=generator) < t) & (weight > 0)
    noisy = torch.where(masked, torch.full_like(tokens, mask_id), tokens)
    logits = model(noisy).float()
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), tokens, reduction="none")
    weighted = (ce * masked * weight / t).sum(1) / weight.sum(1)
    return weighted.mean()


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        data = tensors[name].detach().to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """The bf16 tensors write_safetensors wrote, as float32."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.int16).view(torch.bfloat16)
        tensors[name] = raw.float().reshape(entry["shape"])
    return tensors


def write_model(out, args, model, tokenizer, vocab, max_length):
    """The model directory in Hugging Face layout: config.json, model.safetensors (bf16), the
    tokenizer files and SHA256SUMS, which `unmask inspect --verify` accepts."""
    os.makedirs(out, exist_ok=True)
    config = {
        "architectures": ["LLaDAModelLM"], "model_type": "llada", "d_model": args.d, "n_layers": args.layers,
        "n_heads": args.heads, "n_kv_heads": args.heads, "mlp_hidden_size": args.mlp, "vocab_size": vocab,
        "embedding_size": vocab, "max_sequence_length": max_length, "rope_theta": 10000.0, "rms_norm_eps": 1e-5,
        "mask_token_id": tokenizer.special["<|mask|>"], "eos_token_id": tokenizer.special["<|endoftext|>"],
        "pad_token_id": tokenizer.special["<|endoftext|>"], "include_bias": False, "weight_tying": args.tie_embeddings,
        "layer_norm_type": "rms", "activation_type": "silu", "rope": True, "alibi": False,
    }
    if args.block:
        config["diffusion_block_size"] = args.block
    files = {"config.json": json.dumps(config, indent=1).encode()}
    with open(args.tokenizer, "rb") as f:
        files["tokenizer.json"] = f.read()
    files["tokenizer_config.json"] = json.dumps({"eos_token": "<|endoftext|>", "bos_token": None,
                                                 "chat_template": CHAT_TEMPLATE}, indent=1).encode()
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    write_safetensors(os.path.join(out, "model.safetensors"), model.hf_state_dict())
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        for name in sorted(list(files) + ["model.safetensors"]):
            with open(os.path.join(out, name), "rb") as g:
                f.write("%s  %s\n" % (hashlib.sha256(g.read()).hexdigest(), name))


CHECKPOINT = "checkpoint.pt"
# The arguments a resumed run must share with the run that saved the checkpoint: all but
# --save-every (--threads too: a product's sums may split differently with another thread count).
RUN_ARGUMENTS = ("data", "tokenizer", "steps", "seed", "d", "layers", "heads", "mlp", "lengths", "batch", "lr",
                 "threads", "precision", "padding_weight", "block", "init", "tie_embeddings")


def save_checkpoint(path, args, step, average, model, optimizer, generator, rng):
    """Everything the steps after `step` depend on: the weights, AdamW's moments, both random
    streams and the smoothed loss. Written beside, then renamed over, the last one."""
    state = {"run": {name: getattr(args, name) for name in RUN_ARGUMENTS}, "step": step, "average": average,
             "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "generator": generator.get_state(), "rng": rng.getstate()}
    torch.save(state, path + ".partial")
    os.replace(path + ".partial", path)


def resume(path, args, model, optimizer, generator, rng):
    """Restores what save_checkpoint saved; returns (the first step to run, the smoothed loss)."""
    if not os.path.exists(path):
        raise SystemExit("--resume: no %s (a run writes it with --save-every)" % path)
    try:
        state = torch.load(path, weights_only=False)
        different = [name for name in RUN_ARGUMENTS if state["run"].get(name) != getattr(args, name)]
    except Exception as e:  # a truncated or foreign file: whatever torch.load or the lookups raise
        raise SystemExit("--resume: %s is not a checkpoint this script wrote (%s)" % (path, e))
    if different:
        raise SystemExit("--resume: %s saved a run with other %s" % (path, ", ".join("--" + name.replace("_", "-")
                                                                                     for name in different)))
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    generator.set_state(state["generator"])
    rng.setstate(state["rng"])
    print("resumed %s after step %d" % (path, state["step"]), flush=True)
    return state["step"] + 1, state["average"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("tokenizer")
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--stop-after", type=int, default=0,
                        help="end the run after this step of the --steps schedule (the learning rate as that "
                             "schedule has it then; with --save-every, a checkpoint --resume continues from); 0: run "
                             "it all")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--mlp", type=int, default=768)
    parser.add_argument("--lengths", default="64:0.7,128:0.2,256:0.1")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                        help="bf16: the linear layers under bf16 autocast (attention, weights, optimizer and loss "
                             "stay fp32), about 2-3x faster per step on CPUs with AVX-512 BF16 (training/README.md)")
    parser.add_argument("--padding-weight", type=float, default=1.0,
                        help="loss weight of the EOS padding after an answer's EOS (LLaDA's SFT: 1); lower keeps "
                             "long canvases from drowning the answer's tokens (training/README.md)")
    parser.add_argument("--block", type=int, default=0,
                        help="train for block diffusion with blocks of this many positions (diffusion_block_size, "
                             "block-causal attention; --lengths is then only the longest example allowed); 0: LLaDA's "
                             "bidirectional objective")
    parser.add_argument("--save-every", type=int, default=0,
                        help="also write the model to OUT_DIR every this many steps (to score it during training), "
                             "with OUT_DIR/checkpoint.pt, which --resume continues from")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run OUT_DIR/checkpoint.pt saved (same arguments) from the step after it: "
                             "the same weights as a run never stopped")
    parser.add_argument("--init", help="continue from a model directory this script wrote")
    parser.add_argument("--tie-embeddings", action="store_true",
                        help="the LM head is the embedding matrix (weight_tying); measured worse than untied (training/README.md)")
    args = parser.parse_args()
    if args.stop_after < 0:
        raise SystemExit("--stop-after must be 0 (run the whole schedule) or a step of it")
    last = min(args.steps, args.stop_after or args.steps)

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(args.seed)
    rng = random.Random(args.seed)
    tokenizer = Tokenizer(args.tokenizer)
    vocab = 1 + max(list(tokenizer.vocab.values()) + list(tokenizer.special.values()))
    mask_id = tokenizer.special["<|mask|>"]
    eos = tokenizer.special["<|endoftext|>"]
    lengths, weights = parse_lengths(args.lengths)
    max_length = 2 * max(lengths)
    train = load(os.path.join(args.data, "train.jsonl"), tokenizer, max(lengths))
    # A batch of canvas length L draws from the examples that fit in L; for block diffusion, from the
    # examples of one length in whole blocks (no padding to compute), drawn in proportion to their count.
    if args.block:
        fitting = {}
        for row in train:
            fitting.setdefault(block_end(row, args.block), []).append(row)
        fitting = {end: rows for end, rows in sorted(fitting.items()) if len(rows) >= args.batch}
        lengths, weights = list(fitting), [len(rows) for rows in fitting.values()]
    else:
        fitting = {length: [row for row in train if len(row[0]) + len(row[1]) <= length] for length in lengths}
    model = Llada(vocab, args.d, args.layers, args.heads, args.mlp, tied=args.tie_embeddings)
    if args.init:
        saved = read_safetensors(os.path.join(args.init, "model.safetensors"))
        with torch.no_grad():
            for name, parameter in model.hf_state_dict().items():
                parameter.copy_(saved[name])
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    started, average, first = time.monotonic(), None, 1
    if args.resume:
        first, average = resume(os.path.join(args.out, CHECKPOINT), args, model, optimizer, generator, rng)
    if first > last + 1:
        raise SystemExit("--resume: %s saved step %d, after step %d, where --stop-after ends the run"
                         % (CHECKPOINT, first - 1, last))
    for step in range(first, last + 1):
        lr = args.lr * min(1.0, step / 100) * 0.5 * (1 + math.cos(math.pi * (step - 1) / args.steps))
        for group in optimizer.param_groups:
            group["lr"] = lr
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            length = rng.choices(lengths, weights)[0]
            if args.block:
                tokens, weight = block_batch_tensors(rng.sample(fitting[length], args.batch), args.block, eos)
                loss = block_diffusion_loss(model, tokens, weight, mask_id, args.block, generator)
            else:
                tokens, weight = batch_tensors(rng.sample(fitting[length], args.batch), length, eos,
                                               args.padding_weight)
                loss = diffusion_loss(model, tokens, weight, mask_id, generator)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        average = loss.item() if average is None else 0.98 * average + 0.02 * loss.item()
        if args.save_every and (step % args.save_every == 0 or step == last) and step < args.steps:
            write_model(args.out, args, model, tokenizer, vocab, max_length)
            save_checkpoint(os.path.join(args.out, CHECKPOINT), args, step, average, model, optimizer, generator, rng)
        if step % 50 == 0:
            print("step %d  loss %.4f  lr %.2e  %.0f s" % (step, average, lr, time.monotonic() - started), flush=True)

    write_model(args.out, args, model, tokenizer, vocab, max_length)
    print("trained %d steps in %.0f s; wrote %s" % (last, time.monotonic() - started, args.out))


if __name__ == "__main__":
    main()
