// bench/grpc/grpc_vs_http.mjs — one closed-loop pass: C concurrent clients
// for SECONDS each send a one-text KServe V2 infer to the encoder, over HTTP
// (fetch, keep-alive: POST /v2/models/M/infer with a JSON BYTES input) or
// over gRPC (@grpc/grpc-js ModelInfer with bytes_contents, one channel);
// prints one JSON line {proto, c, rps, ok, refused, p50_ms, p99_ms}.
// Both clients are Node, so client cost is alike on both sides.
// usage: node grpc_vs_http.mjs http|grpc BASE_URL GRPC_ADDR MODEL C SECONDS
import { fileURLToPath } from "node:url";
import path from "node:path";
import { createRequire } from "node:module";
const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "tests", "clients", "x.js"));
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const [proto, base, addr, model, cStr, secStr] = process.argv.slice(2);
const C = Number(cStr), secs = Number(secStr);
const text = "a gripping and funny film about nothing in particular";
let send;
if (proto === "grpc") {
  const def = protoLoader.loadSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "src", "serve", "grpc_inference.proto"), { keepCase: true });
  const inference = grpc.loadPackageDefinition(def).inference;
  const client = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());
  const req = { model_name: model, inputs: [{ name: "text", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from(text)] } }] };
  send = () => new Promise((res) => client.ModelInfer(req, (err) => res(err ? (err.code === grpc.status.RESOURCE_EXHAUSTED ? 429 : 500) : 200)));
} else {
  const body = JSON.stringify({ inputs: [{ name: "text", datatype: "BYTES", shape: [1], data: [text] }] });
  const url = `${base}/v2/models/${model}/infer`;
  send = async () => { const r = await fetch(url, { method: "POST", body, headers: { "Content-Type": "application/json" } }); await r.arrayBuffer(); return r.status; };
}
const lat = [];
let ok = 0, refused = 0, other = 0;
const end = Date.now() + secs * 1000;
async function worker() {
  while (Date.now() < end) {
    const t = process.hrtime.bigint();
    const st = await send();
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (st === 200) { ok++; lat.push(ms); } else if (st === 429) refused++; else other++;
  }
}
const t0 = Date.now();
await Promise.all(Array.from({ length: C }, worker));
const el = (Date.now() - t0) / 1000;
lat.sort((a, b) => a - b);
const q = (p) => lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : null;
console.log(JSON.stringify({ proto, c: C, rps: +(ok / el).toFixed(1), ok, refused, other, p50_ms: q(0.5), p99_ms: q(0.99) }));
process.exit(0);
