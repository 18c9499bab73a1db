// tests/parity/make_texts.js — gathers the parity corpus as JSON Lines (one
// JSON string per line): every text of the Pang & Lee corpora (4000
// sentences from polarity-en-pang&lee2.csv, 1500 reviews from
// polarity-en-pang&lee1.csv, both RFC 4180 CSV with a BOM, label,text) and
// the committed adversarial set tests/data/text/adversarial.json.
// Fails if a corpus is missing or has the wrong count.
//
// With a third argument it also writes MULTI_JSONL: 6000 multilingual texts
// built deterministically (seeded PRNG) from the committed word sample
// tests/data/text/multilingual_words.json (German, French, Italian,
// Spanish, Polish, English words; Russian, Greek, Chinese, Japanese,
// Korean, Arabic, Hindi pseudo-words) with emoji, combining marks,
// full-width forms, control and zero-width characters, SentencePiece's own
// "▁", special-token look-alikes, runs of spaces, empty and blank texts,
// and 1 in 12 as {text, pair} pairs.
//
// usage: node make_texts.js CORPORA_DIR OUT_JSONL [MULTI_JSONL]
'use strict';
const fs = require('fs');
const path = require('path');

function parseCsv(s) {
  if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
  const rows = [];
  let row = [], field = '', i = 0, q = false;
  while (i < s.length) {
    const c = s[i];
    if (q) {
      if (c === '"') {
        if (s[i + 1] === '"') { field += '"'; i += 2; continue; }
        q = false; i++; continue;
      }
      field += c; i++; continue;
    }
    if (c === '"') { q = true; i++; continue; }
    if (c === ',') { row.push(field); field = ''; i++; continue; }
    if (c === '\n' || c === '\r') {
      if (c === '\r' && s[i + 1] === '\n') i++;
      row.push(field); rows.push(row); row = []; field = ''; i++; continue;
    }
    field += c; i++;
  }
  if (field.length || row.length) { row.push(field); rows.push(row); }
  return rows;
}

function mulberry32(a) {
  return function () {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function multilingual(n) {
  const words = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'data', 'text', 'multilingual_words.json'), 'utf8'));
  const rnd = mulberry32(16);
  const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const langs = Object.keys(words).filter((k) => k[0] !== '_').sort();
  const cps = (list) => list.map((c) => String.fromCodePoint(c));
  const odd = [
    ...words._extras,
    ...cps([0, 1, 2, 7, 8, 0x0b, 0x0c, 0x0e, 0x1b, 0x1f, 0x7f, 0x80, 0x85, 0x8f, 0x9f, 0xad, 0x34f, 0x61c,
      0x180e, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2028, 0x2029, 0x2060, 0x2581, 0xfeff, 0xfffd, 0xe000,
      0xf8ff, 0x1d400, 0x1f600, 0xe0001, 0x10ffff, 0x378, 0xfdd0]),
    '\r\n', '\n\n', '\t\t', '   ', '\u3000\u3000', 'a\u0300\u0301\u0302', 'o\u0308\u0304', '\u0915\u094d\u0937',
    '\u1100\u1161\u11a8', '\u0e01\u0e33', '\u{1f1ef}\u{1f1f5}', '\u{1f44b}\u{1f3fb}', '\u2764\ufe0f', '#\ufe0f\u20e3',
    '<s>', '</s>', '<unk>', '<pad>', '<mask>', ' <mask> ', '<0x41>', '<extra_id_0>', '\u2581\u2581', 'Ⓐⓑ', '㈱', 'ｱｲｳ',
    '\uff21\uff22\uff23', '\uff10', '\u00bd\u2153', '\u2126', '\u212b', '\u1e9b\u0323', '\ufb03', '\u01c4', 'ﷺ', '\u0387',
  ];
  const fullwidth = (t) => t.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
  const punct = ['.', ',', '!', '?', ';', ':', '-', '(', ')', '"', "'", '…', '«', '»', '。', '、', '¿', '¡'];
  const sentence = () => {
    const lang = pick(langs);
    const toks = [];
    const k = int(1, 24);
    for (let j = 0; j < k; j++) {
      const r = rnd();
      if (r < 0.08) toks.push(pick(odd));
      else if (r < 0.12) toks.push(String(int(0, 1e6)));
      else if (r < 0.18) toks.push(pick(words[pick(langs)]));
      else toks.push(pick(words[lang]));
      if (rnd() < 0.1) toks[toks.length - 1] += pick(punct);
    }
    const sep = (lang === 'zh' || lang === 'ja') && rnd() < 0.7 ? '' : pick([' ', ' ', ' ', ' ', '  ', '\t', ' \n']);
    let t = toks.join(sep);
    const r = rnd();
    if (r < 0.05) t = fullwidth(t);
    else if (r < 0.10) t = t.toUpperCase();
    else if (r < 0.14) t = t.normalize('NFD');
    else if (r < 0.17) t = '  ' + t + '   ';
    return t;
  };
  const out = [];
  for (let i = 0; i < n; i++) {
    const r = rnd();
    let v;
    if (r < 0.01) v = '';
    else if (r < 0.02) v = pick([' ', '   ', '\t', '\n', '\u3000', '\u2581', '\u200b', '\u0000']);
    else if (r < 0.04) v = Array.from({ length: int(1, 40) }, () => pick(odd)).join('');
    else v = sentence();
    if (rnd() < 1 / 12) v = { text: v, pair: rnd() < 0.1 ? '' : sentence() };
    out.push(v);
  }
  return out;
}

const [dir, outPath, multiPath] = process.argv.slice(2);
if (!outPath) { console.error('usage: node make_texts.js CORPORA_DIR OUT_JSONL'); process.exit(2); }
const texts = [];
for (const [file, want] of [['polarity-en-pang&lee2.csv', 4000], ['polarity-en-pang&lee1.csv', 1500]]) {
  const rows = parseCsv(fs.readFileSync(path.join(dir, file), 'utf8')).filter((r) => r.length >= 2);
  if (rows.length !== want) {
    console.error(`make_texts: ${file}: expected ${want} rows, found ${rows.length}`);
    process.exit(1);
  }
  for (const r of rows) texts.push(r.slice(1).join(','));
}
const adv = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'data', 'text', 'adversarial.json'), 'utf8'));
for (const t of adv.texts) texts.push(t);
fs.writeFileSync(outPath, texts.map((t) => JSON.stringify(t)).join('\n') + '\n');
console.log(`make_texts: ${texts.length - adv.texts.length} corpus texts + ${adv.texts.length} adversarial`);
if (multiPath) {
  const multi = multilingual(6000);
  fs.writeFileSync(multiPath, multi.map((t) => JSON.stringify(t)).join('\n') + '\n');
  console.log(`make_texts: ${multi.length} multilingual texts`);
}
