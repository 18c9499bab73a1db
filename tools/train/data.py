"""Corpus access, the committed train/val/test split, and the CSV files.

The Pang & Lee sentence-polarity corpus ships inside Debian's python3-pattern
package (fetch_data.sh downloads and unpacks it).  This module reads it, checks
it against the sha256 recorded in splits.json, and materialises
$ANYTIME_DATA_DIR/pang-lee/{train,val,test}.csv (header `label,text`,
0 = negative, 1 = positive, RFC 4180 quoting).

The split is committed as row indices (0-based data rows of the corpus file, in
file order) so that any tool - the C `anytime eval`, a load generator - can
rebuild exactly the same test set.  `--regenerate` recreates splits.json from
the fixed seed; it is never needed in normal use.

Run:  /usr/bin/python3 tools/train/data.py [--data-dir DIR] [--regenerate]
"""
import argparse
import csv
import hashlib
import io
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITS = os.path.join(HERE, "splits.json")
CORPUS_DIR = "usr/share/doc/python3-pattern/test/corpora"
SENTENCES = "polarity-en-pang&lee2.csv"   # 4000 sentences (label 1/-1)
REVIEWS = "polarity-en-pang&lee1.csv"     # 1500 full reviews (label 1/-1)
SPLIT_SEED = 20240601
N_TEST = 800
N_VAL = 400


def data_dir(arg=None):
    if arg:
        return arg
    d = os.environ.get("ANYTIME_DATA_DIR")
    if d:
        return d
    return os.path.join(os.path.expanduser("~"), ".cache", "anytime", "data")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def corpus_path(ddir, name=SENTENCES):
    return os.path.join(ddir, "pattern", CORPUS_DIR, name)


def read_labelled(path):
    """Rows of the pattern polarity CSV as (label 0/1, text) in file order.

    The file starts with a UTF-8 BOM and every text ends with " \\n"; the
    surrounding whitespace is stripped, nothing else is changed."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    out = []
    for i, r in enumerate(rows):
        if len(r) != 2 or r[0] not in ("1", "-1"):
            raise ValueError("%s: row %d is malformed: %r" % (path, i, r[:2]))
        out.append((1 if r[0] == "1" else 0, r[1].strip()))
    return out


def make_split(rows, seed=SPLIT_SEED):
    """Stratified deterministic split: equal label balance in every part."""
    rng = random.Random(seed)
    parts = {"train": [], "val": [], "test": []}
    for lab in (0, 1):
        idx = [i for i, (l, _) in enumerate(rows) if l == lab]
        rng.shuffle(idx)
        nt, nv = N_TEST // 2, N_VAL // 2
        parts["test"] += idx[:nt]
        parts["val"] += idx[nt:nt + nv]
        parts["train"] += idx[nt + nv:]
    for k in parts:
        parts[k].sort()
    return parts


def load_split():
    with open(SPLITS) as f:
        return json.load(f)


def split_rows(ddir):
    """{'train': [(label, text)], 'val': ..., 'test': ...} from the committed split."""
    path = corpus_path(ddir)
    sp = load_split()
    got = sha256_file(path)
    if got != sp["corpus_sha256"]:
        raise SystemExit("corpus %s has sha256 %s, splits.json expects %s"
                         % (path, got, sp["corpus_sha256"]))
    rows = read_labelled(path)
    return {k: [rows[i] for i in sp[k]] for k in ("train", "val", "test")}


def read_reviews(ddir):
    """The 1500 full reviews' texts (tokenizer training, MLM text)."""
    return [t for _, t in read_labelled(corpus_path(ddir, REVIEWS))]


def review_sentences(ddir, min_words=4):
    """(review label, sentence) for every line of the 1500 full reviews with at
    least `min_words` words: weakly labelled in-domain text (a different
    source from the 4000 sentences, so it never overlaps the test split)."""
    out = []
    for lab, text in read_labelled(corpus_path(ddir, REVIEWS)):
        for line in text.split("\n"):
            line = line.strip()
            if len(line.split()) >= min_words:
                out.append((lab, line))
    return out


def csv_bytes(rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(["label", "text"])
    for lab, text in rows:
        w.writerow([lab, text])
    return buf.getvalue().encode("utf-8")


def write_csvs(ddir):
    parts = split_rows(ddir)
    out = os.path.join(ddir, "pang-lee")
    os.makedirs(out, exist_ok=True)
    for k, rows in parts.items():
        data = csv_bytes(rows)
        p = os.path.join(out, k + ".csv")
        if os.path.exists(p):
            with open(p, "rb") as f:
                if f.read() == data:
                    continue
        tmp = p + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, p)
    return {k: len(v) for k, v in parts.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir")
    ap.add_argument("--regenerate", action="store_true",
                    help="rewrite splits.json from the fixed seed")
    a = ap.parse_args()
    ddir = data_dir(a.data_dir)
    if a.regenerate:
        path = corpus_path(ddir)
        rows = read_labelled(path)
        parts = make_split(rows)
        doc = {
            "corpus": "Pang & Lee sentence polarity v1.0 (sample shipped in Debian python3-pattern)",
            "corpus_file": CORPUS_DIR + "/" + SENTENCES,
            "corpus_sha256": sha256_file(path),
            "rows": len(rows),
            "index_base": "0-based data rows of corpus_file in file order (no header row)",
            "labels": {"0": "negative (file label -1)", "1": "positive (file label 1)"},
            "text": "field 2 with leading/trailing whitespace stripped",
            "seed": SPLIT_SEED,
            "method": "per label: random.Random(seed).shuffle, first 400 test, next 200 val, rest train",
            "counts": {k: len(v) for k, v in parts.items()},
        }
        doc.update(parts)
        with open(SPLITS, "w") as f:
            json.dump(doc, f, indent=None, separators=(",", ":"))
            f.write("\n")
    counts = write_csvs(ddir)
    print("pang-lee CSVs in %s: %s" % (os.path.join(ddir, "pang-lee"), counts))


if __name__ == "__main__":
    sys.exit(main())
