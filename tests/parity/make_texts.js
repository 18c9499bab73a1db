// tests/parity/make_texts.js — gathers the parity corpus as JSON Lines (one
// JSON string per line): every text of the Pang & Lee corpora (4000
// sentences from polarity-en-pang&lee2.csv, 1500 reviews from
// polarity-en-pang&lee1.csv, both RFC 4180 CSV with a BOM, label,text) and
// the committed adversarial set tests/data/text/adversarial.json.
// Fails if a corpus is missing or has the wrong count.
//
// usage: node make_texts.js CORPORA_DIR OUT_JSONL
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

const [dir, outPath] = process.argv.slice(2);
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
