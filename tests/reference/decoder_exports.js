// tests/reference/decoder_exports.js — one exporter-made decoder
// (tests/data/models/decoder-exports/<family>, tools/testmodels/
// make_decoder_exports.py) held to ONNX Runtime's own greedy loop, which
// shares nothing with anytime: npm tokenizers for the prompt ids (the
// tokenizer.json's post-processor, as HF's fast tokenizer encodes), then
// onnxruntime-node running the graph one prompt at a time, a prefill of the
// whole prompt and one token per Run with each `present` fed back as the
// next `past`.
//
//   1. the prompt ids equal reference.json's (the generator's own encoder);
//   2. ORT's loop equals reference.json's continuation (torch, float64, the
//      whole sequence recomputed each step): the stand-in itself is sound;
//   3. `anytime generate --ids --json` (its output in GEN_JSON, every prompt
//      at once): the same ids, token for token, and the same finish;
//   4. with BASE_URL: the four prompts sent at once to /v1/completions
//      (temperature 0): the text npm tokenizers decodes from ORT's ids, and
//      the same completion_tokens and finish_reason.
//
// usage: node decoder_exports.js MODEL_DIR GEN_JSON [BASE_URL MODEL_NAME]
// Prints one line per check; exits 1 on the first disagreement.
'use strict';
const fs = require('fs');
const path = require('path');

const nm = path.join(__dirname, '..', 'node', 'node_modules');
const hf = require(path.join(nm, 'tokenizers'));
const ort = require(path.join(nm, 'onnxruntime-node'));

const [dir, genJson, base, modelName] = process.argv.slice(2);
const fam = path.basename(dir);
const die = (m) => { console.error(`FAIL ${fam}: ${m}`); process.exit(1); };
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const firstDiff = (a, b) => { let i = 0; while (i < a.length && i < b.length && a[i] === b[i]) i++; return i; };

const ref = JSON.parse(fs.readFileSync(path.join(dir, 'reference.json'), 'utf8'));
const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
const L = cfg.n_layer ?? cfg.num_hidden_layers;
const H = cfg.n_head ?? cfg.num_attention_heads;
const KVH = cfg.num_key_value_heads ?? H;
const D = cfg.head_dim ?? (cfg.n_embd ?? cfg.hidden_size) / H;
const eos = ref.eos_ids, STEPS = ref.steps;

async function greedy(sess, ids) { // ORT's present-fed loop, batch 1
  const feeds = {}, out = [];
  for (let l = 0; l < L; l++)
    for (const kv of ['key', 'value'])
      feeds[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, KVH, 0, D]);
  let cur = ids.slice(), past = 0;
  for (let step = 0; step < STEPS; step++) {
    const S = cur.length;
    feeds.input_ids = new ort.Tensor('int64', BigInt64Array.from(cur, BigInt), [1, S]);
    feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(past + S).fill(1n), [1, past + S]);
    feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from(cur, (_, i) => BigInt(past + i)), [1, S]);
    const r = await sess.run(feeds);
    const V = r.logits.dims[2], row = r.logits.data.subarray((S - 1) * V, S * V);
    let tok = 0;
    for (let v = 1; v < V; v++) if (row[v] > row[tok]) tok = v;
    out.push(tok);
    if (eos.includes(tok)) break;
    for (let l = 0; l < L; l++)
      for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = r[`present.${l}.${kv}`];
    past += S;
    cur = [tok];
  }
  return out;
}

(async () => {
  const tok = hf.Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const sess = await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'),
    { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  const orts = [];
  for (const p of ref.prompts) {
    const ids = Array.from((await tok.encode(p.text)).getIds());
    if (!same(ids, p.input_ids)) die(`prompt ${JSON.stringify(p.text)}: npm tokenizers ${JSON.stringify(ids)}, reference.json ${JSON.stringify(p.input_ids)}`);
    const got = await greedy(sess, ids);
    if (!same(got, p.continuation_ids)) die(`ORT's loop differs from the float64 reference at token ${firstDiff(got, p.continuation_ids)} of ${JSON.stringify(p.text)}`);
    orts.push(got);
  }
  const n = orts.map((o) => o.length);
  console.log(`${fam}: ORT's present-fed loop = the float64 reference (${n.join(', ')} tokens)`);

  const emitted = orts.map((o) => o.filter((t) => !eos.includes(t)));
  const finish = orts.map((o) => (eos.includes(o[o.length - 1]) ? 'stop' : 'length'));
  const gen = fs.readFileSync(genJson, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  if (gen.length !== ref.prompts.length) die(`anytime generate answered ${gen.length} of ${ref.prompts.length} prompts`);
  gen.forEach((g, i) => {
    if (g.prompt_tokens !== ref.prompts[i].input_ids.length) die(`anytime generate: prompt ${i} has ${g.prompt_tokens} ids, ORT's ${ref.prompts[i].input_ids.length}`);
    if (!same(g.ids, emitted[i])) die(`anytime generate: prompt ${i} differs from ORT's loop at token ${firstDiff(g.ids, emitted[i])}`);
    if (g.finish_reason !== finish[i]) die(`anytime generate: prompt ${i} finished "${g.finish_reason}", ORT's loop "${finish[i]}"`);
  });
  console.log(`${fam}: anytime generate, ${gen.length} prompts at once: token-identical to ORT's loop`);

  if (!base) return;
  const answers = await Promise.all(ref.prompts.map(async (p) => {
    const res = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: modelName, prompt: p.text, max_tokens: STEPS, temperature: 0 }) });
    const j = await res.json();
    if (res.status !== 200) die(`/v1/completions: ${res.status} ${JSON.stringify(j)}`);
    return j;
  }));
  for (let i = 0; i < answers.length; i++) {
    const c = answers[i].choices[0], want = await tok.decode(emitted[i], true);
    if (answers[i].usage.completion_tokens !== emitted[i].length) die(`served: prompt ${i} gave ${answers[i].usage.completion_tokens} tokens, ORT's loop ${emitted[i].length}`);
    if (c.finish_reason !== finish[i]) die(`served: prompt ${i} finished "${c.finish_reason}", ORT's loop "${finish[i]}"`);
    if (c.text !== want) die(`served: prompt ${i} text ${JSON.stringify(c.text)}, ORT's ids decode to ${JSON.stringify(want)}`);
  }
  console.log(`${fam}: /v1/completions, ${answers.length} requests at once: the text of ORT's loop`);
})().catch((e) => die(e.stack || String(e)));
