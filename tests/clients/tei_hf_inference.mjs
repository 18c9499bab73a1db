// tests/clients/tei_hf_inference.mjs — the unmodified npm @huggingface/inference
// client against anytime's TEI-style /embed, as users point it at a TEI
// endpoint (endpointUrl): featureExtraction with its own field spellings
// (truncation_direction "left"/"right", as @huggingface/tasks types them and
// TEI's serde aliases take them), and a refusal surfacing as the client's
// error with the server's message. Run by tests/integration/serve_tei.sh on
// tests/data/serve/tiny.yaml (tiny-embedder: 16 dimensions, 64 tokens).
//
// Not tested here, on purpose: textClassification reads answer[0] as the
// list of labels (the hosted API's shape), while TEI's /predict answers one
// string with the flat list itself — the client fails on real TEI the same
// way; sentenceSimilarity posts to TEI's /similarity, which anytime does not
// serve.
// usage: node tei_hf_inference.mjs BASE_URL
import { InferenceClient } from "@huggingface/inference";

const [base] = process.argv.slice(2);
const hf = new InferenceClient();
const fail = (m) => { console.error("FAIL:", m); process.exit(1); };
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const endpointUrl = `${base}/embed`;

const one = await hf.featureExtraction({ endpointUrl, inputs: "a gripping and funny film" });
if (!Array.isArray(one) || one.length !== 1 || one[0].length !== 16) fail(`one text: ${JSON.stringify(one).slice(0, 200)}`);
if (Math.abs(norm(one[0]) - 1) > 1e-5) fail(`not normalized: |v| = ${norm(one[0])}`);

const two = await hf.featureExtraction({ endpointUrl, inputs: ["good", "bad"], normalize: false });
if (two.length !== 2 || two[1].length !== 16) fail(`two texts: ${JSON.stringify(two).slice(0, 200)}`);

// truncation_direction as the client's types spell it: "left" keeps the end
const long = "good ".repeat(40) + "bad ".repeat(62);
const left = await hf.featureExtraction({ endpointUrl, inputs: long, truncate: true, truncation_direction: "left" });
const tail = await hf.featureExtraction({ endpointUrl, inputs: "bad ".repeat(62) });
const right = await hf.featureExtraction({ endpointUrl, inputs: long, truncate: true, truncation_direction: "right" });
const maxDiff = (a, b) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));
if (maxDiff(left[0], tail[0]) > 1e-5) fail(`left is not the last tokens: max diff ${maxDiff(left[0], tail[0])}`);
if (maxDiff(left[0], right[0]) < 1e-3) fail("left and right gave the same embedding");

// dimensions passes through as an extra field (TEI's EmbedRequest has it)
const d4 = await hf.featureExtraction({ endpointUrl, inputs: "good", dimensions: 4 });
if (d4[0].length !== 4 || Math.abs(norm(d4[0]) - 1) > 1e-5) fail(`dimensions 4: ${JSON.stringify(d4)}`);

// a field TEI does not define: the client raises with the server's message
try {
  await hf.featureExtraction({ endpointUrl, inputs: "good", normalise: true });
  fail("an unknown field was accepted");
} catch (e) {
  if (!/unknown field "normalise"/.test(String(e.message))) fail(`error does not name the field: ${e.message}`);
}
console.log("@huggingface/inference featureExtraction against /embed: ok");
