// bench/bare_ort/texts_of_length.js — for each wanted length L, a text whose
// encoding by the Hugging Face tokenizers library (the reference, not
// anytime's tokenizer) is exactly L ids with the specials, and those ids.
// The text is the shortest prefix of a fixed review sentence, repeated as
// needed, that reaches L. Prints one line per L: "L<TAB>ids,comma,list<TAB>text".
// usage: node texts_of_length.js TOKENIZER.json L1 [L2 ...]
// (needs the npm package `tokenizers`, as bench/peers/node-ort installs it)
"use strict";
const path = require("path");
const { Tokenizer } = require(require.resolve("tokenizers", {
  paths: [path.join(__dirname, "..", "peers", "node-ort")],
}));

const source = ("a gripping , funny and humane film about loss , grief and the small " +
  "mercies that keep a family together ; the cast is superb and the script never " +
  "settles for the easy sentiment it could have had .").split(" ");

async function main() {
  const [tokPath, ...lens] = process.argv.slice(2);
  if (!tokPath || lens.length === 0) {
    console.error("usage: node texts_of_length.js TOKENIZER.json L1 [L2 ...]");
    process.exit(2);
  }
  const tok = Tokenizer.fromFile(tokPath);
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
    if (!found) {
      console.error(`texts_of_length: no prefix encodes to exactly ${want} ids`);
      process.exit(1);
    }
    console.log(`${want}\t${found.ids.join(",")}\t${found.text}`);
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
