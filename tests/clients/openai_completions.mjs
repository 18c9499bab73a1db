// tests/clients/openai_completions.mjs — the unmodified npm `openai` client
// against anytime's /v1/completions: completions.create without and with
// stream: true (greedy, so the streamed deltas must concatenate to the
// non-streamed text), stream_options.include_usage, a stop sequence, n
// choices (identical when greedy — the later ones on a fork of the first's
// prompt cache — different when sampled, reproducible with a seed), unseeded sampling that differs between requests, logprobs that
// agree with the text and the greedy choice, a frequency penalty that
// changes a repetitive greedy text, and the client's error type for a model
// the server does not have.
// usage: node openai_completions.mjs BASE_URL MODEL
import OpenAI from "openai";

const [base, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "not-needed", maxRetries: 0 });
const fail = (m) => { console.error("FAIL:", m); process.exit(1); };
const prompt = "the film is a masterpiece of quiet observation , and";

const a = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0 });
if (a.object !== "text_completion" || a.choices.length !== 1) fail(`bad envelope ${JSON.stringify(a).slice(0, 300)}`);
const text = a.choices[0].text;
if (typeof text !== "string" || text.length === 0) fail("empty completion");
if (a.choices[0].finish_reason !== "length" && a.choices[0].finish_reason !== "stop") fail(`finish_reason ${a.choices[0].finish_reason}`);
if (!(a.usage.prompt_tokens > 0) || a.usage.total_tokens !== a.usage.prompt_tokens + a.usage.completion_tokens) fail(`usage ${JSON.stringify(a.usage)}`);
if (a.choices[0].finish_reason === "length" && a.usage.completion_tokens !== 24) fail("length finish with fewer tokens");

const s = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true } });
let streamed = "", chunks = 0, finish = null, usage = null;
for await (const c of s) {
  if (c.usage) usage = c.usage;
  for (const ch of c.choices) {
    streamed += ch.text;
    chunks++;
    if (ch.finish_reason) finish = ch.finish_reason;
  }
}
if (streamed !== text) fail(`streamed text differs:\n  stream: ${JSON.stringify(streamed)}\n  plain:  ${JSON.stringify(text)}`);
if (chunks < 2) fail(`only ${chunks} chunks streamed`);
if (finish !== a.choices[0].finish_reason) fail(`stream finish ${finish} vs ${a.choices[0].finish_reason}`);
if (!usage || usage.completion_tokens !== a.usage.completion_tokens) fail(`stream usage ${JSON.stringify(usage)}`);

// A stop sequence taken from the middle of the greedy text cuts it there.
// The greedy text of 24 tokens always has two words of two letters or more
// with the committed decoder; if a model change ever makes it shorter, the
// check fails rather than being skipped (it once was skipped silently).
const words = text.trim().split(" ").filter((w) => w.length > 1);
if (words.length < 2) fail(`greedy text too short to take a stop sequence from: ${JSON.stringify(text)}`);
{
  const stop = words[1];
  const cut = text.indexOf(stop);
  const b = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, stop: [stop] });
  if (b.choices[0].text !== text.slice(0, cut)) fail(`stop ${JSON.stringify(stop)}: got ${JSON.stringify(b.choices[0].text)}, want ${JSON.stringify(text.slice(0, cut))}`);
  if (b.choices[0].finish_reason !== "stop") fail("stop sequence: finish_reason is not stop");
  // The stream looks for the stop sequence on the HTTP side and then ends
  // the generation (at_gen_stop), which may have run a token further by
  // then: the stream must still say "stop", count the same tokens as the
  // plain answer, and not count as a client that left.
  const cancelled = async () => Number((await (await fetch(`${base}/metrics`)).text()).match(/^anytime_gen_requests_total\{[^}]*outcome="cancelled"\} (\d+)/m)?.[1] ?? NaN);
  const c0 = await cancelled();
  // (max_tokens 200: the generation must still be running when the stream's
  // reader finds the stop; 24 tokens could all be out by then)
  const bs = await client.completions.create({ model, prompt, max_tokens: 200, temperature: 0, stop: stop, stream: true, stream_options: { include_usage: true } });
  let t2 = "", fin2 = null, use2 = null;
  for await (const c of bs) {
    for (const ch of c.choices) { t2 += ch.text; if (ch.finish_reason) fin2 = ch.finish_reason; }
    if (c.usage) use2 = c.usage;
  }
  if (t2 !== text.slice(0, cut)) fail(`streamed stop: ${JSON.stringify(t2)}`);
  if (fin2 !== "stop") fail(`streamed stop: finish_reason ${fin2}`);
  if (!use2 || use2.completion_tokens !== b.usage.completion_tokens) fail(`streamed stop: usage ${JSON.stringify(use2)}, plain ${JSON.stringify(b.usage)}`);
  const c1 = await cancelled();
  if (!(c1 === c0)) fail(`a stream ended by its stop sequence counted as cancelled (${c0} -> ${c1})`);
}

// Sampling with a seed is reproducible.
const r1 = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 0.9, top_p: 0.9, seed: 11 });
const r2 = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 0.9, top_p: 0.9, seed: 11 });
if (r1.choices[0].text !== r2.choices[0].text) fail("same seed, different text");

// n choices: greedy gives n copies of the greedy text; sampled with a seed
// gives choices that differ and the same set again for the same seed.
{
  const shared = async () => Number((await (await fetch(`${base}/metrics`)).text()).match(/^anytime_gen_shared_prompt_tokens_total\{[^}]*\} (\d+)/m)[1]);
  const before = await shared();
  const g = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, n: 3 });
  // choices 2 and 3 forked the first one's prompt cache (it runs 24 tokens, so it is still
  // running when they are admitted): every prompt position but the last, twice
  const saved = (await shared()) - before;
  if (a.choices[0].finish_reason === "length" && saved !== 2 * (g.usage.prompt_tokens - 1)) fail(`n=3 shared ${saved} prompt positions, want ${2 * (g.usage.prompt_tokens - 1)}`);
  if (g.choices.length !== 3) fail(`n=3 gave ${g.choices.length} choices`);
  g.choices.forEach((c, i) => {
    if (c.index !== i) fail(`choice ${i} has index ${c.index}`);
    if (c.text !== text) fail(`greedy choice ${i} differs: ${JSON.stringify(c.text)}`);
  });
  if (g.usage.completion_tokens !== 3 * a.usage.completion_tokens) fail(`n=3 usage ${JSON.stringify(g.usage)}`);
  const s1 = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 1, n: 3, seed: 5 });
  const s2 = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 1, n: 3, seed: 5 });
  const t1 = s1.choices.map((c) => c.text), t2 = s2.choices.map((c) => c.text);
  if (new Set(t1).size !== 3) fail(`sampled choices not all different: ${JSON.stringify(t1)}`);
  if (JSON.stringify(t1) !== JSON.stringify(t2)) fail("same seed, different choices");
  // a streamed n=3: every choice's deltas concatenate to its plain text
  const st = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 1, n: 3, seed: 5, stream: true });
  const parts = ["", "", ""];
  for await (const c of st) for (const ch of c.choices) parts[ch.index] += ch.text;
  if (JSON.stringify(parts) !== JSON.stringify(t1)) fail(`streamed n=3 differs: ${JSON.stringify(parts)}`);
  // no seed: two requests sample differently (16 tokens at temperature 1)
  const u1 = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 1 });
  const u2 = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 1 });
  if (u1.choices[0].text === u2.choices[0].text) fail(`unseeded sampling repeated itself: ${JSON.stringify(u1.choices[0].text)}`);
}

// logprobs: one entry per generated token; the tokens spell the text; under
// greedy decoding the chosen token is the most likely alternative.
{
  const l = await client.completions.create({ model, prompt, max_tokens: 12, temperature: 0, logprobs: 3 });
  const lp = l.choices[0].logprobs;
  if (!lp || lp.tokens.length !== l.usage.completion_tokens) fail(`logprobs ${JSON.stringify(lp).slice(0, 200)}`);
  if (lp.tokens.join("") !== l.choices[0].text) fail(`logprob tokens ${JSON.stringify(lp.tokens)} do not spell ${JSON.stringify(l.choices[0].text)}`);
  lp.tokens.forEach((t, i) => {
    const alts = Object.entries(lp.top_logprobs[i]);
    if (alts.length < 1 || alts.length > 3) fail(`top_logprobs[${i}] has ${alts.length} entries`);
    const best = Math.max(...alts.map(([, v]) => v));
    if (!(lp.token_logprobs[i] <= 0) || Math.abs(lp.token_logprobs[i] - best) > 1e-6) fail(`token ${i}: logprob ${lp.token_logprobs[i]} is not the best alternative ${best}`);
    if (alts.reduce((acc, [, v]) => acc + Math.exp(v), 0) > 1 + 1e-5) fail(`token ${i}: probabilities sum above 1`);
    if (i > 0 && lp.text_offset[i] !== lp.text_offset[i - 1] + lp.tokens[i - 1].length) fail("text_offset");
  });
}

// A frequency penalty changes a greedy text that repeats itself.
{
  const rep = await client.completions.create({ model, prompt: "the film", max_tokens: 30, temperature: 0 });
  const words = rep.choices[0].text.split(" ").filter((w) => w.length > 2);
  if (new Set(words).size === words.length) fail(`the greedy text does not repeat a word, the penalty check needs one: ${JSON.stringify(rep.choices[0].text)}`);
  const pen = await client.completions.create({ model, prompt: "the film", max_tokens: 30, temperature: 0, frequency_penalty: 2 });
  if (pen.choices[0].text === rep.choices[0].text) fail("frequency_penalty 2 changed nothing");
}

try {
  await client.completions.create({ model: "no-such-model", prompt, max_tokens: 4 });
  fail("unknown model was accepted");
} catch (e) {
  if (!(e instanceof OpenAI.APIError) || e.status !== 404) fail(`unknown model: ${e}`);
}
console.log(`ok: ${JSON.stringify(text)}`);
