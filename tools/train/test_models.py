"""Consistency test for the committed models (no corpus, no torch needed):
each ONNX file's sha256 matches its reference_outputs.json, our numpy
evaluator reproduces the recorded outputs within the file's tolerance, and
tokenizer.json / vocab.txt / config.json agree with each other.

Run: /usr/bin/python3 tools/train/test_models.py [models]   (prints 'N passed, N failed')
"""
import hashlib
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import onnx_eval  # noqa: E402


def check_dir(d):
    fails = []
    ref = json.load(open(os.path.join(d, "reference_outputs.json")))
    cfg = json.load(open(os.path.join(d, "config.json")))
    tok = json.load(open(os.path.join(d, "tokenizer.json")))
    vocab = open(os.path.join(d, "vocab.txt"), encoding="utf-8").read().split("\n")[:-1]
    if len(vocab) != cfg["vocab_size"] or tok["model"]["vocab"] != {t: i for i, t in enumerate(vocab)}:
        fails.append("vocab.txt, tokenizer.json and config.json disagree")
    for m in ref["models"]:
        path = os.path.join(d, m["path"])
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != m["sha256"]:
                fails.append("%s: sha256 differs from reference_outputs.json" % m["path"])
                continue
        g = onnx_eval.Graph(path)
        for c, want in zip(ref["cases"], m["outputs"]):
            n = len(c["input_ids"][0])
            if n > cfg["max_position_embeddings"]:
                fails.append("case longer than max_position_embeddings")
            y = g.run({"input_ids": np.array(c["input_ids"], dtype=np.int64),
                       "attention_mask": np.array(c["attention_mask"], dtype=np.int64)})[0]
            if "logits" in want:
                got, exp = y, np.array(want["logits"])
            else:
                got = np.concatenate([y[0].mean(axis=0), y[0, 0, :8]])
                exp = np.concatenate([np.array(want["pooled_mean"][0]),
                                      np.array(want["last_hidden_state_0_0_first8"])])
            # our own evaluator must reproduce its own numbers far inside any tolerance
            if np.abs(got - exp).max() > min(m["tolerance"], 1e-5):
                fails.append("%s: case of %d pieces off by %.3g" % (m["path"], n, np.abs(got - exp).max()))
    return fails


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "models")
    passed = failed = 0
    for name in ("sentiment-large", "sentiment-small", "embedding"):
        fails = check_dir(os.path.join(root, name))
        for f in fails:
            print("FAIL %s: %s" % (name, f))
        if fails:
            failed += 1
        else:
            passed += 1
            print("ok   %s" % name)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
