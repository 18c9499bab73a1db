// bench/decode/node_decode.js — the peer the generation lane is measured
// against: a greedy decode loop written the way a Node user would with
// onnxruntime-node (tests/node/node_modules, pinned), feeding each step's
// `present.*` outputs back as `past_key_values.*`. B sequences of equal
// length, their past first filled with C positions of small values (as
// bench/bare_ort/bare_decode.c and bench_decode --only steady do), then N
// steps, each row's argmax its next token. Per pass the median step; the
// last line: csv,B,C,step_ms_median,tokens_per_s_median,lo,hi
//
// usage: node node_decode.js MODEL.onnx B C [STEPS (16)] [PASSES (3)] [THREADS (1)]
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', '..', 'tests', 'node', 'node_modules', 'onnxruntime-node'));

const [model, bArg, cArg, sArg, pArg, tArg] = process.argv.slice(2);
const B = Number(bArg), C = Number(cArg), STEPS = Number(sArg || 16), PASSES = Number(pArg || 3);
const med = (a) => { const s = [...a].sort((x, y) => x - y); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };

(async () => {
  const sess = await ort.InferenceSession.create(model, { intraOpNumThreads: Number(tArg || 1), interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  const pastNames = sess.inputNames.filter((n) => n.startsWith('past_key_values.'));
  const meta = sess.inputMetadata ? sess.inputMetadata : null;
  // heads and head_dim: the first past input's static dims (read from a 0-length probe's error-free shape)
  let H = null, D = null;
  if (meta) {
    const m = Array.isArray(meta) ? meta.find((x) => x.name === pastNames[0]) : meta[pastNames[0]];
    if (m && m.shape) { H = m.shape[1]; D = m.shape[3]; }
  }
  if (!(H > 0 && D > 0)) { console.error('node_decode: cannot read heads/head_dim of', pastNames[0]); process.exit(1); }
  async function pass(steps) {
    const per = B * H * C * D;
    const seed = Float32Array.from({ length: per }, (_, k) => ((k * 2654435761) % 2001) / 1000 - 1);
    let past = {};
    for (const n of pastNames) past[n] = new ort.Tensor('float32', seed, [B, H, C, D]);
    let ids = BigInt64Array.from({ length: B }, (_, b) => BigInt(100 + b));
    const t = [];
    for (let s = 0; s < steps; s++) {
      const L = C + s;
      const feeds = { ...past, input_ids: new ort.Tensor('int64', ids, [B, 1]),
        attention_mask: new ort.Tensor('int64', new BigInt64Array(B * (L + 1)).fill(1n), [B, L + 1]) };
      if (sess.inputNames.includes('position_ids')) feeds.position_ids = new ort.Tensor('int64', new BigInt64Array(B).fill(BigInt(L)), [B, 1]);
      const t0 = performance.now();
      const r = await sess.run(feeds);
      const V = r.logits.dims[2], S = r.logits.dims[1], data = r.logits.data;
      const next = new BigInt64Array(B);
      for (let b = 0; b < B; b++) {
        const off = (b * S + S - 1) * V;
        let best = 0;
        for (let v = 1; v < V; v++) if (data[off + v] > data[off + best]) best = v;
        next[b] = BigInt(best);
      }
      ids = next;
      past = {};
      for (const n of pastNames) past[n] = r[n.replace('past_key_values.', 'present.')];
      t.push(performance.now() - t0);
    }
    return med(t);
  }
  await pass(2);
  const steps = [], tps = [];
  for (let p = 0; p < PASSES; p++) {
    const ms = await pass(STEPS);
    steps.push(ms); tps.push(B / ms * 1e3);
    console.log(`pass ${p + 1}: batch ${B}, cached ${C}: step ${ms.toFixed(3)} ms, ${(B / ms * 1e3).toFixed(1)} tokens/s`);
  }
  console.log(`csv,${B},${C},${med(steps).toFixed(4)},${med(tps).toFixed(1)},${Math.min(...tps).toFixed(1)},${Math.max(...tps).toFixed(1)}`);
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
