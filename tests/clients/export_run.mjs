// tests/clients/export_run.mjs — `anytime run --json` on one export stand-in
// (tests/data/models/export/NAME) against its reference.json: the
// normalised embedding, or a multi-label classifier's sigmoid scores.
// usage: anytime run DIR TEXT... --json | node export_run.mjs REFERENCE_JSON
import fs from "node:fs";

const R = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const got = JSON.parse(fs.readFileSync(0, "utf8"));
const fail = (m) => { console.error("FAIL:", m); process.exit(1); };
if (got.results.length !== R.texts.length) fail(`${got.results.length} results, want ${R.texts.length}`);
let worst = 0;
got.results.forEach((g, i) => {
  const t = R.texts[i];
  const want = t.normalized ?? t.scores;
  const have = t.normalized ? g.embedding : Object.values(g.scores);
  if (!have || have.length !== want.length) fail(`text ${i}: ${have && have.length} values, want ${want.length}`);
  for (let k = 0; k < want.length; k++) worst = Math.max(worst, Math.abs(have[k] - want[k]));
});
// the same tolerance as export_standins.mjs, for the same reason
if (worst > 1e-4) fail(`max |diff| ${worst}`);
console.log(`run: ${got.results.length} texts within ${worst.toExponential(2)} of the reference`);
