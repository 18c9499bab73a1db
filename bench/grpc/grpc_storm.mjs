// bench/grpc/grpc_storm.mjs — issue 14's retry-storm sequence over one
// protocol: BURST_CLIENTS clients for BURST_S seconds, then 8 clients to
// TOTAL_S, each sending a one-text request back to back and resending every
// refusal at once (no wait: the worst client). Each request carries the
// deadline DEADLINE_MS: over gRPC as the call's deadline (grpc-timeout,
// which the server takes as the request's deadline), over HTTP as
// x-deadline-ms to /v2/models/M/infer. Texts cycle through TEXTS_FILE's
// lines (a CSV's text column) so no two neighbours are alike.
// Prints one JSON line: attempts and answers from BURST_S + 1 s on (the
// share the check holds to >= 0.99), and the whole run's counts by outcome.
// usage: node grpc_storm.mjs grpc|http BASE_URL GRPC_ADDR MODEL BURST_S TOTAL_S
//        BURST_CLIENTS DEADLINE_MS [TEXTS_CSV]
import { fileURLToPath } from "node:url";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "..", "tests", "clients", "x.js"));
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const [proto, base, addr, model, burstS, totalS, burstC, deadlineMs, csv] = process.argv.slice(2);
const BURST_S = Number(burstS), TOTAL_S = Number(totalS), BURST_C = Number(burstC);
const DEADLINE = Number(deadlineMs);
let texts = ["a gripping and funny film", "dull and slow", "the plot wanders but the cast shines"];
if (csv) {
  // the text column: a plain field or a quoted one (quotes doubled inside)
  texts = fs.readFileSync(csv, "utf8").split("\n").slice(1).map((l) => {
    const c = l.indexOf(",");
    let t = l.slice(c + 1);
    if (t.startsWith('"')) t = t.slice(1, t.lastIndexOf('"')).replaceAll('""', '"');
    return t;
  }).filter((t) => t.length > 0);
}
let next = 0;
const nextText = () => texts[next++ % texts.length];

let send;
if (proto === "grpc") {
  const def = protoLoader.loadSync(path.join(here, "..", "..", "src", "serve", "grpc_inference.proto"), { keepCase: true });
  const inference = grpc.loadPackageDefinition(def).inference;
  const client = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());
  send = (text) => new Promise((res) => client.ModelInfer(
    { model_name: model, inputs: [{ name: "text", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from(text)] } }] },
    { deadline: Date.now() + DEADLINE },
    (err) => res(!err ? "ok" : err.code === grpc.status.RESOURCE_EXHAUSTED ? "refused"
      : err.code === grpc.status.DEADLINE_EXCEEDED ? "late" : `code ${err.code}`)));
} else {
  const url = `${base}/v2/models/${model}/infer`;
  send = async (text) => {
    try {
      const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", "x-deadline-ms": String(DEADLINE) },
        body: JSON.stringify({ inputs: [{ name: "text", datatype: "BYTES", shape: [1], data: [text] }] }) });
      await r.arrayBuffer();
      return r.status === 200 ? "ok" : r.status === 429 ? "refused" : `status ${r.status}`;
    } catch (e) { return `error ${e.cause?.code ?? e.message}`; }
  };
}

const t0 = Date.now();
const counts = {};
let after = 0, afterOk = 0;
async function client(untilS) {
  while (Date.now() - t0 < untilS * 1000) {
    const start = (Date.now() - t0) / 1000;
    const out = await send(nextText());
    counts[out] = (counts[out] ?? 0) + 1;
    if (start >= BURST_S + 1) { after++; if (out === "ok") afterOk++; }
  }
}
// the burst's clients stop at BURST_S; 8 clients go on to TOTAL_S
await Promise.all([
  ...Array.from({ length: BURST_C }, () => client(BURST_S)),
  ...Array.from({ length: 8 }, () => client(TOTAL_S)),
]);
console.log(JSON.stringify({ proto, burst_clients: BURST_C, burst_s: BURST_S, total_s: TOTAL_S, deadline_ms: DEADLINE,
  after_burst: { from_s: BURST_S + 1, sent: after, ok: afterOk, ok_share: after ? +(afterOk / after).toFixed(4) : null },
  counts }));
process.exit(0);
