#!/usr/bin/python3
"""Build the tiny ONNX graphs the C test suite uses (tests/data/models/).

Deterministic (fixed numpy seed), so re-running produces byte-identical files.
Run with Debian's python3-onnx:  /usr/bin/python3 tools/testmodels/make_test_models.py

tiny_encoder.onnx  BERT-shaped interface: input_ids, attention_mask [batch, seq]
                   int64 -> logits [batch, 3] and pooled [batch, 16] (masked mean of
                   an embedding lookup, then a 2-layer MLP). Dynamic batch/seq.
fixed_scale.onnx   x float [2, 3] -> y = 2x + 1 (fixed shape, for shape checks).
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


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, m in (("tiny_encoder", tiny_encoder()), ("fixed_scale", fixed_scale())):
        onnx.checker.check_model(m)
        path = os.path.join(OUT, name + ".onnx")
        onnx.save(m, path)
        print("wrote", os.path.normpath(path), os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
