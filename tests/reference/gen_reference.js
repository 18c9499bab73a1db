// tests/reference/gen_reference.js — anytime's generated tokens and their
// log-probabilities held against an independent path: npm tokenizers for
// the prompt's ids, @huggingface/jinja for the chat template, and the same
// ONNX graph run greedily in onnxruntime-node with its own KV cache (a
// prefill of the whole prompt, then one token per Run, as the server does
// for a lone request, so even the int8 graph's dynamic quantisation sees the
// same tensors). For every generated token: the same token, its logprob
// and the top alternatives (tokens and logprobs) within TOL (1e-4).
//
// usage: node gen_reference.js BASE_URL MODEL_NAME MODEL_DIR ONNX_FILE ROUTE [TOL]
//   ROUTE: "completions" (legacy logprobs: 5) or "chat" (logprobs + top 5)
//   TOL: default 1e-4. The int8 graphs differed by ~3e-3 between anytime's
//   ONNX Runtime (1.29.0 until 2026-12-04, 1.30.0 since) and onnxruntime-node
//   (1.30.0) at every graph optimisation level (fp32: 2e-6), so tests/integration/gen_reference.sh
//   holds int8 to 1e-2 and the same tokens.
// Prints one line per case; exits 1 on the first disagreement.
'use strict';
const fs = require('fs');
const path = require('path');

const nm = path.join(__dirname, '..', 'node', 'node_modules');
const hf = require(path.join(nm, 'tokenizers'));
const ort = require(path.join(nm, 'onnxruntime-node'));

const [base, modelName, dir, onnxFile, route, tolArg] = process.argv.slice(2);
const TOL = tolArg ? Number(tolArg) : 1e-4, TOP = 5, MAX_TOKENS = 12;
const die = (m) => { console.error('FAIL:', m); process.exit(1); };

const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
const tcfg = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
let gcfg = {};
try { gcfg = JSON.parse(fs.readFileSync(path.join(dir, 'generation_config.json'), 'utf8')); } catch (e) { /* none */ }
const eos = [].concat(gcfg.eos_token_id ?? cfg.eos_token_id ?? []);
const L = cfg.n_layer ?? cfg.num_hidden_layers, H = cfg.n_head ?? cfg.num_attention_heads;
const D = (cfg.anytime && cfg.anytime.head_dim) || (cfg.n_embd ?? cfg.hidden_size) / H;

const cases = route === 'chat'
  ? [[{ role: 'user', content: 'Review: a warm , funny and clever film .\nPositive or negative?' }],
     [{ role: 'system', content: "You are a film critic's assistant." },
      { role: 'user', content: 'Write a short negative review.' }]]
  : ['the film is a masterpiece of quiet observation , and', 'i did not'];

function logSoftmax(row) {
  let mx = -Infinity;
  for (const x of row) if (x > mx) mx = x;
  let s = 0;
  for (const x of row) s += Math.exp(x - mx);
  const lse = mx + Math.log(s);
  return Float64Array.from(row, (x) => x - lse);
}

function topK(lp, k) { // descending, lower id first on ties (as the server)
  const idx = [];
  for (let i = 0; i < lp.length; i++) {
    if (idx.length === k && !(lp[i] > lp[idx[k - 1]])) continue;
    let j = idx.length < k ? idx.length : k - 1;
    idx[j] = i;
    while (j > 0 && lp[i] > lp[idx[j - 1]]) { idx[j] = idx[j - 1]; idx[j - 1] = i; j--; }
  }
  return idx;
}

async function greedy(sess, ids, n) {
  const feeds = {}, out = [];
  for (let l = 0; l < L; l++) {
    feeds[`past_key_values.${l}.key`] = new ort.Tensor('float32', new Float32Array(0), [1, H, 0, D]);
    feeds[`past_key_values.${l}.value`] = new ort.Tensor('float32', new Float32Array(0), [1, H, 0, D]);
  }
  let cur = ids.slice(), past = 0;
  for (let step = 0; step < n; step++) {
    const S = cur.length;
    feeds.input_ids = new ort.Tensor('int64', BigInt64Array.from(cur, BigInt), [1, S]);
    feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(past + S).fill(1n), [1, past + S]);
    feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from(cur, (_, i) => BigInt(past + i)), [1, S]);
    const r = await sess.run(feeds);
    const V = r.logits.dims[2];
    const lp = logSoftmax(r.logits.data.subarray((S - 1) * V, S * V));
    const top = topK(lp, TOP);
    const tok = top[0];
    out.push({ tok, lp: lp[tok], top: top.map((i) => [i, lp[i]]) });
    if (eos.includes(tok)) break;
    for (let l = 0; l < L; l++) {
      feeds[`past_key_values.${l}.key`] = r[`present.${l}.key`];
      feeds[`past_key_values.${l}.value`] = r[`present.${l}.value`];
    }
    past += S;
    cur = [tok];
  }
  return out;
}

async function post(p, body) {
  const res = await fetch(base + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const j = await res.json();
  if (res.status !== 200) die(`${p}: ${res.status} ${JSON.stringify(j)}`);
  return j;
}

(async () => {
  const tok = hf.Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const sess = await ort.InferenceSession.create(onnxFile, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  // tokenizers' decode is asynchronous: every id's text, once
  const V = tok.getVocabSize(true), pieces = new Array(V);
  for (let id = 0; id < V; id++) pieces[id] = await tok.decode([id], false);
  const piece = (id) => pieces[id];
  let Template = null;
  if (route === 'chat') ({ Template } = await import(path.join(nm, '@huggingface', 'jinja', 'dist', 'index.js')));
  let compared = 0, worst = 0;
  for (const c of cases) {
    let ids, answer, entries;
    if (route === 'chat') {
      const tmpl = typeof tcfg.chat_template === 'string' ? tcfg.chat_template : tcfg.chat_template.find((t) => t.name === 'default').template;
      const special = (t) => (t && typeof t === 'object' ? t.content : t) ?? '';
      const text = new Template(tmpl).render({ messages: c, add_generation_prompt: true, bos_token: special(tcfg.bos_token), eos_token: special(tcfg.eos_token) });
      ids = Array.from((await tok.encode(text, null, { addSpecialTokens: false })).getIds());
      answer = await post('/v1/chat/completions', { model: modelName, messages: c, max_tokens: MAX_TOKENS, temperature: 0, logprobs: true, top_logprobs: TOP });
      entries = answer.choices[0].logprobs.content.map((e) => ({ token: e.token, logprob: e.logprob, top: e.top_logprobs.map((t) => [t.token, t.logprob]) }));
    } else {
      ids = Array.from((await tok.encode(c)).getIds());
      // add_bos_token asks for one BOS: a tokenizer.json whose post-processor
      // adds it already has it (HF's Llama fast tokenizer rebuilds that
      // post-processor from the same flag)
      if (tcfg.add_bos_token && cfg.bos_token_id != null && ids[0] !== cfg.bos_token_id) ids.unshift(cfg.bos_token_id);
      answer = await post('/v1/completions', { model: modelName, prompt: c, max_tokens: MAX_TOKENS, temperature: 0, logprobs: TOP });
      const lp = answer.choices[0].logprobs;
      entries = lp.tokens.map((t, i) => ({ token: t, logprob: lp.token_logprobs[i], top: Object.entries(lp.top_logprobs[i]) }));
    }
    if (answer.usage.prompt_tokens !== ids.length) die(`prompt ids: server ${answer.usage.prompt_tokens}, reference ${ids.length}`);
    const ref = await greedy(sess, ids, MAX_TOKENS);
    const emitted = ref.filter((r) => !eos.includes(r.tok));
    if (entries.length !== emitted.length) die(`${entries.length} tokens from the server, ${emitted.length} from the reference (${JSON.stringify(c)})`);
    emitted.forEach((r, i) => {
      const e = entries[i];
      if (e.token !== piece(r.tok)) die(`token ${i}: server ${JSON.stringify(e.token)}, reference ${JSON.stringify(piece(r.tok))}`);
      const d = Math.abs(e.logprob - r.lp);
      worst = Math.max(worst, d);
      if (!(d <= TOL)) die(`token ${i} ${JSON.stringify(e.token)}: logprob ${e.logprob} vs ${r.lp}`);
      // alternatives: chat lists all TOP in order; the legacy form is a
      // dict, so only the first alternative of each string is in it
      const seen = new Set();
      const want = route === 'chat' ? r.top
        : r.top.filter(([id]) => { const s = piece(id); if (seen.has(s)) return false; seen.add(s); return true; });
      if (e.top.length !== want.length) die(`token ${i}: ${e.top.length} alternatives, reference ${want.length}`);
      want.forEach(([id, v], k) => {
        const s = piece(id);
        const got = route === 'chat' ? e.top[k] : e.top.find(([t]) => t === s);
        if (!got || got[0] !== s) die(`token ${i} alternative ${k}: server ${JSON.stringify(got)}, reference ${JSON.stringify(s)}`);
        const dd = Math.abs(got[1] - v);
        worst = Math.max(worst, dd);
        if (!(dd <= TOL)) die(`token ${i} alternative ${JSON.stringify(s)}: ${got[1]} vs ${v}`);
        compared++;
      });
      compared++;
    });
    console.log(`case ${JSON.stringify(c).slice(0, 60)}: ${entries.length} tokens agree`);
  }
  console.log(`gen_reference ${route} ${path.basename(onnxFile)}: ${compared} log-probabilities within ${TOL} (worst ${worst.toExponential(2)})`);
})().catch((e) => die(e.stack || String(e)));
