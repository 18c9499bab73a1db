// tests/clients/v2_binary.mjs — the KServe V2 / Triton binary tensor data
// extension, spoken by an encoder written here from the published spec
// (Triton's docs/protocol/extension_binary_data.md and KServe's "Binary
// Tensor Data Extension" page), not from anytime's code:
//   request: header `Inference-Header-Content-Length: N`, the first N body
//   bytes are the JSON header, then each input with
//   "parameters": {"binary_data_size": K} owns the next K bytes, in input
//   order, little-endian row-major; a BYTES element is a 4-byte
//   little-endian length followed by its bytes;
//   response: outputs asked for with "binary_data": true (or every output
//   with "binary_data_output": true) come after the JSON header, whose
//   length is the answer's Inference-Header-Content-Length, each with
//   "binary_data_size" in its parameters.
// Checks: the logits of a binary INT64 request (and INT32 mask, and a mix of
// JSON and binary inputs) and of a binary BYTES text request are bit for bit
// those of the same request in JSON; binary answers decode to the JSON
// answers' values; the versions/1 routes answer as the plain ones; each
// malformed body gets a 400 whose `error` names the problem.
// usage: node v2_binary.mjs BASE_URL CLASSIFIER_MODEL
const [base, model] = process.argv.slice(2);
const fail = (m) => { console.error("FAIL:", m); process.exit(1); };
const HDR = "Inference-Header-Content-Length";

// ---- the encoder (spec) -------------------------------------------------
function i64le(values) {
  const b = Buffer.alloc(8 * values.length);
  values.forEach((v, i) => b.writeBigInt64LE(BigInt(v), 8 * i));
  return b;
}
function i32le(values) {
  const b = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => b.writeInt32LE(v, 4 * i));
  return b;
}
function bytesElems(strings) {
  return Buffer.concat(strings.flatMap((s) => {
    const body = Buffer.from(s, "utf8");
    const len = Buffer.alloc(4);
    len.writeUInt32LE(body.length, 0);
    return [len, body];
  }));
}
// header: the JSON object; blobs: the binary parts in input order
function binaryBody(header, blobs) {
  const json = Buffer.from(JSON.stringify(header), "utf8");
  return { body: Buffer.concat([json, ...blobs]), jsonLen: json.length };
}

// ---- the decoder (spec) -------------------------------------------------
async function decode(res) {
  const raw = Buffer.from(await res.arrayBuffer());
  const h = res.headers.get(HDR);
  if (h === null) return { json: JSON.parse(raw.toString("utf8")), bin: {} };
  const n = Number(h);
  if (!(n > 0 && n <= raw.length)) fail(`answer's ${HDR} ${h} for ${raw.length} bytes`);
  const json = JSON.parse(raw.subarray(0, n).toString("utf8"));
  const bin = {};
  let off = n;
  for (const o of json.outputs) {
    const k = o.parameters && o.parameters.binary_data_size;
    if (k === undefined) continue;
    if (o.data !== undefined) fail(`output ${o.name} has both data and binary_data_size`);
    bin[o.name] = raw.subarray(off, off + k);
    off += k;
  }
  if (off !== raw.length) fail(`binary outputs take ${off - n} bytes, ${raw.length - n} follow the header`);
  return { json, bin };
}
const f32 = (buf) => Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(4 * i));
// bit-for-bit: the float32 of each value (JSON carries 9 significant digits)
function sameBits(a, b, what) {
  const fa = Float32Array.from(a), fb = Float32Array.from(b);
  if (fa.length !== fb.length) fail(`${what}: ${fa.length} vs ${fb.length} values`);
  const ua = new Uint32Array(fa.buffer), ub = new Uint32Array(fb.buffer);
  for (let i = 0; i < ua.length; i++)
    if (ua[i] !== ub[i]) fail(`${what}: value ${i} differs: ${fa[i]} vs ${fb[i]}`);
}

async function post(path, body, headers = {}) {
  return fetch(`${base}${path}`, { method: "POST", body, headers: { "Content-Type": "application/json", ...headers } });
}
async function postBinary(path, header, blobs, extra = {}) {
  const { body, jsonLen } = binaryBody(header, blobs);
  return post(path, body, { "Content-Type": "application/octet-stream", [HDR]: String(jsonLen), ...extra });
}
async function ok(res, what) {
  if (res.status !== 200) fail(`${what}: status ${res.status}: ${await res.text()}`);
  return decode(res);
}
async function refused(res, pattern, what) {
  const t = await res.text();
  if (res.status !== 400) fail(`${what}: expected 400, got ${res.status}: ${t}`);
  const e = JSON.parse(t).error;
  if (typeof e !== "string" || !pattern.test(e)) fail(`${what}: error ${JSON.stringify(e)} lacks ${pattern}`);
}

// ---- server metadata, model signature ------------------------------------
const srv = await (await fetch(`${base}/v2`)).json();
if (!srv.extensions.includes("binary_tensor_data")) fail(`extensions ${srv.extensions}`);
const meta = await (await fetch(`${base}/v2/models/${model}`)).json();
const version = meta.versions[0];
const onnxInputs = meta.inputs.filter((i) => i.datatype !== "BYTES").map((i) => i.name);
if (!onnxInputs.includes("input_ids")) fail(`model inputs ${onnxInputs}`);

// two rows, the second padded: [CLS]-ish ids kept small (any vocabulary has them)
const S = 6, ids = [2, 11, 12, 13, 14, 3, 2, 15, 16, 3, 0, 0];
const mask = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0];
const valuesOf = (name) => name === "input_ids" ? ids : name === "attention_mask" ? mask : ids.map(() => 0);
const path = `/v2/models/${model}/infer`;

// 1. INT64 tensors: JSON vs binary in, JSON vs binary out
const jsonReq = {
  id: "j", inputs: onnxInputs.map((n) => ({ name: n, datatype: "INT64", shape: [2, S], data: valuesOf(n) })),
  outputs: [{ name: "logits" }],
};
const j1 = await ok(await post(path, JSON.stringify(jsonReq)), "JSON tensor request");
const jl = j1.json.outputs.find((o) => o.name === "logits");
if (!jl || jl.shape[0] !== 2) fail(`JSON logits ${JSON.stringify(j1.json).slice(0, 200)}`);
const b1 = await ok(await postBinary(path, {
  id: "b", inputs: onnxInputs.map((n) => ({ name: n, datatype: "INT64", shape: [2, S], parameters: { binary_data_size: 8 * 2 * S } })),
  outputs: [{ name: "logits", parameters: { binary_data: true } }],
}, onnxInputs.map((n) => i64le(valuesOf(n)))), "binary tensor request");
if (b1.json.id !== "b" || !b1.bin.logits) fail(`binary answer header ${JSON.stringify(b1.json)}`);
const bo = b1.json.outputs.find((o) => o.name === "logits");
if (JSON.stringify(bo.shape) !== JSON.stringify(jl.shape) || bo.datatype !== "FP32") fail("binary logits shape/datatype");
sameBits(f32(b1.bin.logits), jl.data, "binary INT64 request, binary logits vs JSON");

// 2. a mix: input_ids in JSON, the rest binary, the mask as INT32; JSON out
const mixIn = onnxInputs.map((n) => n === "input_ids"
  ? { name: n, datatype: "INT64", shape: [2, S], data: ids }
  : { name: n, datatype: "INT32", shape: [2, S], parameters: { binary_data_size: 4 * 2 * S } });
const m2 = await ok(await postBinary(path, { inputs: mixIn, outputs: [{ name: "logits" }] },
  onnxInputs.filter((n) => n !== "input_ids").map((n) => i32le(valuesOf(n)))), "mixed request");
if (Object.keys(m2.bin).length) fail("JSON outputs came back binary");
sameBits(m2.json.outputs[0].data, jl.data, "mixed JSON/INT32-binary request vs JSON");

// 3. BYTES texts: JSON vs binary in; binary_data_output for every output
const texts = ["a gripping and funny film", "dull, slow — and ünicode"];
const tj = await ok(await post(path, JSON.stringify({
  inputs: [{ name: "text", datatype: "BYTES", shape: [2], data: texts }],
  outputs: [{ name: "logits" }, { name: "probabilities" }],
})), "JSON text request");
const tb = await ok(await postBinary(path, {
  parameters: { binary_data_output: true },
  inputs: [{ name: "text", datatype: "BYTES", shape: [2], parameters: { binary_data_size: bytesElems(texts).length } }],
  outputs: [{ name: "logits" }, { name: "probabilities", parameters: { binary_data: false } }],
}, [bytesElems(texts)]), "binary text request");
if (!tb.bin.logits || tb.bin.probabilities) fail(`per-output binary_data false must override the default: ${JSON.stringify(tb.json)}`);
sameBits(f32(tb.bin.logits), tj.json.outputs[0].data, "binary BYTES request, binary logits vs JSON");
sameBits(tb.json.outputs[1].data, tj.json.outputs[1].data, "binary BYTES request, JSON probabilities");

// 4. versions: the listed version answers as the plain routes, another is 404
const vm = await fetch(`${base}/v2/models/${model}/versions/${version}`);
if (vm.status !== 200 || (await vm.json()).name !== model) fail("versioned metadata");
const vr = await fetch(`${base}/v2/models/${model}/versions/${version}/ready`);
if (vr.status !== 200) fail(`versioned ready: ${vr.status}`);
const v1 = await ok(await post(`/v2/models/${model}/versions/${version}/infer`, JSON.stringify(jsonReq)), "versioned infer");
if (v1.json.model_version !== version) fail(`model_version ${v1.json.model_version}`);
sameBits(v1.json.outputs[0].data, jl.data, "versioned infer vs plain");
for (const p of [`/versions/7`, `/versions/7/ready`]) {
  const r = await fetch(`${base}/v2/models/${model}${p}`);
  const t = await r.text();
  if (r.status !== 404 || !/version '7'/.test(JSON.parse(t).error)) fail(`${p}: ${r.status} ${t}`);
}
const r7 = await post(`/v2/models/${model}/versions/7/infer`, JSON.stringify(jsonReq));
if (r7.status !== 404 || !/version '7'/.test((await r7.json()).error)) fail("versions/7/infer not 404");

// 5. malformed bodies: a clear 400 each
const one = (extra) => ({ inputs: [{ name: "input_ids", datatype: "INT64", shape: [1, 3], ...extra }] });
{
  const { body } = binaryBody(one({ parameters: { binary_data_size: 24 } }), [i64le([2, 11, 3])]);
  await refused(await post(path, body, { [HDR]: String(body.length + 1) }), /body has only/, "header past the body");
  await refused(await post(path, body, { [HDR]: "12abc" }), /decimal number/, "header not a number");
}
await refused(await postBinary(path, one({ parameters: { binary_data_size: 24 } }), [i64le([2, 11, 3]), Buffer.alloc(5)]),
  /add up to 24 bytes, but 29/, "bytes left over");
await refused(await postBinary(path, one({ parameters: { binary_data_size: 32 } }), [i64le([2, 11, 3])]),
  /runs past/, "size past the data");
await refused(await postBinary(path, one({ parameters: { binary_data_size: 16 } }), [i64le([2, 11])]),
  /needs 24/, "size not shape x datatype");
await refused(await postBinary(path, one({ data: [2, 11, 3], parameters: { binary_data_size: 24 } }), [i64le([2, 11, 3])]),
  /both "data" and "binary_data_size"/, "data and binary both");
await refused(await post(path, JSON.stringify(one({ parameters: { binary_data_size: 24 } }))),
  /no Inference-Header-Content-Length/, "binary_data_size without the header");
{
  const elems = bytesElems(["ok"]);
  elems.writeUInt32LE(99, 0);
  await refused(await postBinary(path, { inputs: [{ name: "text", datatype: "BYTES", shape: [1], parameters: { binary_data_size: elems.length } }] }, [elems]),
    /says 99 bytes/, "BYTES element past its size");
  const two = bytesElems(["a", "b"]);
  await refused(await postBinary(path, { inputs: [{ name: "text", datatype: "BYTES", shape: [3], parameters: { binary_data_size: two.length } }] }, [two]),
    /holds 3 elements, its binary data 2/, "BYTES shape vs elements");
}
console.log("v2_binary: ok");
