// Checks a model directory's tokenizer.json with the real Hugging Face
// tokenizers library (npm tokenizers@0.23.2): every text in the expected-ids
// file must encode to exactly the ids our Python tokenizer produced - the ids
// the model was trained on.  Run through check_tokenizer.sh, which installs
// the pinned library outside the repository and writes the expected ids.
//
// usage: node check_tokenizer.mjs NODE_PREFIX TOKENIZER_JSON EXPECTED_JSONL
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [prefix, tokPath, expPath] = process.argv.slice(2);
if (!expPath) {
  console.error('usage: node check_tokenizer.mjs NODE_PREFIX TOKENIZER_JSON EXPECTED_JSONL');
  process.exit(2);
}
const require = createRequire(join(prefix, 'package.json'));
const { Tokenizer } = require('tokenizers');
const tok = Tokenizer.fromFile(tokPath);
const lines = readFileSync(expPath, 'utf8').split('\n').filter((l) => l.length);
let bad = 0;
let pieces = 0;
for (const line of lines) {
  const { text, ids } = JSON.parse(line);
  const enc = await tok.encode(text);
  const got = enc.getIds();
  pieces += got.length;
  if (got.length !== ids.length || got.some((v, i) => v !== ids[i])) {
    if (bad < 5) {
      console.error('MISMATCH', JSON.stringify(text).slice(0, 200));
      console.error('  expected', JSON.stringify(ids));
      console.error('  library ', JSON.stringify(got));
    }
    bad++;
  }
}
const vs = tok.getVocabSize(true);
console.log(`${tokPath}: ${lines.length} texts, ${pieces} ids, vocab ${vs}: ` +
            `${lines.length - bad} passed, ${bad} failed`);
process.exit(bad === 0 ? 0 : 1);
