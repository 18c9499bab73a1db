"""float64 numpy reference for tools/testmodels/make_gqa_decoder.py's graphs.

Reads the fp32 weights back from DIR/onnx/model.onnx (and the config from
DIR/gqa_config.json), then for each prompt decodes STEPS tokens greedily,
recomputing the whole sequence at every step (no cache): RMSNorm, q/k/v with
bias, RoPE (rotate-half, the graph's cos/sin caches' theta), grouped KV heads,
causal softmax(q k^T / sqrt(D)), SwiGLU, final norm, LM head. Prints JSON:
  {"prompts": [{"input_ids": [...], "tokens": [...], "logits": [[vocab]...],
                "margins": [...]}]}
with the last position's logits at each step (step 0 = after the prompt).

  /usr/bin/python3 tools/testmodels/check_gqa_reference.py DIR STEPS 'PROMPTS_JSON'
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(d):
    m = onnx.load(os.path.join(d, "onnx", "model.onnx"))
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    with open(os.path.join(d, "gqa_config.json")) as f:
        c = json.load(f)
    return c, w


def rms(x, g, eps):
    return g * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))


def rope(x, pos, theta):
    # x [heads, T, D]; rotate-half over the whole head
    D = x.shape[-1]
    inv = 1.0 / (theta ** (np.arange(0, D, 2, dtype=np.float64) / D))
    f = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(f), np.cos(f)], -1)
    sin = np.concatenate([np.sin(f), np.sin(f)], -1)
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return x * cos + np.concatenate([-x2, x1], -1) * sin


def forward(c, w, ids):
    """logits [T, vocab] of one sequence, float64."""
    T, D, nh, nkv = len(ids), c["head_dim"], c["heads"], c["kv_heads"]
    pos = np.arange(T, dtype=np.float64)
    x = w["embed_tokens.weight"][np.array(ids)]
    causal = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(c["layers"]):
        p = f"layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"], c["eps"])
        q = (h @ w[p + "q_proj.weight"] + w[p + "q_proj.bias"]).reshape(T, nh, D).transpose(1, 0, 2)
        k = (h @ w[p + "k_proj.weight"] + w[p + "k_proj.bias"]).reshape(T, nkv, D).transpose(1, 0, 2)
        v = (h @ w[p + "v_proj.weight"] + w[p + "v_proj.bias"]).reshape(T, nkv, D).transpose(1, 0, 2)
        q, k = rope(q, pos, c["theta"]), rope(k, pos, c["theta"])
        rep = nh // nkv
        k, v = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)  # head j uses kv head j // rep
        s = q @ k.transpose(0, 2, 1) / np.sqrt(D) + causal
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(T, nh * D)
        x = x + o @ w[p + "o_proj.weight"]
        h = rms(x, w[p + "post_attention_layernorm.weight"], c["eps"])
        g = h @ w[p + "gate_proj.weight"]
        x = x + ((g / (1.0 + np.exp(-g))) * (h @ w[p + "up_proj.weight"])) @ w[p + "down_proj.weight"]
    return rms(x, w["norm.weight"], c["eps"]) @ w["lm_head.weight"]


def main():
    d, steps, prompts = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    c, w = load(d)
    out = []
    for ids in prompts:
        seq, toks, logits, margins = list(ids), [], [], []
        for _ in range(steps):
            lg = forward(c, w, seq)[-1]
            top = np.sort(lg)[-2:]
            t = int(np.argmax(lg))
            toks.append(t)
            logits.append(lg.tolist())
            margins.append(float(top[1] - top[0]))
            seq.append(t)
        out.append(dict(input_ids=ids, tokens=toks, logits=logits, margins=margins))
    json.dump({"prompts": out}, sys.stdout)


if __name__ == "__main__":
    main()
