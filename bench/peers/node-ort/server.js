// bench/peers/node-ort/server.js — the peer: a minimal Node.js HTTP server
// serving the same classifier the way a user would write it with
// onnxruntime-node and the HF tokenizers binding. One session, one request
// per Run (no batching), TEI-style POST /predict {"inputs": "text"} ->
// [{"label","score"}...]. usage: node server.js MODEL_DIR VARIANT.onnx PORT
"use strict";
const http = require("http");
const path = require("path");
const fs = require("fs");
const ort = require("onnxruntime-node");
const { Tokenizer } = require("tokenizers");

const [dir, variant, portStr] = process.argv.slice(2);
const port = Number(portStr || 8001);

async function main() {
  const tokenizer = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
  const config = JSON.parse(fs.readFileSync(path.join(dir, "config.json"), "utf8"));
  const labels = Object.keys(config.id2label).sort((a, b) => a - b).map((k) => config.id2label[k]);
  const session = await ort.InferenceSession.create(path.join(dir, variant), {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "all",
  });
  const server = http.createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/predict") { res.writeHead(404); res.end(); return; }
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        const enc = await tokenizer.encode(body.inputs);
        const ids = enc.getIds(), n = ids.length;
        const feeds = {
          input_ids: new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, n]),
          attention_mask: new ort.Tensor("int64", new BigInt64Array(n).fill(1n), [1, n]),
        };
        const out = await session.run(feeds);
        const logits = Array.from(out.logits.data);
        const m = Math.max(...logits), e = logits.map((x) => Math.exp(x - m));
        const s = e.reduce((a, b) => a + b, 0);
        const ans = labels.map((label, i) => ({ score: e[i] / s, label })).sort((a, b) => b.score - a.score);
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify(ans));
      } catch (err) {
        res.writeHead(400, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: String(err) }));
      }
    });
  });
  server.listen(port, "127.0.0.1", () => console.error(`peer: listening on ${port}`));
}
main();
