#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Train (or load) microattn's tiny character-level LLaMA-style language model.

  /usr/bin/python3 tools/train_tiny_lm.py --out examples/tiny_lm/tiny_lm.pt
      trains from the corpus (Debian package `fortunes`: apt-get install fortunes), evaluates
      train and validation loss (nats/char), saves state_dict + config + vocab (fp32), prints
      greedy continuations and runs tools/export_pytorch.py on layer 0's attention.
  /usr/bin/python3 tools/train_tiny_lm.py --load examples/tiny_lm/tiny_lm.pt \\
      [--prompt "The artist painted"] [--n 64] [--sample --seed 1]
      loads the committed weights (no corpus, no training) and prints a continuation.
  /usr/bin/python3 tools/train_tiny_lm.py --load examples/tiny_lm/tiny_lm.pt --eval
      also evaluates the validation loss (needs the corpus installed).

Options for training: --steps, --batch, --lr, --seed, --threads (defaults: the committed run).
Needs Debian's python3-torch (run with /usr/bin/python3; a pyenv python3 does not see it).

The model, exactly as microattn computes it (so that the C++ side maps onto it one to one):
  x = embed[tokens]                                    (nn.Embedding, [vocab][d_model])
  per layer:  x = x + attn(rms_norm(x, attn_norm.weight))
              x = x + mlp(rms_norm(x, mlp_norm.weight))
  logits = rms_norm(x, norm.weight) @ embed.weight^T   (LM head tied to the embedding)
  rms_norm(x, g) = x / sqrt(mean(x^2) + 1e-5) * g      (microattn::RmsNorm, set_eps(1e-5))
  attn: q_proj, k_proj, v_proj, o_proj (nn.Linear, no bias), n_heads query heads, n_kv_heads
        key/value heads (GQA: query head h reads kv head h // (n_heads / n_kv_heads)), RoPE base
        10000 on the whole head with ADJACENT pairs (2i, 2i+1) turned by pos * base^(-2i/d_head)
        (microattn::RopePairing::kAdjacent), causal, softmax scale 1/sqrt(d_head)
        (microattn Config<T_max, d_model, n_heads, n_kv_heads, d_head>, Rope::kYes, no bias).
  mlp:  down_proj(silu(gate_proj(x)) * up_proj(x))    (SwiGLU, no bias; microattn Mlp kSwiGLU)
No biases anywhere. Tokens: one id per character of `vocab` (a string stored with the
weights); id 0 is the unknown character (anything not in vocab maps to it).

From Python:  from train_tiny_lm import load;  model = load(path);
              model.generate("The artist", 64)   -> the continuation (greedy), a str
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

# OpenMP threads that spin while they wait make every small op of a 2-thread run wait for a
# descheduled thread when the machine is busy (here: 5x slower per step next to a compiler);
# passive waiting avoids it. Must be set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS_DIR = "/usr/share/games/fortunes"
CORPUS_PACKAGE = "fortunes"
UNK = "\ufffd"  # how id 0 (unknown character) prints

DEFAULT_CONFIG = {
    "vocab_size": None,  # from the corpus
    "d_model": 128,
    "n_layers": 2,
    "n_heads": 4,
    "n_kv_heads": 2,
    "d_head": 32,
    "d_hidden": 256,
    "t_max": 128,
    "rope_base": 10000.0,
    "rope_pairing": "adjacent",  # microattn::RopePairing::kAdjacent
    "norm_eps": 1e-5,
    "tied_head": True,
}


# --- corpus -----------------------------------------------------------------------------------

def corpus_files(folder=CORPUS_DIR):
    """The fortune text files of the Debian packages fortunes / fortunes-min (English), sorted:
    every regular file without an extension (the .dat index files and .u8 links are skipped),
    except ascii-art (pictures, not prose)."""
    if not os.path.isdir(folder):
        raise SystemExit(f"{folder} is missing: apt-get install {CORPUS_PACKAGE}")
    out = []
    for n in sorted(os.listdir(folder)):
        p = os.path.join(folder, n)
        if "." in n or n == "ascii-art" or os.path.islink(p) or not os.path.isfile(p):
            continue
        out.append(p)
    return out


def read_fortunes(folder=CORPUS_DIR):
    """Every fortune as one string: lines with their whitespace collapsed to single spaces
    (attributions are tab-indented), empty lines inside a fortune kept as one empty line."""
    items = []
    for p in corpus_files(folder):
        with open(p, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        for block in raw.split("\n%\n"):
            lines = [" ".join(l.split()) for l in block.replace("\r", "").split("\n")]
            text = "\n".join(lines).strip("\n").strip()
            while "\n\n\n" in text:
                text = text.replace("\n\n\n", "\n\n")
            if text and text != "%":
                items.append(text)
    return items


def split_corpus(items, every=20):
    """(train text, validation text): every `every`-th fortune (5 %) is held out, so the
    validation split samples every file (the files are topics, so the last 5 % would be one
    topic). Fortunes are separated by an empty line."""
    val = [t for i, t in enumerate(items) if i % every == every - 1]
    train = [t for i, t in enumerate(items) if i % every != every - 1]
    return "\n\n".join(train) + "\n\n", "\n\n".join(val) + "\n\n"


def make_vocab(text, min_count=8):
    """The characters seen at least min_count times in the training text, sorted, after the
    unknown character (id 0)."""
    counts = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    return UNK + "".join(sorted(c for c, k in counts.items() if k >= min_count and c != UNK))


def encode(text, vocab):
    index = {c: i for i, c in enumerate(vocab)}
    return [index.get(c, 0) for c in text]


def decode(ids, vocab):
    return "".join(vocab[i] for i in ids)


# --- model ------------------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight (microattn::RmsNorm)."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(t, d_head, base):
    """cos, sin of shape [t][d_head / 2]: pair i at position p turns by p * base^(-2i/d_head)
    (computed in double, rounded once, like microattn's rope_fill)."""
    half = d_head // 2
    theta = torch.exp(-math.log(base) * torch.arange(half, dtype=torch.float64) / half)
    a = torch.arange(t, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cos(a).float(), torch.sin(a).float()


def apply_rope(x, cos, sin, pairing):
    """x [B][heads][T][d_head] rotated in place of pairs: adjacent (2i, 2i+1) or half-split
    (i, i + d_head/2); cos, sin [T][d_head/2]."""
    if pairing == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


class Attention(nn.Module):
    """LLaMA-style GQA self-attention with q_proj/k_proj/v_proj/o_proj (no bias): the structure
    tools/export_pytorch.py reads (num_heads, num_key_value_heads, head_dim, hidden_size and
    is_causal state the shape). Only the four Linears are parameters; RoPE is applied in the
    forward from the tables the model passes (microattn: Rope::kYes, set_rope())."""

    def __init__(self, d_model, n_heads, n_kv_heads, d_head, rope_base, rope_pairing):
        super().__init__()
        assert n_heads % n_kv_heads == 0
        self.hidden_size = d_model
        self.num_heads = n_heads
        self.num_key_value_heads = n_kv_heads
        self.num_key_value_groups = n_heads // n_kv_heads
        self.head_dim = d_head
        self.is_causal = True
        self.rope_theta = rope_base
        self.rope_pairing = rope_pairing
        self.q_proj = nn.Linear(d_model, n_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, n_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, n_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(n_heads * d_head, d_model, bias=False)

    def forward(self, x, cos, sin, return_maps=False):
        B, T, _ = x.shape
        H, K, dh = self.num_heads, self.num_key_value_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, dh).transpose(1, 2)
        k = self.k_proj(x).view(B, T, K, dh).transpose(1, 2)
        v = self.v_proj(x).view(B, T, K, dh).transpose(1, 2)
        q = apply_rope(q, cos[:T], sin[:T], self.rope_pairing)
        k = apply_rope(k, cos[:T], sin[:T], self.rope_pairing)
        g = H // K  # query head h reads key/value head h // g
        # GQA without copying K and V: the g query heads of a group as one [g * T] block
        qg = q.reshape(B * K, g * T, dh)
        bias = torch.zeros(T, T, device=x.device).masked_fill_(
            torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        s = torch.baddbmm(bias.repeat(g, 1), qg, k.reshape(B * K, T, dh).transpose(1, 2),
                          alpha=1.0 / math.sqrt(dh))  # scale 1/sqrt(d_head), causal
        p = torch.softmax(s, dim=-1)
        o = (p @ v.reshape(B * K, T, dh)).view(B, H, T, dh)
        y = self.o_proj(o.transpose(1, 2).reshape(B, T, H * dh))
        p = p.view(B, H, T, T)
        return (y, p) if return_maps else y


class SwiGLU(nn.Module):
    """down_proj(silu(gate_proj(x)) * up_proj(x)), no biases (microattn Mlp, kSwiGLU)."""

    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn_norm = RMSNorm(c["d_model"], c["norm_eps"])
        self.attn = Attention(c["d_model"], c["n_heads"], c["n_kv_heads"], c["d_head"],
                              c["rope_base"], c["rope_pairing"])
        self.mlp_norm = RMSNorm(c["d_model"], c["norm_eps"])
        self.mlp = SwiGLU(c["d_model"], c["d_hidden"])

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class TinyLM(nn.Module):
    """The decoder (see the module docstring). config: DEFAULT_CONFIG's keys; vocab: the
    character string (id = index, 0 = unknown)."""

    def __init__(self, config, vocab):
        super().__init__()
        c = dict(config)
        assert c["vocab_size"] == len(vocab)
        assert c["rope_pairing"] in ("adjacent", "half_split") and c["d_head"] % 2 == 0
        self.config, self.vocab = c, vocab
        self.embed = nn.Embedding(c["vocab_size"], c["d_model"])
        self.layers = nn.ModuleList(Block(c) for _ in range(c["n_layers"]))
        self.norm = RMSNorm(c["d_model"], c["norm_eps"])
        if not c["tied_head"]:
            self.lm_head = nn.Linear(c["d_model"], c["vocab_size"], bias=False)
        cos, sin = rope_tables(c["t_max"], c["d_head"], c["rope_base"])
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self._init_weights()

    def _init_weights(self):
        std = 0.02
        for n, p in self.named_parameters():
            if n.endswith("norm.weight"):
                continue
            # residual-branch outputs scaled down with depth (GPT-2's init)
            s = std / math.sqrt(2 * self.config["n_layers"]) if n.endswith(
                ("o_proj.weight", "down_proj.weight")) else std
            nn.init.normal_(p, 0.0, s)

    def head_weight(self):
        return self.embed.weight if self.config["tied_head"] else self.lm_head.weight

    def forward(self, ids):
        """ids [B][T] (T <= t_max) -> logits [B][T][vocab]."""
        T = ids.shape[1]
        assert T <= self.config["t_max"]
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.rope_cos, self.rope_sin)
        return self.norm(x) @ self.head_weight().t()

    def attention_maps(self, ids):
        """Every layer's attention probabilities for one sequence: list of [H][T][T]."""
        maps = []
        x = self.embed(ids[None])
        for layer in self.layers:
            y, p = layer.attn(layer.attn_norm(x), self.rope_cos, self.rope_sin, True)
            maps.append(p[0])
            x = x + y
            x = x + layer.mlp(layer.mlp_norm(x))
        return maps

    @torch.no_grad()
    def generate(self, prompt, n, greedy=True, seed=0, temperature=1.0):
        """The n characters that follow prompt (a str): greedy (argmax; ties take the lowest
        id) or sampled with torch.Generator(seed). The context is the last t_max characters."""
        ids = encode(prompt, self.vocab)
        gen = torch.Generator().manual_seed(seed)
        out = []
        for _ in range(n):
            ctx = torch.tensor(ids[-self.config["t_max"]:])[None]
            logits = self(ctx)[0, -1]
            if greedy:
                nxt = int(torch.argmax(logits))
            else:
                nxt = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, True,
                                            generator=gen))
            ids.append(nxt)
            out.append(nxt)
        return decode(out, self.vocab)


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def save(model, path, info):
    torch.save({"config": model.config, "vocab": model.vocab,
                "state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()},
                "info": info}, path)


def load(path):
    """The model saved by save() (config + vocab + fp32 state_dict), in eval mode."""
    blob = torch.load(path, map_location="cpu")
    model = TinyLM(blob["config"], blob["vocab"])
    model.load_state_dict(blob["state_dict"], strict=True)
    model.info = blob.get("info", {})
    return model.eval()


# --- memory arithmetic --------------------------------------------------------------------------

def footprint(c):
    """int8 weight bytes (one byte a parameter + one fp32 scale per output column; norms fp32)
    and the int8 KV cache bytes (plain: T_max * layers * 2 * H_kv * d_head + fp32 scales per
    token, head, K and V)."""
    D, L, H, K, dh, F_, V = (c["d_model"], c["n_layers"], c["n_heads"], c["n_kv_heads"],
                             c["d_head"], c["d_hidden"], c["vocab_size"])
    mats = [(H * dh, D), (K * dh, D), (K * dh, D), (D, H * dh), (F_, D), (F_, D), (D, F_)]
    w8 = L * sum(o * i for o, i in mats) + V * D + (0 if c["tied_head"] else V * D)
    scales = 4 * (L * sum(o for o, _ in mats) + V + (0 if c["tied_head"] else V))
    norms = 4 * D * (2 * L + 1)
    cache = c["t_max"] * L * 2 * K * dh
    cache_scales = 4 * c["t_max"] * L * 2 * K
    return {"int8_weights": w8, "scales": scales, "norms": norms,
            "flash_model": w8 + scales + norms, "kv_int8": cache,
            "kv_scales": cache_scales, "kv_total": cache + cache_scales}


# --- training -----------------------------------------------------------------------------------

@torch.no_grad()
def eval_loss(model, data, t, max_windows=None):
    """Mean cross entropy (nats/char) over non-overlapping windows of t+1 characters of data
    (every character after a window's first is predicted once)."""
    model.eval()
    n = (len(data) - 1) // t
    if max_windows:
        n = min(n, max_windows)
    total, count = 0.0, 0
    for s in range(0, n, 64):
        rows = torch.stack([data[i * t:i * t + t + 1] for i in range(s, min(n, s + 64))])
        logits = model(rows[:, :-1])
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                       rows[:, 1:].reshape(-1), reduction="sum"))
        count += rows[:, 1:].numel()
    return total / count


def export_check(model, layer=0, quant="none"):
    """Runs tools/export_pytorch.py on layer `layer`'s attention (a pickled copy of the module,
    --mask causal) in its own process; returns (exit status, header text, stderr)."""
    with tempfile.TemporaryDirectory() as d:
        pt, h = os.path.join(d, "attn.pt"), os.path.join(d, f"tiny_lm_l{layer}.h")
        torch.save(model.layers[layer].attn, pt)
        env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
        r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "export_pytorch.py"),
                            "--module", pt, "--mask", "causal", "--name", f"tiny_lm_l{layer}",
                            "--quant", quant, "--out", h], env=env, capture_output=True,
                           text=True)
        text = ""
        if r.returncode == 0:
            with open(h, encoding="utf-8") as f:
                text = f.read()
        return r.returncode, text, r.stderr


PROMPTS = ["The artist painted the portrait of a woman with a brush",
           "A computer is",
           "Love is"]


def train(args):
    torch.manual_seed(args.seed)
    items = read_fortunes()
    train_text, val_text = split_corpus(items)
    vocab = make_vocab(train_text)
    config = dict(DEFAULT_CONFIG, vocab_size=len(vocab))
    train_ids = torch.tensor(encode(train_text, vocab), dtype=torch.long)
    val_ids = torch.tensor(encode(val_text, vocab), dtype=torch.long)
    print(f"corpus: {len(items)} fortunes; train {len(train_text)} chars, validation "
          f"{len(val_text)} chars; vocab {len(vocab)} (unknown in validation: "
          f"{int((val_ids == 0).sum())})", flush=True)
    model = TinyLM(config, vocab)
    print(f"config: {config}\nparameters: {count_params(model)}", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    T, B = config["t_max"], args.batch
    gen = torch.Generator().manual_seed(args.seed)
    warm = max(1, args.steps // 20)

    def lr_at(s):  # linear warm-up, cosine decay to 10 %
        if s < warm:
            return args.lr * (s + 1) / warm
        f = (s - warm) / max(1, args.steps - warm)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * f)))

    t0 = time.time()
    model.train()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        starts = torch.randint(0, len(train_ids) - T - 1, (B,), generator=gen)
        rows = torch.stack([train_ids[s:s + T + 1] for s in starts.tolist()])
        logits = model(rows[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {float(loss):.4f}  lr {lr_at(step):.2e}  "
                  f"{time.time() - t0:6.1f} s", flush=True)
    train_s = time.time() - t0
    model.eval()
    tr = eval_loss(model, train_ids, T, max_windows=args.eval_windows)
    va = eval_loss(model, val_ids, T, max_windows=args.val_windows)
    print(f"training: {train_s:.1f} s; train loss {tr:.4f} nats/char (first "
          f"{args.eval_windows} windows of {T}), validation loss {va:.4f} nats/char "
          f"(first {args.val_windows or 'all'} windows of {T} of {len(val_ids)} chars)",
          flush=True)
    samples = {p: model.generate(p, args.n) for p in PROMPTS}
    info = {"seed": args.seed, "steps": args.steps, "batch": B, "lr": args.lr,
            "train_seconds": round(train_s, 1), "train_loss": tr, "val_loss": va,
            "eval_windows": args.eval_windows, "val_windows": args.val_windows,
            "corpus": f"Debian package {CORPUS_PACKAGE} ({CORPUS_DIR})",
            "train_chars": len(train_text), "val_chars": len(val_text),
            "params": count_params(model), "greedy": samples, "greedy_n": args.n,
            "torch": torch.__version__}
    save(model, args.out, info)
    print(f"saved {args.out} ({os.path.getsize(args.out)} bytes)")
    return model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--out", default=os.path.join(ROOT, "examples", "tiny_lm", "tiny_lm.pt"))
    ap.add_argument("--load", help="load these weights instead of training")
    ap.add_argument("--eval", action="store_true", help="with --load: evaluate losses (needs "
                    "the corpus)")
    ap.add_argument("--steps", type=int, default=540)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-windows", type=int, default=200)
    ap.add_argument("--val-windows", type=int, default=400,
                    help="validation windows of t_max evaluated after training (0: all)")
    ap.add_argument("--prompt", action="append", help="prompt(s) to continue (default: three)")
    ap.add_argument("--n", type=int, default=64, help="characters to generate")
    ap.add_argument("--sample", action="store_true", help="sample instead of greedy")
    ap.add_argument("--no-export", action="store_true", help="skip the exporter check")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    if args.load:
        model = load(args.load)
        print(f"config: {model.config}\nparameters: {count_params(model)}")
        if args.eval:
            _, val_text = split_corpus(read_fortunes())
            va = eval_loss(model, torch.tensor(encode(val_text, model.vocab)),
                           model.config["t_max"], max_windows=args.val_windows)
            print(f"validation loss {va:.4f} nats/char")
    else:
        model = train(args)
    fp = footprint(model.config)
    print("int8 footprint: " + ", ".join(f"{k} {v}" for k, v in fp.items()))
    for p in args.prompt or PROMPTS:
        print(f"{p!r} -> {model.generate(p, args.n, greedy=not args.sample, seed=args.seed)!r}")
    if not args.no_export:
        rc, text, err = export_check(model, 0)
        first = text.splitlines()[:3] if text else err.strip().splitlines()[-1:]
        print(f"export_pytorch.py on layers.0.attn: exit {rc}; " + " | ".join(first))
        if rc != 0:
            return 1
    return 0


if __name__ == "__main__":
    # Run as the module train_tiny_lm (not __main__), so that pickled modules name a class
    # another process can import (tools/ on PYTHONPATH).
    sys.path.insert(0, HERE)
    import train_tiny_lm
    sys.exit(train_tiny_lm.main())
