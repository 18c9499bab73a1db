// tests/clients/openai_embeddings.mjs — the unmodified npm `openai` client
// against anytime's /v1/embeddings, float and base64, single and list input.
// usage: node openai_embeddings.mjs BASE_URL MODEL DIM
import OpenAI from "openai";

const [base, model, dimStr] = process.argv.slice(2);
const dim = Number(dimStr);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "not-needed", maxRetries: 0 });
const fail = (m) => { console.error("FAIL:", m); process.exit(1); };
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

const f = await client.embeddings.create({ model, input: "a gripping and funny film", encoding_format: "float" });
if (f.object !== "list" || f.data.length !== 1) fail(`bad envelope ${JSON.stringify(f).slice(0, 200)}`);
const v = f.data[0].embedding;
if (!Array.isArray(v) || v.length !== dim) fail(`float embedding has length ${v && v.length}, want ${dim}`);
if (Math.abs(norm(v) - 1) > 1e-5) fail(`embedding is not normalised: |v| = ${norm(v)}`);
if (!(f.usage.prompt_tokens > 0) || f.usage.total_tokens !== f.usage.prompt_tokens) fail("usage counts");

const b = await client.embeddings.create({ model, input: ["a gripping and funny film", "dull"], encoding_format: "base64" });
if (b.data.length !== 2 || b.data[1].index !== 1) fail("list input: wrong data/index");
const raw = b.data[0].embedding;
if (typeof raw !== "string") fail("base64 embedding is not a string");
const buf = Buffer.from(raw, "base64");
const fl = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
if (fl.length !== dim) fail(`base64 decodes to ${fl.length} floats`);
for (let i = 0; i < dim; i++) if (Math.abs(fl[i] - v[i]) > 1e-6) fail(`base64 and float differ at ${i}: ${fl[i]} vs ${v[i]}`);

// The client's default (no encoding_format) asks for base64 and decodes it itself.
const d = await client.embeddings.create({ model, input: "a gripping and funny film" });
const dv = d.data[0].embedding;
if (dv.length !== dim) fail("default-format embedding has the wrong length");
for (let i = 0; i < dim; i++) if (Math.abs(dv[i] - v[i]) > 1e-6) fail(`default format differs at ${i}`);

let errored = false;
try { await client.embeddings.create({ model: "no-such-model", input: "x" }); } catch (e) { errored = e.status === 404; }
if (!errored) fail("unknown model did not raise a 404 APIError");
const models = await client.models.list();
const ids = [];
for await (const m of models) ids.push(m.id);
if (!ids.includes(model)) fail(`models.list lacks ${model}: ${ids}`);
console.log(`PASS: openai ${OpenAI.VERSION ?? ""} embeddings.create float/base64/default, models.list (${ids.length} models)`);
