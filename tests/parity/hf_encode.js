// tests/parity/hf_encode.js — the reference side of the parity test: encodes
// every text of a JSON Lines file with the real Hugging Face tokenizers
// library (Tokenizer.fromFile on the same tokenizer.json anytime loads) and
// writes one JSON object per line with ids, type_ids, attention_mask,
// special_tokens_mask, offsets (HF's Node binding reports code-point offsets)
// and the decoded text (special tokens skipped).
//
// usage: node hf_encode.js TOKENIZER_JSON TEXTS_JSONL OUT_JSONL
'use strict';
const fs = require('fs');
const path = require('path');
const hf = require(path.join(__dirname, '..', 'node', 'node_modules', 'tokenizers'));

async function main() {
  const [tokPath, textsPath, outPath] = process.argv.slice(2);
  if (!outPath) { console.error('usage: node hf_encode.js TOKENIZER_JSON TEXTS_JSONL OUT_JSONL'); process.exit(2); }
  const tok = hf.Tokenizer.fromFile(tokPath);
  const lines = fs.readFileSync(textsPath, 'utf8').split('\n').filter((l) => l.length);
  const out = fs.openSync(outPath, 'w');
  for (const line of lines) {
    const v = JSON.parse(line);
    const text = typeof v === 'string' ? v : v.text;
    const pair = typeof v === 'string' ? null : (v.pair === undefined ? null : v.pair);
    const e = await tok.encode(text, pair);
    const ids = e.getIds();
    const rec = {
      ids,
      type_ids: e.getTypeIds(),
      attention_mask: e.getAttentionMask(),
      special_tokens_mask: e.getSpecialTokensMask(),
      offsets: e.getOffsets(),
      tokens: e.getTokens(),
      decoded: await tok.decode(ids, true),
    };
    fs.writeSync(out, JSON.stringify(rec) + '\n');
  }
  fs.closeSync(out);
}
main().catch((e) => { console.error('hf_encode:', e && e.stack ? e.stack : e); process.exit(1); });
