// tests/clients/openai_errors.mjs — what OpenAI-ecosystem clients with their
// default settings see from anytime's /v1/embeddings:
//   - the npm `openai` SDK's APIError carries error.code, error.type and
//     error.param (OpenAI's nested error object) on a 400, a 404 and a 422,
//     and, with --limit against a server run with `--policy limit
//     --inflight-limit 1`, on a 429;
//   - `@langchain/openai`'s OpenAIEmbeddings, constructed with nothing but
//     the model, base URL and key, embeds documents and a query, and its
//     vectors are the SDK's;
//   - token-array input (OpenAI's spec; LangChain's Python client sends it
//     by default): the ids /tokenize gives for a text embed to the text's
//     own vector, bit for bit, one list or a list of lists; an id outside
//     the vocabulary is the SDK's BadRequestError naming it.
// usage: node openai_errors.mjs BASE_URL MODEL [--limit]
import OpenAI from "openai";
import { OpenAIEmbeddings } from "@langchain/openai";

const [base, model, mode] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "not-needed", maxRetries: 0 });
const fail = (m) => { console.error("FAIL:", m); process.exit(1); };

// The APIError a call raises, checked against what an OpenAI client reads.
async function expectError(what, call, status, type, code, param) {
  let e = null;
  try { await call(); } catch (err) { e = err; }
  if (!(e instanceof OpenAI.APIError)) fail(`${what}: no APIError (${e})`);
  if (e.status !== status) fail(`${what}: status ${e.status}, want ${status}`);
  if (e.type !== type) fail(`${what}: error.type ${JSON.stringify(e.type)}, want ${type}`);
  if (e.code !== code) fail(`${what}: error.code ${JSON.stringify(e.code)}, want ${code}`);
  if (param !== undefined && e.param !== param) fail(`${what}: error.param ${JSON.stringify(e.param)}, want ${param}`);
  if (typeof e.error?.message !== "string" || e.error.message.length < 10) fail(`${what}: no error.message`);
  return e;
}

if (mode === "--limit") {
  // two texts against an in-flight limit of one: never admitted, 422
  const e422 = await expectError("422 (limit)", () => client.embeddings.create({ model, input: ["a", "b"] }),
    422, "invalid_request_error", "too_many_inputs", null);
  if (!/more than the in-flight limit of 1/.test(e422.error.message)) fail(`422 message: ${e422.error.message}`);
  // one text at a time: 64 clients at once, some refused (rounds until one is)
  let e = null;
  for (let round = 0; round < 20 && !e; round++) {
    const rs = await Promise.allSettled(Array.from({ length: 64 }, () => client.embeddings.create({ model, input: "a gripping and funny film" })));
    e = rs.find((r) => r.status === "rejected" && r.reason?.status === 429)?.reason ?? null;
    const other = rs.find((r) => r.status === "rejected" && r.reason?.status !== 429);
    if (other) fail(`a concurrent request failed otherwise: ${other.reason}`);
  }
  if (!e) fail("no 429 in 20 rounds of 64 concurrent requests against an in-flight limit of 1");
  await expectError("429", () => Promise.reject(e), 429, "rate_limit_error", "rate_limit_exceeded", null);
  if (!/in-flight limit 1 reached/.test(e.error.message)) fail(`429 message: ${e.error.message}`);
  if (!(Number(e.headers.get("retry-after-ms")) >= 1)) fail("429 without retry-after-ms");
  console.log("PASS: openai SDK sees error.code/type on a 422 and a 429");
  process.exit(0);
}

// 1. error objects
await expectError("400", () => client.embeddings.create({ model, input: [] }),
  400, "invalid_request_error", "invalid_request", null);
await expectError("404", () => client.embeddings.create({ model: "no-such-model", input: "x" }),
  404, "invalid_request_error", "model_not_found", "model");
await expectError("422", () => client.embeddings.create({ model, input: "x" }, { headers: { "x-deadline-ms": "0.0001" } }),
  422, "invalid_request_error", "deadline_infeasible", null);

// 2. LangChain with its defaults
const lc = new OpenAIEmbeddings({ model, apiKey: "not-needed", configuration: { baseURL: `${base}/v1` } });
const docs = ["a gripping and funny film", "dull"];
const lv = await lc.embedDocuments(docs);
const qv = await lc.embedQuery(docs[0]);
const sv = await client.embeddings.create({ model, input: docs, encoding_format: "float" });
if (lv.length !== 2) fail(`LangChain embedDocuments gave ${lv.length} vectors`);
for (let i = 0; i < 2; i++) {
  const want = sv.data[i].embedding;
  if (lv[i].length !== want.length) fail(`LangChain vector ${i} has ${lv[i].length} values`);
  for (let k = 0; k < want.length; k++)
    if (Math.abs(lv[i][k] - want[k]) > 1e-6) fail(`LangChain vector ${i} differs at ${k}`);
}
for (let k = 0; k < qv.length; k++)
  if (Math.abs(qv[k] - sv.data[0].embedding[k]) > 1e-6) fail(`LangChain query vector differs at ${k}`);

// 3. token arrays: the ids of the text, special tokens included
async function idsOf(text) {
  const r = await fetch(`${base}/tokenize`, { method: "POST", body: JSON.stringify({ inputs: text, model }) });
  if (r.status !== 200) fail(`/tokenize: ${r.status}`);
  const toks = await r.json();
  return (Array.isArray(toks[0]) ? toks[0] : toks).map((t) => t.id);
}
const ids = await Promise.all(docs.map(idsOf));
const one = await client.embeddings.create({ model, input: ids[0], encoding_format: "float" });
const many = await client.embeddings.create({ model, input: ids, encoding_format: "float" });
if (one.data.length !== 1 || many.data.length !== 2) fail("token arrays: wrong number of vectors");
const same = (a, b) => a.length === b.length && a.every((x, k) => Object.is(x, b[k]));
if (!same(one.data[0].embedding, sv.data[0].embedding)) fail("one token array: not the text's vector");
for (let i = 0; i < 2; i++)
  if (!same(many.data[i].embedding, sv.data[i].embedding)) fail(`token array ${i}: not the text's vector`);
if (one.usage.prompt_tokens !== ids[0].length) fail(`token array usage ${one.usage.prompt_tokens}, want ${ids[0].length}`);
const big = await expectError("id outside the vocabulary", () => client.embeddings.create({ model, input: [[1, 2], [3, 1000000]] }),
  400, "invalid_request_error", "invalid_request", null);
if (!/token id 1000000 in input 1/.test(big.error.message)) fail(`id error message: ${big.error.message}`);
console.log(`PASS: openai SDK errors (400/404/422), @langchain/openai OpenAIEmbeddings, token arrays (${ids[0].length} and ${ids[1].length} ids)`);
