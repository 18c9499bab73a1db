"""Check the exported decoder, measure perplexity, write reference outputs and
the model card.

Runners (each takes feeds {name: array} and returns {name: array}):
  torch        ExportDecoder in torch: the exported graph's own semantics
  onnx-numpy   the ONNX file in decoder_onnx_eval.py (numpy)
  onnx-ort     the ONNX file in ONNX Runtime 1.30 via decoder_ort.mjs
               (only with --ort-binding)
applied to model.onnx (fp32) and model_quantized.onnx (int8).

Checks (max |logit difference|; all on 3 held-out prompts):
  a/b  full-sequence logits with no past (past_seq = 0)  vs  prefill of the
       first half then one token at a time, present fed back as past;
  c    a batch of 2 whose pasts have different lengths (the shorter one
       right-padded - with zeros, and again with large random values - and
       those slots 0 in attention_mask) decoding 4 tokens vs each sequence
       alone; also a right-padded batched prefill;
  d    an attention_mask row of all zeros gives finite logits;
  x    ONNX logits vs torch logits on the same feeds.

Perplexity protocol (per token, what the C side reproduces): for each
held-out review in heldout.csv order, ids = [0] + encode(text) + [0]
(encode: tokenizer.json, no special tokens added; 0 = <|endoftext|>); cut ids
into consecutive non-overlapping windows of 256 tokens (the last may be
shorter); run every window alone (batch 1, past_seq 0, position_ids 0..n-1,
attention_mask all ones); every token of a window except its first is
predicted from the tokens before it in the same window.
ppl = exp(sum of -log p / number of predicted tokens).  "train" applies the
same protocol to the first 150 training reviews (split order).

Run:  /usr/bin/python3 tools/train/decoder_check.py --model-dir models/decoder
          --ckpt CKPT.pt --ids IDS.json --reviews reviews.json --node-dir DIR
          [--ort-binding DIR]
"""
import argparse
import base64
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import data  # noqa: E402
import decoder_model as dm  # noqa: E402
import decoder_onnx_eval  # noqa: E402
from decoder_export import load  # noqa: E402

WINDOW = 256
EOT = 0


# ---------------------------------------------------------------- runners

class TorchRunner:
    name = "torch"

    def __init__(self, model):
        self.w = dm.ExportDecoder(model).eval()
        self.n_layer = model.cfg.n_layer

    def run(self, feeds):
        past = []
        for i in range(self.n_layer):
            past += [torch.from_numpy(feeds["past_key_values.%d.key" % i]),
                     torch.from_numpy(feeds["past_key_values.%d.value" % i])]
        with torch.no_grad():
            out = self.w(torch.from_numpy(feeds["input_ids"]),
                         torch.from_numpy(feeds["attention_mask"]),
                         torch.from_numpy(feeds["position_ids"]), *past)
        return dict(zip(dm.output_names(self.n_layer), [o.numpy() for o in out]))


class NumpyRunner:
    def __init__(self, path, label):
        self.g = decoder_onnx_eval.Graph(path)
        self.name = "onnx-numpy " + label

    def run(self, feeds):
        return dict(zip(self.g.outputs, self.g.run(feeds)))


class OrtRunner:
    def __init__(self, proc, path, label):
        self.proc, self.path = proc, os.path.abspath(path)
        self.name = "onnx-ort " + label

    def request(self, feeds, fetch=None, targets=None):
        req = {"model": self.path, "feeds": {}}
        for k, v in feeds.items():
            v = np.ascontiguousarray(v)
            req["feeds"][k] = {"dtype": "int64" if v.dtype == np.int64 else "float32",
                               "dims": list(v.shape),
                               "b64": base64.b64encode(v.tobytes()).decode("ascii")}
        if fetch is not None:
            req["fetch"] = fetch
        if targets is not None:
            req["targets"] = [int(t) for t in targets]
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        rep = json.loads(self.proc.stdout.readline())
        if "error" in rep:
            raise RuntimeError("onnxruntime: " + rep["error"])
        outs = {}
        for k, o in rep["outputs"].items():
            outs[k] = np.frombuffer(base64.b64decode(o["b64"]),
                                    dtype=np.float32).reshape(o["dims"])
        return outs, rep.get("target_logprob")

    def run(self, feeds):
        return self.request(feeds)[0]


def start_ort(binding_dir):
    return subprocess.Popen(["node", os.path.join(HERE, "decoder_ort.mjs"), binding_dir],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            bufsize=1)


# ---------------------------------------------------------------- feeds

def feeds_for(cfg, ids, mask, pos, past=None):
    ids = np.asarray(ids, dtype=np.int64)
    b = ids.shape[0]
    f = {"input_ids": ids,
         "attention_mask": np.asarray(mask, dtype=np.int64),
         "position_ids": np.asarray(pos, dtype=np.int64)}
    for i in range(cfg.n_layer):
        for kind in ("key", "value"):
            name = "past_key_values.%d.%s" % (i, kind)
            f[name] = (past[name] if past is not None else
                       np.zeros((b, cfg.n_head, 0, cfg.head_dim), dtype=np.float32))
    return f


def present_as_past(cfg, outs):
    return {"past_key_values.%d.%s" % (i, k): np.array(outs["present.%d.%s" % (i, k)])
            for i in range(cfg.n_layer) for k in ("key", "value")}


def full_logits(runner, cfg, seq):
    n = len(seq)
    return runner.run(feeds_for(cfg, [seq], np.ones((1, n)), [list(range(n))]))["logits"][0]


def incremental_logits(runner, cfg, seq, n0):
    """Prefill seq[:n0] (past 0), then one token at a time. Logits [len, V]."""
    outs = runner.run(feeds_for(cfg, [seq[:n0]], np.ones((1, n0)), [list(range(n0))]))
    rows = [outs["logits"][0]]
    past = present_as_past(cfg, outs)
    for t in range(n0, len(seq)):
        outs = runner.run(feeds_for(cfg, [[seq[t]]], np.ones((1, t + 1)), [[t]], past))
        rows.append(outs["logits"][0])
        past = present_as_past(cfg, outs)
    return np.concatenate(rows, axis=0)


def batched_decode_check(runner, cfg, seq_a, seq_b, steps, fill, rng):
    """seq_a longer than seq_b.  Prefill each alone, then decode `steps`
    teacher-forced tokens for both in one batch, seq_b's past right-padded.
    Returns max |diff| against each sequence decoded alone."""
    la, lb = len(seq_a) - steps, len(seq_b) - steps
    assert la > lb
    alone = []
    for s, l in ((seq_a, la), (seq_b, lb)):
        alone.append(incremental_logits(runner, cfg, s, l)[l:])      # [steps, V]
    oa = runner.run(feeds_for(cfg, [seq_a[:la]], np.ones((1, la)), [list(range(la))]))
    ob = runner.run(feeds_for(cfg, [seq_b[:lb]], np.ones((1, lb)), [list(range(lb))]))
    pa, pb = present_as_past(cfg, oa), present_as_past(cfg, ob)
    past = {}
    for k in pa:
        pad = np.zeros_like(pa[k]) if fill == "zeros" else \
            (rng.standard_normal(pa[k].shape) * 1e3).astype(np.float32)
        pad[:, :, :lb] = pb[k]
        past[k] = np.concatenate([pa[k], pad], axis=0)
    holes = la - lb
    worst = 0.0
    for j in range(steps):
        tot = la + j + 1
        mask = np.ones((2, tot), dtype=np.int64)
        mask[1, lb:lb + holes] = 0
        outs = runner.run(feeds_for(cfg, [[seq_a[la + j]], [seq_b[lb + j]]], mask,
                                    [[la + j], [lb + j]], past))
        worst = max(worst, float(np.abs(outs["logits"][0, 0] - alone[0][j]).max()),
                    float(np.abs(outs["logits"][1, 0] - alone[1][j]).max()))
        past = present_as_past(cfg, outs)
        if fill != "zeros":
            for k in past:      # keep the holes full of garbage
                past[k][1, :, lb:lb + holes] = (rng.standard_normal(
                    past[k][1, :, lb:lb + holes].shape) * 1e3).astype(np.float32)
    return worst


def padded_prefill_check(runner, cfg, seq_a, seq_b):
    la, lb = len(seq_a), len(seq_b)
    ids = [list(seq_a), list(seq_b) + [EOT] * (la - lb)]
    mask = np.ones((2, la), dtype=np.int64)
    mask[1, lb:] = 0
    pos = [list(range(la)), list(range(lb)) + [0] * (la - lb)]
    outs = runner.run(feeds_for(cfg, ids, mask, pos))
    fa, fb = full_logits(runner, cfg, seq_a), full_logits(runner, cfg, seq_b)
    return max(float(np.abs(outs["logits"][0] - fa).max()),
               float(np.abs(outs["logits"][1, :lb] - fb).max()))


def nan_check(runner, cfg, seq):
    n = len(seq)
    mask = np.ones((2, n), dtype=np.int64)
    mask[1] = 0
    outs = runner.run(feeds_for(cfg, [seq, seq], mask, [list(range(n))] * 2))
    return bool(np.isfinite(outs["logits"]).all())


def run_checks(runners, cfg, prompts, torch_runner):
    rng = np.random.default_rng(7)
    res = {}
    for r in runners:
        t0 = time.time()
        ab = 0.0
        x = 0.0
        for p in prompts:
            f = full_logits(r, cfg, p)
            inc = incremental_logits(r, cfg, p, len(p) // 2)
            ab = max(ab, float(np.abs(f - inc).max()))
            if r is not torch_runner:
                x = max(x, float(np.abs(f - full_logits(torch_runner, cfg, p)).max()))
        longest, shortest = prompts[-1], prompts[0]
        c_zero = batched_decode_check(r, cfg, longest, shortest, 4, "zeros", rng)
        c_junk = batched_decode_check(r, cfg, longest, shortest, 4, "random", rng)
        c_pre = padded_prefill_check(r, cfg, longest, shortest)
        d = nan_check(r, cfg, shortest)
        res[r.name] = {"a_vs_b_max_abs": ab, "c_batched_zero_pad_max_abs": c_zero,
                       "c_batched_random_pad_max_abs": c_junk,
                       "c_padded_prefill_max_abs": c_pre, "d_all_masked_row_finite": d}
        if r is not torch_runner:
            res[r.name]["x_vs_torch_fp32_max_abs"] = x
        print("check %-18s %s (%.1f s)" % (r.name, json.dumps(res[r.name]), time.time() - t0),
              flush=True)
    return res


# ---------------------------------------------------------------- perplexity

def windows(review_ids):
    out = []
    for ids in review_ids:
        seq = [EOT] + list(ids) + [EOT]
        for i in range(0, len(seq), WINDOW):
            w = seq[i:i + WINDOW]
            if len(w) >= 2:
                out.append(w)
    return out


def ppl_torch(model, wins, batch=16):
    nll, n = 0.0, 0
    full = [w for w in wins if len(w) == WINDOW]
    part = [w for w in wins if len(w) != WINDOW]
    groups = [full[i:i + batch] for i in range(0, len(full), batch)] + [[w] for w in part]
    with torch.no_grad():
        for g in groups:
            x = torch.tensor(g, dtype=torch.long)
            logits, _ = model(x)
            lp = F.log_softmax(logits[:, :-1].double(), dim=-1)
            nll -= float(lp.gather(2, x[:, 1:].unsqueeze(2)).sum())
            n += x.shape[0] * (x.shape[1] - 1)
    return math.exp(nll / n), n, nll


def ppl_ort(runner, cfg, wins):
    nll, n = 0.0, 0
    for w in wins:
        k = len(w)
        _, lp = runner.request(feeds_for(cfg, [w], np.ones((1, k)), [list(range(k))]),
                               fetch=[], targets=list(w[1:]) + [-1])
        nll -= sum(lp[:-1])
        n += k - 1
    return math.exp(nll / n), n, nll


def ppl_numpy(runner, cfg, wins):
    nll, n = 0.0, 0
    for w in wins:
        k = len(w)
        lg = runner.run(feeds_for(cfg, [w], np.ones((1, k)), [list(range(k))]))["logits"][0]
        lp = F.log_softmax(torch.from_numpy(lg[:-1]).double(), dim=-1)
        nll -= float(lp.gather(1, torch.tensor(w[1:]).unsqueeze(1)).sum())
        n += k - 1
    return math.exp(nll / n), n, nll


# ---------------------------------------------------------------- generation

def greedy_torch(model, prompt, new):
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(new):
            logits, _ = model(torch.tensor([seq]))
            seq.append(int(logits[0, -1].argmax()))
    return seq[len(prompt):]


def greedy_runner(runner, cfg, prompt, new):
    """Full recomputation every step (no cache), batch 1."""
    seq = list(prompt)
    first = None
    for _ in range(new):
        lg = full_logits(runner, cfg, seq)
        if first is None:
            first = lg[-1]
        seq.append(int(np.argmax(lg[-1])))
    return seq[len(prompt):], first


def node_tok(node_dir, tok, mode, items):
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "in.json"), os.path.join(d, "out.json")
        with open(a, "w") as f:
            json.dump(items, f)
        subprocess.run(["node", os.path.join(HERE, "decoder_tokenizer.mjs"), mode, node_dir,
                        tok, a, b], check=True)
        with open(b) as f:
            return json.load(f)


# ---------------------------------------------------------------- card

def check_failures(checks):
    """What run_checks' results fail: NaN/inf with an all-masked row (any
    graph); for fp32 graphs, cache/batching/padding differences above 1e-4
    and a difference from torch above 1e-3."""
    bad = []
    for name, c in checks.items():
        if not c["d_all_masked_row_finite"]:
            bad.append("%s: NaN/inf with an all-masked row" % name)
        if "int8" in name:
            continue
        for k in ("a_vs_b_max_abs", "c_batched_zero_pad_max_abs",
                  "c_batched_random_pad_max_abs", "c_padded_prefill_max_abs"):
            if c[k] > 1e-4:
                bad.append("%s: %s = %g > 1e-4" % (name, k, c[k]))
        if c.get("x_vs_torch_fp32_max_abs", 0.0) > 1e-3:
            bad.append("%s: differs from torch by %g" % (name, c["x_vs_torch_fp32_max_abs"]))
    return bad


def file_size(path):
    return os.path.getsize(path)


def c_perplexity_line(out):
    """The held-out perplexity as anytime measures it from C (same protocol),
    when the C build is there; otherwise how to measure it."""
    root = os.path.dirname(os.path.dirname(HERE))
    exe = os.path.join(root, "build", "anytime")
    cmd = "build/anytime perplexity --model %s --variant VARIANT" % os.path.relpath(out, root)
    if not os.access(exe, os.X_OK):
        return "Held-out perplexity measured by anytime from C: run `%s` (not built here)." % cmd
    got = []
    for variant in ("fp32", "int8"):
        r = subprocess.run([exe, "perplexity", "--model", out, "--variant", variant, "--json"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "Held-out perplexity measured by anytime from C: `%s` failed: %s" % (
                cmd, r.stderr.strip()[:200])
        j = json.loads(r.stdout)
        got.append("%s %.3f (%d tokens)" % (variant, j["perplexity"], j["tokens_scored"]))
    return ("Held-out perplexity measured by anytime from C, same protocol (`%s`): %s."
            % (cmd, ", ".join(got)))


def write_card(out, cfg, ck, ref, sizes, train_seconds_total):
    t = ck["train"]
    pp = ref["perplexity"]
    lines = []
    w = lines.append
    w("# anytime decoder (GPT-style, 4.3M parameters)")
    w("")
    w("A small GPT-2-like text decoder trained from scratch by this project on movie reviews, "
      "so that anytime's decoding path (`src/decode/`) has a real model to serve and test "
      "against. It writes lower-case movie-review prose; it knows nothing else.")
    w("")
    w("- Regenerate: `tools/train/train_decoder.sh` (see tools/train/README.md). "
      "Deterministic with one torch thread.")
    w("- Format: Hugging Face layout, ONNX opset 17, with-past signature (below); "
      "`onnx/model.onnx` fp32, `onnx/model_quantized.onnx` int8.")
    w("")
    w("## Data and split")
    w("")
    w("The 1500 full reviews of Pang & Lee's movie-review polarity corpus "
      "(`polarity-en-pang&lee1.csv` in Debian's `python3-pattern`; research use, fetched at "
      "set-up, never committed). `tools/train/decoder_split.json` fixes 1350 training and 150 "
      "held-out reviews (75 per label, seeded shuffle, by row index); the held-out reviews "
      "were used for nothing but the figures below. `tools/train/decoder_data.py` writes them "
      "to `$ANYTIME_DATA_DIR/pang-lee-reviews/{train,heldout}.csv` (`label,text`, RFC 4180).")
    w("")
    w("## Tokenizer")
    w("")
    w("Byte-level BPE learned with the Hugging Face tokenizers library (npm "
      "`tokenizers@0.23.2`) on the training reviews only: GPT-2 pre-tokenizer regex, "
      "`add_prefix_space` false, no normaliser (the corpus is already lower-case), ByteLevel "
      "decoder, no unknown token. 4096 ids: 0 = `<|endoftext|>` (BOS, EOS and document "
      "separator), 1..256 = the 256 bytes (id = 1 + byte), then %d merges. About %.2f "
      "characters per token on the held-out reviews. The tokenizer adds no special tokens; "
      "training put id 0 before every review, so prompts start with id 0 "
      "(`add_bos_token: true` in tokenizer_config.json tells anytime, and Hugging Face's "
      "GPT-2 tokenizer, to prepend it)."
      % (cfg.vocab_size - 257, ref["tokenizer"]["heldout_chars_per_token"]))
    w("")
    w("## Architecture")
    w("")
    w("| | |")
    w("|---|---|")
    w("| layers / hidden / heads / head dim / FFN | %d / %d / %d / %d / %d |"
      % (cfg.n_layer, cfg.n_embd, cfg.n_head, cfg.head_dim, cfg.n_inner))
    w("| context (n_positions) | %d, learned position embeddings |" % cfg.n_positions)
    w("| blocks | pre-LayerNorm (eps 1e-5), exact erf GELU, biases everywhere |")
    w("| LM head | tied to the token embedding |")
    w("| parameters | %d |" % t["parameters"])
    w("| onnx/model.onnx | %.1f MB |" % (sizes["onnx/model.onnx"] / 1e6))
    w("| onnx/model_quantized.onnx | %.1f MB |" % (sizes["onnx/model_quantized.onnx"] / 1e6))
    w("| tokenizer.json | %.2f MB |" % (sizes["tokenizer.json"] / 1e6))
    w("")
    w("The ONNX graph stores the tied table once, transposed, as `lm_head` [%d, %d]: the "
      "head is a MatMul on it and the embedding a Gather along axis 1. The int8 file is "
      "`tools/train/quantize.py`'s MatMul -> DynamicQuantizeLinear + MatMulInteger rewrite "
      "(all 17 weight MatMuls, the LM head included; per-column symmetric int8 weights), and "
      "`decoder_quantize.py` points the embedding Gather at the head's int8 table "
      "(dequantised by its per-token scale), so no fp32 table remains in it."
      % (cfg.n_embd, cfg.vocab_size))
    w("")
    w("## ONNX signature")
    w("")
    w("| name | type | shape |")
    w("|---|---|---|")
    w("| input `input_ids` | int64 | [batch, seq] |")
    w("| input `attention_mask` | int64 | [batch, past_seq + seq] |")
    w("| input `position_ids` | int64 | [batch, seq], values < %d |" % cfg.n_positions)
    w("| input `past_key_values.{i}.key` / `.value`, i < %d | float32 | [batch, %d, past_seq, %d] |"
      % (cfg.n_layer, cfg.n_head, cfg.head_dim))
    w("| output `logits` | float32 | [batch, seq, %d] |" % cfg.vocab_size)
    w("| output `present.{i}.key` / `.value` | float32 | [batch, %d, past_seq + seq, %d] |"
      % (cfg.n_head, cfg.head_dim))
    w("")
    w("Positions come only from `position_ids`. Query q (0..seq-1) attends key k "
      "(0..past_seq+seq-1) iff k <= past_seq + q and `attention_mask[b, k]` == 1, with "
      "past_seq = mask length - seq; masked scores are float32 min / 2 (finite: a fully "
      "masked row is uniform, never NaN). `present` = past concatenated with the new keys / "
      "values along axis 2. The first prefill passes past tensors with past_seq = 0. A "
      "batch may right-pad a shorter sequence's past (those slots 0 in the mask): its "
      "logits do not depend on the padded slots.")
    w("")
    w("## Training")
    w("")
    w("Training stream: id 0 before each of the 1350 training reviews (%d tokens). %d steps "
      "of %d random 256-token windows (%d tokens seen, %.2f epochs), AdamW (betas 0.9/0.95, "
      "weight decay %.1f on matrices), peak learning rate %g after %d warm-up steps, cosine "
      "to 10%%, gradient clip 1.0, fp32, no dropout, seed %d, %d torch thread. Training took "
      "%.0f s; the whole `train_decoder.sh` run about %.0f min on this 2-core host."
      % (t["train_stream_tokens"], t["steps"], t["batch"], t["tokens_seen"],
         t["tokens_seen"] / t["train_stream_tokens"], t["weight_decay"], t["lr"], t["warmup"],
         t["seed"], t["threads"], t["wall_s"], train_seconds_total / 60.0))
    w("")
    w("## Perplexity")
    w("")
    w("Protocol: %s" % pp["protocol"])
    w("")
    w("| split | graph | evaluator | perplexity |")
    w("|---|---|---|---|")
    for row in pp["results"]:
        w("| %s (%d predicted tokens) | %s | %s | %.2f |"
          % (row["split"], row["tokens"], row["graph"], row["evaluator"], row["ppl"]))
    w("")
    w(c_perplexity_line(out))
    w("")
    w("## Greedy samples (torch fp32, 32 new tokens)")
    w("")
    for p in ref["prompts"]:
        w("- *%s* **->** %s" % (p["prompt_text"].replace("\n", " ").strip(),
                                p["fp32"]["continuation_text"].replace("\n", " ").strip()))
    w("")
    w("## Files")
    w("")
    for rel in ("onnx/model.onnx", "onnx/model_quantized.onnx"):
        w("- `%s`: sha256 `%s`" % (rel, data.sha256_file(os.path.join(out, rel))))
    w("")
    w("`reference_outputs.json`: for 6 held-out prompts, the prompt's ids (starting with 0), "
      "the greedy continuation (32 tokens, full recomputation per step, batch 1, no stop at "
      "id 0) and the first 8 logits at the prompt's last position, fp32 (torch) and int8 "
      "(%s); the perplexity figures; the cache/batching check results."
      % ref["prompts"][0]["int8"]["evaluator"])
    w("")
    w("## Limitations")
    w("")
    w("Tiny and trained for minutes on 1.3 MB of text: fluent-looking fragments, no facts, "
      "loops under greedy decoding. Lower-case English movie-review style only. int8 logits "
      "depend slightly on batch composition and sequence length (DynamicQuantizeLinear picks "
      "one scale per tensor), so int8 cached decoding matches full recomputation only "
      "approximately.")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--reviews", required=True)
    ap.add_argument("--node-dir", required=True, help="holds node_modules/tokenizers")
    ap.add_argument("--ort-binding", help="dir with onnxruntime_binding.node (optional)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--total-seconds", type=float, default=0.0,
                    help="wall time of the whole run so far (for the card)")
    ap.add_argument("--tok-stats", help="JSON line printed by decoder_tokenizer.mjs train")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t_start = time.time()
    model, ck = load(a.ckpt)
    cfg = model.cfg
    out = a.model_dir
    fp32_path = os.path.join(out, "onnx", "model.onnx")
    int8_path = os.path.join(out, "onnx", "model_quantized.onnx")
    tok_path = os.path.join(out, "tokenizer.json")
    with open(a.ids) as f:
        ids = json.load(f)
    with open(a.reviews) as f:
        reviews = json.load(f)

    # Check prompts: [0] + the first n tokens of three held-out reviews.
    check_prompts = [[EOT] + ids["heldout"][i][:n] for i, n in ((3, 9), (40, 24), (90, 61))]
    trunner = TorchRunner(model)
    runners = [trunner, NumpyRunner(fp32_path, "fp32"), NumpyRunner(int8_path, "int8")]
    proc = None
    if a.ort_binding:
        proc = start_ort(a.ort_binding)
        ort32, ort8 = OrtRunner(proc, fp32_path, "fp32"), OrtRunner(proc, int8_path, "int8")
        runners += [ort32, ort8]
    checks = run_checks(runners, cfg, check_prompts, trunner)

    # Perplexity.
    held = windows(ids["heldout"])
    train_w = windows(ids["train"][:150])
    results = []
    t0 = time.time()
    p, n, nll = ppl_torch(model, held)
    results.append({"split": "held-out", "graph": "fp32", "evaluator": "torch", "ppl": p,
                    "tokens": n, "nll_sum": nll})
    p, n, nll = ppl_torch(model, train_w)
    results.append({"split": "train (first 150 reviews)", "graph": "fp32", "evaluator": "torch",
                    "ppl": p, "tokens": n, "nll_sum": nll})
    print("perplexity torch: %.1f s" % (time.time() - t0), flush=True)
    if proc:
        for r, g in ((ort32, "fp32"), (ort8, "int8")):
            t0 = time.time()
            p, n, nll = ppl_ort(r, cfg, held)
            results.append({"split": "held-out", "graph": g, "evaluator": "onnxruntime 1.30",
                            "ppl": p, "tokens": n, "nll_sum": nll})
            print("perplexity %s: %.1f s" % (r.name, time.time() - t0), flush=True)
    else:
        r8 = runners[2]
        p, n, nll = ppl_numpy(r8, cfg, held)
        results.append({"split": "held-out", "graph": "int8", "evaluator": "onnx_eval (numpy)",
                        "ppl": p, "tokens": n, "nll_sum": nll})
    for r in results:
        print("ppl %-28s %-5s %-18s %.3f (%d tokens)" % (r["split"], r["graph"], r["evaluator"],
                                                       r["ppl"], r["tokens"]), flush=True)

    # Reference outputs: 6 held-out prompts of different lengths, cut at words.
    picks = [(0, 1), (25, 5), (50, 12), (75, 30), (100, 60), (125, 120)]
    texts = [" ".join(reviews["heldout"][i].split(" ")[:w]) for i, w in picks]
    enc = node_tok(a.node_dir, tok_path, "encode", texts)
    r8 = ort8 if proc else runners[2]
    prompts = []
    for (i, w), text, e in zip(picks, texts, enc):
        pr = [EOT] + e
        cont = greedy_torch(model, pr, 32)
        with torch.no_grad():
            first8 = model(torch.tensor([pr]))[0][0, -1, :8].tolist()
        c8, l8 = greedy_runner(r8, cfg, pr, 32)
        prompts.append({"heldout_row": i, "words": w, "prompt_text": text, "input_ids": pr,
                        "fp32": {"continuation_ids": cont, "last_logits_first8": first8},
                        "int8": {"continuation_ids": c8,
                                 "last_logits_first8": [float(v) for v in l8[:8]],
                                 "evaluator": r8.name}})
    if proc:
        for p in prompts:
            c32, _ = greedy_runner(ort32, cfg, p["input_ids"], 32)
            p["fp32"]["onnxruntime_same_continuation"] = c32 == p["fp32"]["continuation_ids"]
    dec = node_tok(a.node_dir, tok_path, "decode",
                   [p["fp32"]["continuation_ids"] for p in prompts] +
                   [p["int8"]["continuation_ids"] for p in prompts])
    for j, p in enumerate(prompts):
        p["fp32"]["continuation_text"] = dec[j]
        p["int8"]["continuation_text"] = dec[len(prompts) + j]
    if proc:
        proc.stdin.close()
        proc.wait()

    tok_stats = json.loads(a.tok_stats) if a.tok_stats else {}
    ref = {
        "model": "anytime decoder",
        "notes": "input_ids start with 0 (<|endoftext|>, the BOS the model was trained with); "
                 "then the tokenizer's ids of prompt_text (no special tokens added). "
                 "Continuations: 32 greedy steps (argmax, first index on ties), each step a "
                 "full recomputation of the whole sequence (no cache), batch 1; generation "
                 "does not stop at id 0. fp32: torch; int8: onnx/model_quantized.onnx in "
                 "the evaluator named. last_logits_first8: logits[0, -1, 0:8] for the "
                 "prompt alone.",
        "prompts": prompts,
        "perplexity": {"protocol": __doc__.split("Perplexity protocol (per token, what the C "
                                                 "side reproduces): ")[1]
                       .split("\n\nRun:")[0].replace("\n", " "),
                       "window": WINDOW, "heldout_reviews": len(ids["heldout"]),
                       "heldout_windows": len(held), "results": results},
        "checks": {"description": "max |logit diff|. a_vs_b: no-past full sequence vs prefill "
                                  "half + token-by-token with present fed back; "
                                  "c_batched_*: batch of 2 with different past lengths "
                                  "(shorter right-padded with zeros / random 1e3-scale values, "
                                  "mask 0) decoding 4 tokens vs alone; c_padded_prefill: "
                                  "right-padded batch prefill vs alone; d: all-zero mask row "
                                  "finite; x: vs torch fp32 (same feeds).",
                   "prompt_lengths": [len(p) for p in check_prompts],
                   "results": checks},
        "tokenizer": tok_stats,
    }
    with open(os.path.join(out, "reference_outputs.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    sizes = {k: file_size(os.path.join(out, k)) for k in
             ("onnx/model.onnx", "onnx/model_quantized.onnx", "tokenizer.json")}
    ref["tokenizer"].setdefault("heldout_chars_per_token", float("nan"))
    write_card(out, cfg, ck, ref, sizes, a.total_seconds + (time.time() - t_start))
    bad = check_failures(checks)
    print("decoder_check: %.0f s" % (time.time() - t_start))
    if bad:
        print("decoder_check: FAILED\n  " + "\n  ".join(bad))
        return 1
    print("decoder_check: all fp32 checks within 1e-4")
    return 0


if __name__ == "__main__":
    sys.exit(main())
