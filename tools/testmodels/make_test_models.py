#!/usr/bin/python3
"""Build the tiny ONNX graphs the C test suite uses (tests/data/models/).

Deterministic (fixed numpy seed), so re-running produces byte-identical files.
Run with Debian's python3-onnx:  /usr/bin/python3 tools/testmodels/make_test_models.py

tiny_encoder.onnx  BERT-shaped interface: input_ids, attention_mask [batch, seq]
                   int64 -> logits [batch, 3] and pooled [batch, 16] (masked mean of
                   an embedding lookup, then a 2-layer MLP). Dynamic batch/seq.
fixed_scale.onnx   x float [2, 3] -> y = 2x + 1 (fixed shape, for shape checks).
tiny_embedder.onnx input_ids, attention_mask -> last_hidden_state [batch, seq, 16].
tiny/vocab.txt     a 100-entry BERT-style vocabulary for the tiny models, and
tiny/config.json   id2label for tiny_encoder's 3 classes (server tests).
"""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "models")
rng = np.random.default_rng(20261129)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def tiny_encoder():
    vocab, hid, mid, ncls = 100, 16, 32, 3
    inits = [
        const("emb", rng.normal(0, 1, (vocab, hid)).astype(np.float32)),
        const("w1", rng.normal(0, 0.5, (hid, mid)).astype(np.float32)),
        const("b1", rng.normal(0, 0.1, (mid,)).astype(np.float32)),
        const("w2", rng.normal(0, 0.5, (mid, ncls)).astype(np.float32)),
        const("b2", rng.normal(0, 0.1, (ncls,)).astype(np.float32)),
        const("ax1", np.array([1], dtype=np.int64)),
        const("ax2", np.array([2], dtype=np.int64)),
        const("eps", np.array(1e-6, dtype=np.float32)),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["tok"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "ax2"], ["mask3"]),
        helper.make_node("Mul", ["tok", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "ax1"], ["summed"], keepdims=0),
        helper.make_node("ReduceSum", ["maskf", "ax1"], ["count"], keepdims=1),
        helper.make_node("Max", ["count", "eps"], ["count_safe"]),
        helper.make_node("Div", ["summed", "count_safe"], ["pooled"]),
        helper.make_node("MatMul", ["pooled", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["h1b"]),
        helper.make_node("Tanh", ["h1b"], ["h1t"]),
        helper.make_node("MatMul", ["h1t", "w2"], ["h2"]),
        helper.make_node("Add", ["h2", "b2"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", ncls]),
         helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hid])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="anytime-testmodels", producer_version="1")
    model.ir_version = 8
    return model


def tiny_embedder():
    vocab, hid = 100, 16
    inits = [
        const("emb", rng.normal(0, 1, (vocab, hid)).astype(np.float32)),
        const("w", rng.normal(0, 0.5, (hid, hid)).astype(np.float32)),
        const("ax2", np.array([2], dtype=np.int64)),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["tok"], axis=0),
        helper.make_node("MatMul", ["tok", "w"], ["h"]),
        helper.make_node("Tanh", ["h"], ["ht"]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "ax2"], ["mask3"]),
        helper.make_node("Mul", ["ht", "mask3"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_embedder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", hid])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="anytime-testmodels", producer_version="1")
    model.ir_version = 8
    return model


def fixed_scale():
    nodes = [helper.make_node("Mul", ["x", "two"], ["x2"]),
             helper.make_node("Add", ["x2", "one"], ["y"])]
    graph = helper.make_graph(
        nodes, "fixed_scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [const("two", np.array(2.0, dtype=np.float32)),
         const("one", np.array(1.0, dtype=np.float32))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              producer_name="anytime-testmodels", producer_version="1")
    model.ir_version = 8
    return model


WORDS = ("the a an is was good bad great awful movie film plot actor acting story fun dull "
         "boring funny sad happy love hate best worst not very really quite too so and but or "
         "it this that of to in on with for as at by from i you he she we they me my your "
         "one two three time scene end ending character characters music script director "
         "comedy drama , . ! ? ' -").split()


def tiny_vocab():
    toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    for ch in "abcdefghijklmnopqrstuvwxyz":
        if len(toks) >= 100:
            break
        if ch not in toks:
            toks.append(ch)
    while len(toks) < 100:
        toks.append("##" + "abcdefghijklmnopqrstuvwxyz"[len(toks) % 26] + str(len(toks)))
    return toks[:100]


def main():
    os.makedirs(OUT, exist_ok=True)
    tiny = os.path.join(OUT, "tiny")
    os.makedirs(tiny, exist_ok=True)
    with open(os.path.join(tiny, "vocab.txt"), "w") as f:
        f.write("\n".join(tiny_vocab()) + "\n")
    with open(os.path.join(tiny, "config.json"), "w") as f:
        f.write('{"model_type": "bert", "max_position_embeddings": 64,\n'
                ' "id2label": {"0": "negative", "1": "neutral", "2": "positive"},\n'
                ' "label2id": {"negative": 0, "neutral": 1, "positive": 2}}\n')
    for name, m in (("tiny_encoder", tiny_encoder()), ("fixed_scale", fixed_scale()),
                    ("tiny_embedder", tiny_embedder())):
        onnx.checker.check_model(m)
        path = os.path.join(OUT, name + ".onnx")
        onnx.save(m, path)
        print("wrote", os.path.normpath(path), os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
