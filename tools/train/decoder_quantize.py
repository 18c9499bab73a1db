"""int8 copy of the decoder's ONNX graph.

1. quantize.py's rewrite, unchanged: every MatMul with a constant 2-D weight
   (the 16 block projections and the tied LM head lm_head [n_embd, vocab])
   becomes DynamicQuantizeLinear + MatMulInteger with per-column int8 weights.
2. The token embedding reads the same table (Gather(lm_head, ids, axis=1)), so
   quantize.py keeps the fp32 table for it.  This step points that Gather at
   the LM head's int8 table instead and rescales the gathered columns by their
   per-column scale:

       emb[:, b, s] = float(Wq[:, ids[b, s]]) * Ws[ids[b, s]]

   and drops the fp32 table, so the int8 file carries the table once (int8).
   The classifiers' graphs never take this path (their token table is already
   int8 and is not shared with a MatMul).

Run:  /usr/bin/python3 tools/train/decoder_quantize.py IN.onnx OUT.onnx
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quantize  # noqa: E402


def shared_tables(model):
    """{fp32 table name: MatMul base name} for every constant MatMul weight
    that a Gather also reads (found before the rewrite; the base name is the
    one quantize.rewrite gives its int8 initializers)."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    gathered = {n.input[0] for n in g.node if n.op_type == "Gather"}
    out = {}
    count = 0
    for n in g.node:
        if n.op_type == "MatMul" and len(n.input) == 2 and n.input[1] in inits \
                and n.input[0] not in inits:
            if n.input[1] in gathered:
                out[n.input[1]] = n.name or ("MatMul_%d" % count)
            count += 1
    return out


def share_int8_table(model, shared):
    g = model.graph
    if len(shared) != 1:
        raise SystemExit("decoder_quantize: expected one shared table, found %r" % shared)
    table, base = next(iter(shared.items()))
    wq, ws = base + "_Wq", base + "_Ws"
    new_nodes = []
    rewired = 0
    for n in g.node:
        if n.op_type == "Gather" and n.input[0] == table:
            axis = [a.i for a in n.attribute if a.name == "axis"]
            if axis != [1]:
                raise SystemExit("decoder_quantize: table Gather with axis %r" % axis)
            ids, out = n.input[1], n.output[0]
            b = n.name or "embed"
            new_nodes += [
                helper.make_node("Gather", [wq, ids], [b + "_q"], name=b + "_q", axis=1),
                helper.make_node("Cast", [b + "_q"], [b + "_qf"], name=b + "_cast",
                                 to=TensorProto.FLOAT),
                helper.make_node("Gather", [ws, ids], [b + "_s"], name=b + "_scale", axis=0),
                helper.make_node("Mul", [b + "_qf", b + "_s"], [out], name=b + "_dq"),
            ]
            rewired += 1
        else:
            new_nodes.append(n)
    del g.node[:]
    g.node.extend(new_nodes)
    keep = [t for t in g.initializer if t.name != table]
    del g.initializer[:]
    g.initializer.extend(keep)
    return rewired


def quantize_file(src, dst):
    m = onnx.load(src)
    shared = shared_tables(m)
    n = quantize.rewrite(m)
    e = share_int8_table(m, shared)
    onnx.checker.check_model(m)
    onnx.save(m, dst)
    return n, e


if __name__ == "__main__":
    n, e = quantize_file(sys.argv[1], sys.argv[2])
    print("rewrote %d MatMul nodes, %d embedding Gather(s) on the int8 table" % (n, e))
