// tests/clients/openai_chat.mjs — the unmodified npm `openai` client's
// chat.completions.create against anytime's /v1/chat/completions on the
// default chat model (models/chat, ChatML template):
//   - plain and streamed (greedy): the first delta carries the role, the
//     deltas concatenate to the plain answer, the same finish_reason, usage
//     with stream_options.include_usage; the reply to a verdict prompt is one
//     of the model's two trained verdicts and ends at <|im_end|> ("stop");
//   - n: 3 — identical under greedy decoding, all different when sampled
//     with a seed, the same three again for the same seed;
//   - logprobs with top_logprobs: one entry per token, spelling the reply,
//     the chosen token the most likely one under greedy decoding;
//   - a stop sequence; the client's error types for tools (400) and for an
//     unknown model (404), with OpenAI's error.code;
//   - no max_tokens: the rest of the context, as OpenAI and vLLM chat do
//     (tests/data/serve/chat.yaml caps it at 200): a sampled reply longer
//     than the completions route's 16 is the one max_tokens 200 gives.
// usage: node openai_chat.mjs BASE_URL MODEL
import OpenAI from "openai";

const [base, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "not-needed", maxRetries: 0 });
const fail = (m) => { console.error("FAIL:", m); process.exit(1); };
const verdict = [
  { role: "system", content: "You are a film critic's assistant." },
  { role: "user", content: "Review: a warm , funny and clever film , with a cast that clearly enjoys itself .\nPositive or negative?" },
];
const write = [{ role: "user", content: "Write a short positive review." }];

// plain
const a = await client.chat.completions.create({ model, messages: verdict, max_tokens: 8, temperature: 0 });
if (a.object !== "chat.completion" || a.choices.length !== 1) fail(`bad envelope ${JSON.stringify(a).slice(0, 300)}`);
const m = a.choices[0].message;
if (m.role !== "assistant" || !["Positive.", "Negative."].includes(m.content)) fail(`verdict reply ${JSON.stringify(m)}`);
if (a.choices[0].finish_reason !== "stop") fail(`a verdict ends at <|im_end|>, got finish_reason ${a.choices[0].finish_reason}`);
if (!(a.usage.prompt_tokens > 20) || a.usage.total_tokens !== a.usage.prompt_tokens + a.usage.completion_tokens) fail(`usage ${JSON.stringify(a.usage)}`);

// streamed, against a longer plain answer
const p = await client.chat.completions.create({ model, messages: write, max_tokens: 40, temperature: 0 });
const text = p.choices[0].message.content;
if (typeof text !== "string" || text.length < 10) fail(`written reply too short: ${JSON.stringify(text)}`);
const s = await client.chat.completions.create({ model, messages: write, max_tokens: 40, temperature: 0, stream: true, stream_options: { include_usage: true } });
let streamed = "", role = null, first = true, finish = null, usage = null, chunks = 0;
for await (const c of s) {
  if (c.object !== "chat.completion.chunk") fail(`chunk object ${c.object}`);
  if (c.usage) usage = c.usage;
  for (const ch of c.choices) {
    if (first) { role = ch.delta.role; first = false; }
    else if (ch.delta.role) fail("a later delta carries the role again");
    streamed += ch.delta.content ?? "";
    chunks++;
    if (ch.finish_reason) finish = ch.finish_reason;
  }
}
if (role !== "assistant") fail(`first delta role ${role}`);
if (streamed !== text) fail(`streamed differs:\n  stream: ${JSON.stringify(streamed)}\n  plain:  ${JSON.stringify(text)}`);
if (chunks < 3) fail(`only ${chunks} chunks`);
if (finish !== p.choices[0].finish_reason) fail(`stream finish ${finish} vs ${p.choices[0].finish_reason}`);
if (!usage || usage.completion_tokens !== p.usage.completion_tokens) fail(`stream usage ${JSON.stringify(usage)}`);

// n choices
{
  const g = await client.chat.completions.create({ model, messages: write, max_tokens: 24, temperature: 0, n: 3 });
  if (g.choices.length !== 3) fail(`n=3 gave ${g.choices.length} choices`);
  const want = (await client.chat.completions.create({ model, messages: write, max_tokens: 24, temperature: 0 })).choices[0].message.content;
  g.choices.forEach((c, i) => {
    if (c.index !== i || c.message.content !== want) fail(`greedy choice ${i}: ${JSON.stringify(c.message.content)} vs ${JSON.stringify(want)}`);
  });
  const s1 = await client.chat.completions.create({ model, messages: write, max_tokens: 24, temperature: 1, n: 3, seed: 42 });
  const s2 = await client.chat.completions.create({ model, messages: write, max_tokens: 24, temperature: 1, n: 3, seed: 42 });
  const t1 = s1.choices.map((c) => c.message.content), t2 = s2.choices.map((c) => c.message.content);
  if (new Set(t1).size !== 3) fail(`sampled choices not all different: ${JSON.stringify(t1)}`);
  if (JSON.stringify(t1) !== JSON.stringify(t2)) fail("same seed, different choices");
}

// logprobs
{
  const l = await client.chat.completions.create({ model, messages: write, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = l.choices[0].logprobs?.content;
  // <|im_end|> ends the reply and is neither text nor a logprob entry
  if (!Array.isArray(content) || content.length !== l.usage.completion_tokens) fail(`logprobs ${JSON.stringify(l.choices[0].logprobs).slice(0, 200)}`);
  if (content.map((e) => e.token).join("") !== l.choices[0].message.content) fail("logprob tokens do not spell the reply");
  content.forEach((e, i) => {
    if (e.top_logprobs.length !== 3) fail(`token ${i}: ${e.top_logprobs.length} alternatives`);
    if (e.top_logprobs[0].token !== e.token || Math.abs(e.top_logprobs[0].logprob - e.logprob) > 1e-6) fail(`token ${i}: greedy token is not the most likely`);
    if (Buffer.from(e.bytes).toString("utf8") !== e.token) fail(`token ${i}: bytes do not spell the token`);
  });
}

// a stop sequence cuts the reply before it
{
  const words = text.trim().split(" ").filter((w) => w.length > 2);
  if (words.length < 2) fail(`reply too short to take a stop sequence from: ${JSON.stringify(text)}`);
  const cut = text.indexOf(words[1]);
  const b = await client.chat.completions.create({ model, messages: write, max_tokens: 40, temperature: 0, stop: [words[1]] });
  if (b.choices[0].message.content !== text.slice(0, cut) || b.choices[0].finish_reason !== "stop") fail(`stop: ${JSON.stringify(b.choices[0])}`);
}

// no max_tokens: not cut at 16 (seed 2 at 1.5 writes about 150 tokens here)
{
  const ask = { model, messages: write, temperature: 1.5, seed: 2 };
  const d = await client.chat.completions.create(ask);
  const w = await client.chat.completions.create({ ...ask, max_tokens: 200 });
  if (d.usage.completion_tokens <= 16) fail(`no max_tokens: ${d.usage.completion_tokens} tokens (${d.choices[0].finish_reason}), want the rest of the context`);
  if (d.choices[0].message.content !== w.choices[0].message.content || d.choices[0].finish_reason !== w.choices[0].finish_reason)
    fail(`no max_tokens differs from max_tokens 200: ${d.usage.completion_tokens} vs ${w.usage.completion_tokens} tokens`);
}

// errors through the client's own types
try {
  await client.chat.completions.create({ model, messages: write, tools: [{ type: "function", function: { name: "f", parameters: {} } }] });
  fail("tools were accepted");
} catch (e) {
  if (!(e instanceof OpenAI.BadRequestError) || !/tool/.test(e.message)) fail(`tools: ${e}`);
}
try {
  await client.chat.completions.create({ model: "no-such-model", messages: write });
  fail("unknown model accepted");
} catch (e) {
  if (!(e instanceof OpenAI.NotFoundError) || e.code !== "model_not_found" || e.param !== "model") fail(`unknown model: ${e} (code ${e.code}, param ${e.param})`);
}
console.log(`ok: verdict ${JSON.stringify(m.content)}, reply ${JSON.stringify(text)}`);
