#!/usr/bin/python3
"""Build decoders through the real exporter path (torch.onnx.export of torch
modules laid out as Hugging Face's LlamaForCausalLM, MistralForCausalLM,
Qwen2ForCausalLM, GPT2LMHeadModel and PhiForCausalLM, with the input and
output names and dynamic axes of an Optimum "text-generation-with-past"
export), for tests/integration/decoder_exports.sh.

The stand-ins of make_decoder_standins.py are hand-written ONNX graphs; these
are what users' exports look like: the traced mask arithmetic (a 4-D additive
mask of float32's lowest value built from attention_mask and the past's
length), positions from position_ids (rotary by rotate_half, partial for Phi;
a learned table for GPT-2), grouped-query attention by repeat_kv, norms in
float32, untied or tied LM heads, and the two tokenizer kinds these families
ship: a Llama/Mistral tokenizer.json (BPE over "\u2581"-joined pieces with byte
fallback, <s> added by a TemplateProcessing post-processor while
tokenizer_config.json also says add_bos_token) and a byte-level BPE
(GPT-2, Qwen2, Phi: no BOS).

  llama/    2 layers, hidden 64, 4 query heads over 2 key/value heads,
            head_dim 16, rope_theta 10000, untied (the shape of the export in
            issue 43)
  mistral/  8 query heads over 2 key/value heads, head_dim 8, sliding_window
  qwen2/    q/k/v biases, tied embeddings, two EOS ids
  gpt2/     learned positions, LayerNorm, biases, gelu_new, tied, 4 heads
  phi/      parallel attention and MLP from one LayerNorm, rotary on half of
            each head, biases everywhere incl. the LM head

Weights: the usual N(0, 0.02) initialisation leaves the greedy choice a near
tie at most steps (a random model's logits differ by ~1e-4) and two correct
float32 programs then pick different tokens; the weights here are scaled by
fan-in so every recorded greedy step wins by a clear margin (checked against
a float64 full recompute), and a wrong past, position, mask or prompt id
still changes the tokens.

Each OUT/<family>/ has onnx/model.onnx, config.json, generation_config.json,
tokenizer.json, tokenizer_config.json and reference.json: four prompts of
different lengths, their ids, and the greedy continuation computed here in
float64 by recomputing the whole sequence at each step (no cache).
Deterministic; Debian's python3-torch and python3-onnx:
  /usr/bin/python3 tools/testmodels/make_decoder_exports.py [OUT [FAMILY...]]
(default OUT: tests/data/models/decoder-exports)

Realistic sizes, for benchmarks (random weights at the real shapes, no
reference; fp32 written with its weights as ONNX external data, and
onnx/model_quantized.onnx, int8 by tools/train/quantize.py's rewrite):
  /usr/bin/python3 tools/testmodels/make_decoder_exports.py --size NAME OUT
  NAME: gpt2-124m (GPT-2 small: 12 layers, 768 wide, 12 heads, vocab 50257)
        qwen2-0.5b (Qwen2-0.5B: 24 layers, 896 wide, 14 query heads over 2
        key/value heads of 64, 4864 MLP, vocab 151936, tied)
Use tools/testmodels/decoder_sizes.sh, which builds them once into a cache.
"""
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "models",
                                                          "decoder-exports")
STEPS = 72
MIN_RUN = 64
SP = "\u2581"
# the tokenizers' training text and the test prompts
CORPUS = ("the cat sat on the mat . the dog ran to the park and the cat ran after it . "
          "a model answers a question with a short sentence . the server answers every "
          "request once , and the planner chooses the variant that fits the deadline . "
          "once upon a time there was a small model that wanted to speak . "
          "tokens are generated one at a time , each one from the ones before it .")
PROMPTS = ["the cat", "once upon a time there was", "a model answers",
           "the server answers every request once , and the planner"]

FAMILIES = {
    "llama": dict(arch="LlamaForCausalLM", model_type="llama", tok="sp", hidden=64, layers=2,
                  heads=4, kv_heads=2, head_dim=16, ffn=176, seed=7),
    "mistral": dict(arch="MistralForCausalLM", model_type="mistral", tok="sp", hidden=32,
                    layers=2, heads=8, kv_heads=2, head_dim=8, ffn=64, seed=3,
                    sliding_window=4096),
    "qwen2": dict(arch="Qwen2ForCausalLM", model_type="qwen2", tok="bytes", hidden=32,
                  layers=2, heads=4, kv_heads=2, head_dim=8, ffn=64, seed=5, qkv_bias=True,
                  tied=True, eos_extra=True),
    "gpt2": dict(arch="GPT2LMHeadModel", model_type="gpt2", tok="bytes", hidden=32, layers=2,
                 heads=4, kv_heads=4, head_dim=8, ffn=128, seed=11, norm="layer",
                 pos="learned", mlp="gelu", qkv_bias=True, o_bias=True, tied=True),
    "phi": dict(arch="PhiForCausalLM", model_type="phi", tok="bytes", hidden=32, layers=2,
                heads=4, kv_heads=4, head_dim=8, ffn=128, seed=13, norm="layer", mlp="gelu",
                parallel=True, rotary_frac=0.5, qkv_bias=True, o_bias=True, head_bias=True),
}
BASE = dict(norm="rms", pos="rope", mlp="swiglu", parallel=False, rotary_frac=1.0,
            qkv_bias=False, o_bias=False, head_bias=False, tied=False, eos_extra=False,
            theta=10000.0, eps=1e-6, positions=256, sliding_window=None)


# ---------------------------------------------------------------- tokenizers
def train_bpe(words, n_merges):
    """Plain BPE over the symbols of each word; returns the merges in order."""
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        if not pairs:
            break
        best = max(sorted(pairs), key=lambda p: pairs[p])
        if pairs[best] < 2:
            break
        merges.append(best)
        nw = {}
        for w, c in words.items():
            nw[tuple(apply_merge(list(w), best))] = nw.get(tuple(apply_merge(list(w), best)),
                                                            0) + c
        words = nw
    return merges


def apply_merge(parts, pair):
    out, i = [], 0
    while i < len(parts):
        if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
            out.append(parts[i] + parts[i + 1])
            i += 2
        else:
            out.append(parts[i])
            i += 1
    return out


def bpe(parts, merges):
    rank = {m: i for i, m in enumerate(merges)}
    while len(parts) > 1:
        r, i = min((rank.get(p, 1 << 30), i) for i, p in enumerate(zip(parts, parts[1:])))
        if r == 1 << 30:
            break
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def special(tokens):
    return [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for t, i in tokens]


def byte_chars():
    """GPT-2's printable stand-in for each byte."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    out, n = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return out


class SpTokenizer:
    """Llama / Mistral: "\u2581"-joined pieces, byte fallback, <s> by post-processor."""
    bos, eos = 1, 2

    def __init__(self):
        self.vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
        for b in range(256):
            self.vocab[f"<0x{b:02X}>"] = len(self.vocab)
        for ch in sorted(set(SP + CORPUS.replace(" ", ""))):
            self.vocab.setdefault(ch, len(self.vocab))
        words = {}
        for w in CORPUS.split(" "):
            words[tuple(SP + w)] = words.get(tuple(SP + w), 0) + 1
        self.merges = train_bpe(words, 160)
        for a, b in self.merges:
            self.vocab.setdefault(a + b, len(self.vocab))

    def encode(self, text):
        ids = [self.bos]
        for p in bpe(list(SP + text.replace(" ", SP)), self.merges):
            ids += [self.vocab[p]] if p in self.vocab else [self.vocab[f"<0x{b:02X}>"]
                                                            for b in p.encode()]
        return ids

    def json(self):
        return {
            "version": "1.0", "truncation": None, "padding": None,
            "added_tokens": special((("<unk>", 0), ("<s>", 1), ("</s>", 2))),
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": SP},
                {"type": "Replace", "pattern": {"String": " "}, "content": SP}]},
            "pre_tokenizer": None,
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                         {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "<s>", "type_id": 1}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": SP}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                      "vocab": self.vocab, "merges": [f"{a} {b}" for a, b in self.merges]}}

    def config(self):
        return {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                "unk_token": "<unk>", "pad_token": None, "add_bos_token": True,
                "add_eos_token": False, "legacy": False}


class ByteTokenizer:
    """GPT-2 / Qwen2 / Phi: byte-level BPE, no BOS; <|endoftext|> is the last id."""
    bos = None

    def __init__(self):
        self.bc = byte_chars()
        self.vocab = {self.bc[b]: i for i, b in enumerate(sorted(self.bc))}
        words = {}
        for w in self.pieces(CORPUS):
            words[tuple(w)] = words.get(tuple(w), 0) + 1
        self.merges = train_bpe(words, 160)
        for a, b in self.merges:
            self.vocab.setdefault(a + b, len(self.vocab))
        self.eos = len(self.vocab)
        self.im_end = self.eos + 1

    def pieces(self, text):
        # the prompts are lowercase words, punctuation and single spaces: GPT-2's
        # pre-tokenizer cuts them into " word" pieces
        out = []
        for k, w in enumerate(text.split(" ")):
            out.append("".join(self.bc[b] for b in ((" " if k else "") + w).encode()))
        return out

    def encode(self, text):
        ids = []
        for p in self.pieces(text):
            ids += [self.vocab[x] for x in bpe(list(p), self.merges)]
        return ids

    def json(self):
        return {
            "version": "1.0", "truncation": None, "padding": None,
            "added_tokens": special((("<|endoftext|>", self.eos), ("<|im_end|>", self.im_end))),
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                              "use_regex": True},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                               "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": self.vocab, "merges": [f"{a} {b}" for a, b in self.merges]}}

    def config(self):
        return {"tokenizer_class": "GPT2Tokenizer", "bos_token": None,
                "eos_token": "<|endoftext|>", "add_bos_token": False}

    def n(self):
        return self.im_end + 1


# -------------------------------------------------------------------- model
class Norm(nn.Module):
    """RMSNorm (Llama, Mistral, Qwen2) or LayerNorm with bias (GPT-2, Phi), in float32."""

    def __init__(self, n, c):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if c["norm"] == "layer" else None
        self.eps = c["eps"]

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        if self.bias is None:
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * x.to(dt)
        x = nn.functional.layer_norm(x, (int(self.weight.shape[0]),), self.weight.float(), self.bias.float(),
                                     self.eps)
        return x.to(dt)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    def __init__(self, dim, theta):
        super().__init__()
        inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rope(x, cos, sin):
    r = cos.shape[-1]  # Phi rotates the first r dims of each head only
    xr, xp = x[..., :r], x[..., r:]
    return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)


def repeat_kv(x, n_rep):
    b, kvh, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h, self.kvh, self.d, self.rope = c["heads"], c["kv_heads"], c["head_dim"], c[
            "pos"] == "rope"
        hid, qb = c["hidden"], c["qkv_bias"]
        self.q_proj = nn.Linear(hid, self.h * self.d, bias=qb)
        self.k_proj = nn.Linear(hid, self.kvh * self.d, bias=qb)
        self.v_proj = nn.Linear(hid, self.kvh * self.d, bias=qb)
        self.o_proj = nn.Linear(self.h * self.d, hid, bias=c["o_bias"])

    def forward(self, x, cos, sin, mask, past_k, past_v):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kvh, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kvh, self.d).transpose(1, 2)
        if self.rope:
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        kr, vr = repeat_kv(k, self.h // self.kvh), repeat_kv(v, self.h // self.kvh)
        w = torch.matmul(q, kr.transpose(2, 3)) / math.sqrt(self.d)
        w = w + mask
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, vr).transpose(1, 2).reshape(b, s, self.h * self.d)
        return self.o_proj(o), k, v


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.swiglu = c["mlp"] == "swiglu"
        hid, f = c["hidden"], c["ffn"]
        if self.swiglu:
            self.gate_proj = nn.Linear(hid, f, bias=False)
            self.up_proj = nn.Linear(hid, f, bias=False)
            self.down_proj = nn.Linear(f, hid, bias=False)
        else:
            self.fc1, self.fc2 = nn.Linear(hid, f), nn.Linear(f, hid)

    def forward(self, x):
        if self.swiglu:
            return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))
        return self.fc2(gelu_new(self.fc1(x)))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.parallel = c["parallel"]
        self.self_attn, self.mlp = Attention(c), MLP(c)
        self.input_layernorm = Norm(c["hidden"], c)
        if not self.parallel:
            self.post_attention_layernorm = Norm(c["hidden"], c)

    def forward(self, x, cos, sin, mask, pk, pv):
        h = self.input_layernorm(x)
        a, k, v = self.self_attn(h, cos, sin, mask, pk, pv)
        if self.parallel:  # Phi: attention and MLP read the same normed input
            return x + a + self.mlp(h), k, v
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), k, v


def causal_mask_4d(attention_mask, s, past, dtype):
    """The additive mask as transformers' _prepare_4d_causal_attention_mask
    makes it: lowest float where a key is later than the query (offset by the
    past's length) or where attention_mask is 0."""
    b = attention_mask.shape[0]
    low = torch.finfo(dtype).min
    m = torch.full((s, s), low, dtype=dtype)
    cond = torch.arange(m.size(-1))
    m.masked_fill_(cond < (cond + 1).view(m.size(-1), 1), 0)
    m = torch.cat([torch.zeros(s, past, dtype=dtype), m.to(dtype)], dim=-1)
    causal = m[None, None, :, :].expand(b, 1, s, s + past)
    pad = attention_mask[:, None, None, :].expand(b, 1, s, s + past).to(dtype)
    inv = 1.0 - pad
    pad = inv.masked_fill(inv.to(torch.bool), low)
    return causal.masked_fill(pad.bool(), low)


class Decoder(nn.Module):
    def __init__(self, c, vocab):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(vocab, c["hidden"])
        if c["pos"] == "learned":
            self.wpe = nn.Embedding(c["positions"], c["hidden"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["layers"])])
        self.norm = Norm(c["hidden"], c)
        self.rotary = Rotary(int(c["head_dim"] * c["rotary_frac"]), c["theta"])
        self.lm_head = nn.Linear(c["hidden"], vocab, bias=c["head_bias"])

    def forward(self, input_ids, attention_mask, position_ids, *past):
        x = self.embed_tokens(input_ids)
        if self.c["pos"] == "learned":
            x = x + self.wpe(position_ids)
        s, p = input_ids.shape[1], past[0].shape[2]
        mask = causal_mask_4d(attention_mask, s, p, x.dtype)
        cos, sin = self.rotary(x, position_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, mask, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        h = self.norm(x)
        if self.c["tied"]:
            return (h @ self.embed_tokens.weight.t(), *presents)
        return (self.lm_head(h), *presents)


def init_weights(m, seed):
    g = torch.Generator().manual_seed(seed)
    for name, p in m.named_parameters():
        if name.endswith("bias"):
            p.data = 0.1 * torch.randn(p.shape, generator=g)
        elif p.dim() == 1:
            p.data = 1.0 + 0.1 * torch.randn(p.shape, generator=g)
        elif name.endswith("embed_tokens.weight") or name.endswith("wpe.weight"):
            p.data = torch.randn(p.shape, generator=g)
        else:
            # fan-in scaling, sharper than N(0, 0.02): clear greedy margins
            p.data = torch.randn(p.shape, generator=g) * (1.6 / math.sqrt(p.shape[1]))


def greedy_reference(m, prompts, eos):
    """float64, the whole sequence recomputed at every step, no cache."""
    c = m.c
    md = Decoder(c, m.embed_tokens.weight.shape[0]).double()
    md.load_state_dict({k: v.double() for k, v in m.state_dict().items()})
    out, worst = [], math.inf
    empty = [torch.zeros(1, c["kv_heads"], 0, c["head_dim"], dtype=torch.float64)] * (
        2 * c["layers"])
    for ids in prompts:
        seq, cont = list(ids), []
        for _ in range(STEPS):
            n = len(seq)
            with torch.no_grad():
                logits = md(torch.tensor([seq]), torch.ones(1, n, dtype=torch.int64),
                            torch.arange(n)[None, :], *empty)[0][0, -1]
            top = torch.topk(logits, 2).values
            worst = min(worst, float(top[0] - top[1]))
            t = int(torch.argmax(logits))
            cont.append(t)
            seq.append(t)
            if t in eos:
                break
        out.append({"input_ids": ids, "continuation_ids": cont})
    return out, worst


def export(m, path):
    c, L = m.c, m.c["layers"]
    b, s, p = 2, 3, 5
    past = [torch.randn(b, c["kv_heads"], p, c["head_dim"]) for _ in range(2 * L)]
    args = (torch.randint(3, 100, (b, s)), torch.ones(b, p + s, dtype=torch.int64),
            torch.arange(p, p + s)[None, :].expand(b, s).contiguous(), *past)
    names_in = ["input_ids", "attention_mask", "position_ids"]
    names_out = ["logits"]
    axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "past_sequence_length + sequence_length"},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size", 1: "sequence_length"}}
    for i in range(L):
        for kv in ("key", "value"):
            names_in.append(f"past_key_values.{i}.{kv}")
            names_out.append(f"present.{i}.{kv}")
            axes[names_in[-1]] = {0: "batch_size", 2: "past_sequence_length"}
            axes[names_out[-1]] = {0: "batch_size", 2: "past_sequence_length + sequence_length"}
    with torch.no_grad():
        torch.onnx.export(m, args, path, input_names=names_in, output_names=names_out,
                          dynamic_axes=axes, opset_version=14, do_constant_folding=True)


def gqa_form(c):
    """Can this family be written in the GroupQueryAttention form
    (make_gqa_decoder.py's graph: RMSNorm, full rotary, SwiGLU, sequential
    blocks), and can ONNX Runtime's CPU kernel run it (head_dim a multiple of
    16)? Of the families, Llama; Mistral's and Qwen2's stand-ins have
    head_dim 8, GPT-2 and Phi other blocks."""
    return (c["norm"] == "rms" and c["pos"] == "rope" and c["rotary_frac"] == 1.0 and
            c["mlp"] == "swiglu" and not c["parallel"] and not c["o_bias"] and
            not c["head_bias"] and c["head_dim"] % 16 == 0)


def export_gqa(m, path, vocab):
    """The same weights in the GroupQueryAttention form (one fused attention
    op per layer, past and present sharing one buffer; inputs input_ids,
    seqlens_k, total_sequence_length, past_key_values.*): the graph
    onnxruntime-genai's model builder writes, for holding the lane to it.
    fp32, one file."""
    import onnx
    sys.path.insert(0, HERE)
    import make_gqa_decoder as gqa
    c = m.c
    sd = {k: v.detach().float().numpy() for k, v in m.state_dict().items()}
    w = {"embed_tokens.weight": sd["embed_tokens.weight"]}
    for i in range(c["layers"]):
        p, t = f"layers.{i}.", f"layers.{i}."
        w[t + "input_layernorm.weight"] = sd[p + "input_layernorm.weight"]
        for proj in ("q_proj", "k_proj", "v_proj"):
            wt = sd[p + "self_attn." + proj + ".weight"]
            w[t + proj + ".weight"] = np.ascontiguousarray(wt.T)
            w[t + proj + ".bias"] = sd.get(p + "self_attn." + proj + ".bias",
                                           np.zeros(wt.shape[0], np.float32))
        w[t + "o_proj.weight"] = np.ascontiguousarray(sd[p + "self_attn.o_proj.weight"].T)
        w[t + "post_attention_layernorm.weight"] = sd[p + "post_attention_layernorm.weight"]
        for proj in ("gate_proj", "up_proj", "down_proj"):
            w[t + proj + ".weight"] = np.ascontiguousarray(sd[p + "mlp." + proj + ".weight"].T)
    w["norm.weight"] = sd["norm.weight"]
    head = sd["embed_tokens.weight"] if c["tied"] else sd["lm_head.weight"]
    w["lm_head.weight"] = np.ascontiguousarray(head.T)
    gc = dict(layers=c["layers"], hidden=c["hidden"], heads=c["heads"], kv_heads=c["kv_heads"],
              head_dim=c["head_dim"], ffn=c["ffn"], vocab=vocab, theta=c["theta"], eps=c["eps"],
              positions=c["positions"])
    onnx.save(gqa.build_graph(gc, w), path)


def hf_config(name, c, vocab, tok, eos):
    if c["model_type"] == "gpt2":
        return {"architectures": [c["arch"]], "model_type": "gpt2", "vocab_size": vocab,
                "n_embd": c["hidden"], "n_layer": c["layers"], "n_head": c["heads"],
                "n_inner": c["ffn"], "n_positions": c["positions"],
                "activation_function": "gelu_new", "layer_norm_epsilon": c["eps"],
                "bos_token_id": tok.eos, "eos_token_id": tok.eos, "tie_word_embeddings": True}
    cfg = {"architectures": [c["arch"]], "model_type": c["model_type"], "vocab_size": vocab,
           "hidden_size": c["hidden"], "intermediate_size": c["ffn"],
           "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
           "num_key_value_heads": c["kv_heads"], "head_dim": c["head_dim"],
           "max_position_embeddings": c["positions"], "rope_theta": c["theta"],
           "rope_scaling": None, "tie_word_embeddings": c["tied"],
           "bos_token_id": tok.bos, "eos_token_id": eos[0], "torch_dtype": "float32"}
    if c["norm"] == "rms":
        cfg.update(rms_norm_eps=c["eps"], hidden_act="silu")
    else:
        cfg.update(layer_norm_eps=c["eps"], hidden_act="gelu_new",
                   partial_rotary_factor=c["rotary_frac"])
    if c["sliding_window"]:
        cfg["sliding_window"] = c["sliding_window"]
    return cfg


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")


def build(name, fam):
    c = dict(BASE, **fam)
    tok = SpTokenizer() if c["tok"] == "sp" else ByteTokenizer()
    vocab = len(tok.vocab) if c["tok"] == "sp" else tok.n()
    eos = [tok.eos, tok.im_end] if c["eos_extra"] else [tok.eos]
    prompts = [tok.encode(p) for p in PROMPTS]
    # the first seed from the family's whose every greedy step wins by > 1e-3
    # (a near tie could go either way in float32) and whose every prompt runs
    # at least MIN_RUN tokens before an end-of-sequence id, so identity is
    # held over that many steps on every prompt
    for seed in range(c["seed"], c["seed"] + 100):
        torch.manual_seed(seed)
        m = Decoder(c, vocab).eval()
        init_weights(m, seed)
        ref, margin = greedy_reference(m, prompts, eos)
        shortest = min(len(r["continuation_ids"]) for r in ref)
        if margin > 1e-3 and shortest >= MIN_RUN:
            break
    assert margin > 1e-3 and shortest >= MIN_RUN, \
        f"{name}: no seed with a greedy margin above 1e-3 and {MIN_RUN} tokens on every prompt"
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "onnx"))
    export(m, os.path.join(d, "onnx", "model.onnx"))
    if gqa_form(c):  # outside onnx/: not a variant the model loader lists
        os.makedirs(os.path.join(d, "gqa"))
        export_gqa(m, os.path.join(d, "gqa", "model.onnx"), vocab)
    write_json(os.path.join(d, "config.json"), hf_config(name, c, vocab, tok, eos))
    gen = {"eos_token_id": eos if len(eos) > 1 else eos[0], "do_sample": False}
    if tok.bos is not None:
        gen["bos_token_id"] = tok.bos
    write_json(os.path.join(d, "generation_config.json"), gen)
    write_json(os.path.join(d, "tokenizer.json"), tok.json())
    write_json(os.path.join(d, "tokenizer_config.json"),
               dict(tok.config(), model_max_length=c["positions"]))
    write_json(os.path.join(d, "reference.json"), {
        "model": name, "architecture": c["arch"], "eos_ids": eos, "steps": STEPS,
        "notes": "torch float64, the whole sequence recomputed at every greedy step (argmax), "
                 "no cache; tools/testmodels/make_decoder_exports.py",
        "seed": seed, "smallest_greedy_margin": round(margin, 6),
        "prompts": [dict(r, text=t) for r, t in zip(ref, PROMPTS)]})
    print(f"{name}: seed {seed}, vocab {vocab}, greedy margin {margin:.4f}, continuations "
          f"{[len(r['continuation_ids']) for r in ref]}")


SIZES = {
    "gpt2-124m": dict(arch="GPT2LMHeadModel", model_type="gpt2", tok="bytes", hidden=768,
                      layers=12, heads=12, kv_heads=12, head_dim=64, ffn=3072, norm="layer",
                      pos="learned", mlp="gelu", qkv_bias=True, o_bias=True, tied=True,
                      positions=1024, vocab=50257, seed=1),
    "qwen2-0.5b": dict(arch="Qwen2ForCausalLM", model_type="qwen2", tok="bytes", hidden=896,
                       layers=24, heads=14, kv_heads=2, head_dim=64, ffn=4864, qkv_bias=True,
                       tied=True, theta=1000000.0, positions=4096, vocab=151936, seed=2),
}


def build_size(name, d):
    """A realistic-size decoder at d (fp32 + int8), random weights."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
    import onnx
    import quantize
    c = dict(BASE, **SIZES[name])
    tok = ByteTokenizer()
    torch.manual_seed(c["seed"])
    m = Decoder(c, c["vocab"]).eval()
    with torch.no_grad():
        for pname, p in m.named_parameters():
            if p.dim() == 1:
                p.fill_(1.0) if pname.endswith("weight") else p.zero_()
            else:
                p.normal_(0.0, 0.02)
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "onnx"))
    fp32 = os.path.join(tmp, "onnx", "model.onnx")
    print(f"{name}: exporting fp32 ({sum(p.numel() for p in m.parameters()) / 1e6:.0f} M "
          f"parameters)", flush=True)
    export(m, fp32)
    # with its external data when torch wrote it so (past 2 GB: one file per
    # tensor); saved again with every weight in one model.onnx.data
    model = onnx.load(fp32)
    loose = [f for f in os.listdir(os.path.join(tmp, "onnx")) if f != "model.onnx"]
    onnx.save(model, fp32, save_as_external_data=True, all_tensors_to_one_file=True,
              location="model.onnx.data", size_threshold=1024)
    for f in loose:
        if f != "model.onnx.data":
            os.remove(os.path.join(tmp, "onnx", f))
    print(f"{name}: int8", flush=True)
    model = onnx.load(fp32)  # the save above moved the weights out of `model`
    quantize.rewrite(model)
    onnx.save(model, os.path.join(tmp, "onnx", "model_quantized.onnx"),
              save_as_external_data=True, all_tensors_to_one_file=True,
              location="model_quantized.onnx.data", size_threshold=1024)
    eos = [tok.eos]
    write_json(os.path.join(tmp, "config.json"), hf_config(name, c, c["vocab"], tok, eos))
    write_json(os.path.join(tmp, "generation_config.json"), {"eos_token_id": eos[0]})
    write_json(os.path.join(tmp, "tokenizer.json"), tok.json())
    write_json(os.path.join(tmp, "tokenizer_config.json"),
               dict(tok.config(), model_max_length=c["positions"]))
    shutil.rmtree(d, ignore_errors=True)
    os.rename(tmp, d)
    print(f"{name}: {d}", flush=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--size":
        build_size(sys.argv[2], sys.argv[3])
        return
    names = sys.argv[2:] or list(FAMILIES)
    for name in names:
        build(name, FAMILIES[name])


if __name__ == "__main__":
    main()
