"""ONNX export of trained encoders in the Hugging Face export layout's shape:
inputs input_ids / attention_mask (int64, [batch, sequence]), output `logits`
[batch, 2] for classifiers or `last_hidden_state` [batch, sequence, hidden]
for the embedding model; dynamic batch and sequence axes; opset 17 (keeps
LayerNormalization as one op).

The token-embedding table is stored int8 with one scale per row in both the
fp32 and the int8 graph (Gather int8 rows, Cast, Gather scales, Mul): the
table is a lookup, not arithmetic, and this keeps models/ within its size
budget.  Everything else in model.onnx is fp32.
"""
import copy

import torch

import model as M

OPSET = 17


class _ExportEncoder(torch.nn.Module):
    def __init__(self, enc):
        super().__init__()
        self.enc = copy.deepcopy(enc).eval()
        self.enc.tok = M.Int8Table(enc.tok.weight)

    def forward(self, input_ids, attention_mask):
        return self.enc(input_ids, attention_mask)


class ExportClassifier(torch.nn.Module):
    def __init__(self, clf):
        super().__init__()
        self.body = _ExportEncoder(clf.enc)
        self.head = copy.deepcopy(clf.head).eval()

    def forward(self, input_ids, attention_mask):
        h = self.body(input_ids, attention_mask)
        return self.head(M.mean_pool(h, attention_mask))


class ExportHidden(torch.nn.Module):
    def __init__(self, enc):
        super().__init__()
        self.body = _ExportEncoder(enc)

    def forward(self, input_ids, attention_mask):
        return self.body(input_ids, attention_mask)


def export(module, path, output_name):
    module.eval()
    ids = torch.tensor([[2, 10, 11, 12, 3], [2, 13, 3, 0, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    dyn = {"input_ids": {0: "batch_size", 1: "sequence_length"},
           "attention_mask": {0: "batch_size", 1: "sequence_length"}}
    dyn[output_name] = {0: "batch_size"} if output_name == "logits" else \
        {0: "batch_size", 1: "sequence_length"}
    with torch.no_grad():
        torch.onnx.export(module, (ids, mask), path, input_names=["input_ids", "attention_mask"],
                          output_names=[output_name], dynamic_axes=dyn, opset_version=OPSET,
                          do_constant_folding=True)
    import onnx
    m = onnx.load(path)
    out = m.graph.output[0].type.tensor_type.shape.dim
    if output_name == "last_hidden_state":      # static hidden size, not a symbol
        out[2].Clear()
        out[2].dim_value = module.body.enc.cfg["hidden"]
    m.producer_name = "anytime tools/train"
    onnx.checker.check_model(m)
    onnx.save(m, path)
