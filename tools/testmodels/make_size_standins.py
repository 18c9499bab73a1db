#!/usr/bin/python3
"""Build random-weight encoders of real model sizes, in the Hugging Face
export layout anytime serves unmodified, for benchmarks (issue 18).

Our own models are tiny (a 1.5 ms large variant), so HTTP, JSON and thread
hand-offs weigh as much as inference there. These stand-ins have the shapes
of the models users serve, so the same benchmarks can be run where inference
dominates. Random weights (fixed seeds): their answers mean nothing, their
cost is that of the real thing.

  SIZE      layers hidden heads intermediate vocab positions  fp32 file
  minilm       6    384    12      1536      30522    512     ~90 MB
  bertbase    12    768    12      3072      30522    512     ~440 MB
  tiny         2     32     2        64       8000    128     (for the test suite)

For each SIZE two directories are written under OUT:

  SIZE-cls/  BertForSequenceClassification, 2 labels (negative/positive),
             mean pooling in the graph, output `logits` [batch, 2]
  SIZE-emb/  sentence-transformers embedder: modules.json (Transformer,
             Pooling, Normalize), 1_Pooling/config.json (mean tokens),
             sentence_bert_config.json; the graph outputs last_hidden_state

each with config.json, tokenizer.json / vocab.txt / tokenizer_config.json /
special_tokens_map.json, onnx/model.onnx (fp32) and onnx/model_quantized.onnx
(int8 by our own rewrite, tools/train/quantize.py).

The graphs are the project's own encoder (tools/train/model.py: post-LN BERT,
GELU, learned positions, no token types) exported by tools/train/export.py's
`export` and quantised by tools/train/quantize.py — the same code that made
models/sentiment-*, reused, not copied. Unlike models/sentiment-*, the token
table is kept fp32 (as in a real export), so the files have the real sizes.

The tokenizer is the project's WordPiece vocabulary (models/sentiment-large,
8000 pieces, lower-cased) padded with "[unusedN]" pieces to the vocab size:
texts tokenise exactly as with models/sentiment-large (realistic lengths), and
the embedding table has the real number of rows.

Never committed (BERT-base is ~440 MB fp32): tools/testmodels/size_standins.sh
builds them on demand into a cache keyed by a hash of this script and the
code it uses, and skips what is already there.

  /usr/bin/python3 tools/testmodels/make_size_standins.py OUT [SIZE...]
"""
import json
import os
import shutil
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
import export as E  # noqa: E402
import model as M  # noqa: E402
import quantize as Q  # noqa: E402
import wordpiece as W  # noqa: E402

VOCAB_SRC = os.path.join(ROOT, "models", "sentiment-large", "vocab.txt")

SIZES = {
    # name: layers, hidden, heads, intermediate, vocab, positions, st max_seq_length, seed
    "minilm": dict(layers=6, hidden=384, heads=12, ffn=1536, vocab=30522, max_pos=512,
                   st_len=256, seed=18_001),
    "bertbase": dict(layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, max_pos=512,
                     st_len=512, seed=18_002),
    "tiny": dict(layers=2, hidden=32, heads=2, ffn=64, vocab=8000, max_pos=128,
                 st_len=128, seed=18_003),
}

# The classifier head's bias. With random weights the two logits are nearly
# tied for some sentences, and int8 activations quantised per batch (padding)
# legitimately move a logit by ~0.005 — enough to flip a near-tie, which
# `anytime profile` reports as the serving path disagreeing with a plain
# session (it did: 2 of 800 for minilm int8). A margin of 2 on top of the
# random part (about +-0.3 wide) makes every answer "positive", clearly; the
# answers mean nothing anyway, the cost is what these models are for.
HEAD_BIAS = [-1.0, 1.0]


class _Body(torch.nn.Module):
    """Holds the encoder where export.export looks for its config
    (module.body.enc.cfg) when it fixes last_hidden_state's hidden dim."""
    def __init__(self, enc):
        super().__init__()
        self.enc = enc


class Fp32Classifier(torch.nn.Module):
    """export.ExportClassifier without the int8 token table."""
    def __init__(self, clf):
        super().__init__()
        self.body = _Body(clf.enc)
        self.head = clf.head

    def forward(self, input_ids, attention_mask):
        h = self.body.enc(input_ids, attention_mask)
        return self.head(M.mean_pool(h, attention_mask))


class Fp32Hidden(torch.nn.Module):
    """export.ExportHidden without the int8 token table."""
    def __init__(self, enc):
        super().__init__()
        self.body = _Body(enc)

    def forward(self, input_ids, attention_mask):
        return self.body.enc(input_ids, attention_mask)


def vocab_for(n):
    with open(VOCAB_SRC, encoding="utf-8") as f:
        v = [t for t in f.read().split("\n") if t]
    if len(v) > n:
        raise SystemExit("vocab size %d is below the source vocabulary's %d" % (n, len(v)))
    v += ["[unused%d]" % i for i in range(n - len(v))]
    return v


def config_json(s, clf):
    c = {
        "architectures": ["BertForSequenceClassification" if clf else "BertModel"],
        "model_type": "bert",
        "vocab_size": s["vocab"],
        "hidden_size": s["hidden"],
        "num_hidden_layers": s["layers"],
        "num_attention_heads": s["heads"],
        "intermediate_size": s["ffn"],
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": s["max_pos"],
        "type_vocab_size": 1,
        "layer_norm_eps": 1e-12,
        "initializer_range": 0.02,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
    }
    if clf:
        c.update({"id2label": {"0": "negative", "1": "positive"},
                  "label2id": {"negative": 0, "positive": 1},
                  "problem_type": "single_label_classification",
                  "classifier_pooling": "mean"})
    c["anytime"] = {"standin": "random weights (seed %d), tools/testmodels/make_size_standins.py"
                    % s["seed"], "pooling": "mean"}
    return c


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def build(out, size, kind):
    s = SIZES[size]
    name = "%s-%s" % (size, kind)
    final = os.path.join(out, name)
    tmp = os.path.join(out, ".tmp-%s-%d" % (name, os.getpid()))
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "onnx"))
    t0 = time.time()
    # one seed per size: the cls and emb graphs share the encoder's weights
    torch.manual_seed(s["seed"])
    enc = M.Encoder(s["vocab"], s["hidden"], s["layers"], s["heads"], s["ffn"], s["max_pos"])
    clf = M.Classifier(enc, 2)
    with torch.no_grad():  # a clear margin: see HEAD_BIAS
        clf.head.bias.copy_(torch.tensor(HEAD_BIAS))
    f32 = os.path.join(tmp, "onnx", "model.onnx")
    i8 = os.path.join(tmp, "onnx", "model_quantized.onnx")
    if kind == "cls":
        E.export(Fp32Classifier(clf), f32, "logits")
    else:
        E.export(Fp32Hidden(enc), f32, "last_hidden_state")
    n = Q.quantize_file(f32, i8)
    W.write_hf_files(tmp, vocab_for(s["vocab"]), s["max_pos"])
    write_json(os.path.join(tmp, "config.json"), config_json(s, kind == "cls"))
    if kind == "emb":
        write_json(os.path.join(tmp, "modules.json"), [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])
        os.makedirs(os.path.join(tmp, "1_Pooling"))
        write_json(os.path.join(tmp, "1_Pooling", "config.json"), {
            "word_embedding_dimension": s["hidden"], "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False})
        write_json(os.path.join(tmp, "sentence_bert_config.json"),
                   {"max_seq_length": s["st_len"], "do_lower_case": False})
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    print("%s: %d MatMuls quantised, fp32 %.1f MB, int8 %.1f MB, %.0f s" % (
        name, n, os.path.getsize(os.path.join(final, "onnx", "model.onnx")) / 1e6,
        os.path.getsize(os.path.join(final, "onnx", "model_quantized.onnx")) / 1e6,
        time.time() - t0), file=sys.stderr)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    out = sys.argv[1]
    sizes = sys.argv[2:] or ["minilm", "bertbase"]
    for size in sizes:
        if size not in SIZES:
            print("unknown size '%s' (one of %s)" % (size, ", ".join(SIZES)), file=sys.stderr)
            return 2
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for size in sizes:
        for kind in ("cls", "emb"):
            build(out, size, kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())
