// tests/reference/http_reference.js — an independent HTTP-level reference for
// the numbers anytime serves. Given a RUNNING server and a manifest of the
// models it serves (one variant per served model, so the model name forces
// the graph), it tokenises every text with the real Hugging Face tokenizers
// library (npm tokenizers), runs the same ONNX file with onnxruntime-node
// (npm, a different ONNX Runtime release from the server's), computes the task
// heads itself — softmax, mean pooling over real tokens (or CLS, if the
// model's 1_Pooling/config.json asks for it), L2 normalisation,
// OpenAI `dimensions` (first N, renormalised: docs/api.md), base64
// little-endian float32 — and compares every route's answer with them:
//
//   classifiers: POST /predict (probabilities, labels, order; raw_scores;
//                truncate, and 413 without it), V2 text infer (logits,
//                probabilities), V2 tensor infer (logits, and `pooled`
//                where the graph has it);
//   embedders:   POST /embed (normalize true / false; truncate, and 413
//                without it), POST /v1/embeddings
//                (float, base64, dimensions, usage), V2 text infer
//                (embedding), V2 tensor infer (last_hidden_state, zero past
//                each row's length);
//   every model: an out-of-vocabulary id on V2 is exactly 400.
//
// Nothing of anytime's computes a number this script expects. It starts
// nothing: tests/integration/http_reference.sh starts the server.
//
// usage: node http_reference.js BASE_URL MANIFEST_JSON
//   MANIFEST: [{"name","task":"classify"|"embed","tokenizer":tokenizer.json|vocab.txt,
//               "onnx","config"?,"lowercase"?}]
// Exit 0 when every comparison holds; 1 with every failure listed.
//
// Tolerances (TOL_FP32, TOL_INT8 below) are set from what this script
// measured against the server (release build, ONNX Runtime 1.29.0 in the
// server then, 1.30.0 here and in the server since 2026-12-04; kept as
// bounds for other CPUs), max_batch_size 1 so int8 activations are quantised
// over the same tensor on both sides); every run prints its figures.
'use strict';
const fs = require('fs');
const path = require('path');

const nm = path.join(__dirname, '..', 'node', 'node_modules');
const hf = require(path.join(nm, 'tokenizers'));
const ort = require(path.join(nm, 'onnxruntime-node'));

// Tolerances, from what this script measured (2026-12-01, this host, 36
// texts, release build; the per-variant maxima are printed by every run):
//   fp32 variants and the tiny models: logits ≤ 1.1e-6, probabilities ≤ 2e-7,
//     embedding elements ≤ 5.2e-7, 1 - cos ≤ 1.7e-13, raw tensors ≤ 9.3e-7;
//   int8 variants: the same size, except sentiment-large-int8 on one text
//     ("trailing   "): logits 2.9e-4, probabilities 6.6e-5 — dynamic
//     quantisation rounds an activation to the other int8 step when two ONNX
//     Runtime releases (1.29 in the server, 1.30 here) sum in another order.
// So fp32 is held ~10x above its measured error, int8 ~7x above its worst.
const TOL_FP32 = {
  prob: 1e-5,      // |p_server - p_ref|, probabilities
  logit: 1e-5,     // |l_server - l_ref|, logits and raw_scores (absolute)
  cosine: 0.999999, // cos(server, ref), every embedding
  elem: 1e-5,      // |e_server - e_ref|, normalised embedding elements
  rawRel: 1e-5,    // max |raw_server - raw_ref| / |raw_ref|, normalize:false vectors
  tensor: 1e-5,    // max |t_server - t_ref| / max(1, |t_ref|_inf), V2 raw tensors
  unit: 1e-5,      // | |v| - 1 |, normalised vectors (float32 rounding)
};
const TOL_INT8 = { ...TOL_FP32, prob: 5e-4, logit: 2e-3, elem: 1e-4, rawRel: 1e-4, tensor: 2e-3 };
let TOL = TOL_FP32;
// server.max_tokens in the configuration http_reference.sh writes
const SERVER_MAX_TOKENS = 512;
// longer than 512 tokens in every served tokenizer
const LONG_TEXT = Array.from({ length: 90 }, (_, i) =>
  `scene ${i} was ${i % 3 ? 'good' : 'bad'}, the acting ${i % 2 ? 'dull' : 'fun'}.`).join(' ');
// Self-test switches (tests/integration/http_reference.sh records what each did):
//   ANYTIME_REF_BREAK=softmax-temperature  the reference's softmax uses T = 1.01
//   ANYTIME_REF_BREAK=no-renormalize       `dimensions` is not renormalised here
const BREAK = process.env.ANYTIME_REF_BREAK || '';

const failures = [];
const maxErr = {}; // kind -> {v, where}; cosines are kept as 1 - cos
const perModel = {}; // model -> kind -> largest
function note(kind, v, where) {
  if (kind === 'cosine') { kind = '1-cos'; v = 1 - v; }
  const m = maxErr[kind];
  if (!m || v > m.v) maxErr[kind] = { v, where };
  const model = where.split(':')[0];
  perModel[model] = perModel[model] || {};
  perModel[model][kind] = Math.max(perModel[model][kind] || 0, v);
}
function fail(msg) { failures.push(msg); if (failures.length <= 40) console.error('FAIL: ' + msg); }
function check(cond, msg) { if (!cond) fail(msg); return cond; }

// ------------------------------------------------------------ texts
// A few dozen varied texts: plain sentences of several lengths, punctuation,
// case, digits, accents, other scripts, emoji, special-token look-alikes,
// whitespace oddities and a one-character text.
function texts() {
  const base = [
    'the movie was good',
    'a bad plot, terrible acting and a soundtrack that never ends',
    'I LOVED IT!!!',
    'not good. not bad. just... there.',
    'An utterly charming, funny and moving film that deserves every award it gets.',
    'dull',
    'x',
    'It is 2026 and 3.14159 people watched 42 movies in 7 days',
    'café naïve résumé Ångström',
    'Привет, как дела? 你好世界 こんにちは',
    'emoji 😀👍🏽 and a family 👨‍👩‍👧',
    '[CLS] [SEP] [MASK] [PAD] [UNK]',
    '   leading and trailing spaces   ',
    'tabs\tand\nnew\r\nlines',
    "the director's cut isn't what we'd hoped; it's worse",
    'a',
    'supercalifragilisticexpialidocious antidisestablishmentarianism',
    'the the the the the the the the the the the the the the the the the the the the',
    'Half a season in, the show finds its feet: sharper writing, better pacing, and a cast that finally gels.',
    '!!!???...,,,;;;:::',
    'good good good',
    'bad bad bad',
    'Zero-width\u200bjoiner\u200dand soft\u00adhyphen',
    'UPPER lower MiXeD',
    'it was neither the best nor the worst thing I have seen this year, but close to the latter',
    'http://example.com/path?q=1&r=2 user@example.com',
  ];
  const adv = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'data', 'text', 'adversarial.json'), 'utf8')).texts;
  // every 15th adversarial text that has something besides whitespace
  const picked = adv.filter((t) => t.trim().length > 0 && t.length < 300).filter((_, i) => i % 15 === 0);
  return base.concat(picked);
}

// ------------------------------------------------------------ reference maths (double precision)
function softmax(l) {
  const T = BREAK === 'softmax-temperature' ? 1.01 : 1;
  const m = Math.max(...l);
  const e = l.map((x) => Math.exp((x - m) / T));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}
function norm(v) { return Math.sqrt(v.reduce((a, x) => a + x * x, 0)); }
function l2(v) { const n = norm(v); return v.map((x) => x / n); }
function cosine(a, b) {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i] * b[i];
  return d / (norm(a) * norm(b));
}
function maxAbs(a, b) { let m = 0; for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i])); return m; }
function meanPool(hidden, len, h) { // hidden: [1, len, h] flat, every position real
  const out = new Array(h).fill(0);
  for (let t = 0; t < len; t++) for (let k = 0; k < h; k++) out[k] += hidden[t * h + k];
  return out.map((x) => x / len);
}
function f32b64(b64) { // little-endian float32
  const buf = Buffer.from(b64, 'base64');
  const out = [];
  for (let i = 0; i + 4 <= buf.length; i += 4) out.push(buf.readFloatLE(i));
  return { out, bytes: buf.length };
}

// ------------------------------------------------------------ HTTP
let BASE = '';
async function post(route, body) {
  const r = await fetch(BASE + route, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { /* left null */ }
  return { status: r.status, json, text, headers: r.headers };
}
async function ok(route, body, what) {
  const r = await post(route, body);
  if (r.status !== 200 || !r.json) throw new Error(`${what}: ${route} answered ${r.status}: ${r.text.slice(0, 300)}`);
  return r;
}

// ------------------------------------------------------------ tokenizers
async function loadTokenizer(spec) {
  if (spec.tokenizer.endsWith('.json')) return hf.Tokenizer.fromFile(spec.tokenizer);
  // a bare BERT vocab.txt: the components anytime documents for it (docs/tokenizers.md)
  const tok = new hf.Tokenizer(await hf.WordPiece.fromFile(spec.tokenizer, { unkToken: '[UNK]' }));
  tok.setNormalizer(hf.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: spec.lowercase !== false }));
  tok.setPreTokenizer(hf.bertPreTokenizer());
  tok.setPostProcessor(hf.bertProcessing(['[SEP]', tok.tokenToId('[SEP]')], ['[CLS]', tok.tokenToId('[CLS]')]));
  tok.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
  return tok;
}

// ------------------------------------------------------------ one model
async function runRef(sess, ids) {
  const n = ids.length;
  const feeds = {};
  const big = BigInt64Array.from(ids.map((x) => BigInt(x)));
  for (const name of sess.inputNames) {
    if (name === 'input_ids') feeds[name] = new ort.Tensor('int64', big, [1, n]);
    else if (name === 'attention_mask') feeds[name] = new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);
    else if (name === 'token_type_ids') feeds[name] = new ort.Tensor('int64', new BigInt64Array(n), [1, n]);
    else throw new Error('reference cannot feed input ' + name);
  }
  const out = await sess.run(feeds);
  const res = {};
  for (const k of Object.keys(out)) res[k] = { dims: out[k].dims, data: Array.from(out[k].data) };
  return res;
}

async function checkModel(spec, allTexts) {
  const where = (s) => `${spec.name}: ${s}`;
  TOL = /quantized|int8/.test(path.basename(spec.onnx)) ? TOL_INT8 : TOL_FP32;
  const tok = await loadTokenizer(spec);
  const sess = await ort.InferenceSession.create(spec.onnx, { intraOpNumThreads: 1 });
  const cfg = spec.config ? JSON.parse(fs.readFileSync(spec.config, 'utf8')) : {};
  const maxPos = cfg.max_position_embeddings || 512;
  const vocab = cfg.vocab_size || tok.getVocabSize(true);
  // the texts that fit the model's positions (longer ones would be 413 without truncate)
  const items = [];
  for (const t of allTexts) {
    const e = await tok.encode(t);
    const ids = e.getIds();
    if (ids.length <= maxPos) items.push({ text: t, ids });
  }
  check(items.length >= 24, where(`only ${items.length} texts fit`));
  for (const it of items) it.ref = await runRef(sess, it.ids);
  const texts = items.map((i) => i.text);
  // `"truncate": true`: a text longer than the model's positions, cut by the
  // reference tokenizer to the server's limit (server.max_tokens, lowered to
  // max_position_embeddings: docs/api.md), [CLS] ... [SEP] kept
  const maxTok = Math.min(SERVER_MAX_TOKENS, maxPos);
  const cut = await loadTokenizer(spec);
  cut.setTruncation(maxTok);
  const longText = LONG_TEXT;
  const longIds = (await cut.encode(longText)).getIds();
  check(longIds.length === maxTok && (await tok.encode(longText)).getIds().length > maxTok,
        where(`the long text is not longer than ${maxTok} tokens`));
  const long = { text: longText, ids: longIds, ref: await runRef(sess, longIds) };
  const totalTokens = items.reduce((a, i) => a + i.ids.length, 0);
  let compared = 0;

  if (spec.task === 'classify') {
    const labels = Object.keys(cfg.id2label || {}).sort((a, b) => a - b).map((k) => cfg.id2label[k]);
    for (const it of items) { it.logits = it.ref.logits.data; it.probs = softmax(it.logits); }
    check(labels.length === items[0].logits.length, where(`id2label has ${labels.length} labels, logits ${items[0].logits.length}`));

    // /predict: probabilities, every label, highest first
    // a batch is a list of lists, as TEI reads /predict (["a", "b"] is one text pair)
    let r = await ok('/predict', { inputs: texts.map((t) => [t]), model: spec.name }, where('/predict'));
    check(Array.isArray(r.json) && r.json.length === items.length, where('/predict: not one answer per text'));
    r.json.forEach((ans, i) => {
      const it = items[i];
      check(ans.length === labels.length, where(`/predict[${i}]: ${ans.length} labels`));
      for (let k = 1; k < ans.length; k++) check(ans[k - 1].score >= ans[k].score, where(`/predict[${i}]: not highest first`));
      for (const { score, label } of ans) {
        const li = labels.indexOf(label);
        if (!check(li >= 0, where(`/predict[${i}]: unknown label ${label}`))) continue;
        const d = Math.abs(score - it.probs[li]);
        note('prob', d, where(`/predict "${it.text.slice(0, 30)}" ${label}`));
        check(d <= TOL.prob, where(`/predict "${it.text.slice(0, 40)}" ${label}: server ${score}, reference ${it.probs[li]} (|d| ${d.toExponential(2)} > ${TOL.prob})`));
        compared++;
      }
    });
    // a single string answers a single list
    r = await ok('/predict', { inputs: items[0].text, model: spec.name }, where('/predict single'));
    check(Array.isArray(r.json) && r.json.length === labels.length && r.json[0].label !== undefined, where('/predict single: not a flat list'));
    // raw_scores: logits
    r = await ok('/predict', { inputs: texts.map((t) => [t]), model: spec.name, raw_scores: true }, where('/predict raw_scores'));
    r.json.forEach((ans, i) => {
      for (let k = 1; k < ans.length; k++) check(ans[k - 1].score >= ans[k].score, where(`raw_scores[${i}]: not highest first`));
      for (const { score, label } of ans) {
        const li = labels.indexOf(label);
        const d = Math.abs(score - items[i].logits[li]);
        note('logit', d, where(`raw_scores "${items[i].text.slice(0, 30)}"`));
        check(d <= TOL.logit, where(`raw_scores "${items[i].text.slice(0, 40)}" ${label}: server ${score}, reference logit ${items[i].logits[li]}`));
        compared++;
      }
    });
    // truncate: the long text, cut to the limit
    r = await ok('/predict', { inputs: [[long.text]], model: spec.name, truncate: true }, where('/predict truncate'));
    {
      const probs = softmax(long.ref.logits.data);
      for (const { score, label } of r.json[0]) {
        const d = Math.abs(score - probs[labels.indexOf(label)]);
        note('prob', d, where('/predict truncate'));
        check(d <= TOL.prob, where(`/predict truncate ${label}: server ${score}, reference ${probs[labels.indexOf(label)]}`));
        compared++;
      }
    }
    r = await post('/predict', { inputs: [[long.text]], model: spec.name });
    check(r.status === 413, where(`/predict of ${longIds.length}+ tokens without truncate: ${r.status}, expected 413`));
    // V2 text path: logits and probabilities
    r = await ok(`/v2/models/${spec.name}/infer`, {
      id: 'ref', inputs: [{ name: 'text', datatype: 'BYTES', shape: [texts.length], data: texts }],
      outputs: [{ name: 'logits' }, { name: 'probabilities' }],
    }, where('V2 text'));
    const outs = Object.fromEntries(r.json.outputs.map((o) => [o.name, o]));
    check(r.json.id === 'ref', where('V2: id not echoed'));
    for (const [name, key, tol, kind] of [['logits', 'logits', TOL.logit, 'logit'], ['probabilities', 'probs', TOL.prob, 'prob']]) {
      const o = outs[name];
      if (!check(o && o.shape[0] === items.length && o.shape[1] === labels.length, where(`V2 ${name}: shape ${o && o.shape}`))) continue;
      items.forEach((it, i) => {
        const d = maxAbs(o.data.slice(i * labels.length, (i + 1) * labels.length), it[key]);
        note(kind, d, where(`V2 ${name} "${it.text.slice(0, 30)}"`));
        check(d <= tol, where(`V2 ${name} "${it.text.slice(0, 40)}": |d| ${d.toExponential(2)} > ${tol}`));
        compared += labels.length;
      });
    }
  } else {
    const H = items[0].ref[Object.keys(items[0].ref)[0]].dims.at(-1);
    // The pooling the model's card asks for (sentence-transformers'
    // 1_Pooling/config.json next to the tokenizer), else the mean over real
    // tokens that docs/api.md states; a mode this script cannot compute fails.
    let pooling = 'mean';
    const pc = path.join(path.dirname(spec.tokenizer), '1_Pooling', 'config.json');
    if (fs.existsSync(pc)) {
      const p = JSON.parse(fs.readFileSync(pc, 'utf8'));
      const modes = Object.keys(p).filter((k) => k.startsWith('pooling_mode_') && p[k]);
      if (modes.length !== 1 || !['pooling_mode_mean_tokens', 'pooling_mode_cls_token'].includes(modes[0])) {
        throw new Error(`${pc}: pooling ${modes.join('+') || 'none'} is not one this reference computes`);
      }
      pooling = modes[0] === 'pooling_mode_cls_token' ? 'cls' : 'mean';
    }
    for (const it of items) {
      const out = it.ref.last_hidden_state || it.ref[Object.keys(it.ref)[0]];
      it.hidden = out.data;
      it.raw = out.dims.length !== 3 ? out.data
        : pooling === 'cls' ? out.data.slice(0, H) : meanPool(out.data, it.ids.length, H);
      it.unit = l2(it.raw);
    }
    const cmpVec = (got, want, label, elemTol, kind) => {
      if (!check(Array.isArray(got) && got.length === want.length, where(`${label}: ${got && got.length} numbers, want ${want.length}`))) return;
      const c = cosine(got, want);
      note('cosine', c, where(label));
      check(c >= TOL.cosine, where(`${label}: cosine ${c} < ${TOL.cosine}`));
      const d = kind === 'rawRel' ? maxAbs(got, want) / norm(want) : maxAbs(got, want);
      note(kind, d, where(label));
      check(d <= elemTol, where(`${label}: max |d| ${d.toExponential(2)} > ${elemTol}`));
      compared += got.length;
    };
    const isUnit = (v, label) => {
      const d = Math.abs(norm(v) - 1);
      note('unit', d, where(label));
      check(d <= TOL.unit, where(`${label}: |v| = ${norm(v)}, not 1`));
    };
    // /embed, normalised (the default) and normalize:false
    let r = await ok('/embed', { inputs: texts, model: spec.name }, where('/embed'));
    check(r.json.length === items.length, where('/embed: not one vector per text'));
    items.forEach((it, i) => { cmpVec(r.json[i], it.unit, `/embed "${it.text.slice(0, 30)}"`, TOL.elem, 'elem'); isUnit(r.json[i], '/embed'); });
    r = await ok('/embed', { inputs: texts, model: spec.name, normalize: false }, where('/embed normalize:false'));
    items.forEach((it, i) => cmpVec(r.json[i], it.raw, `/embed normalize:false "${it.text.slice(0, 30)}"`, TOL.rawRel, 'rawRel'));
    {
      const out = long.ref.last_hidden_state || long.ref[Object.keys(long.ref)[0]];
      const raw = out.dims.length !== 3 ? out.data
        : pooling === 'cls' ? out.data.slice(0, H) : meanPool(out.data, long.ids.length, H);
      r = await ok('/embed', { inputs: long.text, model: spec.name, truncate: true }, where('/embed truncate'));
      cmpVec(r.json[0], l2(raw), '/embed truncate', TOL.elem, 'elem');
      r = await post('/embed', { inputs: long.text, model: spec.name });
      check(r.status === 413, where(`/embed of a long text without truncate: ${r.status}, expected 413`));
    }
    // OpenAI float
    r = await ok('/v1/embeddings', { input: texts, model: spec.name }, where('/v1/embeddings'));
    const fl = r.json.data;
    check(r.json.object === 'list' && r.json.model === spec.name, where('/v1/embeddings: envelope'));
    check(r.json.usage && r.json.usage.prompt_tokens === totalTokens && r.json.usage.total_tokens === totalTokens,
          where(`/v1/embeddings usage ${JSON.stringify(r.json.usage)}, reference tokens ${totalTokens}`));
    items.forEach((it, i) => {
      check(fl[i].index === i && fl[i].object === 'embedding', where(`/v1/embeddings[${i}]: index/object`));
      cmpVec(fl[i].embedding, it.unit, `/v1/embeddings "${it.text.slice(0, 30)}"`, TOL.elem, 'elem');
      isUnit(fl[i].embedding, '/v1/embeddings');
    });
    // OpenAI base64: little-endian float32, the same floats as the float answer, bit for bit
    r = await ok('/v1/embeddings', { input: texts, model: spec.name, encoding_format: 'base64' }, where('/v1/embeddings base64'));
    items.forEach((it, i) => {
      const e = r.json.data[i].embedding;
      if (!check(typeof e === 'string', where('base64: not a string'))) return;
      const { out, bytes } = f32b64(e);
      check(bytes === 4 * H, where(`base64[${i}]: ${bytes} bytes, want ${4 * H}`));
      cmpVec(out, it.unit, `/v1/embeddings base64 "${it.text.slice(0, 30)}"`, TOL.elem, 'elem');
      const same = out.every((x, k) => x === Math.fround(fl[i].embedding[k]));
      check(same, where(`base64[${i}]: not the float answer's float32 values bit for bit`));
    });
    // OpenAI dimensions: the first N of the pooled vector, renormalised over them
    for (const dim of [1, 2, 7, Math.floor(H / 2), H - 1, H]) {
      r = await ok('/v1/embeddings', { input: texts, model: spec.name, dimensions: dim }, where(`dimensions ${dim}`));
      items.forEach((it, i) => {
        const want = BREAK === 'no-renormalize' ? it.unit.slice(0, dim) : l2(it.raw.slice(0, dim));
        const got = r.json.data[i].embedding;
        cmpVec(got, want, `dimensions ${dim} "${it.text.slice(0, 30)}"`, dim === 1 ? 1e-6 : TOL.elem, 'elem');
        isUnit(got, `dimensions ${dim}`);
      });
    }
    // V2 text path: the normalised embedding
    r = await ok(`/v2/models/${spec.name}/infer`, {
      inputs: [{ name: 'text', datatype: 'BYTES', shape: [texts.length], data: texts }],
    }, where('V2 text'));
    const emb = r.json.outputs.find((o) => o.name === 'embedding');
    if (check(emb && emb.shape[0] === items.length && emb.shape[1] === H, where(`V2 embedding: shape ${emb && emb.shape}`))) {
      items.forEach((it, i) => cmpVec(emb.data.slice(i * H, (i + 1) * H), it.unit, `V2 embedding "${it.text.slice(0, 30)}"`, TOL.elem, 'elem'));
    }
  }

  // V2 tensor path: the model's own inputs, right-padded rows of different
  // lengths in one request; every output the graph has, against the
  // reference run of each row alone (positions past a row's length are 0).
  const groups = [];
  for (let i = 0; i < items.length; i += 6) groups.push(items.slice(i, i + 6));
  for (const g of groups) {
    const S = Math.max(...g.map((it) => it.ids.length));
    const idsFlat = [], maskFlat = [];
    for (const it of g) {
      for (let t = 0; t < S; t++) { idsFlat.push(t < it.ids.length ? it.ids[t] : 0); maskFlat.push(t < it.ids.length ? 1 : 0); }
    }
    const inputs = [{ name: 'input_ids', datatype: 'INT64', shape: [g.length, S], data: idsFlat },
                    { name: 'attention_mask', datatype: 'INT64', shape: [g.length, S], data: maskFlat }];
    const r = await ok(`/v2/models/${spec.name}/infer`, { inputs }, where('V2 tensors'));
    for (const outName of sess.outputNames) {
      const o = r.json.outputs.find((x) => x.name === outName);
      if (!check(o, where(`V2 tensors: no output ${outName}`))) continue;
      const ref0 = g[0].ref[outName];
      const perTok = ref0.dims.length === 3;
      const rowElems = perTok ? S * ref0.dims[2] : ref0.dims[1];
      check(o.shape[0] === g.length && o.data.length === g.length * rowElems, where(`V2 tensors ${outName}: shape ${o.shape}`));
      g.forEach((it, b) => {
        const got = o.data.slice(b * rowElems, (b + 1) * rowElems);
        const want = perTok ? it.ref[outName].data.concat(new Array((S - it.ids.length) * ref0.dims[2]).fill(0)) : it.ref[outName].data;
        const scale = Math.max(1, ...want.map(Math.abs));
        const d = maxAbs(got, want) / scale;
        note('tensor', d, where(`V2 ${outName} "${it.text.slice(0, 30)}"`));
        check(d <= TOL.tensor, where(`V2 tensors ${outName} "${it.text.slice(0, 40)}": max |d|/scale ${d.toExponential(2)} > ${TOL.tensor}`));
        if (perTok) check(got.slice(it.ids.length * ref0.dims[2]).every((x) => x === 0), where(`V2 ${outName}: padding not 0`));
        compared += got.length;
      });
    }
  }

  // an out-of-vocabulary id, and a negative one, are the client's error: exactly 400
  for (const bad of [vocab, vocab + 1000, -1]) {
    const r = await post(`/v2/models/${spec.name}/infer`, {
      inputs: [{ name: 'input_ids', datatype: 'INT64', shape: [1, 3], data: [items[0].ids[0], bad, items[0].ids.at(-1)] },
               { name: 'attention_mask', datatype: 'INT64', shape: [1, 3], data: [1, 1, 1] }],
    });
    check(r.status === 400, where(`V2 id ${bad} (vocabulary ${vocab}): expected 400, got ${r.status} ${r.text.slice(0, 200)}`));
  }
  console.log(`${spec.name}: ${items.length} texts, ${compared} numbers compared`);
  return items.length;
}

async function main() {
  const [base, manifestPath] = process.argv.slice(2);
  if (!manifestPath) { console.error('usage: node http_reference.js BASE_URL MANIFEST_JSON'); process.exit(2); }
  BASE = base.replace(/\/$/, '');
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  if (!manifest.length) { console.error('FAIL: empty manifest'); process.exit(1); }
  const all = texts();
  for (const spec of manifest) {
    try { await checkModel(spec, all); } catch (e) { fail(`${spec.name}: ${e && e.stack ? e.stack : e}`); }
  }
  console.log('largest differences seen (server against reference):');
  for (const k of Object.keys(maxErr).sort()) {
    const tol = (t) => (k === '1-cos' ? 1 - t.cosine : t[k]).toExponential(1);
    console.log(`  ${k.padEnd(7)} max ${maxErr[k].v.toExponential(3)}  (tolerance fp32 ${tol(TOL_FP32)}, int8 ${tol(TOL_INT8)})  at ${maxErr[k].where}`);
  }
  for (const [model, ks] of Object.entries(perModel)) {
    console.log(`  ${model}: ` + Object.entries(ks).sort().map(([k, v]) => `${k} ${v.toExponential(1)}`).join(', '));
  }
  if (failures.length) {
    console.error(`http_reference: FAIL: ${failures.length} comparison(s) failed (first ones above)`);
    process.exit(1);
  }
  console.log(`http_reference: every route agrees with the reference for ${manifest.length} served variant(s)`);
}
main().catch((e) => { console.error('http_reference: FAIL:', e && e.stack ? e.stack : e); process.exit(1); });
