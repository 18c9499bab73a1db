"""Train the decoder (decoder_model.py) on the 1350 training reviews.

Input: IDS.json from decoder_tokenizer.mjs ({"train": [[ids]...], ...}, each
review encoded alone).  The training stream is
    <|endoftext|> review_1 <|endoftext|> review_2 ... <|endoftext|> review_1350
(id 0 before every review); each step draws `batch` windows of 257 tokens at
uniformly random offsets (torch.Generator seeded) and trains next-token
prediction on positions 0..255.  AdamW (betas 0.9/0.95, weight decay on 2-D
weights only), linear warm-up then cosine decay to 10% of the peak rate,
gradient-norm clip 1.0, fp32, no dropout.  With one torch thread the run is
deterministic.

Run:  /usr/bin/python3 tools/train/decoder_train.py --ids IDS.json --out CKPT.pt
          [--steps N] [--batch B] [--lr LR] [--seed S] [--threads 1]
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decoder_model as dm  # noqa: E402

EOT = 0


def train_stream(ids):
    out = []
    for r in ids:
        out.append(EOT)
        out.extend(r)
    return torch.tensor(out, dtype=torch.long)


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * t)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ids", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=25)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(a.ids) as f:
        ids = json.load(f)
    stream = train_stream(ids["train"])
    cfg = dm.Config()
    model = dm.Decoder(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(a.seed)
    win = cfg.n_positions + 1
    offs = torch.arange(win)
    print("decoder: %d parameters, %d training tokens, %d steps x %d x %d tokens"
          % (n_params, stream.numel(), a.steps, a.batch, cfg.n_positions), flush=True)
    t0 = time.time()
    log = []
    run_loss = None
    model.train()
    for step in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.steps, a.lr, a.warmup)
        starts = torch.randint(0, stream.numel() - win + 1, (a.batch,), generator=gen)
        x = stream[starts.unsqueeze(1) + offs]
        logits, _ = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        v = loss.item()
        run_loss = v if run_loss is None else 0.95 * run_loss + 0.05 * v
        if (step + 1) % a.log_every == 0 or step + 1 == a.steps:
            el = time.time() - t0
            log.append({"step": step + 1, "loss": round(v, 4), "smoothed": round(run_loss, 4),
                        "elapsed_s": round(el, 1)})
            print("step %4d  loss %.4f  smoothed %.4f  ppl %.1f  %.0fs"
                  % (step + 1, v, run_loss, math.exp(run_loss), el), flush=True)
    wall = time.time() - t0
    torch.save({"config": cfg.to_dict(), "state_dict": model.state_dict(),
                "train": {"steps": a.steps, "batch": a.batch, "window": cfg.n_positions,
                          "lr": a.lr, "warmup": a.warmup, "weight_decay": a.weight_decay,
                          "seed": a.seed, "threads": a.threads, "wall_s": round(wall, 1),
                          "tokens_seen": a.steps * a.batch * cfg.n_positions,
                          "train_stream_tokens": int(stream.numel()),
                          "parameters": n_params, "log": log}}, a.out)
    print("decoder: trained in %.1f s -> %s" % (wall, a.out))


if __name__ == "__main__":
    sys.exit(main())
