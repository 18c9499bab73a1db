// tests/parity/unicode/probe_hf.js — asks the real HF tokenizers library how
// it classifies every Unicode scalar value, for the properties anytime's
// tokenizer depends on. Output (JSON Lines, one per code point):
//   [cp, clean, strip, lower, bertsplits, nfkc, nfd, gpt2 'a'+c, gpt2 '1'+c, ws 'a'+c, ws '.'+c]
// gen_compat.js diffs this against probe_anytime and writes
// src/text/tk_compat.h. Dev tool: run when bumping the pinned HF version.
'use strict';
const path = require('path');
const hf = require(path.join(__dirname, '..', '..', 'node', 'node_modules', 'tokenizers'));
const clean = hf.bertNormalizer({ cleanText: true, handleChineseChars: false, stripAccents: false, lowercase: false });
const strip = hf.bertNormalizer({ cleanText: false, handleChineseChars: false, stripAccents: true, lowercase: false });
const lower = hf.bertNormalizer({ cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: true });
const nfkc = hf.nfkcNormalizer(), nfd = hf.nfdNormalizer();
const bert = hf.bertPreTokenizer(), gpt2 = hf.byteLevelPreTokenizer(false, true), ws = hf.whitespacePreTokenizer();
const hex = (s) => Buffer.from(s, 'utf8').toString('hex');
const out = [];
for (let cp = 0; cp < 0x110000; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  const r1 = clean.normalizeString('a' + c + 'a');
  out.push(JSON.stringify([cp, r1 === 'aa' ? 'X' : r1 === 'a a' ? 'W' : 'K', hex(strip.normalizeString(c)),
    hex(lower.normalizeString(c)), bert.preTokenizeString('a' + c + 'a').length, hex(nfkc.normalizeString(c)),
    hex(nfd.normalizeString(c)), gpt2.preTokenizeString('a' + c).length, gpt2.preTokenizeString('1' + c).length,
    ws.preTokenizeString('a' + c).length, ws.preTokenizeString('.' + c).length]));
}
process.stdout.write(out.join('\n') + '\n');
