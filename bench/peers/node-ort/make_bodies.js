// bench/peers/node-ort/make_bodies.js — turn a label,text CSV into one
// {"inputs": text} JSON body per line, for the wrk script (bench/wrk_predict.lua).
// usage: node make_bodies.js DATA.csv > bodies.jsonl
"use strict";
const fs = require("fs");
const src = fs.readFileSync(process.argv[2], "utf8");
let i = 0, field = "", row = [], rows = [], q = false;
for (; i < src.length; i++) {
  const c = src[i];
  if (q) {
    if (c === '"' && src[i + 1] === '"') { field += '"'; i++; }
    else if (c === '"') q = false;
    else field += c;
  } else if (c === '"') q = true;
  else if (c === ",") { row.push(field); field = ""; }
  else if (c === "\n") { row.push(field); rows.push(row); row = []; field = ""; }
  else if (c !== "\r") field += c;
}
if (field || row.length) { row.push(field); rows.push(row); }
for (const r of rows.slice(1)) if (r.length >= 2) process.stdout.write(JSON.stringify({ inputs: r[1] }) + "\n");
