"""A small numpy evaluator for the ONNX graphs this project exports and
quantises (there is no onnxruntime for Python on Debian 12).

It covers exactly the operators that export.py and quantize.py emit and
fails loudly on any other.  Float operators compute in float32 like ONNX
Runtime's CPU kernels; DynamicQuantizeLinear follows ONNX Runtime's
parameter computation (range widened to include 0, scale = range / 255,
zero point and values rounded half to even, saturated to uint8) and
MatMulInteger is exact integer arithmetic, so an int8 graph's outputs here are
the outputs ONNX Runtime should give up to float32 rounding of the non-integer
operators.
"""
import math

import numpy as np
import onnx
from onnx import numpy_helper

_erf = np.vectorize(math.erf, otypes=[np.float64])

_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_,
           11: np.float64}


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def dynamic_quantize_linear(x):
    x = x.astype(np.float32)
    mn = np.float32(min(float(x.min()), 0.0))
    mx = np.float32(max(float(x.max()), 0.0))
    scale = np.float32(1.0) if mx == mn else np.float32((mx - mn) / np.float32(255.0))
    izp = np.float32(np.float32(0.0) - mn / scale)
    zp = np.float32(np.rint(np.clip(izp, np.float32(0.0), np.float32(255.0))))
    q = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8)
    return q, np.array(scale, dtype=np.float32), np.array(zp, dtype=np.uint8)


def _matmul_integer(a, b, azp=None, bzp=None):
    a = a.astype(np.float64) - (0 if azp is None else azp.astype(np.float64))
    b = b.astype(np.float64) - (0 if bzp is None else bzp.astype(np.float64))
    y = np.matmul(a, b)              # exact: every partial sum < 2**53
    return np.rint(y).astype(np.int32)


def _run(op, ins, at):
    f32 = np.float32
    if op == "Identity":
        return [ins[0]]
    if op == "Constant":
        return [numpy_helper.to_array(at["value"])]
    if op == "Shape":
        return [np.array(ins[0].shape, dtype=np.int64)]
    if op == "Gather":
        return [np.take(ins[0], ins[1].astype(np.int64), axis=at.get("axis", 0))]
    if op == "Unsqueeze":
        y = ins[0]
        for ax in sorted(int(a) % (y.ndim + len(ins[1])) for a in ins[1]):
            y = np.expand_dims(y, ax)
        return [y]
    if op == "Cast":
        return [ins[0].astype(_DTYPES[at["to"]])]
    if op in ("Add", "Sub", "Mul", "Div"):
        a, b = ins
        if op == "Add":
            y = a + b
        elif op == "Sub":
            y = a - b
        elif op == "Mul":
            y = a * b
        else:
            y = a / b if a.dtype.kind == "f" else a // b
        return [y.astype(np.result_type(a, b))]
    if op == "Concat":
        return [np.concatenate(ins, axis=at["axis"])]
    if op == "Reshape":
        shape = [int(s) for s in ins[1]]
        shape = [ins[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return [ins[0].reshape(shape)]
    if op == "Transpose":
        return [np.transpose(ins[0], at.get("perm"))]
    if op == "MatMul":
        return [np.matmul(ins[0], ins[1]).astype(f32)]
    if op == "Gemm":
        a, b = ins[0], ins[1]
        if at.get("transA", 0):
            a = a.T
        if at.get("transB", 0):
            b = b.T
        y = f32(at.get("alpha", 1.0)) * (a @ b)
        if len(ins) > 2:
            y = y + f32(at.get("beta", 1.0)) * ins[2]
        return [y.astype(f32)]
    if op == "LayerNormalization":
        x, g = ins[0], ins[1]
        ax = at.get("axis", -1)
        eps = f32(at.get("epsilon", 1e-5))
        mu = x.mean(axis=ax, keepdims=True, dtype=f32)
        d = x - mu
        var = (d * d).mean(axis=ax, keepdims=True, dtype=f32)
        y = d / np.sqrt(var + eps) * g
        if len(ins) > 2:
            y = y + ins[2]
        return [y.astype(f32)]
    if op == "Softmax":
        ax = at.get("axis", -1)
        e = np.exp(ins[0] - ins[0].max(axis=ax, keepdims=True))
        return [(e / e.sum(axis=ax, keepdims=True, dtype=f32)).astype(f32)]
    if op == "Erf":
        return [_erf(ins[0]).astype(f32)]
    if op == "ReduceSum":
        axes = tuple(int(a) for a in ins[1]) if len(ins) > 1 else None
        return [ins[0].sum(axis=axes, keepdims=bool(at.get("keepdims", 1)), dtype=ins[0].dtype)]
    if op == "Slice":
        data, starts, ends = ins[0], ins[1], ins[2]
        axes = ins[3] if len(ins) > 3 else range(len(starts))
        steps = ins[4] if len(ins) > 4 else [1] * len(starts)
        sl = [slice(None)] * data.ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            sl[int(a)] = slice(int(s), int(e), int(st))
        return [data[tuple(sl)]]
    if op == "Clip":
        y = ins[0]
        if len(ins) > 1 and ins[1] is not None:
            y = np.maximum(y, ins[1])
        if len(ins) > 2 and ins[2] is not None:
            y = np.minimum(y, ins[2])
        return [y]
    if op == "DynamicQuantizeLinear":
        return list(dynamic_quantize_linear(ins[0]))
    if op == "MatMulInteger":
        return [_matmul_integer(*ins)]
    raise NotImplementedError("onnx_eval: operator %s" % op)


class Graph:
    def __init__(self, path):
        self.model = onnx.load(path)
        g = self.model.graph
        self.consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        self.nodes = [(n.op_type, list(n.input), list(n.output), _attrs(n)) for n in g.node]
        self.outputs = [o.name for o in g.output]
        self.ops = sorted({n.op_type for n in g.node})

    # the operator table; a subclass that knows more operators replaces it
    _op = staticmethod(_run)

    def run(self, feeds):
        env = dict(self.consts)
        env.update(feeds)
        for op, ins, outs, at in self.nodes:
            vals = [env[i] if i else None for i in ins]
            for name, v in zip(outs, self._op(op, vals, at)):
                env[name] = v
        return [env[o] for o in self.outputs]
