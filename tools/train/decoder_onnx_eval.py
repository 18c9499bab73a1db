"""onnx_eval.py (the project's numpy ONNX evaluator) extended with the few
operators the decoder's graphs add: Range, Split, Where, Equal, LessOrEqual,
And.  Erf is computed with torch.erf (float32, vectorised) instead of the
per-element math.erf, which is far too slow for decoder-sized activations.
Everything else (MatMulInteger exact, DynamicQuantizeLinear as in ONNX
Runtime) is onnx_eval's.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_eval  # noqa: E402


def _run(op, ins, at):
    if op == "Range":
        start, limit, delta = (np.asarray(v).item() for v in ins)
        return [np.arange(start, limit, delta, dtype=ins[0].dtype)]
    if op == "Split":
        axis = at.get("axis", 0)
        x = ins[0]
        if len(ins) > 1 and ins[1] is not None:
            sizes = [int(v) for v in ins[1]]
        elif "split" in at:
            sizes = [int(v) for v in at["split"]]
        else:
            raise NotImplementedError("Split without sizes")
        cuts = np.cumsum(sizes)[:-1]
        return list(np.split(x, cuts, axis=axis))
    if op == "Where":
        c, a, b = ins
        return [np.where(c, a, b).astype(np.result_type(a, b))]
    if op == "Equal":
        return [np.equal(ins[0], ins[1])]
    if op == "LessOrEqual":
        return [np.less_equal(ins[0], ins[1])]
    if op == "And":
        return [np.logical_and(ins[0], ins[1])]
    if op == "Erf":
        x = np.ascontiguousarray(ins[0], dtype=np.float32)
        return [torch.erf(torch.from_numpy(x)).numpy()]
    return onnx_eval._run(op, ins, at)


class Graph(onnx_eval.Graph):
    _op = staticmethod(_run)
