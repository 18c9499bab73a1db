# bench/cold_start/make_standin.py OUT_DIR — a stand-in model family for the
# cold-start benchmark while the project's trained models (models/) are not
# there: the same encoder architecture as tools/train/model.py with random
# weights (start-up time does not depend on the weights' values), exported the
# way the training scripts export (opset 17, dynamic batch and sequence):
#   OUT_DIR/onnx/model.onnx        4 layers, H=256, FFN 1024 ("large", fp32)
#   OUT_DIR/onnx/model_small.onnx  2 layers, H=128, FFN 512  ("small", fp32)
# plus config.json (2 labels) and vocab.txt (22855 pieces, the pruned BERT
# vocabulary size). Run with Debian's python3-torch: /usr/bin/python3.
import json
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tools", "train"))
import model as M  # noqa: E402

out = sys.argv[1]
os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
VOCAB, MAXPOS = 22855, 128
torch.manual_seed(0)
for name, (layers, hidden, ffn) in {"model": (4, 256, 1024), "model_small": (2, 128, 512)}.items():
    enc = M.Encoder(VOCAB, hidden, layers, 4, ffn, MAXPOS, dropout=0.0)
    net = M.Classifier(enc, n_labels=2).eval()
    ids = torch.randint(5, VOCAB, (1, 16))
    mask = torch.ones_like(ids)
    torch.onnx.export(net, (ids, mask), os.path.join(out, "onnx", name + ".onnx"),
                      input_names=["input_ids", "attention_mask"], output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                    "attention_mask": {0: "batch", 1: "seq"},
                                    "logits": {0: "batch"}},
                      opset_version=17)
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump({"architectures": ["BertForSequenceClassification"], "model_type": "bert",
               "hidden_size": 256, "max_position_embeddings": MAXPOS,
               "id2label": {"0": "negative", "1": "positive"}}, f, indent=2)
with open(os.path.join(out, "vocab.txt"), "w") as f:
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words += ["w%d" % i for i in range(VOCAB - len(words))]
    f.write("\n".join(words) + "\n")
