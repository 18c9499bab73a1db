// tests/clients/export_standins.mjs — the server's answers for users' own
// export layouts (tests/data/models/export, see
// tools/testmodels/make_export_models.py) against the reference.json numpy
// wrote beside each: pooling as 1_Pooling says (cls, max, weighted mean),
// token limits from sentence_bert_config.json and from a RoBERTa-style
// position table, a graph that pools itself (sentence_embedding), sigmoid
// scores for a multi-label classifier, prompts before the text; through /embed, /v1/embeddings (the
// unmodified npm `openai` client), the V2 text path and /predict.
// usage: node export_standins.mjs BASE_URL EXPORT_DIR
import fs from "node:fs";
import path from "node:path";
import OpenAI from "openai";

const [base, dir] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "not-needed", maxRetries: 0 });
const fail = (m) => { console.error("FAIL:", m); process.exit(1); };
const ref = (name) => JSON.parse(fs.readFileSync(path.join(dir, name, "reference.json"), "utf8"));
const cos = (a, b) => {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  return ab / Math.sqrt(aa * bb);
};
// float32 graph vs float64 numpy on a 16-wide tanh net: measured max error
// ~3e-7 here; 1e-4 leaves room for other CPUs' kernels, and is far below the
// differences between pooling modes or truncation points (> 1e-2).
const TOL = 1e-4;
const close = (got, want, what) => {
  if (!Array.isArray(got) || got.length !== want.length)
    fail(`${what}: ${got && got.length} values, want ${want.length}`);
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  if (worst > TOL || cos(got, want) < 0.9999)
    fail(`${what}: max |diff| ${worst.toExponential(2)}, cosine ${cos(got, want)}\n got ${got.slice(0, 4)}\n want ${want.slice(0, 4)}`);
  return worst;
};
const post = async (route, body) => {
  const r = await fetch(base + route, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json().catch(() => null) };
};

let checks = 0, worst = 0;
for (const name of ["st-cls", "st-max", "st-weighted", "roberta-pos", "st-dense"]) {
  const R = ref(name);
  const texts = R.texts.map((t) => t.text);
  const long = R.texts[R.texts.length - 1];
  const over = long.ids.length < long.text.split(" ").length + 2; // the reference cut it
  // /embed, raw and normalised, every text in one request (they share padded batches)
  let r = await post("/embed", { model: name, inputs: texts, normalize: false, truncate: true });
  if (r.status !== 200) fail(`${name} /embed: ${r.status} ${JSON.stringify(r.body)}`);
  R.texts.forEach((t, i) => { worst = Math.max(worst, close(r.body[i], t.embedding, `${name} /embed "${t.text.slice(0, 30)}"`)); checks++; });
  r = await post("/embed", { model: name, inputs: texts, truncate: true });
  R.texts.forEach((t, i) => { close(r.body[i], t.normalized, `${name} /embed normalised #${i}`); checks++; });
  // past the limit without truncate: 413 naming the limit
  r = await post("/embed", { model: name, inputs: [long.text] });
  if (over) {
    if (r.status !== 413 || !JSON.stringify(r.body).includes(`the limit is ${R.limit}`))
      fail(`${name}: a ${long.text.split(" ").length + 2}-token text without truncate gave ${r.status} ${JSON.stringify(r.body)}, want 413 with the limit ${R.limit}`);
  } else if (r.status !== 200) fail(`${name}: a text within the limit gave ${r.status}`);
  checks++;
  // the openai client: float, and base64 (its default); truncate passed through
  const e = await client.embeddings.create({ model: name, input: texts, encoding_format: "float", truncate: true });
  R.texts.forEach((t, i) => { close(e.data[i].embedding, t.normalized, `${name} openai float #${i}`); checks++; });
  const b = await client.embeddings.create({ model: name, input: texts.slice(0, 2), truncate: true });
  b.data.forEach((d, i) => { close(Array.from(d.embedding), R.texts[i].normalized, `${name} openai base64 #${i}`); checks++; });
  if (over) {
    let status = 0;
    try { await client.embeddings.create({ model: name, input: long.text }); } catch (err) { status = err.status; }
    if (status !== 413) fail(`${name}: openai client without truncate: status ${status}, want 413`);
    checks++;
  }
  // KServe V2 text path, with parameters.truncate
  r = await post(`/v2/models/${name}/infer`, {
    parameters: { truncate: true },
    inputs: [{ name: "text", datatype: "BYTES", shape: [texts.length], data: texts }],
  });
  if (r.status !== 200) fail(`${name} V2: ${r.status} ${JSON.stringify(r.body)}`);
  const out = r.body.outputs[0];
  const dim = R.texts[0].normalized.length;
  if (out.shape[0] !== texts.length || out.shape[1] !== dim) fail(`${name} V2 shape ${out.shape}`);
  R.texts.forEach((t, i) => { close(out.data.slice(i * dim, (i + 1) * dim), t.normalized, `${name} V2 #${i}`); checks++; });
}

// the multi-label classifier: a sigmoid per label, highest first
{
  const R = ref("multilabel");
  // a batch is a list of lists ([text] each), as TEI reads /predict
  const r = await post("/predict", { model: "multilabel", inputs: R.texts.map((t) => [t.text]) });
  if (r.status !== 200) fail(`/predict multilabel: ${r.status} ${JSON.stringify(r.body)}`);
  const labels = ["toxic", "obscene", "insult"];
  R.texts.forEach((t, i) => {
    const got = labels.map((l) => r.body[i].find((s) => s.label === l).score);
    worst = Math.max(worst, close(got, t.scores, `multilabel /predict #${i}`));
    if (Math.abs(got.reduce((a, x) => a + x, 0) - 1) < 1e-3 && Math.abs(t.scores.reduce((a, x) => a + x, 0) - 1) > 1e-3)
      fail("multilabel scores sum to 1: a softmax was applied");
    checks++;
  });
  const raw = await post("/predict", { model: "multilabel", inputs: R.texts[0].text, raw_scores: true });
  const gotRaw = labels.map((l) => raw.body.find((s) => s.label === l).score);
  close(gotRaw, R.texts[0].logits, "multilabel raw_scores");
  checks++;
}
// the cross-encoder: /rerank, and the same pairs on /predict
{
  const R = ref("reranker");
  const texts = R.pairs.map((p) => p.text);
  const want = R.pairs.map((p, i) => ({ index: i, score: p.score })).sort((a, b) => b.score - a.score);
  let r = await post("/rerank", { model: "reranker", query: R.query, texts, return_text: true });
  if (r.status !== 200 || !Array.isArray(r.body) || r.body.length !== texts.length)
    fail(`/rerank: ${r.status} ${JSON.stringify(r.body)}`);
  r.body.forEach((g, k) => {
    if (g.index !== want[k].index) fail(`/rerank order: position ${k} is text ${g.index}, want ${want[k].index} (${JSON.stringify(r.body)})`);
    worst = Math.max(worst, close([g.score], [want[k].score], `/rerank score of text ${g.index}`));
    if (g.text !== texts[g.index]) fail(`/rerank return_text: ${g.text}`);
    checks++;
  });
  const unnamed = await post("/rerank", { query: R.query, texts }); // the one cross-encoder answers
  if (unnamed.status !== 200 || unnamed.body[0].index !== want[0].index) fail(`/rerank without a model: ${unnamed.status}`);
  r = await post("/rerank", { model: "reranker", query: R.query, texts, raw_scores: true });
  r.body.forEach((g) => { close([g.score], [R.pairs[g.index].logit], `/rerank raw score ${g.index}`); checks++; });
  r = await post("/predict", { model: "reranker", inputs: R.pairs.map((p) => [R.query, p.text]), raw_scores: true });
  if (r.status !== 200) fail(`/predict pairs: ${r.status} ${JSON.stringify(r.body)}`);
  R.pairs.forEach((p, i) => { close([r.body[i][0].score], [p.logit], `/predict pair #${i}`); checks++; });
  // the pair template matters: the same texts as one sequence score differently
  r = await post("/predict", { model: "reranker", inputs: R.query + " " + R.pairs[0].text, raw_scores: true });
  if (Math.abs(r.body[0].score - R.pairs[0].logit) < 1e-3) fail("a pair scored like one joined text: token_type_ids not used?");
  // refusals: a model with several labels, pairs where strings are wanted
  r = await post("/rerank", { model: "multilabel", query: "q", texts: ["a"] });
  if (r.status !== 400 || !r.body.error.includes("one score")) fail(`/rerank on 3 labels: ${r.status} ${JSON.stringify(r.body)}`);
  r = await post("/embed", { model: "st-max", inputs: [["a", "b"]] });
  if (r.status !== 400) fail(`/embed with a pair: ${r.status}`);
  r = await post("/rerank", { model: "reranker", query: "", texts: ["a"] });
  if (r.status !== 400) fail(`/rerank with an empty query: ${r.status}`);
  checks += 3;
}
// prompts (config_sentence_transformers.json) with include_prompt false:
// the default prompt ("query") on every embedding route, "prompt_name" on
// /embed, the prompt's tokens left out of the mean; clear 400s otherwise
{
  const R = ref("st-prompts");
  const texts = R.texts.slice(0, -1).map((t) => t.text);
  const rows = R.texts.slice(0, -1);
  let r = await post("/embed", { model: "st-prompts", inputs: texts, normalize: false });
  if (r.status !== 200) fail(`st-prompts /embed: ${r.status} ${JSON.stringify(r.body)}`);
  rows.forEach((t, i) => { worst = Math.max(worst, close(r.body[i], t.prompts.query.embedding, `st-prompts /embed default prompt #${i}`)); checks++; });
  r = await post("/embed", { model: "st-prompts", inputs: texts, prompt_name: "doc" });
  rows.forEach((t, i) => { close(r.body[i], t.prompts.doc.normalized, `st-prompts /embed prompt_name doc #${i}`); checks++; });
  // not the text alone, nor the prompt pooled in: the reference would not match those
  if (cos(r.body[0], rows[0].normalized) > 0.9999) fail("st-prompts: the prompt made no difference");
  const e = await client.embeddings.create({ model: "st-prompts", input: texts, encoding_format: "float" });
  rows.forEach((t, i) => { close(e.data[i].embedding, t.prompts.query.normalized, `st-prompts openai #${i}`); checks++; });
  r = await post("/v2/models/st-prompts/infer", { inputs: [{ name: "text", datatype: "BYTES", shape: [texts.length], data: texts }] });
  const dim = rows[0].normalized.length;
  rows.forEach((t, i) => { close(r.body.outputs[0].data.slice(i * dim, (i + 1) * dim), t.prompts.query.normalized, `st-prompts V2 #${i}`); checks++; });
  r = await post("/embed", { model: "st-prompts", inputs: texts[0], prompt_name: "passage" });
  if (r.status !== 400 || !r.body.error.includes("query, doc")) fail(`unknown prompt_name: ${r.status} ${JSON.stringify(r.body)}`);
  r = await post("/embed", { model: "st-max", inputs: texts[0], prompt_name: "query" });
  if (r.status !== 400 || !r.body.error.includes("has no prompts")) fail(`prompt_name on a model without prompts: ${r.status} ${JSON.stringify(r.body)}`);
  r = await post("/embed", { model: "st-prompts", inputs: texts[0], prompt_name: 3 });
  if (r.status !== 400) fail(`prompt_name 3: ${r.status}`);
  checks += 4;
}
console.log(`export stand-ins: ${checks} checks passed; worst |diff| ${worst.toExponential(2)}`);
