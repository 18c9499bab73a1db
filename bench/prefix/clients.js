// bench/prefix/clients.js — CONC streaming chat clients in closed loop, each
// request a shared system prompt and a question of its own; per request the
// time to the first streamed token (TTFT) at the client and the whole
// answer. Used by bench/prefix_cache.sh; plain Node, no packages.
//
// usage: node clients.js BASE_URL MODEL CONC REQUESTS_PER_CLIENT MAX_TOKENS OUT.json
'use strict';
const fs = require('fs');
const [base, model, concArg, perArg, maxArg, out] = process.argv.slice(2);
const CONC = Number(concArg), PER = Number(perArg), MAX = Number(maxArg);

// about 200 tokens of instructions every request starts with
const SYSTEM = [
  'You are the assistant of a small film society.',
  'Answer in one short sentence, plainly, without lists or headings.',
  'The society meets on Thursdays at eight in the old cinema on the square;',
  'members bring their own cushions because the seats are hard, and tea is served',
  'in the interval from an urn that has outlived three projectionists.',
  'When asked about a film, say whether the society would like it and why,',
  'in the voice of a patient volunteer who has seen every film twice,',
  'who prefers quiet observation to loud spectacle, long takes to quick cuts,',
  'and who will always mention the soundtrack when it deserves a mention.',
].join(' ');
const FILMS = ['a quiet drama about a lighthouse keeper', 'a loud heist comedy', 'a silent film with a new score',
  'a documentary about bees', 'a three-hour historical epic', 'a cartoon about a lost dog',
  'a thriller set on a night train', 'a musical about a bakery', 'a western with no gunfights',
  'a science fiction film about a single room'];

async function one(c, k) {
  const q = `What would the society think of ${FILMS[(c * PER + k) % FILMS.length]}? (member ${c}, question ${k})`;
  const body = { model, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: q }],
    max_tokens: MAX, temperature: 0, stream: true, stream_options: { include_usage: true } };
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  let ttft = null, text = '', buf = '', usage = null;
  const dec = new TextDecoder();
  for await (const chunk of res.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (j.usage) usage = j.usage;
      const d = j.choices && j.choices[0] && j.choices[0].delta;
      if (d && d.content) { if (ttft === null) ttft = performance.now() - t0; text += d.content; }
    }
  }
  return { key: `${c}/${k}`, ttft_ms: ttft, text, prompt_tokens: usage && usage.prompt_tokens };
}

(async () => {
  const results = [];
  await Promise.all(Array.from({ length: CONC }, async (_, c) => {
    for (let k = 0; k < PER; k++) results.push(await one(c, k));
  }));
  fs.writeFileSync(out, JSON.stringify(results));
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
