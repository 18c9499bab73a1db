// tests/clients/grpc_v2.mjs — anytime's KServe V2 gRPC service through
// @grpc/grpc-js + @grpc/proto-loader (pure-JS HTTP/2 and protobufjs: an
// implementation independent of grpc core and protobuf-c), loading the
// service definition src/serve/grpc_inference.proto.
// usage:
//   node grpc_v2.mjs rpcs BASE_URL GRPC_ADDR CLASSIFIER
//     every RPC; ModelInfer bit for bit against HTTP V2 JSON for the same
//     inputs (BYTES texts, and INT64 tensors as raw_input_contents and as
//     int64_contents); NOT_FOUND, INVALID_ARGUMENT.
//   node grpc_v2.mjs auth GRPC_ADDR CLASSIFIER KEY
//     UNAUTHENTICATED without or with a wrong key, OK with it.
//   node grpc_v2.mjs tls BASE_URL GRPC_ADDR CLASSIFIER CA_PEM
//     a TLS channel trusting the server's HTTPS certificate is answered; a
//     plaintext one is not.
//   node grpc_v2.mjs drain GRPC_ADDR CLASSIFIER
//     calls in flight through a SIGTERM (sent by the caller after READY).
//   node grpc_v2.mjs overload GRPC_ADDR CLASSIFIER KEY
//     a burst of concurrent calls against a server with an in-flight limit:
//     some are refused RESOURCE_EXHAUSTED with retry-after-ms in the
//     trailing metadata, the rest answer OK; every call gets one answer. A
//     call with more texts than the limit (12) can never be admitted: it gets
//     FAILED_PRECONDITION, HTTP's words, and no retry-after-ms.
//   node grpc_v2.mjs prompt BASE_URL GRPC_ADDR EMBEDDER REFERENCE_JSON
//     an embedder with a default prompt: gRPC's embeddings are HTTP V2's bit
//     for bit and the reference's (sentence-transformers with the prompt).
import { fileURLToPath } from "node:url";
import path from "node:path";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const fail = (m) => { console.error("FAIL:", m); process.exit(1); };
const here = path.dirname(fileURLToPath(import.meta.url));
const proto = path.join(here, "..", "..", "src", "serve", "grpc_inference.proto");
const def = protoLoader.loadSync(proto, { keepCase: true, longs: String, defaults: true });
const inference = grpc.loadPackageDefinition(def).inference;

const [mode, ...args] = process.argv.slice(2);
const call = (client, rpc, req, md = new grpc.Metadata()) => new Promise((resolve) => {
  client[rpc](req, md, { deadline: Date.now() + 20000 }, (err, res) => resolve({ err, res }));
});
const ok = async (client, rpc, req, md) => {
  const r = await call(client, rpc, req, md);
  if (r.err) fail(`${rpc}: ${r.err.code} ${r.err.details}`);
  return r.res;
};
const refused = async (client, rpc, req, code, pattern, what) => {
  const r = await call(client, rpc, req);
  if (!r.err || r.err.code !== code) fail(`${what}: expected code ${code}, got ${r.err ? r.err.code + " " + r.err.details : "OK"}`);
  if (!pattern.test(r.err.details)) fail(`${what}: details ${JSON.stringify(r.err.details)} lack ${pattern}`);
};
const f32 = (buf) => Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(4 * i));
function sameBits(a, b, what) {
  const fa = Float32Array.from(a), fb = Float32Array.from(b);
  if (fa.length !== fb.length || fa.length === 0) fail(`${what}: ${fa.length} vs ${fb.length} values`);
  const ua = new Uint32Array(fa.buffer), ub = new Uint32Array(fb.buffer);
  for (let i = 0; i < ua.length; i++)
    if (ua[i] !== ub[i]) fail(`${what}: value ${i} differs: ${fa[i]} vs ${fb[i]}`);
}
const i64le = (v) => { const b = Buffer.alloc(8 * v.length); v.forEach((x, i) => b.writeBigInt64LE(BigInt(x), 8 * i)); return b; };
const texts = ["a gripping and funny film", "dull and slow"];

if (mode === "rpcs") {
  const [base, addr, model] = args;
  const client = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());
  if (!(await ok(client, "ServerLive", {})).live) fail("not live");
  if (!(await ok(client, "ServerReady", {})).ready) fail("not ready");
  const sm = await ok(client, "ServerMetadata", {});
  if (sm.name !== "anytime" || !sm.version) fail(`server metadata ${JSON.stringify(sm)}`);
  if (!(await ok(client, "ModelReady", { name: model })).ready) fail("model not ready");
  if (!(await ok(client, "ModelReady", { name: model, version: "1" })).ready) fail("model v1 not ready");
  const mm = await ok(client, "ModelMetadata", { name: model });
  const http = await (await fetch(`${base}/v2/models/${model}`)).json();
  if (mm.name !== model || JSON.stringify(mm.versions) !== JSON.stringify(http.versions)) fail(`model metadata ${JSON.stringify(mm)}`);
  const names = (l) => l.map((t) => `${t.name}:${t.datatype}:${t.shape.join(",")}`).join(" ");
  if (names(mm.inputs) !== names(http.inputs)) fail(`inputs ${names(mm.inputs)} vs HTTP ${names(http.inputs)}`);
  if (names(mm.outputs) !== names(http.outputs)) fail(`outputs ${names(mm.outputs)} vs HTTP ${names(http.outputs)}`);
  await refused(client, "ModelReady", { name: "nope" }, grpc.status.NOT_FOUND, /'nope' is not served/, "unknown model ready");
  await refused(client, "ModelMetadata", { name: model, version: "7" }, grpc.status.NOT_FOUND, /no version '7'/, "unknown version");

  // texts: HTTP V2 JSON vs gRPC bytes_contents and raw (length-prefixed) BYTES
  const hj = await (await fetch(`${base}/v2/models/${model}/infer`, { method: "POST", body: JSON.stringify({
    inputs: [{ name: "text", datatype: "BYTES", shape: [2], data: texts }],
    outputs: [{ name: "logits" }, { name: "probabilities" }] }) })).json();
  const g1 = await ok(client, "ModelInfer", { model_name: model, id: "t1",
    inputs: [{ name: "text", datatype: "BYTES", shape: [2], contents: { bytes_contents: texts.map((t) => Buffer.from(t)) } }],
    outputs: [{ name: "logits" }, { name: "probabilities" }] });
  if (g1.id !== "t1" || g1.model_name !== model || g1.outputs.length !== 2) fail(`ModelInfer envelope ${JSON.stringify(g1.outputs)}`);
  if (g1.outputs[0].name !== "logits" || g1.outputs[0].shape.join() !== hj.outputs[0].shape.join()) fail("logits shape");
  sameBits(f32(g1.raw_output_contents[0]), hj.outputs[0].data, "gRPC BYTES logits vs HTTP");
  sameBits(f32(g1.raw_output_contents[1]), hj.outputs[1].data, "gRPC BYTES probabilities vs HTTP");
  const rawText = Buffer.concat(texts.flatMap((t) => { const b = Buffer.from(t); const l = Buffer.alloc(4); l.writeUInt32LE(b.length); return [l, b]; }));
  const g2 = await ok(client, "ModelInfer", { model_name: model,
    inputs: [{ name: "text", datatype: "BYTES", shape: [2] }], raw_input_contents: [rawText] });
  sameBits(f32(g2.raw_output_contents[0]), hj.outputs[0].data, "gRPC raw BYTES logits vs HTTP");

  // tensors: INT64 as raw_input_contents and as int64_contents
  const onnx = http.inputs.filter((i) => i.datatype !== "BYTES").map((i) => i.name);
  const S = 6, ids = [2, 11, 12, 13, 14, 3, 2, 15, 16, 3, 0, 0], mask = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0];
  const valuesOf = (n) => n === "input_ids" ? ids : n === "attention_mask" ? mask : ids.map(() => 0);
  const ht = await (await fetch(`${base}/v2/models/${model}/infer`, { method: "POST", body: JSON.stringify({
    inputs: onnx.map((n) => ({ name: n, datatype: "INT64", shape: [2, S], data: valuesOf(n) })),
    outputs: [{ name: "logits" }] }) })).json();
  const g3 = await ok(client, "ModelInfer", { model_name: model,
    inputs: onnx.map((n) => ({ name: n, datatype: "INT64", shape: [2, S] })),
    outputs: [{ name: "logits" }], raw_input_contents: onnx.map((n) => i64le(valuesOf(n))) });
  if (g3.outputs[0].datatype !== "FP32" || g3.outputs[0].shape.join() !== ht.outputs[0].shape.join()) fail(`tensor logits ${JSON.stringify(g3.outputs[0])}`);
  sameBits(f32(g3.raw_output_contents[0]), ht.outputs[0].data, "gRPC INT64 raw logits vs HTTP");
  const g4 = await ok(client, "ModelInfer", { model_name: model, model_version: "1",
    inputs: onnx.map((n) => ({ name: n, datatype: "INT64", shape: [2, S], contents: { int64_contents: valuesOf(n).map(String) } })),
    outputs: [{ name: "logits" }] });
  sameBits(f32(g4.raw_output_contents[0]), ht.outputs[0].data, "gRPC int64_contents logits vs HTTP");

  // refusals
  await refused(client, "ModelInfer", { model_name: "nope", inputs: [{ name: "text", datatype: "BYTES", shape: [1] }] },
    grpc.status.NOT_FOUND, /'nope' is not served/, "unknown model infer");
  await refused(client, "ModelInfer", { model_name: model, inputs: onnx.map((n) => ({ name: n, datatype: "INT64", shape: [2, S] })),
    raw_input_contents: onnx.map((n) => i64le(valuesOf(n)).subarray(8)) },
    grpc.status.INVALID_ARGUMENT, /holds 88 bytes; shape \[2, 6\] of INT64 needs 96/, "raw size");
  await refused(client, "ModelInfer", { model_name: model, inputs: [{ name: "text", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from("")] } }] },
    grpc.status.INVALID_ARGUMENT, /empty string/, "empty text");
  const pmd = new grpc.Metadata(); pmd.set("x-priority", "high");
  await ok(client, "ModelInfer", { model_name: model, inputs: [{ name: "text", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from("a film")] } }] }, pmd);
  const bad = new grpc.Metadata(); bad.set("x-priority", "urgent");
  const br = await call(client, "ModelInfer", { model_name: model, inputs: [{ name: "text", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from("a film")] } }] }, bad);
  if (!br.err || br.err.code !== grpc.status.INVALID_ARGUMENT || !/x-priority must be/.test(br.err.details)) fail(`x-priority urgent: ${br.err ? br.err.details : "OK"}`);
  await refused(client, "ModelInfer", { model_name: model, inputs: [{ name: "text", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from("a film")] } }],
    outputs: [{ name: "logits", parameters: { classification: { int64_param: 2 } } }] },
    grpc.status.INVALID_ARGUMENT, /classification extension is not supported/, "classification output");
  await refused(client, "ModelInfer", { model_name: model, inputs: [{ name: "nope", datatype: "INT64", shape: [1, 1] }] },
    grpc.status.INVALID_ARGUMENT, /has no input 'nope'|takes \d+ inputs/, "unknown input");
  await refused(client, "ModelInfer", { model_name: model, inputs: onnx.map((n) => ({ name: n, datatype: "INT64", shape: [2, S] })),
    raw_input_contents: onnx.map((n) => i64le(n === "input_ids" ? ids.map((x, i) => i === 3 ? 1e9 : x) : valuesOf(n))) },
    grpc.status.INVALID_ARGUMENT, /outside the model's vocabulary/, "id outside the vocabulary");
  client.close();
} else if (mode === "auth") {
  const [addr, model, key] = args;
  const client = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());
  await refused(client, "ServerLive", {}, grpc.status.UNAUTHENTICATED, /needs an API key/, "no key");
  const wrong = new grpc.Metadata(); wrong.set("authorization", "Bearer not-the-key");
  const r = await call(client, "ModelReady", { name: model }, wrong);
  if (!r.err || r.err.code !== grpc.status.UNAUTHENTICATED) fail("wrong key was accepted");
  const md = new grpc.Metadata(); md.set("authorization", `Bearer ${key}`);
  if (!(await ok(client, "ModelReady", { name: model }, md)).ready) fail("with the key: not ready");
  client.close();
} else if (mode === "tls") {
  // the HTTPS certificate serves gRPC too: a TLS channel trusting it works,
  // and the texts' logits are HTTPS's
  const [base, addr, model, caFile] = args;
  const { readFileSync } = await import("node:fs");
  const client = new inference.GRPCInferenceService(addr, grpc.credentials.createSsl(readFileSync(caFile)));
  const g = await ok(client, "ModelInfer", { model_name: model,
    inputs: [{ name: "text", datatype: "BYTES", shape: [2], contents: { bytes_contents: texts.map((t) => Buffer.from(t)) } }] });
  if (g.raw_output_contents[0].length !== 2 * 3 * 4) fail("TLS: short answer");
  client.close();
  const plain = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());
  const r = await call(plain, "ServerLive", {});
  if (!r.err) fail("TLS: a plaintext channel was answered");
  plain.close();
} else if (mode === "drain") {
  // calls in flight when the server is told to stop (the shell sends
  // SIGTERM once READY is printed): each ends with one answer — OK, or
  // UNAVAILABLE once the server is draining, or cut (CANCELLED / reset
  // stream) when not admitted as it stops — never DEADLINE_EXCEEDED, any
  // other error, or a hang; and some are answered.
  const [addr, model] = args;
  const client = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());
  const req = { model_name: model, inputs: [{ name: "text", datatype: "BYTES", shape: [2], contents: { bytes_contents: texts.map((t) => Buffer.from(t)) } }] };
  let okN = 0, unavailable = 0, cancelledAtShutdown = 0, stop = false;
  const loop = async () => {
    while (!stop) {
      const r = await call(client, "ModelInfer", req);
      if (!r.err) okN++;
      else if (r.err.code === grpc.status.UNAVAILABLE) { unavailable++; stop = true; }
      // a call not admitted when the server stops taking calls (after the
      // drain) is cancelled: CANCELLED, or grpc-js's INTERNAL for the reset stream
      else if (r.err.code === grpc.status.CANCELLED ||
               (r.err.code === grpc.status.INTERNAL && /RST_STREAM|Session closed/.test(r.err.details))) { cancelledAtShutdown++; stop = true; }
      else fail(`drain: code ${r.err.code} ${JSON.stringify(r.err.details)}`);
    }
  };
  const loops = Array.from({ length: 16 }, loop);
  setTimeout(() => console.log("READY"), 300);
  await Promise.race([Promise.all(loops), new Promise((_, rej) => setTimeout(() => rej(new Error("calls still open 20 s after the start")), 20000).unref())])
    .catch((e) => fail(`drain: ${e.message}`));
  if (!okN) fail("drain: nothing answered");
  console.log(`grpc drain: ${okN} answered, ${unavailable} UNAVAILABLE while draining, ${cancelledAtShutdown} cut at the stop (not admitted)`);
  client.close();
} else if (mode === "overload") {
  const [addr, model, key] = args;
  const client = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());
  const md = new grpc.Metadata(); md.set("authorization", `Bearer ${key}`);
  const many = Array.from({ length: 8 }, (_, i) => Buffer.from(`${texts[i % 2]} number ${i}`));
  const req = { model_name: model, inputs: [{ name: "text", datatype: "BYTES", shape: [8], contents: { bytes_contents: many } }] };
  const results = await Promise.all(Array.from({ length: 64 }, () => call(client, "ModelInfer", req, md)));
  let okN = 0, exhausted = 0;
  for (const r of results) {
    if (!r.err) { okN++; if (r.res.raw_output_contents[0].length !== 8 * 3 * 4) fail("short answer"); continue; }
    if (r.err.code !== grpc.status.RESOURCE_EXHAUSTED) fail(`overload: code ${r.err.code} ${r.err.details}`);
    const ra = r.err.metadata.get("retry-after-ms")[0]; // the trailing metadata of a failed call
    if (!(Number(ra) > 0)) fail(`RESOURCE_EXHAUSTED without retry-after-ms (trailers ${JSON.stringify(r.err.metadata.getMap())})`);
    exhausted++;
  }
  if (!okN || !exhausted) fail(`overload: ${okN} ok, ${exhausted} refused (want some of each)`);
  const big = Array.from({ length: 13 }, (_, i) => Buffer.from(`text ${i}`));
  const never = await call(client, "ModelInfer", { model_name: model,
    inputs: [{ name: "text", datatype: "BYTES", shape: [13], contents: { bytes_contents: big } }] }, md);
  if (!never.err || never.err.code !== grpc.status.FAILED_PRECONDITION) fail(`13 texts over a limit of 12: ${never.err ? never.err.code + " " + never.err.details : "OK"}`);
  if (!/more than the in-flight limit of 12/.test(never.err.details)) fail(`13 texts: details ${never.err.details}`);
  if (never.err.metadata.get("retry-after-ms").length) fail("a call that can never be admitted was told to retry");
  console.log(`grpc overload: ${okN} answered, ${exhausted} RESOURCE_EXHAUSTED with retry-after-ms`);
  client.close();
} else if (mode === "prompt") {
  const [base, addr, model, refPath] = args;
  const ref = JSON.parse((await import("node:fs")).readFileSync(refPath, "utf8"));
  const tx = ref.texts.slice(0, 3).map((t) => t.text);
  const client = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());
  const g = await ok(client, "ModelInfer", { model_name: model,
    inputs: [{ name: "text", datatype: "BYTES", shape: [tx.length], contents: { bytes_contents: tx.map((t) => Buffer.from(t)) } }] });
  const h = await (await fetch(`${base}/v2/models/${model}/infer`, { method: "POST", body: JSON.stringify({
    inputs: [{ name: "text", datatype: "BYTES", shape: [tx.length], data: tx }] }) })).json();
  const got = f32(g.raw_output_contents[0]);
  sameBits(got, h.outputs[0].data, "gRPC embedding (default prompt) vs HTTP V2");
  const d = got.length / tx.length;
  tx.forEach((_, i) => ref.texts[i].prompts.query.normalized.forEach((w, k) => {
    if (Math.abs(got[i * d + k] - w) > 1e-4) fail(`text ${i} dim ${k}: ${got[i * d + k]} vs the prompted reference ${w}`);
  }));
  console.log(`grpc prompt: ${tx.length} embeddings with the default prompt, HTTP's bit for bit`);
  client.close();
} else {
  fail(`unknown mode ${mode}`);
}
console.log(`grpc_v2 ${mode}: ok`);
