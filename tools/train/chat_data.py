"""The chat model's conversations, made from the decoder's review split
(decoder_data.py): the TRAINING reviews only become training conversations;
the held-out reviews only become the evaluation prompts for the verdict
accuracy (never trained on, never used for a choice).

Turn kinds (labels from the corpus: 0 negative, 1 positive):
  verdict  user "Review: EXCERPT\\nPositive or negative?"
           assistant "Positive." / "Negative."
  write    user "Write a short positive review." (or negative)
           assistant EXCERPT of a training review with that label
An EXCERPT is consecutive lines (the corpus's " \\n"-separated sentences) of one
review, at most MAX_REVIEW_CHARS (verdict) / MAX_WRITE_CHARS (write) characters,
cut at a word if a single line is longer.  Reviews are ~3900 characters and
the context 256 tokens, so a verdict is asked about an excerpt: in training
the review's ending (where critics sum up) or a random window; in
evaluation always the ending.

Conversations (seeded, random.Random(SEED)), for every training review:
  1. single-turn verdict on its ending excerpt,
  2. single-turn verdict on a random window,
  3. one of (cycling): verdict then write (same label); write alone;
     verdict on this review then a verdict on another training review
     ("And this one? Review: ...").
Half of the conversations (seeded) start with the system turn
SYSTEM.  Rendering is ChatML exactly as the tokenizer_config.json template
renders it:  for each message "<|im_start|>" + role + "\\n" + content +
"<|im_end|>" + "\\n"; a generation prompt adds "<|im_start|>assistant\\n".

Writes DIR/chat.json: {"train": [{"messages": [...], "kind": ...}, ...],
"heldout": [{"messages": [...], "label": 0|1, "row": i}, ...]} where a
held-out item's messages end with the user turn (render with the
generation prompt and read the assistant's first line).

Run:  /usr/bin/python3 tools/train/chat_data.py --out DIR/chat.json [--data-dir DIR]
"""
import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import data  # noqa: E402
import decoder_data  # noqa: E402

SEED = 20251202
SYSTEM = "You are a film critic's assistant."
MAX_REVIEW_CHARS = 420
MAX_WRITE_CHARS = 260
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
VERDICT = {0: "Negative.", 1: "Positive."}
WORD = {0: "negative", 1: "positive"}


def render(messages, add_generation_prompt=False):
    """ChatML, as the chat_template in tokenizer_config.json renders it."""
    s = "".join(IM_START + m["role"] + "\n" + m["content"] + IM_END + "\n" for m in messages)
    if add_generation_prompt:
        s += IM_START + "assistant\n"
    return s


def lines(text):
    return [x.strip() for x in text.split("\n") if x.strip()]


def _cut(line, limit):
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0]
    return cut if cut else line[:limit]


def excerpt_from(ls, start, limit):
    """Lines ls[start:] while they fit in `limit` characters (joined by a space)."""
    out = _cut(ls[start], limit)
    for x in ls[start + 1:]:
        if len(out) + 1 + len(x) > limit:
            break
        out += " " + x
    return out


def ending(ls, limit):
    """The last lines of the review that fit in `limit` characters."""
    out = _cut(ls[-1], limit)
    for x in reversed(ls[:-1]):
        if len(out) + 1 + len(x) > limit:
            break
        out = x + " " + out
    return out


def verdict_q(text):
    return "Review: " + text + "\nPositive or negative?"


def make(parts):
    rng = random.Random(SEED)
    train = parts["train"]
    by_label = {0: [], 1: []}
    for i, (lab, _) in enumerate(train):
        by_label[lab].append(i)
    convs = []

    def sys_turn():
        return [{"role": "system", "content": SYSTEM}] if rng.random() < 0.5 else []

    def u(c):
        return {"role": "user", "content": c}

    def a(c):
        return {"role": "assistant", "content": c}

    for i, (lab, text) in enumerate(train):
        ls = lines(text)
        end = ending(ls, MAX_REVIEW_CHARS)
        win = excerpt_from(ls, rng.randrange(len(ls)), MAX_REVIEW_CHARS)
        convs.append({"kind": "verdict-ending", "messages": sys_turn() + [u(verdict_q(end)), a(VERDICT[lab])]})
        convs.append({"kind": "verdict-window", "messages": sys_turn() + [u(verdict_q(win)), a(VERDICT[lab])]})
        kind = ("verdict+write", "write", "verdict+verdict")[i % 3]
        j = rng.choice(by_label[lab])
        wl = lines(train[j][1])
        wtext = excerpt_from(wl, rng.randrange(len(wl)), MAX_WRITE_CHARS) if rng.random() < 0.5 \
            else ending(wl, MAX_WRITE_CHARS)
        wturns = [u("Write a short %s review." % WORD[lab]), a(wtext)]
        short = excerpt_from(ls, rng.randrange(len(ls)), MAX_REVIEW_CHARS - 120)
        if kind == "verdict+write":
            msgs = [u(verdict_q(short)), a(VERDICT[lab])] + wturns
        elif kind == "write":
            msgs = wturns
        else:
            k = rng.randrange(len(train))
            kl = lines(train[k][1])
            other = ending(kl, MAX_REVIEW_CHARS - 160)
            msgs = [u(verdict_q(_cut(end, MAX_REVIEW_CHARS - 160))), a(VERDICT[lab]),
                    u("And this one? Review: " + other + "\nPositive or negative?"),
                    a(VERDICT[train[k][0]])]
        convs.append({"kind": kind, "messages": sys_turn() + msgs})
    rng.shuffle(convs)
    held = []
    for i, (lab, text) in enumerate(parts["heldout"]):
        held.append({"row": i, "label": lab,
                     "messages": [{"role": "system", "content": SYSTEM},
                                  u(verdict_q(ending(lines(text), MAX_REVIEW_CHARS)))]})
    return {"system": SYSTEM, "seed": SEED, "train": convs, "heldout": held}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    ddir = data.data_dir(a.data_dir)
    doc = make(decoder_data.load_parts(ddir))
    blob = json.dumps(doc, indent=0, ensure_ascii=False) + "\n"
    with open(a.out, "w") as f:
        f.write(blob)
    kinds = {}
    for c in doc["train"]:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    print("chat data: %d training conversations %s, %d held-out prompts -> %s"
          % (len(doc["train"]), json.dumps(kinds, sort_keys=True), len(doc["heldout"]), a.out))


if __name__ == "__main__":
    sys.exit(main())
