// bench/tokenizer/hf_bench.js — the same measurement as bench_tokenizer.c for
// Hugging Face tokenizers (npm, pinned in tests/node): encodeBatch over the
// texts in batches of 256, several passes; run single-threaded
// (TOKENIZERS_PARALLELISM=false, RAYON_NUM_THREADS=1, set by run.sh).
// Tokens are counted in the untimed warm-up pass; timed passes only call
// encodeBatch (results stay in Rust objects), so the figure is HF's encode
// plus the N-API call, not JS-side conversion of ids.
//
// usage: node hf_bench.js TOKENIZER_JSON TEXTS_JSONL [PASSES]
'use strict';
const fs = require('fs');
const path = require('path');
const hf = require(path.join(__dirname, '..', '..', 'tests', 'node', 'node_modules', 'tokenizers'));

async function main() {
  const [tokPath, textsPath, passesArg] = process.argv.slice(2);
  const passes = Number(passesArg || 7);
  const texts = fs.readFileSync(textsPath, 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
  const bytes = texts.reduce((a, t) => a + Buffer.byteLength(t, 'utf8'), 0);
  const tok = hf.Tokenizer.fromFile(tokPath);
  const mbs = [], tps = [];
  let tokens = 0;
  const batches = [];
  for (let i = 0; i < texts.length; i += 256) batches.push(texts.slice(i, i + 256));
  for (let pass = -1; pass < passes; pass++) {
    const t0 = process.hrtime.bigint();
    for (const b of batches) {
      const encs = await tok.encodeBatch(b);
      if (pass < 0) for (const e of encs) tokens += e.getLength();
    }
    const dt = Number(process.hrtime.bigint() - t0) / 1e9;
    if (pass >= 0) { mbs.push(bytes / dt / 1e6); tps.push(tokens / dt); }
  }
  const s = (a) => [...a].sort((x, y) => x - y);
  const m = s(mbs), t = s(tps);
  console.log(JSON.stringify({ impl: 'hf-tokenizers', tokenizer: tokPath, texts: texts.length, bytes, tokens, passes,
    mb_s: mbs.map((x) => +x.toFixed(3)), tok_s: tps.map((x) => Math.round(x)),
    mb_s_median: +m[passes >> 1].toFixed(3), mb_s_min: +m[0].toFixed(3), mb_s_max: +m[passes - 1].toFixed(3),
    tok_s_median: Math.round(t[passes >> 1]), tok_s_min: Math.round(t[0]), tok_s_max: Math.round(t[passes - 1]) }));
}
main().catch((e) => { console.error(e); process.exit(1); });
