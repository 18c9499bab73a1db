// bench/bare_ort/ids.js — token ids for the bare loop (bare_ort.c), made by
// the Hugging Face tokenizers library (the reference, not anytime's
// tokenizer), so that the bare loop shares no code with what it checks.
//
//   node ids.js lengths TOKENIZER.json L1 [L2 ...]
//       for each L, the shortest prefix of a fixed review sentence (repeated
//       as needed) that encodes to exactly L ids with the specials; one line
//       per L: "L<TAB>ids,comma,list<TAB>text"
//   node ids.js bodies TOKENIZER.json < bodies.jsonl
//       one {"inputs": text} JSON body per line in (bench/peers/node-ort/
//       make_bodies.js makes them from a CSV), one "ids,comma,list" line out:
//       the --ids-file of bare_ort for the same texts the server is sent
//
// Needs the npm package `tokenizers`, as bench/peers/node-ort installs it.
"use strict";
const path = require("path");
const readline = require("readline");
const { Tokenizer } = require(require.resolve("tokenizers", {
  paths: [path.join(__dirname, "..", "peers", "node-ort")],
}));

const source = ("a gripping , funny and humane film about loss , grief and the small " +
  "mercies that keep a family together ; the cast is superb and the script never " +
  "settles for the easy sentiment it could have had .").split(" ");

async function lengths(tok, lens) {
  for (const want of lens.map(Number)) {
    let found = null;
    for (let n = 1; n <= 4 * want + 8 && !found; n++) {
      const words = [];
      for (let i = 0; i < n; i++) words.push(source[i % source.length]);
      const text = words.join(" ");
      const ids = (await tok.encode(text)).getIds();
      if (ids.length === want) found = { text, ids };
      if (ids.length > want) break;
    }
    if (!found) throw new Error(`no prefix encodes to exactly ${want} ids`);
    console.log(`${want}\t${found.ids.join(",")}\t${found.text}`);
  }
}

async function bodies(tok) {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const ids = (await tok.encode(JSON.parse(line).inputs)).getIds();
    process.stdout.write(ids.join(",") + "\n");
  }
}

async function main() {
  const [mode, tokPath, ...rest] = process.argv.slice(2);
  if (!tokPath || !["lengths", "bodies"].includes(mode) || (mode === "lengths" && !rest.length)) {
    console.error("usage: node ids.js lengths TOKENIZER.json L1 [L2 ...]\n" +
                  "       node ids.js bodies TOKENIZER.json < bodies.jsonl");
    process.exit(2);
  }
  const tok = Tokenizer.fromFile(tokPath);
  if (mode === "lengths") await lengths(tok, rest);
  else await bodies(tok);
}
main().catch((e) => { console.error(`ids.js: ${e.message}`); process.exit(1); });
