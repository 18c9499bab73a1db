#!/usr/bin/python3
"""tools/tokenizers/make_corpus.py — the multilingual material for anytime's
SentencePiece (Unigram) test tokenizers.

Two outputs, both deterministic (fixed seed, sorted inputs):
  words JSON  — a sample of words per language from Debian's word lists
                (wamerican, wngerman, wfrench, witalian, wspanish, wpolish)
                plus pseudo-words built from the Cyrillic, Greek, CJK,
                kana, Hangul, Arabic and Devanagari alphabets (Debian 12 has
                no Russian/Greek word list). Committed as
                tests/data/text/multilingual_words.json: the parity test
                builds its multilingual texts from it with no apt package.
  corpus      — one sentence per line for spm_train, drawn from the same
                material with punctuation, digits, emoji, combining marks,
                full-width forms and a few control characters mixed in.

usage: make_corpus.py WORDS_JSON CORPUS_TXT [N_LINES]
Needs: apt-get install wamerican wngerman wfrench witalian wspanish wpolish
"""
import json
import random
import sys

LISTS = {
    "en": "/usr/share/dict/american-english",
    "de": "/usr/share/dict/ngerman",
    "fr": "/usr/share/dict/french",
    "it": "/usr/share/dict/italian",
    "es": "/usr/share/dict/spanish",
    "pl": "/usr/share/dict/polish",
}
ALPHABETS = {
    "ru": "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЖЗИКЛМНОПРСТУФХЦЧШЭЮЯ",
    "el": "αβγδεζηθικλμνξοπρστυφχψωάέήίόύώϊΐΑΒΓΔΕΖΘΛΞΠΣΦΨΩ",
    "zh": "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计",
    "ja": "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンー",
    "ko": "가나다라마바사아자차카타파하거너더러머버서어저처커터퍼허고노도로모보소오조초코토포호구누두루무부수우주추쿠투푸후한국어학교사람",
    "ar": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "hi": "कखगघचछजझटठडढणतथदधनपफबभमयरलवशषसहािीुूेैोौंः्",
}


def sample_words(path, n, rng):
    with open(path, encoding="utf-8") as f:
        words = [w.strip() for w in f if w.strip() and "'" not in w]
    words.sort()
    return rng.sample(words, min(n, len(words)))


def pseudo_words(alpha, n, rng, lo, hi):
    return ["".join(rng.choice(alpha) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


EXTRAS = ["😀", "👍🏽", "🇩🇪", "👨‍👩‍👧", "❤️", "e\u0301", "a\u0308", "n\u0303", "Ａ", "ｂ", "１２３", "！",
          "ﬁ", "ℌ", "①", "™", "½", "\u00a0", "\u3000", "…", "—", "«", "»", "„", "“", "€", "¥",
          "\u200b", "\t", "ｶﾀｶﾅ", "㍿", "Ⅻ", "ǅ", "ß", "İ", "\u0130", "Å", "Ω"]
PUNCT = [".", ",", "!", "?", ";", ":", "-", "(", ")", "\"", "'", "/"]


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: make_corpus.py WORDS_JSON CORPUS_TXT [N_LINES]")
    out_words, out_corpus = sys.argv[1], sys.argv[2]
    n_lines = int(sys.argv[3]) if len(sys.argv) > 3 else 60000
    rng = random.Random(16)
    words = {lang: sample_words(p, 400, rng) for lang, p in LISTS.items()}
    for lang, alpha in ALPHABETS.items():
        cjk = lang in ("zh", "ja", "ko")
        words[lang] = pseudo_words(alpha, 400, rng, 1 if cjk else 2, 4 if cjk else 9)
    words["_extras"] = EXTRAS
    with open(out_words, "w", encoding="utf-8") as f:
        json.dump(words, f, ensure_ascii=False, indent=0, sort_keys=True)
        f.write("\n")
    # the training corpus uses a larger sample of the real word lists
    big = {lang: sample_words(p, 20000, rng) for lang, p in LISTS.items()}
    for lang in ALPHABETS:
        big[lang] = words[lang]
    langs = sorted(big)
    with open(out_corpus, "w", encoding="utf-8") as f:
        for _ in range(n_lines):
            lang = rng.choice(langs)
            toks = []
            for _ in range(rng.randint(3, 18)):
                r = rng.random()
                if r < 0.05:
                    toks.append(rng.choice(EXTRAS))
                elif r < 0.10:
                    toks.append(str(rng.randint(0, 99999)))
                elif r < 0.13:
                    toks.append(rng.choice(big[rng.choice(langs)]))
                else:
                    toks.append(rng.choice(big[lang]))
                if rng.random() < 0.08:
                    toks[-1] += rng.choice(PUNCT)
            sep = "" if lang in ("zh", "ja") and rng.random() < 0.7 else " "
            line = sep.join(toks)
            if rng.random() < 0.3:
                line = line[0].upper() + line[1:]
            f.write(line.replace("\n", " ") + "\n")


if __name__ == "__main__":
    main()
