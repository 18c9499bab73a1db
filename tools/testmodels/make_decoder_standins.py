#!/usr/bin/python3
"""Build random-weight decoder stand-ins in the layouts of users' exports
(tests/data/models/decoders/), for tests/unit/test_decoder_standins.c.

Each directory has config.json, generation_config.json, tokenizer.json,
tokenizer_config.json and onnx/model.onnx with the ONNX signature of a
Hugging Face "with past" export (inputs input_ids, attention_mask,
[position_ids,] past_key_values.{i}.key/.value; outputs logits,
present.{i}.key/.value), and reference.json: for a few prompts, the
last position's logits and a 12-token greedy continuation computed here in
numpy by recomputing the whole sequence at every step (no cache), the way
an independent implementation would.

  gpt2-nopos/  GPT-2: learned absolute positions, LayerNorm, fused-width
               multi-head attention, tanh-GELU MLP, LM head tied to the token
               embedding. No position_ids input: the graph counts positions
               from the past's length, as older Optimum GPT-2 exports do.
  qwen2-gqa/   Qwen2: RMSNorm, rotary positions from position_ids,
               grouped-query attention (4 query heads share 2 key/value
               heads) with q/k/v biases, head_dim 8 while hidden/heads = 4,
               SwiGLU MLP, untied LM head, two EOS ids in
               generation_config.json.
  llama-mqa/   Llama/Mistral: the same blocks without q/k/v biases, one
               key/value head for 4 query heads (multi-query), head_dim 4 =
               hidden / heads, one EOS id.

The tokenizer is a 300-entry cut of models/decoder's byte-level BPE (ids
0..299, with the merges whose parts and result all lie in it).
Deterministic (fixed seeds); run with Debian's python3-onnx:
  /usr/bin/python3 tools/testmodels/make_decoder_standins.py
"""
import json
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "models", "decoders")
SRC_TOK = os.path.join(ROOT, "models", "decoder", "tokenizer.json")
V = 300
STEPS = 12
# prompt ids (0 = <|endoftext|>): different lengths, so a batched decode
# step holds sequences with different past lengths
PROMPTS = [[0, 84, 71, 68], [0, 83, 72, 261, 83, 264, 285, 86, 72],
           [0, 40, 289, 71, 82, 81, 72, 264, 259, 262, 276, 67, 80, 273, 88, 64]]


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


class G:
    """A small graph builder: node(op, inputs, **attrs) returns the output name."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def w(self, name, arr):
        self.inits.append(const(name, arr))
        return name

    def node(self, op, inputs, **attrs):
        self.n += 1
        out = f"{op.lower()}_{self.n}"
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def named(self, op, inputs, out, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out


def gelu_tanh(g, x):
    c = g.w(f"gc{g.n}", np.array(np.sqrt(2 / np.pi), np.float32))
    k = g.w(f"gk{g.n}", np.array(0.044715, np.float32))
    half = g.w(f"gh{g.n}", np.array(0.5, np.float32))
    one = g.w(f"go{g.n}", np.array(1.0, np.float32))
    x3 = g.node("Mul", [g.node("Mul", [x, x]), x])
    inner = g.node("Mul", [c, g.node("Add", [x, g.node("Mul", [k, x3])])])
    return g.node("Mul", [g.node("Mul", [half, x]), g.node("Add", [one, g.node("Tanh", [inner])])])


def rms_norm(g, x, wname, eps):
    e = g.w(f"eps{g.n}", np.array(eps, np.float32))
    ms = g.node("ReduceMean", [g.node("Mul", [x, x])], axes=[-1], keepdims=1)
    return g.node("Mul", [g.node("Div", [x, g.node("Sqrt", [g.node("Add", [ms, e])])]), wname])


def heads(g, x, n, d):
    """[B, S, n*d] -> [B, n, S, d]"""
    r = g.node("Reshape", [x, g.w(f"hs{g.n}", np.array([0, 0, n, d], np.int64))])
    return g.node("Transpose", [r], perm=[0, 2, 1, 3])


def rotate(g, x, cos, sin, d):
    """x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]"""
    x1 = g.node("Slice", [x, g.w(f"r0{g.n}", np.array([0], np.int64)),
                          g.w(f"r1{g.n}", np.array([d // 2], np.int64)),
                          g.w(f"ra{g.n}", np.array([-1], np.int64))])
    x2 = g.node("Slice", [x, g.w(f"r2{g.n}", np.array([d // 2], np.int64)),
                          g.w(f"r3{g.n}", np.array([d], np.int64)),
                          g.w(f"rb{g.n}", np.array([-1], np.int64))])
    rh = g.node("Concat", [g.node("Neg", [x2]), x1], axis=-1)
    return g.node("Add", [g.node("Mul", [x, cos]), g.node("Mul", [rh, sin])])


def build_graph(kind, w, cfg):
    """The ONNX graph of one stand-in (kind "gpt2" or "rope": Llama/Qwen2 blocks)."""
    L, H, KV, D, HID = cfg["layers"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["hidden"]
    g = G()
    for k, v in w.items():
        g.w(k, v)
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"])]
    if kind == "rope":
        ins.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"]))
    for i in range(L):
        for t in ("key", "value"):
            ins.append(helper.make_tensor_value_info(f"past_key_values.{i}.{t}", TensorProto.FLOAT,
                                                     ["batch", KV, "past", D]))
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", V])]
    for i in range(L):
        for t in ("key", "value"):
            outs.append(helper.make_tensor_value_info(f"present.{i}.{t}", TensorProto.FLOAT,
                                                      ["batch", KV, "total", D]))
    x = g.node("Gather", ["wte", "input_ids"], axis=0)
    # lengths: P from the past, S from the ids
    past_len = g.node("Gather", [g.node("Shape", ["past_key_values.0.key"]),
                                 g.w("i2", np.array(2, np.int64))], axis=0)
    seq_len = g.node("Gather", [g.node("Shape", ["input_ids"]), g.w("i1", np.array(1, np.int64))], axis=0)
    total = g.node("Add", [past_len, seq_len])
    if kind == "gpt2":
        pos = g.node("Range", [past_len, total, g.w("one64", np.array(1, np.int64))])  # [S]: the past's length onwards
        x = g.node("Add", [x, g.node("Gather", ["wpe", pos], axis=0)])
    else:
        pf = g.node("Cast", ["position_ids"], to=TensorProto.FLOAT)
        fr = g.node("Mul", [g.node("Unsqueeze", [pf, g.w("ax_m1", np.array([-1], np.int64))]), "inv_freq"])
        emb = g.node("Concat", [fr, fr], axis=-1)  # [B, S, D]
        ax1 = g.w("ax_1", np.array([1], np.int64))
        cos = g.node("Unsqueeze", [g.node("Cos", [emb]), ax1])  # [B, 1, S, D]
        sin = g.node("Unsqueeze", [g.node("Sin", [emb]), ax1])
    # mask [B, 1, S, T]: key t visible to query s iff t <= P + s and attention_mask[b, t]
    ones = g.node("ConstantOfShape", [g.node("Concat", [g.node("Unsqueeze", [seq_len, g.w("ax0a", np.array([0], np.int64))]),
                                                       g.node("Unsqueeze", [total, g.w("ax0b", np.array([0], np.int64))])], axis=0)],
                  value=helper.make_tensor("v1", TensorProto.FLOAT, [1], [1.0]))
    causal = g.node("Cast", [g.node("Trilu", [ones, past_len], upper=0)], to=TensorProto.BOOL)
    am = g.node("Cast", [g.node("Unsqueeze", ["attention_mask", g.w("ax12", np.array([1, 2], np.int64))])],
                to=TensorProto.BOOL)
    vis = g.node("And", [causal, am])
    neg = g.w("neg", np.array(-1e9, np.float32))
    scale = g.w("scale", np.array(1 / np.sqrt(D), np.float32))
    for i in range(L):
        p = f"l{i}."
        if kind == "gpt2":
            h = g.node("LayerNormalization", [x, p + "ln1.w", p + "ln1.b"], axis=-1, epsilon=1e-5)
        else:
            h = rms_norm(g, x, p + "ln1.w", 1e-6)
        def proj(wn, bn, n):
            y = g.node("MatMul", [h, p + wn])
            return heads(g, g.node("Add", [y, p + bn]) if cfg["qkv_bias"] else y, n, D)
        q, k, v = proj("wq", "bq", H), proj("wk", "bk", KV), proj("wv", "bv", KV)
        if kind == "rope":
            q, k = rotate(g, q, cos, sin, D), rotate(g, k, cos, sin, D)
        kall = g.named("Concat", [f"past_key_values.{i}.key", k], f"present.{i}.key", axis=2)
        vall = g.named("Concat", [f"past_key_values.{i}.value", v], f"present.{i}.value", axis=2)
        if KV != H:  # each key/value head serves H/KV query heads
            rep = H // KV
            ax2 = g.w(f"ax2_{i}", np.array([2], np.int64))
            shp = g.w(f"shp_{i}", np.array([0, H, -1, D], np.int64))
            kall = g.node("Reshape", [g.node("Concat", [g.node("Unsqueeze", [kall, ax2])] * rep, axis=2), shp])
            vall = g.node("Reshape", [g.node("Concat", [g.node("Unsqueeze", [vall, ax2])] * rep, axis=2), shp])
        sc = g.node("Mul", [g.node("MatMul", [q, g.node("Transpose", [kall], perm=[0, 1, 3, 2])]), scale])
        att = g.node("Softmax", [g.node("Where", [vis, sc, neg])], axis=-1)
        o = g.node("MatMul", [att, vall])  # [B, H, S, D]
        o = g.node("Reshape", [g.node("Transpose", [o], perm=[0, 2, 1, 3]),
                               g.w(f"os{i}", np.array([0, 0, H * D], np.int64))])
        o = g.node("MatMul", [o, p + "wo"])
        if kind == "gpt2":
            o = g.node("Add", [o, p + "bo"])
        x = g.node("Add", [x, o])
        if kind == "gpt2":
            h2 = g.node("LayerNormalization", [x, p + "ln2.w", p + "ln2.b"], axis=-1, epsilon=1e-5)
            m = gelu_tanh(g, g.node("Add", [g.node("MatMul", [h2, p + "w1"]), p + "b1"]))
            m = g.node("Add", [g.node("MatMul", [m, p + "w2"]), p + "b2"])
        else:
            h2 = rms_norm(g, x, p + "ln2.w", 1e-6)
            gt = g.node("MatMul", [h2, p + "wg"])
            m = g.node("Mul", [g.node("Mul", [gt, g.node("Sigmoid", [gt])]), g.node("MatMul", [h2, p + "wu"])])
            m = g.node("MatMul", [m, p + "wd"])
        x = g.node("Add", [x, m])
    if kind == "gpt2":
        x = g.node("LayerNormalization", [x, "lnf.w", "lnf.b"], axis=-1, epsilon=1e-5)
        g.named("MatMul", [x, g.node("Transpose", ["wte"], perm=[1, 0])], "logits")
    else:
        x = rms_norm(g, x, "lnf.w", 1e-6)
        g.named("MatMul", [x, "lm_head"], "logits")
    graph = helper.make_graph(g.nodes, f"{kind}-standin", ins, outs, g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="anytime tools/testmodels")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def weights(kind, rng, cfg):
    L, H, KV, D, HID, F = (cfg["layers"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"],
                           cfg["hidden"], cfg["ffn"])
    n = lambda *s, sd=0.5: rng.normal(0, sd, s).astype(np.float32)
    w = {"wte": n(V, HID, sd=1.0)}
    if kind == "gpt2":
        w["wpe"] = n(cfg["positions"], HID, sd=0.5)
        w["lnf.w"], w["lnf.b"] = 1 + n(HID, sd=0.1), n(HID, sd=0.1)
    else:
        w["inv_freq"] = (1.0 / (10000 ** (np.arange(0, D, 2, dtype=np.float32) / D))).astype(np.float32)
        w["lnf.w"], w["lm_head"] = 1 + n(HID, sd=0.1), n(HID, V, sd=1.0)
    for i in range(L):
        p = f"l{i}."
        w[p + "ln1.w"], w[p + "ln2.w"] = 1 + n(HID, sd=0.1), 1 + n(HID, sd=0.1)
        w[p + "wq"], w[p + "wk"], w[p + "wv"] = n(HID, H * D), n(HID, KV * D), n(HID, KV * D)
        if cfg["qkv_bias"]:
            w[p + "bq"], w[p + "bk"], w[p + "bv"] = n(H * D, sd=0.1), n(KV * D, sd=0.1), n(KV * D, sd=0.1)
        w[p + "wo"] = n(H * D, HID, sd=0.3)
        if kind == "gpt2":
            w[p + "ln1.b"], w[p + "ln2.b"] = n(HID, sd=0.1), n(HID, sd=0.1)
            w[p + "bo"] = n(HID, sd=0.1)
            w[p + "w1"], w[p + "b1"] = n(HID, F), n(F, sd=0.1)
            w[p + "w2"], w[p + "b2"] = n(F, HID, sd=0.3), n(HID, sd=0.1)
        else:
            w[p + "wg"], w[p + "wu"], w[p + "wd"] = n(HID, F), n(HID, F), n(F, HID, sd=0.3)
    return w


# ---- the numpy reference: the whole sequence at every step, no cache ----

def np_ln(x, wt, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * wt + b


def np_rms(x, wt):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * wt


def np_forward(kind, w, cfg, ids):
    """Logits [n, V] of one sequence, positions 0..n-1."""
    L, H, KV, D = cfg["layers"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    n = len(ids)
    x = w["wte"][ids].astype(np.float64)
    pos = np.arange(n)
    if kind == "gpt2":
        x = x + w["wpe"][pos]
    else:
        fr = pos[:, None] * w["inv_freq"][None, :].astype(np.float64)
        emb = np.concatenate([fr, fr], -1)
        cos, sin = np.cos(emb), np.sin(emb)

        def rot(t):  # t [heads, n, D]
            rh = np.concatenate([-t[..., D // 2:], t[..., :D // 2]], -1)
            return t * cos + rh * sin
    causal = np.tril(np.ones((n, n), bool))
    for i in range(L):
        p = f"l{i}."
        h = np_ln(x, w[p + "ln1.w"], w[p + "ln1.b"]) if kind == "gpt2" else np_rms(x, w[p + "ln1.w"])
        b = (lambda name: w[p + name]) if cfg["qkv_bias"] else (lambda name: 0.0)
        q = (h @ w[p + "wq"] + b("bq")).reshape(n, H, D).transpose(1, 0, 2)
        k = (h @ w[p + "wk"] + b("bk")).reshape(n, KV, D).transpose(1, 0, 2)
        v = (h @ w[p + "wv"] + b("bv")).reshape(n, KV, D).transpose(1, 0, 2)
        if kind == "rope":
            q, k = rot(q), rot(k)
        k, v = np.repeat(k, H // KV, axis=0), np.repeat(v, H // KV, axis=0)
        sc = q @ k.transpose(0, 2, 1) / np.sqrt(D)
        sc = np.where(causal, sc, -1e9)
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        att = sc / sc.sum(-1, keepdims=True)
        o = (att @ v).transpose(1, 0, 2).reshape(n, H * D) @ w[p + "wo"]
        if kind == "gpt2":
            o = o + w[p + "bo"]
        x = x + o
        if kind == "gpt2":
            h2 = np_ln(x, w[p + "ln2.w"], w[p + "ln2.b"])
            a = h2 @ w[p + "w1"] + w[p + "b1"]
            a = 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))
            m = a @ w[p + "w2"] + w[p + "b2"]
        else:
            h2 = np_rms(x, w[p + "ln2.w"])
            gt = h2 @ w[p + "wg"]
            m = (gt / (1 + np.exp(-gt)) * (h2 @ w[p + "wu"])) @ w[p + "wd"]
        x = x + m
    if kind == "gpt2":
        return np_ln(x, w["lnf.w"], w["lnf.b"]) @ w["wte"].T
    return np_rms(x, w["lnf.w"]) @ w["lm_head"]


def reference(kind, w, cfg):
    out, worst_margin = [], np.inf
    for ids in PROMPTS:
        seq = list(ids)
        last = np_forward(kind, w, cfg, seq)[-1]
        cont = []
        for _ in range(STEPS):
            row = np_forward(kind, w, cfg, seq)[-1]
            top = np.sort(row)[-2:]
            worst_margin = min(worst_margin, top[1] - top[0])
            t = int(np.argmax(row))
            cont.append(t)
            seq.append(t)
        out.append({"input_ids": ids, "last_logits": [round(float(v), 6) for v in last],
                    "continuation_ids": cont})
    return out, float(worst_margin)


def tokenizer():
    """models/decoder's byte-level BPE cut to ids < V."""
    t = json.load(open(SRC_TOK))
    vocab = {k: i for k, i in t["model"]["vocab"].items() if i < V}
    merges = [m for m in t["model"]["merges"]
              if (m if isinstance(m, list) else m.split(" "))[0] in vocab
              and (m if isinstance(m, list) else m.split(" "))[1] in vocab
              and "".join(m if isinstance(m, list) else m.split(" ")) in vocab]
    t["model"]["vocab"], t["model"]["merges"] = vocab, merges
    return t


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def build(name, kind, seed, cfg, hf_config, eos):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "onnx"))
    rng = np.random.default_rng(seed)
    w = weights(kind, rng, cfg)
    onnx.save(build_graph(kind, w, cfg), os.path.join(d, "onnx", "model.onnx"))
    ref, margin = reference(kind, w, cfg)
    # a greedy step whose two best logits nearly tie could go either way in
    # float32: refuse to record such a reference
    assert margin > 1e-3, f"{name}: greedy margin {margin} too small; change the seed"
    write_json(os.path.join(d, "config.json"), hf_config)
    write_json(os.path.join(d, "generation_config.json"), {"eos_token_id": eos, "do_sample": False})
    write_json(os.path.join(d, "tokenizer.json"), tokenizer())
    write_json(os.path.join(d, "tokenizer_config.json"),
               {"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>",
                "eos_token": "<|endoftext|>", "add_bos_token": False,
                "model_max_length": cfg["positions"]})
    write_json(os.path.join(d, "reference.json"),
               {"model": name, "kind": kind,
                "notes": "numpy, float64, the whole sequence recomputed at every greedy step "
                         "(argmax), positions 0..n-1; tools/testmodels/make_decoder_standins.py",
                "layers": cfg["layers"], "kv_heads": cfg["kv_heads"], "head_dim": cfg["head_dim"],
                "position_ids": kind != "gpt2", "eos_ids": eos if isinstance(eos, list) else [eos],
                "smallest_greedy_margin": round(margin, 6), "prompts": ref})
    print(f"{name}: greedy margin {margin:.4f}")


def main():
    gpt2 = {"layers": 2, "heads": 2, "kv_heads": 2, "head_dim": 8, "hidden": 16, "ffn": 32,
            "positions": 64, "qkv_bias": True}
    build("gpt2-nopos", "gpt2", 11, gpt2,
          {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": V,
           "n_positions": 64, "n_embd": 16, "n_layer": 2, "n_head": 2, "bos_token_id": 0,
           "eos_token_id": 0, "tie_word_embeddings": True}, 0)
    qwen = {"layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 8, "hidden": 16, "ffn": 24,
            "positions": 128, "qkv_bias": True}
    build("qwen2-gqa", "rope", 12, qwen,
          {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": V,
           "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 8, "max_position_embeddings": 128,
           "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
           "bos_token_id": 0, "eos_token_id": 0}, [0, 5])
    llama = {"layers": 2, "heads": 4, "kv_heads": 1, "head_dim": 4, "hidden": 16, "ffn": 40,
             "positions": 96, "qkv_bias": False}
    build("llama-mqa", "rope", 13, llama,
          {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V,
           "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 1, "max_position_embeddings": 96, "rope_theta": 10000.0,
           "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "bos_token_id": 0,
           "eos_token_id": 0}, 0)


if __name__ == "__main__":
    main()
