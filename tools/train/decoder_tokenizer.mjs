// The decoder's byte-level BPE tokenizer, learned and applied with the real
// Hugging Face tokenizers library (npm tokenizers@0.23.2).
//
//   node decoder_tokenizer.mjs train  NODEDIR REVIEWS.json OUT/tokenizer.json VOCAB IDS.json
//   node decoder_tokenizer.mjs encode NODEDIR tokenizer.json IN.json OUT.json   (texts -> ids)
//   node decoder_tokenizer.mjs decode NODEDIR tokenizer.json IN.json OUT.json   (ids -> texts)
//   node decoder_tokenizer.mjs add-special NODEDIR tokenizer.json OUT.json TOKEN...
//        (the library's addSpecialTokens: TOKENs get the next ids after the
//        vocabulary, special: true, never split by the BPE; the chat model's
//        <|im_start|> <|im_end|>, tools/train/train_chat.sh)
//
// NODEDIR holds node_modules/tokenizers.  REVIEWS.json is {"train": [...],
// "heldout": [...]} from decoder_data.py; only "train" is used to learn merges.
//
// How `train` works.  The node binding's Tokenizer.train(files) takes no
// trainer options (it always runs the default BpeTrainer, up to 30000 tokens,
// splitting its files into lines), so:
//   1. the library's ByteLevel pre-tokenizer (GPT-2 regex, add_prefix_space
//      false) splits every training review into byte-mapped words, written
//      one per line (so reviews' inner newlines are pre-tokenized exactly as
//      at encoding time, not cut into lines);
//   2. the library's BPE trainer learns merges from that file with a
//      whitespace-split pre-tokenizer (byte-mapped words contain no spaces);
//   3. the final vocabulary is: id 0 <|endoftext|>, ids 1..256 the 256
//      byte-level symbols in byte order (id = 1 + byte, so every input is
//      encodable), then the products of the learned merges in the library's
//      order until VOCAB ids exist.  Keeping a prefix of the merge list is the
//      same as stopping BPE training earlier (the greedy merge sequence does
//      not depend on the target size);
//   4. tokenizer.json (GPT-2 layout: no normaliser - the corpus is already
//      lower-case -, ByteLevel pre-tokenizer/post-processor/decoder, BPE
//      without unk) is loaded back with the library and saved by it, so the
//      file is the library's own serialisation; every review must decode back
//      to itself.
// It also writes IDS.json: {"train": [[ids]...], "heldout": [[ids]...]}, each
// review encoded alone, without special tokens.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

const [mode, nodeDir, ...rest] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const tk = require("tokenizers");

const EOT = "<|endoftext|>";

// GPT-2's byte -> printable-character table.
function bytesToUnicode() {
    const bs = [];
    for (let b = 33; b <= 126; b++) bs.push(b);
    for (let b = 161; b <= 172; b++) bs.push(b);
    for (let b = 174; b <= 255; b++) bs.push(b);
    const cs = bs.slice();
    let n = 0;
    for (let b = 0; b < 256; b++) {
        if (!bs.includes(b)) {
            bs.push(b);
            cs.push(256 + n);
            n++;
        }
    }
    const table = new Array(256);
    bs.forEach((b, i) => { table[b] = String.fromCodePoint(cs[i]); });
    return table;
}

function tokenizerDoc(vocab, merges) {
    return {
        version: "1.0",
        truncation: null,
        padding: null,
        added_tokens: [{ id: 0, content: EOT, single_word: false, lstrip: false,
                         rstrip: false, normalized: false, special: true }],
        normalizer: null,
        pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true,
                         use_regex: true },
        post_processor: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false,
                          use_regex: true },
        decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true,
                   use_regex: true },
        model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null,
                 end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
                 ignore_merges: false, vocab, merges },
    };
}

async function encodeAll(tok, texts) {
    const out = [];
    for (const t of texts) {
        const enc = await tok.encode(t, null, { addSpecialTokens: false });
        out.push(enc.getIds());
    }
    return out;
}

async function train(reviewsPath, outPath, vocabSize, idsPath) {
    const reviews = JSON.parse(fs.readFileSync(reviewsPath, "utf8"));
    const pre = tk.byteLevelPreTokenizer(false, true);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dectok-"));
    const wordsPath = path.join(tmp, "words.txt");
    const lines = [];
    for (const text of reviews.train) {
        for (const [w] of pre.preTokenizeString(text)) lines.push(w);
    }
    fs.writeFileSync(wordsPath, lines.join("\n") + "\n");

    const learner = new tk.Tokenizer(tk.BPE.empty());
    learner.setPreTokenizer(tk.whitespaceSplitPreTokenizer());
    learner.train([wordsPath]);
    const learnedPath = path.join(tmp, "learned.json");
    learner.save(learnedPath);
    const learned = JSON.parse(fs.readFileSync(learnedPath, "utf8")).model.merges
        .map((m) => (typeof m === "string" ? m.split(" ") : m));

    const vocab = { [EOT]: 0 };
    const table = bytesToUnicode();
    for (let b = 0; b < 256; b++) vocab[table[b]] = 1 + b;
    let next = 257;
    const merges = [];
    for (const [a, b] of learned) {
        if (next >= vocabSize) break;
        if (!(a in vocab) || !(b in vocab)) throw new Error(`merge ${a} ${b}: unknown part`);
        merges.push([a, b]);
        if (!((a + b) in vocab)) vocab[a + b] = next++;
    }
    if (next !== vocabSize) throw new Error(`only ${next} tokens learned`);

    const draftPath = path.join(tmp, "tokenizer.json");
    fs.writeFileSync(draftPath, JSON.stringify(tokenizerDoc(vocab, merges)));
    const tok = tk.Tokenizer.fromFile(draftPath);
    tok.save(outPath, true);
    fs.rmSync(tmp, { recursive: true, force: true });

    const final = tk.Tokenizer.fromFile(outPath);
    if (final.getVocabSize(true) !== vocabSize) throw new Error("vocab size mismatch");
    if (final.tokenToId(EOT) !== 0) throw new Error("<|endoftext|> is not id 0");
    const ids = { train: await encodeAll(final, reviews.train),
                  heldout: await encodeAll(final, reviews.heldout) };
    for (const k of ["train", "heldout"]) {
        const back = await final.decodeBatch(ids[k], false);
        back.forEach((s, i) => {
            if (s !== reviews[k][i]) throw new Error(`${k} review ${i} does not round-trip`);
        });
    }
    // EOT inside text is recognised as the special token.
    const e = await final.encode(`a${EOT}b`, null, { addSpecialTokens: false });
    if (!e.getIds().includes(0)) throw new Error("<|endoftext|> not matched in text");
    fs.writeFileSync(idsPath, JSON.stringify(ids));
    const n = (k) => ids[k].reduce((s, a) => s + a.length, 0);
    const chars = (k) => reviews[k].reduce((s, t) => s + t.length, 0);
    console.log(JSON.stringify({ vocab: vocabSize, merges: merges.length,
        learned_merges: learned.length, train_tokens: n("train"), heldout_tokens: n("heldout"),
        train_chars_per_token: +(chars("train") / n("train")).toFixed(3),
        heldout_chars_per_token: +(chars("heldout") / n("heldout")).toFixed(3) }));
}

async function main() {
    if (mode === "train") {
        const [reviews, out, vocab, ids] = rest;
        await train(reviews, out, parseInt(vocab, 10), ids);
    } else if (mode === "encode" || mode === "decode") {
        const [tokPath, inPath, outPath] = rest;
        const tok = tk.Tokenizer.fromFile(tokPath);
        const input = JSON.parse(fs.readFileSync(inPath, "utf8"));
        const out = mode === "encode" ? await encodeAll(tok, input)
                                      : await tok.decodeBatch(input, false);
        fs.writeFileSync(outPath, JSON.stringify(out));
    } else if (mode === "add-special") {
        const [tokPath, outPath, ...tokens] = rest;
        const tok = tk.Tokenizer.fromFile(tokPath);
        const before = tok.getVocabSize(true);
        tok.addSpecialTokens(tokens);
        tok.save(outPath, true);
        const back = tk.Tokenizer.fromFile(outPath);
        tokens.forEach((t, i) => {
            if (back.tokenToId(t) !== before + i) throw new Error(`${t} is not id ${before + i}`);
        });
        const e = await back.encode(`a${tokens.join("b")}c`, null, { addSpecialTokens: false });
        for (const t of tokens) {
            if (!e.getIds().includes(back.tokenToId(t))) throw new Error(`${t} not matched in text`);
        }
        console.log(JSON.stringify({ vocab: back.getVocabSize(true),
            added: Object.fromEntries(tokens.map((t) => [t, back.tokenToId(t)])) }));
    } else {
        console.error("usage: decoder_tokenizer.mjs train|encode|decode|add-special NODEDIR ...");
        process.exit(2);
    }
}

main().catch((e) => { console.error(e); process.exit(1); });
