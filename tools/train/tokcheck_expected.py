"""Write the ids our Python tokenizer gives every corpus text (plus edge
cases) for a model directory's vocab.txt, one JSON object per line, for
check_tokenizer.mjs to compare against the Hugging Face library."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
import wordpiece  # noqa: E402

EDGE = [
    "", " ", "Hello, World!", "  leading and   trailing  ", "tab\there\nnewline\r\n",
    "Café naïve résumé façade Ångström", "ÉCOLE Über straße", "İstanbul ΣΟΦΊΑ",
    "don't won't can't it's", "a--b...c!!!?", "$100 + 50% = <win> | ^_^ `x` ~y~ {z}",
    "中文字符 and 日本語 text", "emoji 😀🎬 ok", "zero\u200bwidth soft\u00adhyphen",
    "nbsp\u00a0here thin\u2009space", "ctrl\x00\x07\x1b chars \ufffd", "x" * 101, "y" * 100,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "“smart quotes” and ‘single’ — dashes – …", "ﬁ ligature and ⅷ numerals and ½",
    "MiXeD CaSe WoRdS", "1234567890 3.14159 1,000,000", "e-mail@example.com http://x.y/z?q=1",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir")
    ap.add_argument("model_dir")
    ap.add_argument("out")
    a = ap.parse_args()
    ddir = data.data_dir(a.data_dir)
    with open(os.path.join(a.model_dir, "vocab.txt"), encoding="utf-8") as f:
        vocab = f.read().split("\n")[:-1]
    wp = wordpiece.WordPiece(vocab)
    texts = [t for _, t in data.read_labelled(data.corpus_path(ddir))]
    texts += data.read_reviews(ddir) + EDGE
    with open(a.out, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t, "ids": wp.encode(t)}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
