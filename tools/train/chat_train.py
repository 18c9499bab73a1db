"""Fine-tune the trained decoder (decoder_model.py) into the chat model.

Start: the decoder's checkpoint (decoder_train.py's CKPT.pt) or, when there
is none, its committed fp32 ONNX graph (models/decoder/onnx/model.onnx):
decoder_from_onnx() reads every weight back out of it (the tied table from
lm_head [n_embd, vocab] transposed, each block projection from the MatMul
initializer its node reads, transposed back to nn.Linear's [out, in]); the
torch model rebuilt from it must give the graph's logits (checked here on
one sequence with the numpy evaluator, within 1e-4).

Vocabulary: 4096 -> 4098 rows for <|im_start|> (4096) and <|im_end|> (4097);
both new rows start as the <|endoftext|> row (id 0, the document boundary the
decoder knows) plus N(0, 0.02) noise from the seeded generator.  The table
stays tied to the LM head.

Data: CHAT.json (chat_data.py) rendered as ChatML and encoded with the chat
tokenizer.json by the real tokenizers library (decoder_tokenizer.mjs encode).
Loss on assistant content only: every token of an assistant message's content
and its <|im_end|> is a target (the "<|im_start|>assistant\\n" header and
every user / system token are context only).  A verdict turn ("Positive." /
"Negative.", 5 tokens of which only the first decides) adds the SUM of its
tokens' cross-entropies; a written excerpt adds the MEAN of its tokens'; the
batch loss is the total over the batch's assistant turns divided by their
number.  (A first run that averaged every turn - so the deciding token
weighed 1/5 while a written excerpt weighed 1 - answered "Positive." to 138
of the 150 held-out prompts: 50 %.)  Conversations longer than 256 tokens are
dropped (counted).

Steps: batches of B conversations in a seeded random order (torch.Generator,
reshuffled every epoch), right-padded to the batch's longest (causal
attention: padding never reaches a real position); the LM head is applied
only at target positions.  AdamW (0.9/0.95, weight decay on 2-D weights),
linear warm-up, cosine to 10%, clip 1.0, fp32.  Deterministic for a fixed
thread count.  The checkpoint has decoder_train.py's layout, so
decoder_export.load() reads it.

Run:  /usr/bin/python3 tools/train/chat_train.py --init CKPT.pt|model.onnx
          --chat CHAT.json --tokenizer tokenizer.json --node-dir DIR --out CHAT.pt
          [--steps N] [--batch B] [--lr LR] [--threads 1] [--ids-out IDS.json]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chat_data  # noqa: E402
import decoder_model as dm  # noqa: E402
from decoder_train import lr_at  # noqa: E402

IM_START, IM_END, NEWLINE = 4096, 4097, 11     # 11 = byte "\n" (id = 1 + byte)
VOCAB = 4098


def decoder_from_onnx(path):
    """The torch Decoder whose weights are those of decoder_model.export_onnx's
    graph at `path` (fp32)."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    table = inits["lm_head"]                                   # [n_embd, vocab]
    n_layer = sum(1 for k in inits if k.endswith("ln_1.weight"))
    cfg = dm.Config(vocab_size=table.shape[1], n_embd=table.shape[0], n_layer=n_layer,
                    n_positions=inits["m.wpe.weight"].shape[0])
    sd = {"wte.weight": table.T}
    for k, v in inits.items():
        if k.startswith("m."):
            sd[k[2:]] = v
    for n in m.graph.node:
        if n.op_type == "MatMul" and n.input[1] in inits and n.input[1] != "lm_head":
            mod = n.name.strip("/").rsplit("/", 1)[0].replace("/", ".")   # h.0.attn.c_attn
            sd[mod + ".weight"] = inits[n.input[1]].T
    model = dm.Decoder(cfg)
    want = set(model.state_dict())
    if set(sd) != want:
        raise SystemExit("decoder_from_onnx: missing %s, extra %s"
                         % (sorted(want - set(sd)), sorted(set(sd) - want)))
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in sd.items()})
    model.eval()
    import decoder_onnx_eval
    ids = np.array([[0, 5, 300, 1200, 4000, 17, 99, 2500]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
             "position_ids": np.arange(ids.shape[1], dtype=np.int64)[None]}
    for i in range(cfg.n_layer):
        for kind in ("key", "value"):
            feeds["past_key_values.%d.%s" % (i, kind)] = np.zeros(
                (1, cfg.n_head, 0, cfg.head_dim), dtype=np.float32)
    g = decoder_onnx_eval.Graph(path)
    want_logits = dict(zip(g.outputs, g.run(feeds)))["logits"]
    with torch.no_grad():
        got = model(torch.from_numpy(ids))[0].numpy()
    diff = float(np.abs(got - want_logits).max())
    if diff > 1e-4:
        raise SystemExit("decoder_from_onnx: rebuilt model differs from %s by %g" % (path, diff))
    print("chat: decoder rebuilt from %s (max |logit diff| %.2g)" % (path, diff), flush=True)
    return model, {"source": os.path.basename(path), "max_abs_logit_diff": diff}


def load_init(path):
    if path.endswith(".onnx"):
        return decoder_from_onnx(path)
    from decoder_export import load
    model, ck = load(path)
    return model, {"source": os.path.basename(path), "decoder_train": ck["train"]}


def grow(model, vocab, gen):
    cfg = dm.Config(**dict(model.cfg.to_dict(), vocab_size=vocab))
    new = dm.Decoder(cfg)
    sd = model.state_dict()
    old = sd["wte.weight"]
    table = torch.empty(vocab, old.shape[1])
    table[:old.shape[0]] = old
    for r in range(old.shape[0], vocab):
        table[r] = old[0] + 0.02 * torch.randn(old.shape[1], generator=gen)
    sd["wte.weight"] = table
    new.load_state_dict(sd)
    return new


def targets(ids, roles):
    """Per-token (turn index or -1): -1 for context, else the index of the
    assistant turn whose content / <|im_end|> the token is."""
    tgt = [-1] * len(ids)
    starts = [i for i, t in enumerate(ids) if t == IM_START]
    if len(starts) != len(roles):
        raise SystemExit("chat: %d <|im_start|> for %d messages" % (len(starts), len(roles)))
    turn = 0
    for s, role in zip(starts, roles):
        if role != "assistant":
            continue
        h = ids.index(NEWLINE, s + 1)            # end of "<|im_start|>assistant\n"
        e = ids.index(IM_END, h + 1)
        for i in range(h + 1, e + 1):
            tgt[i] = turn
        turn += 1
    return tgt


def is_verdict(msg):
    return msg["role"] == "assistant" and msg["content"] in chat_data.VERDICT.values()


def encode_set(convs, tokenizer, node_dir):
    from decoder_check import node_tok
    texts = [chat_data.render(c["messages"]) for c in convs]
    enc = node_tok(node_dir, tokenizer, "encode", texts)
    head = node_tok(node_dir, tokenizer, "encode", ["<|im_start|>assistant\n"])[0]
    if head != [IM_START, 629, 436, 421, NEWLINE][:len(head)] or head[-1] != NEWLINE:
        print("chat: note: header ids %r" % head)
    out, dropped = [], 0
    for c, ids in zip(convs, enc):
        if len(ids) > 256:
            dropped += 1
            continue
        kinds = [is_verdict(m) for m in c["messages"] if m["role"] == "assistant"]
        out.append((ids, targets(ids, [m["role"] for m in c["messages"]]), kinds))
    return out, dropped


def hidden(model, x):
    """ln_f output [b, s, E] for input ids x (no past, positions 0..s-1)."""
    b, s = x.shape
    allowed = dm.allowed_mask(torch.ones(b, s, dtype=torch.long), s)
    h = model.embed(x) + model.wpe(torch.arange(s).unsqueeze(0).expand(b, s))
    for blk in model.h:
        h, _, _ = blk(h, allowed)
    return model.ln_f(h)


def batch_loss(model, items):
    s = max(len(it[0]) for it in items)
    x = torch.zeros(len(items), s, dtype=torch.long)
    tgt = torch.full((len(items), s), -1, dtype=torch.long)
    for r, (ids, t, _) in enumerate(items):
        x[r, :len(ids)] = torch.tensor(ids)
        tgt[r, :len(t)] = torch.tensor(t)
    # position p predicts token p + 1
    tt = tgt[:, 1:]
    sel = tt >= 0
    h = hidden(model, x[:, :-1])[sel]                          # [n, E]
    y = x[:, 1:][sel]
    ce = F.cross_entropy(model.head(h), y, reduction="none")
    # turn ids made unique across the batch
    turn = (tt + torch.arange(len(items)).unsqueeze(1) * 64)[sel]
    uniq, inv = torch.unique(turn, return_inverse=True)
    per_turn = torch.zeros(len(uniq)).index_add(0, inv, ce)
    count = torch.zeros(len(uniq)).index_add(0, inv, torch.ones_like(ce))
    verdict = torch.tensor([items[int(u) // 64][2][int(u) % 64] for u in uniq])
    return torch.where(verdict, per_turn, per_turn / count).mean(), int(sel.sum()), int(x.numel())


def train_fit(model, items, n=300):
    """Share of the first n single-verdict training conversations whose
    deciding token (the first of the verdict) is the argmax, teacher-forced:
    how well the model fits its training verdicts (no held-out data)."""
    right = tot = 0
    with torch.no_grad():
        for ids, tg, kinds in items:
            if kinds != [True]:
                continue
            p = tg.index(0)                         # first target token
            h = hidden(model, torch.tensor([ids[:p]]))[0, -1]
            right += int(int(model.head(h).argmax()) == ids[p])
            tot += 1
            if tot == n:
                break
    return right / max(1, tot), tot


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init", required=True)
    ap.add_argument("--chat", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--node-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=280)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=25)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    base, init_info = load_init(a.init)
    model = grow(base, VOCAB, gen)
    cfg = model.cfg
    with open(a.chat) as f:
        chat = json.load(f)
    items, dropped = encode_set(chat["train"], a.tokenizer, a.node_dir)
    n_params = sum(p.numel() for p in model.parameters())
    n_tok = sum(len(it[0]) for it in items)
    n_tgt = sum(sum(1 for t in it[1] if t >= 0) for it in items)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    print("chat: %d parameters, %d conversations (%d dropped > 256 tokens), %d tokens, "
          "%d target tokens; %d steps x %d conversations"
          % (n_params, len(items), dropped, n_tok, n_tgt, a.steps, a.batch), flush=True)
    order, pos = torch.randperm(len(items), generator=gen), 0
    t0 = time.time()
    log, run_loss, seen_tok, seen_conv = [], None, 0, 0
    model.train()
    for step in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.steps, a.lr, a.warmup)
        if pos + a.batch > len(items):
            order, pos = torch.randperm(len(items), generator=gen), 0
        batch = [items[int(i)] for i in order[pos:pos + a.batch]]
        pos += a.batch
        loss, _, padded = batch_loss(model, batch)
        seen_tok += sum(len(it[0]) for it in batch)
        seen_conv += len(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        v = loss.item()
        run_loss = v if run_loss is None else 0.9 * run_loss + 0.1 * v
        if (step + 1) % a.log_every == 0 or step + 1 == a.steps or step < 3:
            el = time.time() - t0
            log.append({"step": step + 1, "loss": round(v, 4), "smoothed": round(run_loss, 4),
                        "elapsed_s": round(el, 1)})
            print("step %4d  loss %.4f  smoothed %.4f  %.1fs" % (step + 1, v, run_loss, el),
                  flush=True)
    wall = time.time() - t0
    model.eval()
    fit, fit_n = train_fit(model, items)
    print("chat: training-set verdict fit (deciding token argmax, teacher-forced, %d "
          "conversations): %.1f %%" % (fit_n, 100 * fit), flush=True)
    torch.save({"config": cfg.to_dict(), "state_dict": model.state_dict(),
                "train": {"init": init_info, "steps": a.steps, "batch": a.batch,
                          "lr": a.lr, "warmup": a.warmup, "weight_decay": a.weight_decay,
                          "seed": a.seed, "threads": a.threads, "wall_s": round(wall, 1),
                          "conversations": len(items), "dropped_over_256": dropped,
                          "set_tokens": n_tok, "set_target_tokens": n_tgt,
                          "conversations_seen": seen_conv, "tokens_seen": seen_tok,
                          "epochs": round(seen_conv / len(items), 3),
                          "train_verdict_fit": round(fit, 4), "train_verdict_fit_n": fit_n,
                          "parameters": n_params, "log": log}}, a.out)
    print("chat: trained in %.1f s (%.2f epochs) -> %s" % (wall, seen_conv / len(items), a.out))


if __name__ == "__main__":
    sys.exit(main())
