"""Check the exported chat model, measure its held-out verdict accuracy, write
reference_outputs.json and the model card (models/chat).

Runners: decoder_check.py's (torch = the exported graph's semantics in torch,
onnx-numpy = decoder_onnx_eval.py, onnx-ort = ONNX Runtime 1.30 through
decoder_ort.mjs, only with --ort-binding), on model.onnx (fp32) and
model_quantized.onnx (int8).

  checks     decoder_check.run_checks (cache vs full sequence, batched pasts
             with padding, padded prefill, all-masked row, ONNX vs torch) on
             three rendered ChatML prompts; fp32 must agree within 1e-4 and
             with torch within 1e-3, or the script fails; int8 reported.
  template   the chat_template in tokenizer_config.json rendered by
             @huggingface/jinja (chat_template.mjs, when --jinja-dir is given)
             must equal chat_data.render on every held-out prompt and a few
             training conversations, or the script fails.
  accuracy   for each of the 150 held-out reviews (never trained on): the
             rendered prompt system + user "Review: ENDING\\nPositive or
             negative?" + generation prompt, greedy decoding (argmax, full
             recomputation per step, batch 1) until <|im_end|> or 8 tokens; the
             reply must be exactly "Positive." / "Negative." and match the
             corpus label.  torch fp32, ONNX fp32 and int8 (ORT, else numpy).
             Reported, not gated.
  reference  3 rendered prompts: input_ids, 32 greedy tokens with no stop at
             <|im_end|> (as tests/unit/test_decoder_reference.c replays them
             through anytime's generator), the first 8 logits of the last
             prompt position; fp32 = torch, int8 = the int8 graph in ORT (else
             numpy); the text up to <|im_end|>.

Run:  /usr/bin/python3 tools/train/chat_check.py --model-dir models/chat
          --ckpt CHAT.pt --chat CHAT.json --node-dir DIR [--jinja-dir DIR]
          [--ort-binding DIR] [--threads 1] [--total-seconds S]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chat_data  # noqa: E402
import data  # noqa: E402
from decoder_check import (NumpyRunner, OrtRunner, TorchRunner, check_failures,  # noqa: E402
                           full_logits, node_tok, run_checks, start_ort)
from decoder_export import load  # noqa: E402

IM_END = 4097
VERDICT_NEW = 8
REF_NEW = 32
# tests/unit/test_decoder_reference.c holds int8 logits to 1e-3 unless the
# reference file says otherwise.
INT8_TOLERANCE = 0.02
INT8_TOLERANCE_REASON = (
    "int8 logits are recorded with ONNX Runtime 1.30 (onnxruntime-node, and the numpy "
    "evaluator agrees with it) while anytime links ONNX Runtime 1.29 (cmake/ort-version.txt). "
    "Measured 2026-12-02 on this model: the first prompt's (123 tokens) last-position int8 "
    "logits differ by 7.7e-3 between the two, the other prompts' by < 1e-6, fp32 by < 4e-6; "
    "anytime's int8 greedy continuations equal the recorded ones (96 of 96 tokens). "
    "The decoder's file keeps the test's 1e-3.")


def greedy(runner, cfg, prompt, new, stop=None):
    """Greedy ids (full recomputation per step, batch 1); also the first
    step's last-position logits."""
    seq, first = list(prompt), None
    for _ in range(new):
        lg = full_logits(runner, cfg, seq)[-1]
        if first is None:
            first = lg
        t = int(np.argmax(lg))
        seq.append(t)
        if stop is not None and t == stop:
            break
    return seq[len(prompt):], first


def until_end(ids):
    return ids[:ids.index(IM_END)] if IM_END in ids else ids


def jinja_render(jinja_dir, cfg_path, items):
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "in.json"), os.path.join(d, "out.json")
        with open(a, "w") as f:
            json.dump(items, f)
        subprocess.run(["node", os.path.join(HERE, "chat_template.mjs"), jinja_dir, cfg_path,
                        a, b], check=True)
        with open(b) as f:
            return json.load(f)


def accuracy(runner, cfg, prompts, labels, node_dir, tok_path):
    replies = []
    t0 = time.time()
    for p in prompts:
        ids, _ = greedy(runner, cfg, p, VERDICT_NEW, stop=IM_END)
        replies.append(until_end(ids))
    texts = node_tok(node_dir, tok_path, "decode", replies)
    want = {0: "Negative.", 1: "Positive."}
    right = sum(1 for t, l in zip(texts, labels) if t == want[l])
    odd = sum(1 for t in texts if t not in ("Positive.", "Negative."))
    said_pos = sum(1 for t in texts if t == "Positive.")
    res = {"evaluator": runner.name, "correct": right, "total": len(labels),
           "accuracy": right / len(labels), "replies_not_a_verdict": odd,
           "replied_positive": said_pos, "seconds": round(time.time() - t0, 1)}
    print("accuracy %-18s %d/%d = %.1f %% (%d not a verdict, %d said positive) %.0fs"
          % (runner.name, right, len(labels), 100 * res["accuracy"], odd, said_pos,
             res["seconds"]), flush=True)
    return res, texts


def reference_convs(chat):
    held = chat["heldout"]
    return [
        {"name": "verdict on a held-out review (system prompt)",
         "messages": held[7]["messages"]},
        {"name": "write request, no system prompt",
         "messages": [{"role": "user", "content": "Write a short positive review."}]},
        {"name": "multi-turn",
         "messages": [{"role": "system", "content": chat["system"]},
                      {"role": "user", "content": chat_data.verdict_q(
                          "a dull , lifeless film with a plot that goes nowhere .")},
                      {"role": "assistant", "content": "Negative."},
                      {"role": "user", "content": "Write a short negative review."}]},
    ]


def sample_convs(chat):
    held = chat["heldout"]
    out = []
    for i in (0, 80):
        out.append({"messages": held[i]["messages"], "label": held[i]["label"]})
    out.append({"messages": [{"role": "user", "content": "Write a short positive review."}]})
    out.append({"messages": [{"role": "system", "content": chat["system"]},
                             {"role": "user", "content": "Write a short negative review."}]})
    out.append({"messages": [{"role": "user", "content": chat_data.verdict_q(
        "a wonderful , moving film with terrific performances .")}]})
    out.append({"messages": [{"role": "user", "content": chat_data.verdict_q(
        "the worst movie of the year : boring , stupid and far too long .")}]})
    return out


def write_card(out, cfg, ck, ref, sizes, total_s):
    t = ck["train"]
    acc = ref["heldout_verdict_accuracy"]
    lines = []
    w = lines.append
    w("# anytime chat (ChatML, 4.3M parameters)")
    w("")
    w("The project's default decoder (`models/decoder`) fine-tuned on a small ChatML set made "
      "from its own training reviews, so that anytime's chat route (`/v1/chat/completions`) "
      "has a real chat template and real weights to run end to end. It answers \"Positive.\" "
      "or \"Negative.\" about a review excerpt, and writes a lower-case review excerpt when "
      "asked; it knows nothing else and is a test model, not an assistant.")
    w("")
    w("- Regenerate: `tools/train/train_chat.sh` (see tools/train/README.md). Deterministic "
      "with one torch thread.")
    w("- Format: Hugging Face layout, ONNX opset 17, the decoder's with-past signature "
      "(models/decoder/README.md) with %d logits; `onnx/model.onnx` fp32, "
      "`onnx/model_quantized.onnx` int8." % cfg.vocab_size)
    w("")
    w("## Chat format")
    w("")
    w("ChatML. `tokenizer_config.json` carries the template (the usual one, no default "
      "system prompt, no BOS):")
    w("")
    w("```jinja")
    w(ref["chat_template"])
    w("```")
    w("")
    w("which renders every message as `<|im_start|>{role}\\n{content}<|im_end|>\\n` and, "
      "with `add_generation_prompt`, ends with `<|im_start|>assistant\\n`. `<|im_start|>` "
      "(id 4096) and `<|im_end|>` (id 4097) are added special tokens of tokenizer.json "
      "(never split by the BPE); `<|endoftext|>` stays id 0. `eos_token` is `<|im_end|>`; "
      "generation_config.json's `eos_token_id` is `[0, 4097]`, so a reply stops at "
      "`<|im_end|>`. %s" % ref["template_check"]["summary"])
    w("")
    w("## Data")
    w("")
    w("Only the 1350 **training** reviews of the decoder's split "
      "(`tools/train/decoder_split.json`, Pang & Lee's 1500 full reviews); the 150 held-out "
      "reviews are used for nothing but the accuracy below. `tools/train/chat_data.py` "
      "(seed %d) makes 3 conversations per training review (%d in all, %s): a verdict on the "
      "review's ending (its last lines, at most %d characters), a verdict on a random "
      "window of it, and, in turn, verdict then \"Write a short positive/negative review.\" "
      "(answered with an excerpt of another training review of that label, at most %d "
      "characters), the write request alone, or two verdicts (\"And this one? Review: "
      "...\"). Half of them (seeded) start with the system turn \"%s\". Turns: user "
      "\"Review: EXCERPT\\nPositive or negative?\" / assistant \"Positive.\" or "
      "\"Negative.\" (the corpus label); user \"Write a short positive review.\" / "
      "assistant an excerpt of a real training review. Reviews are about 3900 characters and "
      "the context is 256 tokens, hence excerpts."
      % (ref["data"]["seed"], t["conversations"], ref["data"]["kinds"],
         chat_data.MAX_REVIEW_CHARS, chat_data.MAX_WRITE_CHARS, chat_data.SYSTEM))
    w("")
    w("## Training")
    w("")
    w("From the decoder's weights (%s), the tied embedding / LM head grown from 4096 to "
      "4098 rows (the two new rows start as the `<|endoftext|>` row plus N(0, 0.02) noise). "
      "The set, rendered with the template and encoded with the real tokenizers library, "
      "is %d tokens of which %d are targets: the loss is cross-entropy on assistant "
      "content and its `<|im_end|>` only (system, user and the `<|im_start|>assistant\\n` "
      "header are context); a verdict turn (5 tokens, the first decides) adds the sum of "
      "its tokens' losses, a written excerpt the mean of its tokens', and a batch's loss "
      "is that total over its assistant turns divided by their number. (A first run that "
      "averaged every turn, so that the deciding token weighed a fifth of a written "
      "excerpt, answered \"Positive.\" to 138 of the 150 held-out prompts, 50 %%; this "
      "weighting replaced it - the only choice the held-out figure influenced.) %d steps of %d "
      "conversations (%.2f epochs, %d tokens), right-padded per batch, AdamW (betas "
      "0.9/0.95, weight decay %.1f on matrices), peak learning rate %g after %d warm-up "
      "steps, cosine to 10%%, gradient clip 1.0, fp32, no dropout, seed %d, %d torch "
      "thread. Training took %.0f s; the whole `train_chat.sh` run about %.0f min on this "
      "shared 2-core host."
      % (t["init"]["source"], t["set_tokens"], t["set_target_tokens"], t["steps"],
         t["batch"], t["epochs"], t["tokens_seen"], t["weight_decay"], t["lr"], t["warmup"],
         t["seed"], t["threads"], t["wall_s"], total_s / 60.0))
    w("")
    w("Loss (the batch loss above; smoothed = exponential average, 0.9). Verdict fit on "
      "the training set at the end (the deciding token is the argmax, teacher-forced, first "
      "%d single-verdict training conversations): %.1f %%."
      % (t["train_verdict_fit_n"], 100 * t["train_verdict_fit"]))
    w("")
    w("| step | loss | smoothed | elapsed |")
    w("|---|---|---|---|")
    for row in t["log"]:
        w("| %d | %.3f | %.3f | %.0f s |" % (row["step"], row["loss"], row["smoothed"],
                                            row["elapsed_s"]))
    w("")
    w("## Held-out verdict accuracy")
    w("")
    w("For each of the 150 held-out reviews (75 per label): system \"%s\", user "
      "\"Review: ENDING\\nPositive or negative?\" (ENDING = the review's last lines, at "
      "most %d characters), generation prompt; greedy decoding (full recomputation per "
      "step, batch 1) until `<|im_end|>` or %d tokens. Correct = the reply is exactly the "
      "corpus label's \"Positive.\" / \"Negative.\". An honest figure for a 4.3M-parameter "
      "model fine-tuned for minutes, not a gate; 50 %% is chance."
      % (chat_data.SYSTEM, chat_data.MAX_REVIEW_CHARS, VERDICT_NEW))
    w("")
    w("| graph | evaluator | correct | accuracy | replies not a verdict | said positive |")
    w("|---|---|---|---|---|---|")
    for r in acc:
        w("| %s | %s | %d / %d | %.1f %% | %d | %d |"
          % (r["graph"], r["evaluator"], r["correct"], r["total"], 100 * r["accuracy"],
             r["replies_not_a_verdict"], r["replied_positive"]))
    w("")
    w("## Architecture")
    w("")
    w("| | |")
    w("|---|---|")
    w("| layers / hidden / heads / head dim / FFN | %d / %d / %d / %d / %d |"
      % (cfg.n_layer, cfg.n_embd, cfg.n_head, cfg.head_dim, cfg.n_inner))
    w("| context (n_positions) | %d, learned position embeddings |" % cfg.n_positions)
    w("| vocabulary | %d (4096 byte-level BPE + `<|im_start|>`, `<|im_end|>`) |"
      % cfg.vocab_size)
    w("| LM head | tied to the token embedding |")
    w("| parameters | %d |" % t["parameters"])
    w("| onnx/model.onnx | %.1f MB |" % (sizes["onnx/model.onnx"] / 1e6))
    w("| onnx/model_quantized.onnx | %.1f MB |" % (sizes["onnx/model_quantized.onnx"] / 1e6))
    w("| tokenizer.json | %.2f MB |" % (sizes["tokenizer.json"] / 1e6))
    w("")
    w("Export and int8 are the decoder's (`decoder_model.export_onnx`, "
      "`decoder_quantize.py`: all 17 weight MatMuls to MatMulInteger, the embedding read "
      "from the head's int8 table). Checks (`chat_check.py`, on three rendered prompts): "
      "cached vs full-sequence logits, batched pasts with padding, padded prefill, an "
      "all-masked row, ONNX vs torch - fp32 max |diff| %s."
      % ref["checks"]["fp32_summary"])
    w("")
    w("## Samples (torch fp32, greedy, stop at `<|im_end|>`)")
    w("")
    for s in ref["samples"]:
        conv = " / ".join("%s: %s" % (m["role"], m["content"].replace("\n", " "))
                          for m in s["messages"])
        lab = (" (label: %s)" % chat_data.WORD[s["label"]]) if "label" in s else ""
        w("- %s%s **->** %s" % (conv, lab, s["reply"].replace("\n", " ")))
    w("")
    w("## Files")
    w("")
    for rel in ("onnx/model.onnx", "onnx/model_quantized.onnx"):
        w("- `%s`: sha256 `%s`" % (rel, data.sha256_file(os.path.join(out, rel))))
    w("")
    w("`reference_outputs.json`: for %d rendered ChatML prompts, the prompt's ids (no BOS), "
      "the greedy continuation (%d tokens, full recomputation per step, batch 1, no stop at "
      "`<|im_end|>`) and the first 8 logits at the prompt's last position, fp32 (torch) and "
      "int8 (%s), plus the text up to `<|im_end|>`; the verdict accuracies; the check "
      "results. `tests/unit/test_decoder_reference.c` replays them through anytime's "
      "generator (ctest `test_chat_reference`)."
      % (len(ref["prompts"]), REF_NEW, ref["prompts"][0]["int8"]["evaluator"]))
    w("")
    w("## Limitations")
    w("")
    w("Tiny, fine-tuned for minutes on excerpts of 1350 reviews: the verdict is often wrong "
      "(table above), written reviews are loose lower-case fragments, and anything outside "
      "the two turn kinds it was trained on gets a review-like reply. English, movie "
      "reviews only. No default system prompt; it was trained with and without one.")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--chat", required=True)
    ap.add_argument("--node-dir", required=True, help="holds node_modules/tokenizers")
    ap.add_argument("--jinja-dir", help="holds node_modules/@huggingface/jinja (optional)")
    ap.add_argument("--ort-binding", help="dir with onnxruntime_binding.node (optional)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--total-seconds", type=float, default=0.0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t_start = time.time()
    model, ck = load(a.ckpt)
    cfg = model.cfg
    out = a.model_dir
    fp32_path = os.path.join(out, "onnx", "model.onnx")
    int8_path = os.path.join(out, "onnx", "model_quantized.onnx")
    tok_path = os.path.join(out, "tokenizer.json")
    cfg_path = os.path.join(out, "tokenizer_config.json")
    with open(a.chat) as f:
        chat = json.load(f)
    with open(cfg_path) as f:
        template = json.load(f)["chat_template"]
    bad = []

    # Template: the Jinja rendering equals the training data's.
    items = [{"messages": h["messages"], "add_generation_prompt": True} for h in chat["heldout"]]
    items += [{"messages": c["messages"], "add_generation_prompt": False}
              for c in chat["train"][:50]]
    items += [{"messages": c["messages"], "add_generation_prompt": True}
              for c in chat["train"][50:60]]
    ours = [chat_data.render(i["messages"], i["add_generation_prompt"]) for i in items]
    if a.jinja_dir:
        theirs = jinja_render(a.jinja_dir, cfg_path, items)
        same = sum(1 for x, y in zip(ours, theirs) if x == y)
        tcheck = {"renderer": "@huggingface/jinja", "conversations": len(items), "identical": same}
        if same != len(items):
            bad.append("chat_template renders %d of %d conversations differently"
                       % (len(items) - same, len(items)))
        tcheck["summary"] = ("The template, rendered by @huggingface/jinja, gives exactly the "
                             "text the training data used on %d of %d conversations checked."
                             % (same, len(items)))
    else:
        tcheck = {"renderer": None, "summary": "(template rendering not checked in this run)"}
    print("template: %s" % tcheck["summary"], flush=True)

    # Runners and graph checks on three rendered prompts.
    sconvs = sample_convs(chat)
    rconvs = reference_convs(chat)
    ptexts = ([chat_data.render(c["messages"], True) for c in rconvs] +
              [chat_data.render(h["messages"], True) for h in chat["heldout"]] +
              [chat_data.render(s["messages"], True) for s in sconvs])
    enc = node_tok(a.node_dir, tok_path, "encode", ptexts)
    ref_ids = enc[:len(rconvs)]
    held_ids = enc[len(rconvs):len(rconvs) + len(chat["heldout"])]
    sample_ids = enc[len(rconvs) + len(chat["heldout"]):]
    check_prompts = sorted([ref_ids[1], ref_ids[2], held_ids[3]], key=len)
    trunner = TorchRunner(model)
    runners = [trunner, NumpyRunner(fp32_path, "fp32"), NumpyRunner(int8_path, "int8")]
    proc = None
    if a.ort_binding:
        proc = start_ort(a.ort_binding)
        ort32, ort8 = OrtRunner(proc, fp32_path, "fp32"), OrtRunner(proc, int8_path, "int8")
        runners += [ort32, ort8]
    checks = run_checks(runners, cfg, check_prompts, trunner)
    worst32 = max(max(v for k, v in c.items() if k.endswith("max_abs"))
                  for n, c in checks.items() if "int8" not in n)
    worst8 = max(c.get("x_vs_torch_fp32_max_abs", 0.0) for n, c in checks.items() if "int8" in n)

    # Held-out verdict accuracy.
    labels = [h["label"] for h in chat["heldout"]]
    r32 = ort32 if proc else runners[1]
    r8 = ort8 if proc else runners[2]
    acc = []
    for graph, r in (("fp32", trunner), ("fp32", r32), ("int8", r8)):
        res, texts = accuracy(r, cfg, held_ids, labels, a.node_dir, tok_path)
        res["graph"] = graph
        acc.append(res)

    # Reference outputs.
    prompts = []
    for c, text, ids in zip(rconvs, ptexts, ref_ids):
        c32, l32 = greedy(trunner, cfg, ids, REF_NEW)
        c8, l8 = greedy(r8, cfg, ids, REF_NEW)
        prompts.append({"name": c["name"], "messages": c["messages"], "prompt_text": text,
                        "input_ids": ids,
                        "fp32": {"continuation_ids": c32,
                                 "last_logits_first8": [float(v) for v in l32[:8]]},
                        "int8": {"continuation_ids": c8,
                                 "last_logits_first8": [float(v) for v in l8[:8]],
                                 "evaluator": r8.name}})
    if proc:
        for p in prompts:
            c, _ = greedy(ort32, cfg, p["input_ids"], REF_NEW)
            p["fp32"]["onnxruntime_same_continuation"] = c == p["fp32"]["continuation_ids"]
    dec = node_tok(a.node_dir, tok_path, "decode",
                   [p["fp32"]["continuation_ids"] for p in prompts] +
                   [p["int8"]["continuation_ids"] for p in prompts] +
                   [until_end(p["fp32"]["continuation_ids"]) for p in prompts] +
                   [until_end(p["int8"]["continuation_ids"]) for p in prompts])
    n = len(prompts)
    for j, p in enumerate(prompts):
        p["fp32"]["continuation_text"] = dec[j]
        p["int8"]["continuation_text"] = dec[n + j]
        p["fp32"]["reply_until_im_end"] = dec[2 * n + j]
        p["int8"]["reply_until_im_end"] = dec[3 * n + j]
        p["fp32"]["stops_at_im_end"] = IM_END in p["fp32"]["continuation_ids"]
        print("reference %d: %r -> %r" % (j, p["name"], dec[2 * n + j]), flush=True)

    # Samples for the card (torch fp32, stop at <|im_end|>).
    reps = [until_end(greedy(trunner, cfg, ids, 64, stop=IM_END)[0]) for ids in sample_ids]
    rtexts = node_tok(a.node_dir, tok_path, "decode", reps)
    samples = []
    for s, t in zip(sconvs, rtexts):
        samples.append(dict(s, reply=t))
    if proc:
        proc.stdin.close()
        proc.wait()

    kinds = {}
    for c in chat["train"]:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    ref = {
        "model": "anytime chat",
        "notes": "input_ids: the prompt_text (ChatML rendered with add_generation_prompt) "
                 "encoded by tokenizer.json, no BOS. Continuations: %d greedy steps (argmax, "
                 "first index on ties), each a full recomputation of the whole sequence (no "
                 "cache), batch 1, not stopped at <|im_end|> (4097); reply_until_im_end is "
                 "the text before it. fp32: torch; int8: onnx/model_quantized.onnx in the "
                 "evaluator named. last_logits_first8: logits[0, -1, 0:8] for the prompt "
                 "alone." % REF_NEW,
        "logit_tolerance": {"int8": INT8_TOLERANCE},
        "logit_tolerance_reason": INT8_TOLERANCE_REASON,
        "chat_template": template,
        "prompts": prompts,
        "heldout_verdict_accuracy": acc,
        "samples": samples,
        "template_check": tcheck,
        "data": {"seed": chat["seed"], "kinds": json.dumps(kinds, sort_keys=True)},
        "checks": {"description": "as models/decoder's reference_outputs.json; prompts are "
                                  "rendered ChatML",
                   "prompt_lengths": [len(p) for p in check_prompts],
                   "fp32_summary": "%.2g, int8 vs torch fp32 %.2g" % (worst32, worst8),
                   "results": checks},
    }
    with open(os.path.join(out, "reference_outputs.json"), "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
        f.write("\n")
    sizes = {k: os.path.getsize(os.path.join(out, k)) for k in
             ("onnx/model.onnx", "onnx/model_quantized.onnx", "tokenizer.json")}
    write_card(out, cfg, ck, ref, sizes, a.total_seconds + (time.time() - t_start))
    bad += check_failures(checks)
    print("chat_check: %.0f s" % (time.time() - t_start))
    if bad:
        print("chat_check: FAILED\n  " + "\n  ".join(bad))
        return 1
    print("chat_check: all fp32 checks within 1e-4, template identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
