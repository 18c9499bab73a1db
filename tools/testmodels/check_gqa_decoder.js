// tools/testmodels/check_gqa_decoder.js — does the GroupQueryAttention form of
// tools/testmodels/make_gqa_decoder.py compute what it should, when driven in
// share-buffer decode mode (issue 43)?
//
// Runs the fp32 graph through onnxruntime-node (tests/node/node_modules): one
// preallocated [B, kv, MAXLEN, D] buffer per layer key/value, the same ort.Tensor
// given as past_key_values.L.* (feed) and present.L.* (fetch); the prompt
// prefilled in one Run, then one token per Run with seqlens_k = total - 1 and
// total_sequence_length = total. The buffers' unused tail starts filled with
// garbage (1e3), so a kernel that read past seqlens_k would show. Compared with
// tools/testmodels/check_gqa_reference.py (float64 numpy, whole sequence
// recomputed each step): logits within 1e-3 relative (max |ort - ref| / max |ref|
// per row), the same greedy tokens, and the buffers must hold the new keys
// (ORT wrote into the bound memory: no copy out).
//
//   node tools/testmodels/check_gqa_decoder.js [MODEL_DIR]   (default: the tiny size, built if needed)
// Exit 0 when every check holds.
'use strict';
const path = require('path');
const { execFileSync } = require('child_process');
const root = path.resolve(__dirname, '..', '..');
const ort = require(path.join(root, 'tests', 'node', 'node_modules', 'onnxruntime-node'));

const PY = process.env.PYTHON || '/usr/bin/python3';
const STEPS = 8, MAXLEN = 32, TOL = 1e-3;
const PROMPTS = [[1, 17, 42, 99, 250], [3, 8, 200, 77, 5]];

function argmax(a, off, n) {
  let b = 0;
  for (let i = 1; i < n; i++) if (a[off + i] > a[off + b]) b = i;
  return b;
}

async function main() {
  const dir = process.argv[2] ||
    execFileSync(PY, [path.join(__dirname, 'make_gqa_decoder.py'), '--size', 'tiny']).toString().trim().split('\n').pop();
  const c = require(path.join(dir, 'gqa_config.json'));
  const ref = JSON.parse(execFileSync(PY, [path.join(__dirname, 'check_gqa_reference.py'), dir, String(STEPS),
    JSON.stringify(PROMPTS)], { maxBuffer: 1 << 28 }).toString()).prompts;
  const sess = await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'),
    { graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1 });
  const B = PROMPTS.length, P = PROMPTS[0].length, V = c.vocab, kv = c.kv_heads, D = c.head_dim;
  const per = B * kv * MAXLEN * D;
  const bufs = {};
  for (let i = 0; i < c.layers; i++)
    for (const n of ['key', 'value']) {
      const a = new Float32Array(per).fill(1e3);
      bufs[n + i] = { data: a, t: new ort.Tensor('float32', a, [B, kv, MAXLEN, D]) };
    }
  let worst = 0, fails = 0;
  const toks = PROMPTS.map(() => []);
  let ids = PROMPTS.flat();
  for (let s = 0; s < STEPS; s++) {
    const S = s === 0 ? P : 1, total = P + s;
    const feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [B, S]),
      seqlens_k: new ort.Tensor('int32', Int32Array.from(PROMPTS.map(() => total - 1)), [B]),
      total_sequence_length: new ort.Tensor('int32', Int32Array.from([total]), []),
    };
    const fetches = { logits: null };
    for (let i = 0; i < c.layers; i++)
      for (const n of ['key', 'value']) {
        feeds[`past_key_values.${i}.${n}`] = bufs[n + i].t;
        fetches[`present.${i}.${n}`] = bufs[n + i].t;
      }
    const out = await sess.run(feeds, fetches);
    const lg = out.logits.data;
    ids = [];
    for (let b = 0; b < B; b++) {
      const off = (b * S + S - 1) * V, r = ref[b].logits[s];
      let md = 0, mr = 0;
      for (let v = 0; v < V; v++) {
        md = Math.max(md, Math.abs(lg[off + v] - r[v]));
        mr = Math.max(mr, Math.abs(r[v]));
      }
      const rel = md / mr, t = argmax(lg, off, V);
      worst = Math.max(worst, rel);
      const ok = rel <= TOL && t === ref[b].tokens[s];
      if (!ok) fails++;
      console.log(`step ${s} row ${b}: total ${total}, max|diff| ${md.toExponential(2)}, ` +
        `rel ${rel.toExponential(2)}, token ort ${t} ref ${ref[b].tokens[s]} ` +
        `(ref margin ${ref[b].margins[s].toFixed(3)})${ok ? '' : '  FAIL'}`);
      toks[b].push(t);
      ids.push(t);
    }
    // ORT must have written this step's keys into our buffer (share-buffer
    // mode), at positions [total - S, total) of every row and head, and left the
    // tail untouched
    for (let i = 0; i < c.layers; i++) {
      const a = bufs['key' + i].data;
      if (s === 0 && out[`present.${i}.key`].data.buffer !== a.buffer)
        console.log(`note: present.${i}.key came back as a different JS array (checked by content)`);
      for (let b = 0; b < B; b++)
        for (let h = 0; h < kv; h++) {
          const base = ((b * kv + h) * MAXLEN) * D;
          for (let p = total - S; p < total; p++)
            if (a[base + p * D] === 1e3) { fails++; console.log(`FAIL: layer ${i} key row ${b} head ${h} pos ${p} not written`); }
          if (a[base + total * D] !== 1e3) { fails++; console.log(`FAIL: layer ${i} tail written at ${total}`); }
        }
    }
  }
  console.log(`tokens ort ${JSON.stringify(toks)}\ntokens ref ${JSON.stringify(ref.map(r => r.tokens))}`);
  console.log(`worst relative logit difference ${worst.toExponential(3)} (tolerance ${TOL}); ` +
    `${fails ? fails + ' FAILURES' : 'all checks hold'}`);
  process.exit(fails ? 1 : 0);
}
main().catch(e => { console.error(e); process.exit(2); });
