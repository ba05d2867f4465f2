"""PyTorch references of the decoding loops, written from the published generation code (docs/decoding.md): LLaDA's
generate() (blocks, transfer counts, low_confidence / random remasking, CFG, EOS options) with
Fast-dLLM's threshold and factor rules, Dream's algorithms (origin, maskgit_plus,
topk_margin, entropy, alg_temp), and RND1's sampler (RadicalNumerics/RND1 rnd/sampling.py). Greedy (temperature 0) only: the randomness these policies still
use (random order, origin's draws, alg_temp's sampling) comes from the same Philox4x32-10 stream
unmask uses, so results are comparable token for token.

Every decision records how close it was (the top-2 logit gap of each committed argmax, the gap
between the last chosen and the first unchosen key), so fixtures can avoid near-ties.
"""
import math

import torch

import reference_model

MASK32 = 0xFFFFFFFF
TOKEN_NOISE, COMMIT_ORDER, POSITION_DRAW = 0, 1, 2


def philox4x32(counter, seed):
    c0, c1, c2, c3 = counter
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & MASK32, p1 & MASK32, ((p0 >> 32) ^ c3 ^ k1) & MASK32, p0 & MASK32
        k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
    return c0, c1, c2, c3


def position_uniform(seed, position, step, stream):
    w = philox4x32((0, position, step, stream), seed)
    return min(((((w[0] << 32) | w[1]) >> 11) + 0.5) * 2.0 ** -53, 1.0 - 2.0 ** -53)  # never 1.0


class Gaps:
    """The closest calls made: argmax margins and selection margins."""

    def __init__(self):
        self.logit = math.inf
        self.selection = math.inf
        self.edits = 0  # token editing: tokens replaced

    def argmax(self, logits):
        top = logits.topk(2).values
        self.logit = min(self.logit, float(top[0] - top[1]))
        return int(logits.argmax())

    def select(self, keys, positions, k):
        """The k positions with the highest keys (ties: lower position), recording the margin."""
        order = sorted(range(len(positions)), key=lambda i: (-keys[i], positions[i]))
        if 0 < k < len(order) and math.isfinite(keys[order[k - 1]]):
            self.selection = min(self.selection, keys[order[k - 1]] - keys[order[k]])
        return [positions[i] for i in order[:k]]


def kv_dtype(p):
    """A bf16 K/V cache refreshed at every step (or the exact cache of block diffusion) is the
    forward with keys and values rounded to bf16."""
    return torch.bfloat16 if p.get("cache_precision") == "bf16" else None


def guided_logits(config, weights, x, fixed, p, mask_id, block_origin):
    cfg_scale = p.get("cfg_scale", 0.0)
    logits = reference_model.forward(config, weights, torch.tensor(x), block_origin=block_origin, kv_dtype=kv_dtype(p))
    if cfg_scale > 0:
        unconditional = [mask_id if fixed[i] else t for i, t in enumerate(x)]
        un = reference_model.forward(config, weights, torch.tensor(unconditional), block_origin=block_origin,
                                     kv_dtype=kv_dtype(p))
        logits = un + (cfg_scale + 1) * (logits - un)
    return logits


def bounded_count(wanted, masked, step, min_steps, max_steps):
    count = max(1, min(wanted, masked))
    if max_steps > 0:
        left = max(1, max_steps - step)
        count = max(count, -(-masked // left))
    if min_steps > 0 and min_steps - step - 1 > 0:
        count = min(count, max(1, masked - (min_steps - step - 1)))
    return max(1, min(count, masked))


def confidence_keys(logits, positions, x0, p, step, gaps, eos, eot):
    """The argmax of each masked position and its confidence under the policy (LLaDA's rules)."""
    keys = []
    for i in positions:
        x0[i] = gaps.argmax(logits[i])
        confidence_mode = p.get("eos_confidence", "off")
        if p.get("policy", "low_confidence") == "random":
            c = position_uniform(p.get("seed", 0), i, step, COMMIT_ORDER)
        else:
            scored = logits[i].clone()
            if confidence_mode == "reference" and eot >= 0:
                # generate.py: `logits_with_noise[:, :, EOS] = logits[:, :, EOT] = -inf` after x0
                scored[eot] = -math.inf
            c = float(scored.softmax(-1)[x0[i]])
        if confidence_mode == "both" and x0[i] in (eos, eot):
            c = -math.inf
        keys.append(c)
    return keys


def block_diffusion_generate(config, weights, prompt, p, gaps):
    """LLaDA2's generate() (inclusionAI dFactory models/llada2_moe/modeling_llada2_moe.py L1337-1549;
    SDAR's generate.py L49-200 is the same loop): ceil((prompt + gen) / block) blocks aligned to
    position 0, decoding from block prompt_length // block; each block takes at most `steps` steps
    (here steps / ceil(gen / block), unmask's steps being the whole answer's); the schedule shares the
    block's length (not its masks) over them; a step commits every masked position above the
    threshold when they are at least the scheduled count, else the scheduled count of the most
    confident (all of a partial block's masks at most), without a threshold the scheduled count;
    after a block that leaves an EOS in the
    answer, generation stops. The answer is the gen_length positions after the prompt; unmask
    fills the masks left after an early stop with EOS, and so does this."""
    mask_id = config["mask_token_id"]
    eos = p.get("eos_token_id", config.get("eos_token_id", -1))
    eot = p.get("eot_token_id", -1)
    gen, block = p["gen_length"], reference_model.block_size(config)
    assert p.get("block_length") in (None, 0, block)
    total = -(-(len(prompt) + gen) // block) * block
    x = list(prompt) + [mask_id] * (total - len(prompt))
    fixed = [i < len(prompt) for i in range(len(x))]
    steps = max(1, p["steps"] // -(-gen // block))
    schedule = [block // steps + (1 if i < block % steps else 0) for i in range(steps)]
    threshold = p.get("threshold", 0)
    step = 0
    for b in range(len(prompt) // block, total // block):
        begin, end = b * block, (b + 1) * block
        if p.get("edit_threshold", 0) > 0:
            step = edit_block(config, weights, x, fixed, begin, end, p, gaps, step)
            if eos >= 0 and eos in x[len(prompt):min(end, len(prompt) + gen)]:
                x = [eos if t == mask_id else t for t in x]
                break
            continue
        for block_step in range(max(steps, block)):
            positions = [i for i in range(begin, end) if x[i] == mask_id]
            if not positions:
                break
            logits = guided_logits(config, weights, x[:end], fixed[:end], p, mask_id, 0)
            logits[:, mask_id] = -math.inf  # unmask never predicts the mask (the upstream code can)
            if p.get("logits_eos_inf") and eos >= 0:
                logits[:, eos] = -math.inf
            x0 = {}
            keys = confidence_keys(logits, positions, x0, p, step, gaps, eos, eot)
            # A count of 0 (more steps than positions): unmask commits at least one all the same.
            scheduled = max(1, schedule[block_step] if block_step < steps else 0)
            above = sum(1 for c in keys if threshold > 0 and c >= threshold)
            k = above if above >= scheduled else min(scheduled, len(positions))
            for i in gaps.select(keys, positions, k):
                x[i] = x0[i]
            step += 1
        if eos >= 0 and eos in x[len(prompt):min(end, len(prompt) + gen)]:
            x = [eos if t == mask_id else t for t in x]
            break
    return x[len(prompt):len(prompt) + gen], step


def edit_block(config, weights, x, fixed, begin, end, p, gaps, step):
    """LLaDA2.1's token editing over one block (SGLang's JointThreshold,
    python/sglang/srt/dllm/algorithm/joint_threshold.py; the LLaDA2.1 report's M2T + T2T): every
    step takes the argmax x0 and its probability at each position of the block; masks above the
    threshold are committed (at least the most confident one), and every committed, non-prompt
    position whose x0 differs with probability above edit_threshold is replaced. Once the block has
    no masks, a step is a post-edit step: the block ends after one that edits nothing or after
    max_post_edit_steps of them (SGLang runs one more forward and drops it; so does not this).
    Counts edits in gaps.edits. Returns the step count."""
    mask_id = config["mask_token_id"]
    threshold, edit_threshold = p["threshold"], p["edit_threshold"]
    max_post, post = p.get("max_post_edit_steps", 16), 0
    while True:
        masked = [i for i in range(begin, end) if x[i] == mask_id]
        editable = [i for i in range(begin, end) if x[i] != mask_id and not fixed[i]]
        logits = guided_logits(config, weights, x[:end], fixed[:end], p, mask_id, 0)
        logits[:, mask_id] = -math.inf
        x0, prob = {}, {}
        for i in masked + editable:
            x0[i] = gaps.argmax(logits[i])
            prob[i] = float(logits[i].softmax(-1)[x0[i]])
        keys = [prob[i] for i in masked]
        above = sum(1 for c in keys if c >= threshold)
        commits = gaps.select(keys, masked, max(above, 1)) if masked else []
        edits = [i for i in editable if x0[i] != x[i] and prob[i] > edit_threshold]
        for i in commits + edits:
            x[i] = x0[i]
        gaps.edits += len(edits)
        step += 1
        if any(x[i] == mask_id for i in range(begin, end)):
            continue
        if masked:
            if max_post == 0:
                return step
            continue
        post += 1
        if not edits or post >= max_post:
            return step


def llada_generate(config, weights, prompt, p, gaps):
    if reference_model.block_size(config) > 0:
        return block_diffusion_generate(config, weights, prompt, p, gaps)
    mask_id = config["mask_token_id"]
    eos = p.get("eos_token_id", config.get("eos_token_id", -1))
    eot = p.get("eot_token_id", -1)
    gen, block = p["gen_length"], p.get("block_length") or p["gen_length"]
    x = list(prompt) + [mask_id] * gen
    fixed = [i < len(prompt) for i in range(len(x))]
    blocks = gen // block
    adaptive = p.get("threshold", 0) > 0 or p.get("factor", 0) > 0
    step = 0
    for b in range(blocks):
        begin, end = len(prompt) + b * block, len(prompt) + (b + 1) * block
        masked = sum(1 for i in range(begin, end) if x[i] == mask_id)
        if not adaptive:
            per_block = p["steps"] // blocks
            counts = [masked // per_block + (1 if i < masked % per_block else 0) for i in range(per_block)]
        block_step = 0
        while any(x[i] == mask_id for i in range(begin, end)):
            logits = guided_logits(config, weights, x, fixed, p, mask_id, 0)
            logits[:, mask_id] = -math.inf  # unmask never predicts the mask (the upstream code can)
            if p.get("logits_eos_inf") and eos >= 0:
                logits[:, eos] = -math.inf
            positions = [i for i in range(begin, end) if x[i] == mask_id]
            x0 = {}
            keys = confidence_keys(logits, positions, x0, p, step, gaps, eos, eot)
            if adaptive:
                if p.get("threshold", 0) > 0:
                    wanted = sum(1 for c in keys if c >= p["threshold"])
                else:
                    ranked = sorted(keys, reverse=True)
                    wanted = 0
                    while wanted < len(ranked) and ranked[wanted] >= 1 - p["factor"] / (wanted + 2):
                        wanted += 1
                def share(total):  # the bounds per block, the remainder to the first blocks
                    return total // blocks + (1 if b < total % blocks else 0)
                k = bounded_count(wanted, len(positions), block_step, share(p.get("min_steps", 0)),
                                  share(p.get("max_steps", 0)))
            else:
                k = counts[block_step]
            for i in gaps.select(keys, positions, k):
                x[i] = x0[i]
            step += 1
            block_step += 1
        if p.get("early_stop") and eos >= 0:
            answer_end = len(x)  # first of the trailing EOS/masks
            while answer_end > len(prompt) and x[answer_end - 1] in (eos, mask_id):
                answer_end -= 1
            if answer_end < end and x[answer_end] == eos:
                x = [eos if t == mask_id else t for t in x]
                return x[len(prompt):], step
    return x[len(prompt):], step


def top_p_filter(z, top_p):
    """Logits outside the nucleus to -inf: a token goes when the probability before it exceeds top_p."""
    sorted_z, order = torch.sort(z, descending=True)
    remove = torch.cumsum(sorted_z.softmax(-1), -1) > top_p
    remove[1:] = remove[:-1].clone()
    remove[0] = False
    z[order[remove]] = -math.inf


def top_k_filter(z, top_k):
    """Logits below the k-th largest to -inf (its ties stay)."""
    z[z < z.topk(top_k).values[-1]] = -math.inf


def dream_generate(config, weights, prompt, p, gaps):
    mask_id = config["mask_token_id"]
    steps, eps = p["steps"], p.get("eps", 1e-3)
    x = list(prompt) + [mask_id] * p["gen_length"]
    ts = [1 + (eps - 1) * i / steps for i in range(steps + 1)]
    alg = p["policy"]
    for i in range(steps):
        logits = reference_model.forward(config, weights, torch.tensor(x), block_origin=len(prompt), kv_dtype=kv_dtype(p))
        logits[:, mask_id] = -math.inf  # unmask never predicts the mask (the upstream code can)
        positions = [j for j in range(len(x)) if x[j] == mask_id]
        t, s = ts[i], ts[i + 1]
        if alg == "origin":
            p_transfer = 1 - s / t if i < steps - 1 else 1.0
            for j in positions:
                if position_uniform(p.get("seed", 0), j, i, POSITION_DRAW) < p_transfer:
                    x[j] = gaps.argmax(logits[j])
            continue
        x0, keys = {}, []
        for j in positions:
            z = logits[j].clone()
            if p.get("top_p", 1.0) < 1.0:  # Dream's top_p_logits
                top_p_filter(z, p["top_p"])
            if p.get("top_k", 0) > 0:  # Dream's top_k_logits
                top_k_filter(z, p["top_k"])
            probs = z.softmax(-1)
            x0[j] = gaps.argmax(z)
            if alg == "maskgit_plus":
                c = float(probs[x0[j]])
            elif alg == "topk_margin":
                top = probs.topk(2).values
                c = float(top[0] - top[1])
            else:  # entropy: sum p log p
                c = float(torch.where(probs > 0, probs * probs.log(), torch.zeros_like(probs)).sum())
            if p.get("alg_temp", 0) > 0:
                u = position_uniform(p.get("seed", 0), j, i, COMMIT_ORDER)
                c = c / p["alg_temp"] - math.log(-math.log(u))
            keys.append(c)
        k = len(positions) if i == steps - 1 else int(len(positions) * (1 - s / t))
        for j in gaps.select(keys, positions, k):
            x[j] = x0[j]
    return x[len(prompt):], steps


def rnd1_generate(config, weights, prompt, p, gaps):
    """RND1's diffusion_sample for a prompt (rnd/sampling.py): the canvas is the prompt, then
    gen_length - 1 masks, then the pad token in the one slot it reserves at the end. Each step
    predicts every masked position (shifted logits, greedy) and scores it by the entropy of its
    distribution; after step i of N the floor(M (N - 1 - i) / N) highest-entropy masks stay masked
    (M: the masks at the start; float32 as torch computes `long_tensor * rate`), the rest take
    their predictions, and the last step commits everything. At temperature 0 the entropy is of
    the unscaled distribution (RND1 divides by 1e-8 there, leaving every entropy about 0).
    Returns the tokens, the steps and the forwards (a step with no mask left runs none)."""
    mask_id, pad_id = config["mask_token_id"], config["pad_token_id"]
    steps = p["steps"]
    x = list(prompt) + [mask_id] * (p["gen_length"] - 1) + [pad_id]
    total, forwards = p["gen_length"] - 1, 0
    for i in range(steps):
        positions = [j for j in range(len(x)) if x[j] == mask_id]
        if not positions:
            continue
        logits = reference_model.forward(config, weights, torch.tensor(x), kv_dtype=kv_dtype(p))
        logits[:, mask_id] = -math.inf  # unmask never predicts the mask (the upstream code can)
        forwards += 1
        x0, keys = {}, []
        for j in positions:
            z = logits[j].clone()
            if p.get("top_k", 0) > 0:  # RND1's apply_top_k_filtering (then top_p; unmask takes one)
                top_k_filter(z, p["top_k"])
            if p.get("top_p", 1.0) < 1.0:  # RND1's apply_top_p_filtering
                top_p_filter(z, p["top_p"])
            logp = z.log_softmax(-1)
            x0[j] = gaps.argmax(z)
            keys.append(float(torch.where(logp > -math.inf, logp.exp() * logp, torch.zeros_like(logp)).sum()))
        rate = torch.tensor((steps - 1 - i) / steps, dtype=torch.float32)
        kept = int(torch.tensor(total, dtype=torch.float32) * rate) if i < steps - 1 else 0
        for j in gaps.select(keys, positions, max(0, len(positions) - kept)):
            x[j] = x0[j]
    return x[len(prompt):], steps, forwards
