# tests/data/hf/make_embedder.py — derive tiny_embedder.onnx from
# tests/data/models/tiny_encoder.onnx: the same graph with its pooled output
# renamed "sentence_embedding" and the logits output dropped, so resolution
# and `anytime run` have an embedder to find. Run with Debian's python3-onnx:
#   /usr/bin/python3 tests/data/hf/make_embedder.py
import os
import onnx

here = os.path.dirname(os.path.abspath(__file__))
m = onnx.load(os.path.join(here, "..", "models", "tiny_encoder.onnx"))
for n in m.graph.node:
    n.output[:] = ["sentence_embedding" if o == "pooled" else o for o in n.output]
    n.input[:] = ["sentence_embedding" if i == "pooled" else i for i in n.input]
keep = [o for o in m.graph.output if o.name == "pooled"]
keep[0].name = "sentence_embedding"
del m.graph.output[:]
m.graph.output.extend(keep)
onnx.checker.check_model(m)
onnx.save(m, os.path.join(here, "tiny_embedder.onnx"))
