"""Training loops: sentiment classifiers, masked-LM pretraining, and the
contrastive (SimCSE-style) objective for the embedding model.

Examples are (ids, label) with ids already [CLS] ... [SEP].  Batches are
bucketed by length and padded with [PAD]=0, so compute follows the real
sentence lengths.  Every random choice draws from generators seeded by the
caller; with the same seed and thread count torch gives identical weights.
"""
import math
import random
import time

import torch
import torch.nn.functional as F

import model as M
import wordpiece as W


def pad_batch(seqs, device="cpu"):
    n = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), n, dtype=torch.long)
    mask = torch.zeros(len(seqs), n, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    return ids.to(device), mask.to(device)


def batches(examples, bs, rng, shuffle=True):
    """Length-bucketed batches: shuffle, sort within windows of 50 batches,
    shuffle the batch order."""
    idx = list(range(len(examples)))
    if shuffle:
        rng.shuffle(idx)
    out = []
    win = bs * 50
    for w in range(0, len(idx), win):
        chunk = sorted(idx[w:w + win], key=lambda i: len(examples[i][0]))
        out += [chunk[j:j + bs] for j in range(0, len(chunk), bs)]
    if shuffle:
        rng.shuffle(out)
    return out


def concat_augment(examples, rng, p, max_len):
    """With probability p, join an example with another of the same label
    ([CLS] a b [SEP], cut to max_len).  Sentiment is kept and the position
    embeddings up to max_len see training signal."""
    if p <= 0:
        return examples
    by = {0: [], 1: []}
    for e in examples:
        by[e[1]].append(e)
    out = []
    for ids, lab in examples:
        if rng.random() < p:
            other = rng.choice(by[lab])[0]
            ids = (ids[:-1] + other[1:-1])[:max_len - 1] + [W.SEP]
        out.append((ids, lab))
    return out


def lr_lambda(total, warm):
    def f(step):
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))
    return f


@torch.no_grad()
def predict(clf, examples, device="cpu", bs=128):
    clf.eval()
    logits = [None] * len(examples)
    order = sorted(range(len(examples)), key=lambda i: len(examples[i][0]))
    for j in range(0, len(order), bs):
        b = order[j:j + bs]
        ids, mask = pad_batch([examples[i][0] for i in b], device)
        out = clf(ids, mask).float().cpu()
        for k, i in enumerate(b):
            logits[i] = out[k]
    return torch.stack(logits)


def accuracy(logits, examples):
    y = torch.tensor([e[1] for e in examples])
    return (logits.argmax(1) == y).float().mean().item()


def xent(logits, examples):
    y = torch.tensor([e[1] for e in examples])
    return F.cross_entropy(logits, y).item()


def train_classifier(arch, vocab_size, train, val, seed, epochs, lr, device="cpu",
                     bs=32, max_len=128, concat_p=0.1, wd=0.01, init_encoder=None,
                     log=print):
    """Train from `seed`; keep the epoch with the best validation accuracy
    (ties: lower validation loss).  Returns (model with best weights, info)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    enc = M.Encoder(vocab_size, arch["hidden"], arch["layers"], arch["heads"],
                    arch["ffn"], max_len, arch.get("dropout", 0.1))
    if init_encoder is not None:
        enc.load_state_dict(init_encoder)
    clf = M.Classifier(enc).to(device)
    opt = torch.optim.AdamW(clf.parameters(), lr=lr, weight_decay=wd)
    steps_per_epoch = math.ceil(len(train) / bs)
    total = steps_per_epoch * epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(total, max(1, total // 10)))
    best = None
    hist = []
    t0 = time.time()
    for ep in range(epochs):
        clf.train()
        data = concat_augment(train, rng, concat_p, max_len)
        tl = 0.0
        for b in batches(data, bs, rng):
            ids, mask = pad_batch([data[i][0] for i in b], device)
            y = torch.tensor([data[i][1] for i in b], device=device)
            loss = F.cross_entropy(clf(ids, mask), y)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(clf.parameters(), 1.0)
            opt.step()
            sched.step()
            tl += loss.item() * len(b)
        lv = predict(clf, val, device)
        va, vl = accuracy(lv, val), xent(lv, val)
        hist.append({"epoch": ep + 1, "train_loss": tl / len(data), "val_acc": va,
                     "val_loss": vl, "seconds": round(time.time() - t0, 1)})
        log("  seed %d epoch %d: train loss %.3f  val acc %.4f loss %.3f  (%.0fs)"
            % (seed, ep + 1, tl / len(data), va, vl, time.time() - t0))
        if best is None or (va, -vl) > (best[0], -best[1]):
            best = (va, vl, ep + 1, {k: v.detach().cpu().clone() for k, v in clf.state_dict().items()})
    clf.load_state_dict(best[3])
    clf.to("cpu")
    return clf, {"seed": seed, "best_epoch": best[2], "val_acc": best[0], "val_loss": best[1],
                 "history": hist, "seconds": round(time.time() - t0, 1)}


def mlm_pretrain(arch, vocab_size, seqs, seed, seconds=None, steps=None, lr=5e-4,
                 device="cpu", bs=32, max_len=128, log=print):
    """Masked-LM pretraining (15% of pieces: 80% [MASK], 10% random, 10% kept)
    on `seqs` (lists of ids), for a step count or a wall-clock budget.
    Returns (encoder state dict, info)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    enc = M.Encoder(vocab_size, arch["hidden"], arch["layers"], arch["heads"],
                    arch["ffn"], max_len, arch.get("dropout", 0.1)).to(device)
    h = arch["hidden"]
    head = torch.nn.Sequential(torch.nn.Linear(h, h), torch.nn.GELU(),
                               torch.nn.LayerNorm(h, eps=1e-12)).to(device)
    bias = torch.nn.Parameter(torch.zeros(vocab_size, device=device))
    params = list(enc.parameters()) + list(head.parameters()) + [bias]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    t0 = time.time()
    step = 0
    losses = []
    warm = 100
    while True:
        if steps is not None and step >= steps:
            break
        if seconds is not None and time.time() - t0 >= seconds:
            break
        for g in opt.param_groups:
            g["lr"] = lr * min(1.0, (step + 1) / warm)
        b = [seqs[rng.randrange(len(seqs))] for _ in range(bs)]
        ids, mask = pad_batch(b, device)
        labels = ids.clone()
        gen = torch.Generator().manual_seed(seed * 1000003 + step)
        prob = torch.rand(ids.shape, generator=gen).to(device)
        special = ids < len(W.SPECIALS)
        sel = (prob < 0.15) & ~special & (mask == 1)
        labels[~sel] = -100
        r = torch.rand(ids.shape, generator=gen).to(device)
        inp = ids.clone()
        inp[sel & (r < 0.8)] = W.MASK
        rnd = torch.randint(len(W.SPECIALS), vocab_size, ids.shape, generator=gen).to(device)
        swap = sel & (r >= 0.8) & (r < 0.9)
        inp[swap] = rnd[swap]
        enc.train()
        hs = head(enc(inp, mask))
        logits = hs @ enc.tok.weight.t() + bias          # tied output embedding
        loss = F.cross_entropy(logits.view(-1, vocab_size), labels.view(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(loss.item())
        step += 1
        if step % 100 == 0:
            log("  mlm step %d loss %.3f (%.0fs)" % (step, sum(losses[-100:]) / 100, time.time() - t0))
    state = {k: v.detach().cpu().clone() for k, v in enc.state_dict().items()}
    return state, {"steps": step, "seconds": round(time.time() - t0, 1),
                   "final_loss": sum(losses[-100:]) / max(1, len(losses[-100:]))}


def simcse_loss(enc, seqs_a, seqs_b, device, temp=0.05):
    """In-batch contrastive loss: row i of a should match row i of b."""
    ia, ma = pad_batch(seqs_a, device)
    ib, mb = pad_batch(seqs_b, device)
    za = F.normalize(M.mean_pool(enc(ia, ma), ma), dim=-1)
    zb = F.normalize(M.mean_pool(enc(ib, mb), mb), dim=-1)
    sim = za @ zb.t() / temp
    y = torch.arange(sim.shape[0], device=device)
    return F.cross_entropy(sim, y)


@torch.no_grad()
def embed(enc, seqs, device="cpu", bs=128):
    """Normalised mean-pooled final hidden states, one row per sequence."""
    enc.eval()
    out = [None] * len(seqs)
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    for j in range(0, len(order), bs):
        b = order[j:j + bs]
        ids, mask = pad_batch([seqs[i] for i in b], device)
        z = F.normalize(M.mean_pool(enc(ids, mask), mask), dim=-1).float().cpu()
        for k, i in enumerate(b):
            out[i] = z[k]
    return torch.stack(out)


def knn_agreement(index_z, index_y, query_z, query_y, k=10):
    """Share of queries whose k nearest index rows (cosine) vote their label."""
    sim = query_z @ index_z.t()
    nn_idx = sim.topk(k, dim=1).indices
    iy = torch.tensor(index_y)
    votes = iy[nn_idx].float().mean(1)
    pred = (votes > 0.5).long()
    return (pred == torch.tensor(query_y)).float().mean().item()


def paraphrase_check(enc, wp, items, device="cpu"):
    """cos(a,a), cos(a,paraphrase), cos(a,unrelated) for each item."""
    rows = []
    for it in items:
        z = embed(enc, [wp.encode(it["a"]), wp.encode(it["a"]), wp.encode(it["paraphrase"]),
                        wp.encode(it["unrelated"])], device)
        rows.append((float(z[0] @ z[1]), float(z[0] @ z[2]), float(z[0] @ z[3])))
    n = len(rows)
    return {"items": n,
            "identical_min_cos": min(r[0] for r in rows),
            "paraphrase_mean_cos": sum(r[1] for r in rows) / n,
            "unrelated_mean_cos": sum(r[2] for r in rows) / n,
            "paraphrase_beats_unrelated": sum(1 for r in rows if r[1] > r[2])}


def train_embedding(arch, vocab_size, train, val, unlabeled, seed, epochs, lr, device="cpu",
                    bs=32, max_len=128, lam=1.0, ce=1.0, init_encoder=None, log=print):
    """Embedding encoder: `ce` x sentiment cross-entropy on the train split
    (mean-pooled head) + `lam` x unsupervised SimCSE on `unlabeled` sentences
    (two dropout views of the same batch).  Model selection on validation
    kNN agreement (index = train split)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    enc = M.Encoder(vocab_size, arch["hidden"], arch["layers"], arch["heads"],
                    arch["ffn"], max_len, arch.get("dropout", 0.1))
    if init_encoder is not None:
        enc.load_state_dict(init_encoder)
    clf = M.Classifier(enc).to(device)
    opt = torch.optim.AdamW(clf.parameters(), lr=lr, weight_decay=0.01)
    steps_per_epoch = math.ceil(len(train) / bs)
    total = steps_per_epoch * epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(total, max(1, total // 10)))
    tr_seqs = [e[0] for e in train]
    tr_y = [e[1] for e in train]
    best = None
    hist = []
    t0 = time.time()
    for ep in range(epochs):
        data = concat_augment(train, rng, 0.1, max_len)
        for b in batches(data, bs, rng):
            clf.train()
            loss = 0.0
            if ce > 0:
                ids, mask = pad_batch([data[i][0] for i in b], device)
                y = torch.tensor([data[i][1] for i in b], device=device)
                loss = ce * F.cross_entropy(clf(ids, mask), y)
            if lam > 0:
                u = [unlabeled[rng.randrange(len(unlabeled))] for _ in range(bs * 2)]
                loss = loss + lam * simcse_loss(enc, u, u, device)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(clf.parameters(), 1.0)
            opt.step()
            sched.step()
        zi = embed(enc, tr_seqs, device)
        zv = embed(enc, [e[0] for e in val], device)
        ka = knn_agreement(zi, tr_y, zv, [e[1] for e in val])
        hist.append({"epoch": ep + 1, "val_knn": ka, "seconds": round(time.time() - t0, 1)})
        log("  emb seed %d epoch %d: val kNN %.4f (%.0fs)" % (seed, ep + 1, ka, time.time() - t0))
        if best is None or ka > best[0]:
            best = (ka, ep + 1, {k: v.detach().cpu().clone() for k, v in enc.state_dict().items()})
    enc.load_state_dict(best[2])
    enc.to("cpu")
    return enc, {"seed": seed, "best_epoch": best[1], "val_knn": best[0], "history": hist,
                 "seconds": round(time.time() - t0, 1)}
