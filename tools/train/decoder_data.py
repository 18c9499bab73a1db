"""The decoder's corpus: the 1500 full Pang & Lee movie reviews, split once
into 1350 training and 150 held-out reviews.

Corpus file: usr/share/doc/python3-pattern/test/corpora/polarity-en-pang&lee1.csv
inside Debian's python3-pattern (fetch_data.sh unpacks it).  The split is
committed as 0-based row indices in decoder_split.json (with the file's
sha256), drawn once by `--regenerate`: per label, random.Random(20250301)
shuffles the row indices and the first 75 go to held-out.  The held-out
reviews are never used for the tokenizer, for training or for any choice.

Writes $ANYTIME_DATA_DIR/pang-lee-reviews/{train,heldout}.csv (header
`label,text`, 0 = negative, 1 = positive, RFC 4180 quoting, rows in index
order; text = field 2 with surrounding whitespace stripped, the reviews' inner
" \\n" line breaks kept) and reviews.json ({"train": [text...], "heldout":
[text...]}, the same texts for the node tokenizer script).  Idempotent.

Run:  /usr/bin/python3 tools/train/decoder_data.py [--data-dir DIR] [--regenerate]
"""
import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import data  # noqa: E402

SPLIT = os.path.join(HERE, "decoder_split.json")
SEED = 20250301
N_HELDOUT_PER_LABEL = 75


def make_split(rows):
    rng = random.Random(SEED)
    parts = {"train": [], "heldout": []}
    for lab in (0, 1):
        idx = [i for i, (l, _) in enumerate(rows) if l == lab]
        rng.shuffle(idx)
        parts["heldout"] += idx[:N_HELDOUT_PER_LABEL]
        parts["train"] += idx[N_HELDOUT_PER_LABEL:]
    for k in parts:
        parts[k].sort()
    return parts


def load_parts(ddir):
    """{'train': [(label, text)], 'heldout': [...]} from the committed split."""
    path = data.corpus_path(ddir, data.REVIEWS)
    with open(SPLIT) as f:
        sp = json.load(f)
    got = data.sha256_file(path)
    if got != sp["corpus_sha256"]:
        raise SystemExit("corpus %s has sha256 %s, %s expects %s"
                         % (path, got, SPLIT, sp["corpus_sha256"]))
    rows = data.read_labelled(path)
    return {k: [rows[i] for i in sp[k]] for k in ("train", "heldout")}


def _write_if_changed(path, blob):
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == blob:
                return
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, path)


def out_dir(ddir):
    return os.path.join(ddir, "pang-lee-reviews")


def write_files(ddir):
    parts = load_parts(ddir)
    out = out_dir(ddir)
    os.makedirs(out, exist_ok=True)
    for k, rows in parts.items():
        _write_if_changed(os.path.join(out, k + ".csv"), data.csv_bytes(rows))
    # The same texts as one JSON document for the node tokenizer script.
    doc = {k: [t for _, t in rows] for k, rows in parts.items()}
    _write_if_changed(os.path.join(out, "reviews.json"),
                      json.dumps(doc, ensure_ascii=True).encode("ascii"))
    return {k: len(v) for k, v in parts.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir")
    ap.add_argument("--regenerate", action="store_true",
                    help="rewrite decoder_split.json from the fixed seed")
    a = ap.parse_args()
    ddir = data.data_dir(a.data_dir)
    if a.regenerate:
        path = data.corpus_path(ddir, data.REVIEWS)
        rows = data.read_labelled(path)
        parts = make_split(rows)
        doc = {
            "corpus": "Pang & Lee movie-review polarity, 1500 full reviews "
                      "(sample shipped in Debian python3-pattern)",
            "corpus_file": data.CORPUS_DIR + "/" + data.REVIEWS,
            "corpus_sha256": data.sha256_file(path),
            "rows": len(rows),
            "index_base": "0-based data rows of corpus_file in file order (no header row)",
            "labels": {"0": "negative (file label -1)", "1": "positive (file label 1)"},
            "text": "field 2 with leading/trailing whitespace stripped",
            "seed": SEED,
            "method": "per label: random.Random(seed).shuffle of the row indices, "
                      "first 75 held-out, rest train",
            "counts": {k: len(v) for k, v in parts.items()},
        }
        doc.update(parts)
        with open(SPLIT, "w") as f:
            json.dump(doc, f, indent=None, separators=(",", ":"))
            f.write("\n")
    counts = write_files(ddir)
    print("decoder data in %s: %s" % (out_dir(ddir), counts))


if __name__ == "__main__":
    sys.exit(main())
