"""The bundled model's architecture for training: LLaDA (bidirectional attention, or any attention
pattern the caller allows, RMSNorm, half-split RoPE, SwiGLU), batched, with the tensor names of
LLaDA's Hugging Face checkpoints so the state dict is written out as it is."""
import math

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d, heads, mlp):
        super().__init__()
        self.heads = heads
        self.attn_norm = nn.Parameter(torch.ones(d))
        self.ff_norm = nn.Parameter(torch.ones(d))
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.attn_out = nn.Linear(d, d, bias=False)
        self.ff_proj = nn.Linear(d, mlp, bias=False)
        self.up_proj = nn.Linear(d, mlp, bias=False)
        self.ff_out = nn.Linear(mlp, d, bias=False)

    def forward(self, x, cos, sin, eps, allowed=None):
        b, t, d = x.shape
        h = rms_norm(x, self.attn_norm, eps)
        shape = (b, t, self.heads, d // self.heads)
        q = rope(self.q_proj(h).view(shape), cos, sin).transpose(1, 2)
        k = rope(self.k_proj(h).view(shape), cos, sin).transpose(1, 2)
        v = self.v_proj(h).view(shape).transpose(1, 2)
        a = attention(q, k, v, allowed)
        x = x + self.attn_out(a.transpose(1, 2).reshape(b, t, d))
        h = rms_norm(x, self.ff_norm, eps)
        return x + self.ff_out(nn.functional.silu(self.ff_proj(h)) * self.up_proj(h))


def attention(q, k, v, allowed=None):
    """Scaled dot-product attention, bidirectional or, with `allowed` (query x key booleans), over
    the allowed keys only: the scores, softmax and weighted sum always in fp32. Under bf16
    autocast q, k and v come out of bf16 linear layers (and RoPE) and are widened here (a model
    trained with bf16 scores did not learn to copy the city of its weather requests;
    training/README.md)."""
    with torch.autocast("cpu", enabled=False):
        q, k, v = q.float(), k.float(), v.float()
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        return scores.softmax(-1) @ v


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Llada(nn.Module):
    def __init__(self, vocab, d, layers, heads, mlp, tied=False, theta=10000.0, eps=1e-5):
        """tied: the LM head is the embedding matrix (LLaDA's `weight_tying`), meant to make copying
        a request's token into the answer direct. Measured worse than untied on the bundled model's
        data and on a copying drill (bench/RESULTS.md, 2026-12-02); kept for further experiments."""
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, mlp) for _ in range(layers))
        self.ln_f = nn.Parameter(torch.ones(d))
        self.lm_head = nn.Linear(d, vocab, bias=False)
        if tied:  # the embedding's N(0, 1) would make the first logits about 16 wide: start small
            nn.init.normal_(self.wte.weight, std=0.02)
            self.lm_head.weight = self.wte.weight
        self.tied = tied
        self.heads, self.theta, self.eps = heads, theta, eps

    def forward(self, tokens, positions=None, allowed=None):
        """positions: each token's RoPE position (default 0, 1, ...); allowed: which keys each query
        attends to (default all)."""
        if positions is None:
            positions = torch.arange(tokens.shape[1])
        head_dim = self.wte.weight.shape[1] // self.heads
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(positions.float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, :, None, :], emb.sin()[None, :, None, :]
        x = self.wte(tokens)
        for block in self.blocks:
            x = block(x, cos, sin, self.eps, allowed)
        return self.lm_head(rms_norm(x, self.ln_f, self.eps))

    def hf_state_dict(self):
        """The weights under LLaDA's Hugging Face names."""
        out = {"model.transformer.wte.weight": self.wte.weight, "model.transformer.ln_f.weight": self.ln_f}
        if not self.tied:
            out["model.transformer.ff_out.weight"] = self.lm_head.weight
        for i, b in enumerate(self.blocks):
            p = "model.transformer.blocks.%d." % i
            out.update({p + "attn_norm.weight": b.attn_norm, p + "ff_norm.weight": b.ff_norm,
                        p + "q_proj.weight": b.q_proj.weight, p + "k_proj.weight": b.k_proj.weight,
                        p + "v_proj.weight": b.v_proj.weight, p + "attn_out.weight": b.attn_out.weight,
                        p + "ff_proj.weight": b.ff_proj.weight, p + "up_proj.weight": b.up_proj.weight,
                        p + "ff_out.weight": b.ff_out.weight})
        return out
