"""The GPT-style decoder: pre-LayerNorm blocks built from nn.Linear (so the
int8 MatMul rewrite applies), learned position embeddings, exact (erf) GELU,
and an LM head tied to the token embedding.

One forward serves training, checking and export.  Its semantics are the
ones the C runtime relies on:

  * positions come only from position_ids;
  * past key/values are [batch, heads, past, head_dim]; present = past
    concatenated with this call's keys/values along axis 2;
  * attention_mask is [batch, past + seq]; query q (0..seq-1) may attend key
    k (0..past+seq-1) iff k <= past + q and attention_mask[b, k] == 1;
    other scores are replaced by MASK_VALUE (finite, so a fully masked row
    gives a uniform softmax, never NaN), and past = mask length - seq.

`ExportDecoder` wraps a trained model for ONNX export: the tied table is
stored once, transposed, as lm_head [n_embd, vocab]: the LM head is
MatMul(h, lm_head) (a constant 2-D MatMul the int8 rewrite turns into
MatMulInteger) and the embedding is Gather(lm_head, ids, axis=1) transposed
back, so neither file carries the table twice.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

MASK_VALUE = float(torch.finfo(torch.float32).min) / 2


class Config:
    def __init__(self, vocab_size=4096, n_positions=256, n_embd=256, n_layer=4, n_head=4,
                 n_inner=1024, layer_norm_epsilon=1e-5):
        self.vocab_size = vocab_size
        self.n_positions = n_positions
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_inner = n_inner
        self.layer_norm_epsilon = layer_norm_epsilon

    @property
    def head_dim(self):
        return self.n_embd // self.n_head

    def to_dict(self):
        return dict(self.__dict__)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.head_dim = cfg.head_dim
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)

    def _heads(self, t):
        # [b, s, E] -> [b, h, s, d]
        return t.reshape(t.shape[0], t.shape[1], self.n_head, self.head_dim).transpose(1, 2)

    def forward(self, x, allowed, past_k=None, past_v=None):
        e = x.shape[2]
        q, k, v = self.c_attn(x).split(e, dim=2)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        if past_k is not None:
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(self.head_dim))
        scores = torch.where(allowed, scores, torch.tensor(MASK_VALUE, dtype=scores.dtype))
        y = torch.matmul(torch.softmax(scores, dim=-1), v)
        y = y.transpose(1, 2)
        y = y.reshape(y.shape[0], y.shape[1], e)
        return self.c_proj(y), k, v


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, cfg.n_inner)
        self.act = nn.GELU()
        self.c_proj = nn.Linear(cfg.n_inner, cfg.n_embd)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.attn = Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.mlp = MLP(cfg)

    def forward(self, x, allowed, past_k=None, past_v=None):
        a, k, v = self.attn(self.ln_1(x), allowed, past_k, past_v)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, k, v


def allowed_mask(attention_mask, seq):
    """[b, 1, seq, T] bool: key k visible to query q iff k <= (T - seq) + q and
    attention_mask[b, k] == 1, with T = attention_mask.shape[1]."""
    t = attention_mask.shape[1]
    kpos = torch.arange(t, device=attention_mask.device)
    qpos = torch.arange(seq, device=attention_mask.device) + (t - seq)
    causal = kpos.unsqueeze(0) <= qpos.unsqueeze(1)                  # [seq, T]
    keep = attention_mask.unsqueeze(1).unsqueeze(2) == 1              # [b, 1, 1, T]
    return torch.logical_and(causal.unsqueeze(0).unsqueeze(0), keep)


class Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.n_positions, cfg.n_embd)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.reset_parameters()

    def reset_parameters(self):
        # GPT-2 initialisation: N(0, 0.02), residual projections scaled by
        # 1/sqrt(2 * n_layer), zero biases, unit LayerNorms.
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name or name.startswith("ln_"):
                nn.init.ones_(p)
            else:
                std = 0.02
                if name.endswith("c_proj.weight"):
                    std = 0.02 / math.sqrt(2 * self.cfg.n_layer)
                nn.init.normal_(p, mean=0.0, std=std)

    def embed(self, input_ids):
        return self.wte(input_ids)

    def head(self, h):
        return F.linear(h, self.wte.weight)

    def forward(self, input_ids, attention_mask=None, position_ids=None, past=None):
        """input_ids [b, s]; attention_mask [b, past + s] (default all ones);
        position_ids [b, s] (default past..past+s-1); past: list of n_layer
        (key, value) pairs or None.  Returns logits [b, s, V] and the list of
        present (key, value) pairs."""
        b, s = input_ids.shape[0], input_ids.shape[1]
        p = 0 if past is None else past[0][0].shape[2]
        if attention_mask is None:
            attention_mask = torch.ones(b, p + s, dtype=torch.long, device=input_ids.device)
        if position_ids is None:
            position_ids = torch.arange(p, p + s, device=input_ids.device).unsqueeze(0).expand(b, s)
        allowed = allowed_mask(attention_mask, s)
        x = self.embed(input_ids) + self.wpe(position_ids)
        present = []
        for i, blk in enumerate(self.h):
            pk, pv = (None, None) if past is None else past[i]
            x, k, v = blk(x, allowed, pk, pv)
            present.append((k, v))
        return self.head(self.ln_f(x)), present


class ExportDecoder(nn.Module):
    """Decoder with the Hugging Face "with past" ONNX signature:
    forward(input_ids, attention_mask, position_ids, k0, v0, k1, v1, ...)
    -> (logits, present k0, v0, k1, v1, ...)."""

    def __init__(self, model):
        super().__init__()
        self.m = model
        self.lm_head = nn.Parameter(model.wte.weight.detach().t().contiguous())

    def forward(self, input_ids, attention_mask, position_ids, *past_flat):
        m = self.m
        s = input_ids.shape[1]
        past = [(past_flat[2 * i], past_flat[2 * i + 1]) for i in range(len(m.h))]
        allowed = allowed_mask(attention_mask, s)
        x = self.lm_head[:, input_ids].permute(1, 2, 0) + m.wpe(position_ids)
        outs = []
        for i, blk in enumerate(m.h):
            x, k, v = blk(x, allowed, past[i][0], past[i][1])
            outs += [k, v]
        logits = torch.matmul(m.ln_f(x), self.lm_head)
        return (logits, *outs)


def input_names(n_layer):
    names = ["input_ids", "attention_mask", "position_ids"]
    for i in range(n_layer):
        names += ["past_key_values.%d.key" % i, "past_key_values.%d.value" % i]
    return names


def output_names(n_layer):
    names = ["logits"]
    for i in range(n_layer):
        names += ["present.%d.key" % i, "present.%d.value" % i]
    return names


def dynamic_axes(n_layer):
    ax = {"input_ids": {0: "batch", 1: "seq"},
          "attention_mask": {0: "batch", 1: "total_seq"},
          "position_ids": {0: "batch", 1: "seq"},
          "logits": {0: "batch", 1: "seq"}}
    for i in range(n_layer):
        for kind in ("key", "value"):
            ax["past_key_values.%d.%s" % (i, kind)] = {0: "batch", 2: "past_seq"}
            ax["present.%d.%s" % (i, kind)] = {0: "batch", 2: "total_seq"}
    return ax


def export_onnx(model, path, opset=17):
    """Trace with batch 2, seq 5, past 3 (all different, so no size is baked in)."""
    cfg = model.cfg
    wrapper = ExportDecoder(model).eval()
    b, s, p = 2, 5, 3
    ids = torch.randint(1, cfg.vocab_size, (b, s))
    mask = torch.ones(b, p + s, dtype=torch.long)
    pos = torch.arange(p, p + s).unsqueeze(0).expand(b, s).contiguous()
    past = []
    for _ in range(cfg.n_layer):
        past += [torch.randn(b, cfg.n_head, p, cfg.head_dim),
                 torch.randn(b, cfg.n_head, p, cfg.head_dim)]
    with torch.no_grad():
        torch.onnx.export(wrapper, (ids, mask, pos, *past), path,
                          input_names=input_names(cfg.n_layer),
                          output_names=output_names(cfg.n_layer),
                          dynamic_axes=dynamic_axes(cfg.n_layer),
                          opset_version=opset, do_constant_folding=True)
