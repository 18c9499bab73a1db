"""Model cards (models/<dir>/README.md) from models/training_results.json.
Regenerate without retraining:  /usr/bin/python3 tools/train/cards.py [models]
"""
import json
import os
import statistics
import sys

LICENCE = (
    "The training data is the Pang & Lee sentence-polarity corpus v1.0 (Rotten Tomatoes "
    "snippets, 2000 positive / 2000 negative) and the 1500 full movie reviews of the polarity "
    "dataset v2.0, both in the sample Debian's `python3-pattern` package ships. The pattern "
    "README says the corpora are for personal/research use and not part of the module's BSD "
    "licence, so the data is fetched at set-up (`tools/train/fetch_data.sh`) and never "
    "committed or redistributed. The weights here are our own, trained from scratch in this "
    "repository; treat them as research artefacts.")

PURPOSE = {
    "sentiment-large": "Binary sentiment classifier for short English movie-review sentences: the accurate, more expensive variant of the `sentiment` family.",
    "sentiment-small": "Binary sentiment classifier for short English movie-review sentences: the cheap variant of the `sentiment` family.",
    "embedding": "Sentence embedding model (mean pooling over `last_hidden_state`, then L2 normalisation) for feature extraction and similarity.",
}


def pct(x):
    return "%.2f%%" % (100 * x)


def mb(n):
    return "%.2f MB (%d bytes)" % (n / 1e6, n)


def card(name, s):
    r = s["models"][name]
    st = s["settings"]
    cfgname = "large" if name == "sentiment-large" else "small"
    arch = st[cfgname]
    runs = r["seed_runs"]
    tests = [x["test_acc"] for x in runs]
    L = []
    w = L.append
    w("# anytime `%s`\n" % name)
    w(PURPOSE[name] + "\n")
    w("Trained from scratch by `tools/train/train_all.sh` in this repository. BERT-style "
      "encoder (post-LayerNorm, GELU, learned absolute positions, no token types): "
      "%d layers, hidden %d, %d heads, FFN %d, vocabulary %d (WordPiece, uncased), "
      "`max_position_embeddings` %d (inputs longer than that must be truncated)."
      % (arch["layers"], arch["hidden"], arch["heads"], arch["ffn"], st["vocab_size"], st["max_len"]))
    if name == "embedding":
        w("\nThis model shares its weights with `sentiment-small`'s encoder (the classifier head "
          "is dropped); see *Embedding quality* for why.\n")
    w("\n## Files\n")
    w("| file | what |\n|---|---|")
    w("| `config.json` | Hugging Face BERT config (+ `anytime` block with training facts) |")
    w("| `tokenizer.json`, `vocab.txt`, `tokenizer_config.json`, `special_tokens_map.json` | WordPiece tokenizer, BERT-uncased pipeline, [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4 |")
    if name == "embedding":
        w("| `1_Pooling/config.json` | sentence-transformers pooling config: mean tokens |")
    w("| `onnx/model.onnx` | fp32 graph, opset 17, inputs `input_ids`, `attention_mask` int64 [batch, sequence], output %s |"
      % ("`logits` [batch, 2]" if name != "embedding" else "`last_hidden_state` [batch, sequence, %d]" % arch["hidden"]))
    w("| `onnx/model_quantized.onnx` | int8 graph made by `tools/train/quantize.py` (see docs/quantization.md) |")
    w("| `reference_outputs.json` | inputs and the outputs the pipeline computed, for the C test suite |")
    w("\nIn both graphs the token-embedding table is stored int8 with one scale per row "
      "(looked up, then scaled); everything else in `model.onnx` is fp32.\n")
    w("| file | size | sha256 |\n|---|---|---|")
    for k in ("onnx/model.onnx", "onnx/model_quantized.onnx"):
        w("| `%s` | %s | `%s` |" % (k, mb(r["sizes"][k]), r["sha256"][k]))
    w("\n## Data, split and training\n")
    w(LICENCE + "\n")
    w("Split (committed as indices in `tools/train/splits.json`, seed %d): 2800 train, "
      "400 validation, 800 test sentences, each balanced. The test split is never used for "
      "training, early stopping or model selection; `$ANYTIME_DATA_DIR/pang-lee/test.csv` "
      "holds it after `tools/train/fetch_data.sh`." % st["split_seed"])
    if name == "sentiment-large":
        rp = s["review_pretraining"]
        w("\nTraining: first %d steps (batch %d) of sentiment classification on sentences of "
          "the 1500 full reviews, each labelled with its review's polarity (weak labels, a "
          "different source from the test sentences; validation accuracy after this stage "
          "%s), then fine-tuning on the 2800 training sentences for %d epochs with seeds %s, "
          "AdamW lr %g, warm-up then linear decay, dropout 0.1; the epoch and seed with the "
          "best validation accuracy is kept."
          % (st["review_pretraining_steps"], st["batch"], pct(rp["val_acc"]), st["epochs"],
             st["large_seeds"], st["large_lr"]))
    else:
        w("\nTraining: %d epochs on the 2800 training sentences with seeds %s, AdamW lr %g, "
          "warm-up then linear decay, dropout 0.1; the epoch and seed with the best validation "
          "accuracy is kept. No pretraining." % (st["epochs"], st["small_seeds"], st["small_lr"]))
    w("\nCommand: `tools/train/train_all.sh` (all three model directories in one run: %.0f s "
      "wall on %s, torch %s, %d thread(s), %s). Selected seed: %d."
      % (s["wall_seconds"], s["host"], s["torch"], s["threads"], s["date"], r["selected_seed"]))
    if name != "embedding":
        w("\n## Accuracy on the 800 test sentences\n")
        w("| seed | best epoch | validation | test |\n|---|---|---|---|")
        for x in runs:
            w("| %d | %d | %s | %s |" % (x["seed"], x["best_epoch"], pct(x["val_acc"]), pct(x["test_acc"])))
        sd = statistics.pstdev(tests) if len(tests) > 1 else 0.0
        w("\nSeed spread (test, torch): mean %s, range %s to %s, population s.d. %.2f points. "
          "One standard error on 800 sentences is about 1.6 points." %
          (pct(statistics.mean(tests)), pct(min(tests)), pct(max(tests)), 100 * sd))
        w("\nSelected model, evaluated through the exported graphs (batch 1, numpy ONNX evaluator):\n")
        w("| graph | test accuracy |\n|---|---|")
        w("| torch, fp32 embedding table | %s |" % pct(r["test_acc_torch_fp32_table"]))
        w("| `onnx/model.onnx` | %s |" % pct(r["test_acc_fp32_onnx"]))
        w("| `onnx/model_quantized.onnx` | %s |" % pct(r["test_acc_int8_onnx"]))
        w("\nint8 vs fp32 on the test split (batch 1): prediction agreement %s, max |logit "
          "difference| %.4f, mean %.4f. fp32 graph vs torch: max |difference| %.2g."
          % (pct(r["int8_vs_fp32_agreement"]), r["int8_vs_fp32_max_logit_diff"],
             r["int8_vs_fp32_mean_logit_diff"], r["fp32_onnx_vs_torch_max_abs"]))
    else:
        c = r["candidates"]
        w("\n## Embedding quality\n")
        w("kNN sentiment agreement: embed (mean pool, L2-normalise) the 2800 training sentences "
          "as the index; each test sentence takes the majority label of its k nearest by "
          "cosine.\n")
        w("| encoder | kNN k=10 | k=1 | paraphrase > unrelated | mean cos paraphrase | mean cos unrelated | min cos identical |\n|---|---|---|---|---|---|---|")
        for k, v in c.items():
            p = v["paraphrases"]
            w("| %s | %s | %s | %d / %d | %.3f | %.3f | %.6f |" % (
                k, pct(v["test_knn10_agreement"]), pct(v["test_knn1_agreement"]),
                p["paraphrase_beats_unrelated"], p["items"], p["paraphrase_mean_cos"],
                p["unrelated_mean_cos"], p["identical_min_cos"]))
        w("\nShipped: `small_classifier_encoder`. The paraphrase set is "
          "`tools/train/paraphrases.json` (20 hand-written triples). Through the exported "
          "graphs: kNN k=10 agreement %s (fp32 graph), %s with int8-graph queries against the "
          "same index; int8 vs fp32 pooled-vector cosine min %.5f, mean %.5f; fp32 graph vs "
          "torch max |difference| %.2g."
          % (pct(r["test_knn10_agreement_fp32_onnx"]), pct(r["test_knn10_agreement_int8_queries"]),
             r["int8_vs_fp32_pooled_cosine_min"], r["int8_vs_fp32_pooled_cosine_mean"],
             r["fp32_onnx_vs_torch_max_abs"]))
        w("\nThe space is dominated by sentiment: unrelated sentences of the same polarity can "
          "score a cosine near 1 (the paraphrase triples that fail are of that kind; "
          "docs/models.md).")
        w("\nAlternatives measured in the design sweep (docs/models.md): the large classifier's "
          "encoder (review-pretrained) scores about a point higher on kNN but, as a third "
          "~20 MB copy of the large weights, would put models/ over its 40 MB budget; a contrastively trained (SimCSE-style) encoder scored far lower on kNN "
          "sentiment agreement.")
    w("\n## Latency on this host\n")
    w(PENDING)
    w("## Limits\n")
    w("Trained on a few thousand English movie-review sentences: it knows that domain and "
      "little else. Lower-cased, accents stripped. Not for decisions about people.")
    return "\n".join(L) + "\n"


def config(name, s):
    """Hugging Face BERT config.json for a model directory."""
    st = s["settings"]
    arch = st["large"] if name == "sentiment-large" else st["small"]
    clf = name != "embedding"
    r = s["models"][name]
    c = {
        "architectures": ["BertForSequenceClassification" if clf else "BertModel"],
        "model_type": "bert",
        "vocab_size": st["vocab_size"],
        "hidden_size": arch["hidden"],
        "num_hidden_layers": arch["layers"],
        "num_attention_heads": arch["heads"],
        "intermediate_size": arch["ffn"],
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": st["max_len"],
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
    acc = {}
    if clf:
        acc = {"test_accuracy_fp32": r["test_acc_fp32_onnx"], "test_accuracy_int8": r["test_acc_int8_onnx"],
               "int8_fp32_agreement": r["int8_vs_fp32_agreement"]}
    else:
        acc = {"test_knn10_sentiment_agreement": r["test_knn10_agreement_fp32_onnx"]}
    c["anytime"] = {"trained_by": "tools/train/train_all.sh", "date": s["date"],
                    "selected_seed": r["selected_seed"], "pooling": "mean",
                    "token_embeddings_stored": "int8 per-row scale (both graphs)",
                    "test_split": "tools/train/splits.json (800 sentences)", **acc}
    return c


LATENCY = "## Latency on this host\n"
PENDING = "pending: measured by bench (`anytime profile` through the engine).\n"


def _latency_section(text):
    """Body of the 'Latency on this host' section of an existing card, or None."""
    i = text.find(LATENCY)
    if i < 0:
        return None
    body = text[i + len(LATENCY):]
    j = body.find("\n## ")
    return body[:j + 1] if j >= 0 else body


def write_all(out, summary):
    for name in summary["models"]:
        path = os.path.join(out, name, "README.md")
        text = card(name, summary)
        # The latency section belongs to the bench: keep what it wrote there.
        if os.path.exists(path):
            with open(path) as f:
                old = _latency_section(f.read())
            new = _latency_section(text)
            if old and old.strip() and not old.strip().startswith("pending"):
                text = text.replace(LATENCY + new, LATENCY + old, 1)
        with open(path, "w") as f:
            f.write(text)
        with open(os.path.join(out, name, "config.json"), "w") as f:
            json.dump(config(name, summary), f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "models")
    with open(os.path.join(out, "training_results.json")) as f:
        write_all(out, json.load(f))
