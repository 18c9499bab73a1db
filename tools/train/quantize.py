"""Our dynamic int8 quantisation: a graph rewrite with the onnx package.

Every MatMul whose second input is a constant 2-D fp32 initializer W [K, N]
becomes

    X --DynamicQuantizeLinear--> Xq (uint8), Xs (scale), Xz (zero point)
    Wq = round(W / Ws) as int8, Ws[n] = max|W[:, n]| / 127   (per column, symmetric)
    Y  = Cast<float>(MatMulInteger(Xq, Wq, Xz)) * (Xs * Ws)

which is the pattern ONNX Runtime fuses into DynamicQuantizeMatMul /
MatMulIntegerToFloat.  Other nodes are untouched (the bias Add follows as
before; the classifier's Gemm stays fp32; the token table is already int8).

Run:  /usr/bin/python3 tools/train/quantize.py IN.onnx OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantize_weight(w):
    w = w.astype(np.float32)
    scale = (np.abs(w).max(axis=0) / 127.0).astype(np.float32)
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def rewrite(model):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    used_elsewhere = {}
    for n in g.node:
        for i in n.input:
            used_elsewhere[i] = used_elsewhere.get(i, 0) + 1
    new_nodes = []
    drop = set()
    count = 0
    for n in g.node:
        w = inits.get(n.input[1]) if n.op_type == "MatMul" and len(n.input) == 2 else None
        if w is None or w.data_type != TensorProto.FLOAT or len(w.dims) != 2 \
                or n.input[0] in inits:
            new_nodes.append(n)
            continue
        arr = numpy_helper.to_array(w)
        q, s = quantize_weight(arr)
        base = n.name or ("MatMul_%d" % count)
        qn, sn = base + "_Wq", base + "_Ws"
        g.initializer.append(numpy_helper.from_array(q, qn))
        g.initializer.append(numpy_helper.from_array(s, sn))
        if used_elsewhere.get(w.name, 0) <= 1:
            drop.add(w.name)
        x = n.input[0]
        xq, xs, xz = base + "_Xq", base + "_Xs", base + "_Xz"
        yi, yf, sc = base + "_Yi32", base + "_Yf", base + "_scale"
        new_nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [xq, xs, xz], name=base + "_dql"),
            helper.make_node("MatMulInteger", [xq, qn, xz], [yi], name=base + "_mmi"),
            helper.make_node("Cast", [yi], [yf], name=base + "_cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [xs, sn], [sc], name=base + "_scale_mul"),
            helper.make_node("Mul", [yf, sc], [n.output[0]], name=base + "_out_mul"),
        ]
        count += 1
    del g.node[:]
    g.node.extend(new_nodes)
    keep = [t for t in g.initializer if t.name not in drop]
    del g.initializer[:]
    g.initializer.extend(keep)
    return count


def quantize_file(src, dst):
    m = onnx.load(src)
    n = rewrite(m)
    onnx.checker.check_model(m)
    onnx.save(m, dst)
    return n


if __name__ == "__main__":
    print("rewrote %d MatMul nodes" % quantize_file(sys.argv[1], sys.argv[2]))
