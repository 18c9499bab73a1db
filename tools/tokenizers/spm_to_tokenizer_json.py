#!/usr/bin/python3
"""tools/tokenizers/spm_to_tokenizer_json.py — converts a SentencePiece
Unigram .model file into a Hugging Face tokenizer.json, in the layouts HF's
converters (transformers' convert_slow_tokenizer) produce, so that anytime
can be tested on Precompiled + Metaspace + Unigram tokenizers without the
hub. Written for anytime; reads the .model protobuf directly (Debian 12's
python3-sentencepiece has no protobuf module to do it).

Styles:
  xlmr  XLM-RoBERTa: fairseq ids (<s>=0 <pad>=1 </s>=2 <unk>=3, pieces from
        the model's id 3 on shifted by one, <mask> last), normalizer
        Sequence[Precompiled, Replace(/ {2,}/, " ")], Metaspace(always,
        split), TemplateProcessing "<s> $A </s>" / "<s> $A </s> </s> $B </s>",
        Metaspace decoder. Needs the spm defaults unk=0 bos=1 eos=2.
  t5    T5: ids as in the model plus <extra_id_N> added tokens, normalizer
        Sequence[Precompiled, Replace], pre-tokenizer Sequence[WhitespaceSplit,
        Metaspace], TemplateProcessing "$A </s>" / "$A </s> $B </s>".
  nmt   byte-fallback style: ids as in the model, normalizer Sequence[Nmt,
        NFKC, Replace] (the rules of nmt_nfkc written as HF components),
        Metaspace(prepend_scheme "first"), decoder Sequence[Replace(▁, " "),
        ByteFallback, Fuse, Strip(" ", 1, 0)], TemplateProcessing with <s>.

usage: spm_to_tokenizer_json.py STYLE MODEL_FILE OUT_JSON
"""
import base64
import json
import struct
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """Yields (field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("unsupported protobuf wire type %d" % wt)
        yield f, wt, v


NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def read_model(path):
    with open(path, "rb") as fh:
        data = fh.read()
    pieces, trainer, norm = [], {}, {}
    for f, wt, v in fields(data):
        if f == 1:
            p = {"piece": "", "score": 0.0, "type": NORMAL}
            for g, _, w in fields(v):
                if g == 1:
                    p["piece"] = w.decode("utf-8")
                elif g == 2:
                    p["score"] = struct.unpack("<f", w)[0]
                elif g == 3:
                    p["type"] = w
            pieces.append(p)
        elif f == 2:
            for g, _, w in fields(v):
                trainer[g] = w
        elif f == 3:
            for g, _, w in fields(v):
                norm[g] = w
    return pieces, trainer, norm


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("xlmr", "t5", "nmt"):
        sys.exit("usage: spm_to_tokenizer_json.py xlmr|t5|nmt MODEL_FILE OUT_JSON")
    style, model, out = sys.argv[1:]
    pieces, trainer, norm = read_model(model)
    if trainer.get(3, 1) != 1:
        sys.exit("%s: not a Unigram model (model_type %d)" % (model, trainer.get(3)))
    unk = trainer.get(40, 0)
    byte_fallback = bool(trainer.get(35, 0))
    charsmap = norm.get(2, b"")
    vocab = [[p["piece"], float(p["score"])] for p in pieces]
    added = []

    def add(id_, content, special=True, lstrip=False):
        added.append({"id": id_, "content": content, "single_word": False, "lstrip": lstrip,
                      "rstrip": False, "normalized": not special, "special": special})

    if style == "xlmr":
        if [p["piece"] for p in pieces[:3]] != ["<unk>", "<s>", "</s>"]:
            sys.exit("xlmr style needs unk=0 bos=1 eos=2 (spm_train's defaults)")
        vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]] + vocab[3:]
        vocab.append(["<mask>", 0.0])
        unk = 3
        for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>"]):
            add(i, t)
        add(len(vocab) - 1, "<mask>", lstrip=True)
        bos, eos = 0, 2
    else:
        for i, p in enumerate(pieces):
            if p["type"] in (UNKNOWN, CONTROL):
                add(i, p["piece"])
        bos, eos = trainer.get(41, 1), trainer.get(42, 2)
    if style == "t5":
        for k in range(3):
            add(len(vocab) + k, "<extra_id_%d>" % k)

    precompiled = {"type": "Precompiled",
                   "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")}
    squeeze = {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                 "split": True}
    bos_tok, eos_tok = vocab[bos][0], vocab[eos][0]
    special = {bos_tok: {"id": bos_tok, "ids": [bos], "tokens": [bos_tok]},
               eos_tok: {"id": eos_tok, "ids": [eos], "tokens": [eos_tok]}}

    def seq(i, t=0):
        return {"Sequence": {"id": i, "type_id": t}}

    def sp(tok, t=0):
        return {"SpecialToken": {"id": tok, "type_id": t}}

    if style == "xlmr":
        normalizer = {"type": "Sequence", "normalizers": [precompiled, squeeze]}
        pre = metaspace
        post = {"type": "TemplateProcessing",
                "single": [sp(bos_tok), seq("A"), sp(eos_tok)],
                "pair": [sp(bos_tok), seq("A"), sp(eos_tok), sp(eos_tok), seq("B"), sp(eos_tok)],
                "special_tokens": special}
        decoder = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                   "split": True}
    elif style == "t5":
        normalizer = {"type": "Sequence", "normalizers": [precompiled, squeeze]}
        pre = {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace]}
        post = {"type": "TemplateProcessing",
                "single": [seq("A"), sp(eos_tok)],
                "pair": [seq("A"), sp(eos_tok), seq("B", 1), sp(eos_tok, 1)],
                "special_tokens": {eos_tok: special[eos_tok]}}
        decoder = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                   "split": True}
    else:
        normalizer = {"type": "Sequence", "normalizers": [{"type": "Nmt"}, {"type": "NFKC"}, squeeze]}
        pre = dict(metaspace, prepend_scheme="first")
        post = {"type": "TemplateProcessing",
                "single": [sp(bos_tok), seq("A")],
                "pair": [sp(bos_tok), seq("A"), sp(bos_tok, 1), seq("B", 1)],
                "special_tokens": {bos_tok: special[bos_tok]}}
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}

    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": sorted(added, key=lambda a: a["id"]),
        "normalizer": normalizer,
        "pre_tokenizer": pre,
        "post_processor": post,
        "decoder": decoder,
        "model": {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": byte_fallback},
    }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(tok, fh, ensure_ascii=False, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
