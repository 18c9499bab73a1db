// tests/reference/gqa_exports.js — the GroupQueryAttention form of an
// exporter-made decoder (tests/data/models/decoder-exports/<family>/gqa/
// model.onnx: the same weights as onnx/model.onnx, written by
// tools/testmodels/make_decoder_exports.py through make_gqa_decoder.py's
// graph) decodes what the exported form decodes. onnxruntime-node runs it
// as the generation lane would: one [B, kv_heads, MAXLEN, head_dim] buffer
// per layer key/value given as both the past input and the present output
// (ONNX Runtime writes each new position in place), seqlens_k = each row's
// total length - 1, total_sequence_length = the longest row's.
//
//   1. each prompt alone: the prompt in one Run, then one token per Run;
//   2. the four prompts at once: each prefilled alone (the kernel takes more
//      than one new position with a past only at batch 1), its rows copied
//      into one batch buffer, then every step one Run over rows of
//      different lengths;
// both token for token equal to reference.json's continuation (torch,
// float64, the whole sequence recomputed at every step), which the
// exported form is held to by decoder_exports.js.
//
// usage: node gqa_exports.js MODEL_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'node', 'node_modules', 'onnxruntime-node'));

const dir = process.argv[2];
const fam = path.basename(dir);
const die = (m) => { console.error(`FAIL ${fam} (GQA form): ${m}`); process.exit(1); };
const ref = JSON.parse(fs.readFileSync(path.join(dir, 'reference.json'), 'utf8'));
const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
const L = cfg.num_hidden_layers, H = cfg.num_attention_heads;
const KVH = cfg.num_key_value_heads ?? H, D = cfg.head_dim ?? cfg.hidden_size / H;
const V = cfg.vocab_size, eos = ref.eos_ids, STEPS = ref.steps;
const prompts = ref.prompts.map((p) => p.input_ids);
const want = ref.prompts.map((p) => p.continuation_ids);
const MAXLEN = Math.max(...prompts.map((p) => p.length)) + STEPS + 1;

function buffers(B) {
  const b = {};
  for (let i = 0; i < L; i++)
    for (const kv of ['key', 'value']) {
      const a = new Float32Array(B * KVH * MAXLEN * D);
      b[`${i}.${kv}`] = { a, t: new ort.Tensor('float32', a, [B, KVH, MAXLEN, D]) };
    }
  return b;
}

async function run(sess, bufs, ids, S, lens) { // lens: each row's total after this Run
  const B = lens.length;
  const feeds = {
    input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [B, S]),
    seqlens_k: new ort.Tensor('int32', Int32Array.from(lens.map((n) => n - 1)), [B]),
    total_sequence_length: new ort.Tensor('int32', Int32Array.from([Math.max(...lens)]), []),
  };
  const fetches = { logits: null };
  for (const k of Object.keys(bufs)) {
    feeds[`past_key_values.${k}`] = bufs[k].t;
    fetches[`present.${k}`] = bufs[k].t;
  }
  const out = await sess.run(feeds, fetches);
  // the kernel wrote each row's new positions into the memory we gave it
  // (the buffers start zeroed; a key of all zeros does not happen)
  for (const k of Object.keys(bufs))
    for (let b = 0; b < B; b++) {
      const at = ((b * KVH) * MAXLEN + lens[b] - 1) * D;
      if (bufs[k].a.subarray(at, at + D).every((x) => x === 0))
        die(`present.${k} row ${b} position ${lens[b] - 1} was not written into the shared buffer`);
    }
  const lg = out.logits.data, next = [];
  for (let b = 0; b < B; b++) {
    const off = (b * S + S - 1) * V;
    let best = 0;
    for (let v = 1; v < V; v++) if (lg[off + v] > lg[off + best]) best = v;
    next.push(best);
  }
  return next;
}

function check(what, got) {
  for (let i = 0; i < prompts.length; i++) {
    const a = got[i], b = want[i];
    let k = 0;
    while (k < a.length && k < b.length && a[k] === b[k]) k++;
    if (k !== a.length || a.length !== b.length)
      die(`${what}: prompt ${i} differs from the float64 reference at token ${k} of ${b.length}`);
  }
  console.log(`${fam} (GQA form): ${what}: token-identical to the float64 reference ` +
    `(${got.map((g) => g.length).join(', ')} tokens)`);
}

(async () => {
  const sess = await ort.InferenceSession.create(path.join(dir, 'gqa', 'model.onnx'),
    { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  // 1. each prompt alone
  const alone = [];
  for (const p of prompts) {
    const bufs = buffers(1);
    let len = p.length, t = (await run(sess, bufs, p, p.length, [len]))[0];
    const toks = [t];
    while (toks.length < STEPS && !eos.includes(t)) {
      len++;
      t = (await run(sess, bufs, [t], 1, [len]))[0];
      toks.push(t);
    }
    alone.push(toks);
  }
  check('each prompt alone', alone);
  // 2. all at once: prefill alone, rows copied into one batch buffer
  const B = prompts.length, batch = buffers(B), row = KVH * MAXLEN * D;
  const toks = [], lens = [], done = [];
  for (let i = 0; i < B; i++) {
    const one = buffers(1);
    toks.push([(await run(sess, one, prompts[i], prompts[i].length, [prompts[i].length]))[0]]);
    lens.push(prompts[i].length);
    done.push(false);
    for (const k of Object.keys(one)) batch[k].a.set(one[k].a, i * row);
  }
  for (let step = 1; step < STEPS; step++) {
    for (let i = 0; i < B; i++) if (eos.includes(toks[i][toks[i].length - 1])) done[i] = true;
    if (done.every(Boolean)) break;
    const last = toks.map((t) => t[t.length - 1]);
    const next = await run(sess, batch, last, 1, lens.map((n) => n + 1));
    for (let i = 0; i < B; i++) {
      lens[i]++;
      if (!done[i]) toks[i].push(next[i]);
    }
  }
  check(`the ${B} prompts at once (rows of ${prompts.map((p) => p.length).join('/')} prompt tokens)`, toks);
})().catch((e) => die(e.stack || String(e)));
