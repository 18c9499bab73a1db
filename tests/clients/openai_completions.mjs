// tests/clients/openai_completions.mjs — the unmodified npm `openai` client
// against anytime's /v1/completions: completions.create without and with
// stream: true (greedy, so the streamed deltas must concatenate to the
// non-streamed text), stream_options.include_usage, a stop sequence, and
// the client's error type for a model the server does not have.
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
  const bs = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, stop: stop, stream: true });
  let t2 = "";
  for await (const c of bs) for (const ch of c.choices) t2 += ch.text;
  if (t2 !== text.slice(0, cut)) fail(`streamed stop: ${JSON.stringify(t2)}`);
}

// Sampling with a seed is reproducible.
const r1 = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 0.9, top_p: 0.9, seed: 11 });
const r2 = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 0.9, top_p: 0.9, seed: 11 });
if (r1.choices[0].text !== r2.choices[0].text) fail("same seed, different text");

try {
  await client.completions.create({ model: "no-such-model", prompt, max_tokens: 4 });
  fail("unknown model was accepted");
} catch (e) {
  if (!(e instanceof OpenAI.APIError) || e.status !== 404) fail(`unknown model: ${e}`);
}
console.log(`ok: ${JSON.stringify(text)}`);
