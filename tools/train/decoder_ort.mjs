// A check tool only: runs ONNX graphs in ONNX Runtime through the native
// binding of npm onnxruntime-node (the C server does not use this).  Python
// (decoder_check.py) starts it once and talks to it over stdin/stdout, one
// JSON line per request and per reply:
//
//   request: {"model": PATH, "feeds": {NAME: {"dtype": "int64"|"float32",
//             "dims": [...], "b64": little-endian bytes}}, "fetch": [NAME...],
//             "targets": [id...] (optional)}
//   reply:   {"outputs": {NAME: {"dims": [...], "b64": ...}}}
//            plus, with "targets" (one id per position of batch row 0),
//            "target_logprob": [log softmax(logits[0, t])[targets[t]] ...]
//            (a target < 0 is skipped and reported as null), or {"error": MSG}
//
// usage: node decoder_ort.mjs BINDING_DIR
//   BINDING_DIR holds onnxruntime_binding.node and libonnxruntime.so.1 from the
//   onnxruntime-node package (bin/napi-v6/linux/x64).  Sessions use one intra-op
//   and one inter-op thread.  The package's JavaScript layer needs
//   onnxruntime-common; the binding only needs a Tensor class with
//   (type, data, dims), defined here.
import path from "node:path";
import readline from "node:readline";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const binding = require(path.resolve(process.argv[2], "onnxruntime_binding.node"));

class Tensor {
    constructor(type, data, dims) {
        this.type = type;
        this.data = data;
        this.dims = dims;
        this.location = "cpu";
    }
}
binding.initOrtOnce(3, Tensor, true);

const sessions = new Map();
function session(model) {
    let s = sessions.get(model);
    if (!s) {
        s = new binding.InferenceSession();
        s.loadModel(model, { intraOpNumThreads: 1, interOpNumThreads: 1,
                             graphOptimizationLevel: "all" });
        sessions.set(model, s);
    }
    return s;
}

function toTensor(f) {
    const buf = Buffer.from(f.b64, "base64");
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
    const data = f.dtype === "int64" ? new BigInt64Array(ab) : new Float32Array(ab);
    return new Tensor(f.dtype, data, f.dims);
}

function targetLogprob(t, targets) {
    const v = t.dims[t.dims.length - 1];
    const out = [];
    for (let i = 0; i < targets.length; i++) {
        if (targets[i] < 0) { out.push(null); continue; }
        const row = t.data.subarray(i * v, (i + 1) * v);
        let mx = -Infinity;
        for (let j = 0; j < v; j++) if (row[j] > mx) mx = row[j];
        let sum = 0;
        for (let j = 0; j < v; j++) sum += Math.exp(row[j] - mx);
        out.push(row[targets[i]] - mx - Math.log(sum));
    }
    return out;
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
    let reply;
    try {
        const req = JSON.parse(line);
        const s = session(req.model);
        const feeds = {};
        for (const [k, f] of Object.entries(req.feeds)) feeds[k] = toTensor(f);
        const fetches = {};
        for (const m of s.outputMetadata) {
            if (!req.fetch || req.fetch.includes(m.name) || (req.targets && m.name === "logits")) {
                fetches[m.name] = null;
            }
        }
        const out = s.run(feeds, fetches, {});
        reply = { outputs: {} };
        for (const [k, t] of Object.entries(out)) {
            if (req.targets && k === "logits") {
                reply.target_logprob = targetLogprob(t, req.targets);
                if (req.fetch && !req.fetch.includes("logits")) continue;
            }
            const b = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
            reply.outputs[k] = { dims: t.dims, b64: b.toString("base64") };
        }
    } catch (e) {
        reply = { error: String(e && e.stack ? e.stack : e) };
    }
    process.stdout.write(JSON.stringify(reply) + "\n");
});
