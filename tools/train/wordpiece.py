"""BERT-uncased style WordPiece tokenizer: normaliser, pre-tokeniser, greedy
longest-match WordPiece, a vocabulary trainer, and the Hugging Face
`tokenizer.json` writer.

This is the tokenizer the models are trained with.  It mirrors the Hugging Face
tokenizers pipeline that `tokenizer.json` declares (BertNormalizer with
lowercase and accent stripping, BertPreTokenizer, WordPiece with "##"
continuations, [CLS] $A [SEP] template); check_tokenizer.mjs verifies with the
real library that both give the same ids on the whole corpus.

The vocabulary trainer is BPE-style (the way Hugging Face's WordPiece trainer
learns its pieces): start from every character in word-initial and "##"
continuation form, then repeatedly add the most frequent adjacent pair until
the vocabulary has the requested size.  Ties break on the pair's text, so the
result is deterministic.
"""
import collections
import heapq
import json
import unicodedata

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)
PREFIX = "##"
MAX_CHARS_PER_WORD = 100


# ---------------------------------------------------------------- normaliser
def _is_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c).startswith("C")


def _is_whitespace(c):
    return c in "\t\n\r" or c.isspace()


def _is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or
            0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F or
            0x2B740 <= cp <= 0x2B81F or 0x2B920 <= cp <= 0x2CEAF or
            0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def normalize(text):
    out = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or _is_control(c):
            continue
        if _is_whitespace(c):
            out.append(" ")
        elif _is_cjk(cp):
            out.append(" " + c + " ")
        else:
            out.append(c)
    s = unicodedata.normalize("NFD", "".join(out))
    s = "".join(c for c in s if unicodedata.category(c) != "Mn")
    return "".join(c.lower() for c in s)


def _is_punct(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def pretokenize(s):
    """Whitespace split, then every punctuation character stands alone."""
    words = []
    for chunk in s.split():
        cur = []
        for c in chunk:
            if _is_whitespace(c):
                if cur:
                    words.append("".join(cur))
                    cur = []
            elif _is_punct(c):
                if cur:
                    words.append("".join(cur))
                    cur = []
                words.append(c)
            else:
                cur.append(c)
        if cur:
            words.append("".join(cur))
    return words


def words_of(text):
    return pretokenize(normalize(text))


# ---------------------------------------------------------------- WordPiece
class WordPiece:
    def __init__(self, vocab):
        self.vocab = list(vocab)
        self.ids = {t: i for i, t in enumerate(self.vocab)}
        assert self.vocab[:5] == SPECIALS, self.vocab[:5]
        self._cache = {}

    def __len__(self):
        return len(self.vocab)

    def word_ids(self, word):
        r = self._cache.get(word)
        if r is not None:
            return r
        if len(word) > MAX_CHARS_PER_WORD:
            r = [UNK]
        else:
            r = []
            start = 0
            n = len(word)
            while start < n:
                end = n
                found = None
                while start < end:
                    sub = word[start:end]
                    if start > 0:
                        sub = PREFIX + sub
                    i = self.ids.get(sub)
                    if i is not None:
                        found = i
                        break
                    end -= 1
                if found is None:
                    r = [UNK]
                    break
                r.append(found)
                start = end
        self._cache[word] = r
        return r

    def encode(self, text, max_len=None):
        """[CLS] pieces [SEP]; with max_len, pieces are cut to fit (right side)."""
        ids = []
        for w in words_of(text):
            ids.extend(self.word_ids(w))
        if max_len is not None and len(ids) > max_len - 2:
            ids = ids[:max_len - 2]
        return [CLS] + ids + [SEP]


# ---------------------------------------------------------------- training
def train_vocab(texts, size, extra_chars=""):
    """Learn a WordPiece vocabulary of `size` entries (specials included)."""
    counts = collections.Counter()
    for t in texts:
        counts.update(words_of(t))
    alphabet = set()
    for w in counts:
        for j, c in enumerate(w):
            alphabet.add(c if j == 0 else PREFIX + c)
    for c in extra_chars:
        alphabet.add(c)
        alphabet.add(PREFIX + c)
    vocab = list(SPECIALS) + sorted(alphabet)
    known = set(vocab)

    words = []
    freqs = []
    for w, n in sorted(counts.items()):
        words.append([w[0]] + [PREFIX + c for c in w[1:]])
        freqs.append(n)

    pair_count = collections.defaultdict(int)
    where = collections.defaultdict(set)
    for wi, syms in enumerate(words):
        for a, b in zip(syms, syms[1:]):
            pair_count[(a, b)] += freqs[wi]
            where[(a, b)].add(wi)
    heap = [(-n, p) for p, n in pair_count.items()]
    heapq.heapify(heap)

    def merged(a, b):
        return a + b[len(PREFIX):]

    while len(vocab) < size and heap:
        negn, pair = heapq.heappop(heap)
        n = pair_count.get(pair, 0)
        if n <= 0:
            continue
        if -negn != n:           # stale entry; re-queue with the live count
            heapq.heappush(heap, (-n, pair))
            continue
        a, b = pair
        new = merged(a, b)
        if new not in known:
            vocab.append(new)
            known.add(new)
        touched = collections.Counter()
        for wi in list(where.pop(pair, ())):
            syms = words[wi]
            f = freqs[wi]
            for x, y in zip(syms, syms[1:]):
                pair_count[(x, y)] -= f
                touched[(x, y)] += 0
            out = []
            i = 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            words[wi] = out
            for x, y in zip(out, out[1:]):
                pair_count[(x, y)] += f
                where[(x, y)].add(wi)
                touched[(x, y)] += 0
        pair_count.pop(pair, None)
        for p in touched:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_count.pop(p, None)
    return vocab


def bert_uncased_pruned(bert_vocab_sentencepiece_style, texts, extra_chars=""):
    """bert-base-uncased vocabulary (list in id order, "▁" marks word-initial
    pieces) converted to "##" form and pruned to the pieces `texts` use, plus
    every single character (both forms) of the original vocabulary."""
    conv = []
    for t in bert_vocab_sentencepiece_style:
        if t.startswith("[") and t.endswith("]"):
            conv.append(t)
        elif t.startswith("\u2581"):
            conv.append(t[1:] if len(t) > 1 else None)
        else:
            conv.append(PREFIX + t)
    full = [t for t in conv if t and t not in SPECIALS and not t.startswith("[unused")]
    wp = WordPiece(SPECIALS + full)
    used = set()
    for t in texts:
        for w in words_of(t):
            used.update(wp.word_ids(w))
    keep = []
    for i, t in enumerate(wp.vocab):
        if i < len(SPECIALS):
            continue
        single = len(t) == 1 or (t.startswith(PREFIX) and len(t) == len(PREFIX) + 1)
        if i in used or single:
            keep.append(t)
    have = set(keep)
    for c in extra_chars:
        for t in (c, PREFIX + c):
            if t not in have:
                keep.append(t)
                have.add(t)
    return SPECIALS + keep


# ---------------------------------------------------------------- HF files
def tokenizer_json(vocab, max_len):
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i, t in enumerate(SPECIALS)]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": True, "strip_accents": None,
                       "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [CLS], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [SEP], "tokens": ["[SEP]"]}},
        },
        "decoder": {"type": "WordPiece", "prefix": PREFIX, "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]",
                  "continuing_subword_prefix": PREFIX,
                  "max_input_chars_per_word": MAX_CHARS_PER_WORD,
                  "vocab": {t: i for i, t in enumerate(vocab)}},
    }


def write_hf_files(dirpath, vocab, max_len):
    import os
    with open(os.path.join(dirpath, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, max_len), f, ensure_ascii=False, indent=2)
        f.write("\n")
    with open(os.path.join(dirpath, "vocab.txt"), "w", encoding="utf-8") as f:
        for t in vocab:
            f.write(t + "\n")
    cfg = {"tokenizer_class": "BertTokenizer", "do_lower_case": True,
           "strip_accents": None, "tokenize_chinese_chars": True,
           "model_max_length": max_len, "clean_up_tokenization_spaces": True,
           "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
           "cls_token": "[CLS]", "mask_token": "[MASK]"}
    with open(os.path.join(dirpath, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    stm = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
           "cls_token": "[CLS]", "mask_token": "[MASK]"}
    with open(os.path.join(dirpath, "special_tokens_map.json"), "w") as f:
        json.dump(stm, f, indent=2)
        f.write("\n")
