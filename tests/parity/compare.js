// tests/parity/compare.js — compares anytime's encodings with HF's, text by
// text and token by token: ids, type ids, attention mask, special-tokens
// mask, offsets, token strings and decoded text must all be identical.
// Prints the counts compared; exits 1 on any mismatch (showing the first few).
//
// usage: node compare.js NAME TEXTS_JSONL HF_JSONL ANYTIME_JSONL
'use strict';
const fs = require('fs');

const [name, textsPath, hfPath, atPath] = process.argv.slice(2);
if (!atPath) { console.error('usage: node compare.js NAME TEXTS HF ANYTIME'); process.exit(2); }
const read = (p) => fs.readFileSync(p, 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
const texts = read(textsPath), hf = read(hfPath), at = read(atPath);
const fields = ['ids', 'type_ids', 'attention_mask', 'special_tokens_mask', 'offsets', 'tokens', 'decoded'];
let tokens = 0, badTexts = 0, shown = 0;
const badField = {};
if (hf.length !== texts.length || at.length !== texts.length) {
  console.log(`${name}: FAIL: ${texts.length} texts, HF gave ${hf.length} lines, anytime ${at.length}`);
  process.exit(1);
}
for (let i = 0; i < texts.length; i++) {
  const a = at[i], h = hf[i];
  tokens += h.ids.length;
  let bad = false;
  for (const f of fields) {
    if (JSON.stringify(a[f]) !== JSON.stringify(h[f])) {
      badField[f] = (badField[f] || 0) + 1;
      bad = true;
      if (shown < 4) {
        shown++;
        const t = JSON.stringify(texts[i]);
        console.log(`  mismatch in ${f} for text ${i}: ${t.length > 160 ? t.slice(0, 160) + '...' : t}`);
        if (f === 'decoded') {
          console.log(`    HF:      ${JSON.stringify(h[f]).slice(0, 300)}\n    anytime: ${JSON.stringify(a[f]).slice(0, 300)}`);
        } else {
          let k = 0;
          while (k < h[f].length && JSON.stringify(h[f][k]) === JSON.stringify((a[f] || [])[k])) k++;
          const lo = Math.max(0, k - 3);
          console.log(`    first difference at token ${k}`);
          console.log(`    HF:      ${JSON.stringify(h[f].slice(lo, k + 4))} tokens ${JSON.stringify(h.tokens.slice(lo, k + 4))}`);
          console.log(`    anytime: ${JSON.stringify((a[f] || []).slice(lo, k + 4))} tokens ${JSON.stringify((a.tokens || []).slice(lo, k + 4))}${a.error ? ' error ' + a.detail : ''}`);
        }
      }
    }
  }
  if (bad) badTexts++;
}
const fieldStr = Object.keys(badField).length ? ' (' + Object.entries(badField).map(([k, v]) => `${k}: ${v}`).join(', ') + ')' : '';
console.log(`${name}: ${texts.length} texts, ${tokens} tokens compared; ${badTexts} texts mismatched${fieldStr}`);
process.exit(badTexts === 0 ? 0 : 1);
