// tests/parity/unicode/diff.js — field-by-field differences between the two
// probes (HF_JSONL ANYTIME_JSONL); prints counts and samples per field and
// writes the full lists as JSON to stdout with --json.
'use strict';
const fs = require('fs');
const [hp, ap, flag] = process.argv.slice(2);
const H = fs.readFileSync(hp, 'utf8').split('\n').filter((l) => l);
const A = fs.readFileSync(ap, 'utf8').split('\n').filter((l) => l);
const names = ['cp', 'clean', 'strip', 'lower', 'bert', 'nfkc', 'nfd', 'gpt2a', 'gpt21', 'wsa', 'wsdot'];
const d = {};
for (let i = 0; i < H.length; i++) {
  if (H[i] === A[i]) continue;
  const h = JSON.parse(H[i]), a = JSON.parse(A[i]);
  for (let f = 1; f < names.length; f++)
    if (h[f] !== a[f]) (d[names[f]] = d[names[f]] || []).push([h[0], h[f], a[f]]);
}
if (flag === '--json') { process.stdout.write(JSON.stringify(d)); process.exit(0); }
for (const k in d) console.log(k, d[k].length, JSON.stringify(d[k].slice(0, 8).map(([c, x, y]) => [c.toString(16), x, y])));
