"""A decoder in the GroupQueryAttention form, written with onnx.helper (issue 43).

The same architecture as make_decoder_exports.py's Qwen2-style stand-ins (RMSNorm,
q/k/v projections with bias, RoPE, grouped KV heads, SwiGLU MLP, final norm, LM
head), but each layer's attention is one ONNX Runtime contrib op,
com.microsoft GroupQueryAttention (do_rotary=1, rotary_interleaved=0, with
cos_cache/sin_cache initializers), so the graph can be driven with past and
present sharing one preallocated buffer of max length per layer key/value
(bind the same OrtValue as past_key_values.L.key and present.L.key): no KV is
copied between steps.

Graph inputs:  input_ids int64 [B, S]
               seqlens_k int32 [B]            (total length - 1 per row)
               total_sequence_length int32 [] (the batch's largest total length)
               past_key_values.L.key/.value float32 [B, kv_heads, MAXLEN, head_dim]
Graph outputs: logits float32 [B, S, vocab]; present.L.key/.value (same shape as
               the pasts in share-buffer mode: [B, kv, max(MAXLEN, total), D]).

Written: <dir>/onnx/model.onnx (fp32) and model_quantized.onnx (int8, through
tools/train/quantize.py's rewrite), both with external data in one file, and
<dir>/gqa_config.json. The directory is built as <dir>.tmp and renamed into place.

  /usr/bin/python3 tools/testmodels/make_gqa_decoder.py --size tiny|qwen2-0.5b [--out DIR]

Default DIR: ${XDG_CACHE_HOME:-~/.cache}/anytime/standins/gqa-KEY/<size>, KEY a hash
of this file and quantize.py; prints the directory. Never writes into the repo.
Weights: qwen2-0.5b N(0, 0.02) with norms 1 and biases 0 (the timing stand-in,
like make_decoder_exports.py --size); tiny uses fan-in scaled weights, N(0, 1)
embeddings and N(0, 0.1) biases so its greedy decode has clear margins for the
correctness check (tools/testmodels/check_gqa_decoder.js).
"""
import argparse
import hashlib
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SIZES = {
    "tiny": dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=300,
                 theta=10000.0, eps=1e-6, positions=256, seed=7, init="sharp"),
    "qwen2-0.5b": dict(layers=24, hidden=896, heads=14, kv_heads=2, head_dim=64, ffn=4864,
                       vocab=151936, theta=1000000.0, eps=1e-6, positions=4096, seed=2,
                       init="normal002"),
}


def cache_key():
    h = hashlib.sha256()
    for p in (os.path.abspath(__file__), os.path.join(ROOT, "tools", "train", "quantize.py")):
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def default_dir(size):
    base = os.environ.get("ANYTIME_STANDIN_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "anytime", "standins")
    return os.path.join(base, "gqa-" + cache_key(), size)


def make_weights(c):
    """name -> float32 array, in the order the graph uses them."""
    rng = np.random.default_rng(c["seed"])
    H, F, V, D = c["hidden"], c["ffn"], c["vocab"], c["head_dim"]
    qd, kd = c["heads"] * D, c["kv_heads"] * D
    sharp = c["init"] == "sharp"

    def mat(k, n):  # [in, out] as MatMul's B
        s = 1.6 / np.sqrt(k) if sharp else 0.02
        return (rng.standard_normal((k, n), dtype=np.float32) * np.float32(s))

    def bias(n):
        return (rng.standard_normal(n, dtype=np.float32) * np.float32(0.1)) if sharp \
            else np.zeros(n, np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32) \
            if sharp else np.ones(n, np.float32)

    w = {}
    w["embed_tokens.weight"] = rng.standard_normal((V, H), dtype=np.float32) * np.float32(
        1.0 if sharp else 0.02)
    for i in range(c["layers"]):
        p = f"layers.{i}."
        w[p + "input_layernorm.weight"] = norm(H)
        w[p + "q_proj.weight"], w[p + "q_proj.bias"] = mat(H, qd), bias(qd)
        w[p + "k_proj.weight"], w[p + "k_proj.bias"] = mat(H, kd), bias(kd)
        w[p + "v_proj.weight"], w[p + "v_proj.bias"] = mat(H, kd), bias(kd)
        w[p + "o_proj.weight"] = mat(qd, H)
        w[p + "post_attention_layernorm.weight"] = norm(H)
        w[p + "gate_proj.weight"] = mat(H, F)
        w[p + "up_proj.weight"] = mat(H, F)
        w[p + "down_proj.weight"] = mat(F, H)
    w["norm.weight"] = norm(H)
    # tied values (like Qwen2-0.5B), but its own [hidden, vocab] initializer so
    # the quantiser turns the LM head into an int8 MatMul as in the standard export
    w["lm_head.weight"] = np.ascontiguousarray(w["embed_tokens.weight"].T)
    return w


def rope_cache(c):
    D = c["head_dim"]
    inv = 1.0 / (c["theta"] ** (np.arange(0, D, 2, dtype=np.float64) / D))
    f = np.arange(c["positions"], dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(f).astype(np.float32), np.sin(f).astype(np.float32)


def build_graph(c, w):
    nodes, inits = [], []
    L, H = c["layers"], c["hidden"]

    def init(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(op, ins, outs, name, domain=None, **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=name, domain=domain, **attrs))
        return outs[0] if len(outs) == 1 else outs

    for k, v in w.items():
        init(k, v)
    cos, sin = rope_cache(c)
    init("cos_cache", cos)
    init("sin_cache", sin)
    init("const_two", np.array(2.0, np.float32))
    init("const_one", np.array(1.0, np.float32))
    init("const_eps", np.array(c["eps"], np.float32))

    def rms(x, wname, tag):
        # the pattern torch exports for x * rsqrt(mean(x^2) + eps) * w
        p = node("Pow", [x, "const_two"], [tag + "/pow"], tag + "/Pow")
        m = node("ReduceMean", [p], [tag + "/mean"], tag + "/ReduceMean", axes=[-1], keepdims=1)
        a = node("Add", [m, "const_eps"], [tag + "/add"], tag + "/Add")
        s = node("Sqrt", [a], [tag + "/sqrt"], tag + "/Sqrt")
        r = node("Div", ["const_one", s], [tag + "/rsqrt"], tag + "/Div")
        y = node("Mul", [x, r], [tag + "/scaled"], tag + "/Mul")
        return node("Mul", [wname, y], [tag + "/out"], tag + "/Mul_w")

    x = node("Gather", ["embed_tokens.weight", "input_ids"], ["/embed/out"], "/embed/Gather")
    for i in range(L):
        p, t = f"layers.{i}.", f"/layers.{i}"
        h = rms(x, p + "input_layernorm.weight", t + "/input_layernorm")
        qkv = []
        for proj in ("q_proj", "k_proj", "v_proj"):
            mm = node("MatMul", [h, p + proj + ".weight"], [f"{t}/{proj}/mm"], f"{t}/{proj}/MatMul")
            qkv.append(node("Add", [mm, p + proj + ".bias"], [f"{t}/{proj}/out"], f"{t}/{proj}/Add"))
        attn, _, _ = node(
            "GroupQueryAttention",
            qkv + [f"past_key_values.{i}.key", f"past_key_values.{i}.value", "seqlens_k",
                   "total_sequence_length", "cos_cache", "sin_cache"],
            [f"{t}/attn/out", f"present.{i}.key", f"present.{i}.value"], f"{t}/attn/GroupQueryAttention",
            domain="com.microsoft", num_heads=c["heads"], kv_num_heads=c["kv_heads"], do_rotary=1,
            rotary_interleaved=0)
        o = node("MatMul", [attn, p + "o_proj.weight"], [f"{t}/o_proj/out"], f"{t}/o_proj/MatMul")
        x = node("Add", [x, o], [f"{t}/res1"], f"{t}/Add_res1")
        h2 = rms(x, p + "post_attention_layernorm.weight", t + "/post_attention_layernorm")
        g = node("MatMul", [h2, p + "gate_proj.weight"], [f"{t}/gate/out"], f"{t}/gate_proj/MatMul")
        u = node("MatMul", [h2, p + "up_proj.weight"], [f"{t}/up/out"], f"{t}/up_proj/MatMul")
        sg = node("Sigmoid", [g], [f"{t}/silu/sig"], f"{t}/silu/Sigmoid")
        silu = node("Mul", [g, sg], [f"{t}/silu/out"], f"{t}/silu/Mul")
        gu = node("Mul", [silu, u], [f"{t}/gu"], f"{t}/Mul_gu")
        d = node("MatMul", [gu, p + "down_proj.weight"], [f"{t}/down/out"], f"{t}/down_proj/MatMul")
        x = node("Add", [x, d], [f"{t}/res2"], f"{t}/Add_res2")
    h = rms(x, "norm.weight", "/norm")
    node("MatMul", [h, "lm_head.weight"], ["logits"], "/lm_head/MatMul")

    kv_shape = ["batch_size", c["kv_heads"], "max_sequence_length", c["head_dim"]]
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
           helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["batch_size"]),
           helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, [])]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                          ["batch_size", "sequence_length", c["vocab"]])]
    for i in range(L):
        for kv in ("key", "value"):
            ins.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kv}", TensorProto.FLOAT, kv_shape))
            outs.append(helper.make_tensor_value_info(f"present.{i}.{kv}", TensorProto.FLOAT, kv_shape))
    g = helper.make_graph(nodes, "gqa_decoder", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14),
                                            helper.make_opsetid("com.microsoft", 1)],
                          producer_name="anytime make_gqa_decoder.py")
    m.ir_version = 8
    return m


def build(size, d):
    sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
    import quantize
    c = SIZES[size]
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "onnx"))
    w = make_weights(c)
    print(f"{size}: {sum(a.size for a in w.values()) / 1e6:.1f} M parameters", flush=True)
    m = build_graph(c, w)
    del w
    fp32 = os.path.join(tmp, "onnx", "model.onnx")
    onnx.save(m, fp32, save_as_external_data=True, all_tensors_to_one_file=True,
              location="model.onnx.data", size_threshold=1024)
    del m
    m = onnx.load(fp32)  # the save moved the weights out of the in-memory model
    n = quantize.rewrite(m)
    print(f"{size}: int8 ({n} MatMul rewritten)", flush=True)
    onnx.save(m, os.path.join(tmp, "onnx", "model_quantized.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="model_quantized.onnx.data", size_threshold=1024)
    del m
    with open(os.path.join(tmp, "gqa_config.json"), "w") as f:
        json.dump(dict(c, size=size, maker="tools/testmodels/make_gqa_decoder.py",
                       key=cache_key()), f, indent=1)
        f.write("\n")
    shutil.rmtree(d, ignore_errors=True)
    os.rename(tmp, d)
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", required=True, choices=sorted(SIZES))
    ap.add_argument("--out", help="model directory (default: the cache, keyed by this file's hash)")
    ap.add_argument("--force", action="store_true", help="build even when the directory is complete")
    a = ap.parse_args()
    d = a.out or default_dir(a.size)
    if a.force or not os.path.isfile(os.path.join(d, "onnx", "model_quantized.onnx")):
        build(a.size, d)
    print(d)


if __name__ == "__main__":
    main()
