"""The BERT-style encoders the project trains (post-LayerNorm, GELU, learned
absolute positions, no token types).  Every projection is an nn.Linear, so in
the exported graph every weight MatMul takes a constant initializer, which is
what quantize.py rewrites.

Classifier head: mean of the final hidden states over the attention mask, then
one Linear to 2 logits (mean pooling trains more reliably than a [CLS] pooler
when there is no pretraining).  The embedding model exports the encoder with
`last_hidden_state`; pooling and normalisation are the server's task head.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    def __init__(self, h, heads, ffn, p):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(h, h)
        self.k = nn.Linear(h, h)
        self.v = nn.Linear(h, h)
        self.o = nn.Linear(h, h)
        self.ln1 = nn.LayerNorm(h, eps=1e-12)
        self.f1 = nn.Linear(h, ffn)
        self.f2 = nn.Linear(ffn, h)
        self.ln2 = nn.LayerNorm(h, eps=1e-12)
        self.drop = nn.Dropout(p)

    def split(self, x):
        b, s, h = x.shape
        return x.view(b, s, self.heads, h // self.heads).transpose(1, 2)

    def forward(self, x, bias):
        b, s, h = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // self.heads) + bias
        att = self.drop(torch.softmax(att, dim=-1))
        ctx = torch.matmul(att, v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.drop(self.o(ctx)))
        y = self.f2(F.gelu(self.f1(x)))
        return self.ln2(x + self.drop(y))


class Encoder(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, ffn, max_pos, dropout=0.1):
        super().__init__()
        self.cfg = dict(vocab=vocab, hidden=hidden, layers=layers, heads=heads,
                        ffn=ffn, max_pos=max_pos, dropout=dropout)
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(Layer(hidden, heads, ffn, dropout) for _ in range(layers))
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, input_ids, attention_mask):
        s = input_ids.shape[1]
        x = self.tok(input_ids) + self.pos.weight[:s].unsqueeze(0)
        x = self.drop(self.ln(x))
        bias = (1.0 - attention_mask.to(x.dtype))[:, None, None, :] * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return x


def mean_pool(h, attention_mask):
    m = attention_mask.to(h.dtype).unsqueeze(-1)
    return (h * m).sum(1) / m.sum(1).clamp(min=1.0)


class Classifier(nn.Module):
    def __init__(self, enc, n_labels=2):
        super().__init__()
        self.enc = enc
        self.drop = nn.Dropout(enc.cfg["dropout"])
        self.head = nn.Linear(enc.cfg["hidden"], n_labels)
        Encoder._init(self.head)

    def forward(self, input_ids, attention_mask):
        return self.head(self.drop(mean_pool(self.enc(input_ids, attention_mask), attention_mask)))


class HiddenStates(nn.Module):
    """Export wrapper: (input_ids, attention_mask) -> last_hidden_state."""
    def __init__(self, enc):
        super().__init__()
        self.enc = enc

    def forward(self, input_ids, attention_mask):
        return self.enc(input_ids, attention_mask)


class Int8Table(nn.Module):
    """Token-embedding table stored int8 with one fp32 scale per row; looks
    up int8 rows and scales them (Gather, Cast, Gather, Mul in the graph), so
    the full table is never dequantised at run time."""
    def __init__(self, weight):
        super().__init__()
        w = weight.detach().float()
        scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
        q = torch.round(w / scale).clamp(-127, 127).to(torch.int8)
        self.register_buffer("q", q)
        self.register_buffer("scale", scale)

    def dequantized(self):
        return self.q.float() * self.scale

    def forward(self, ids):
        return self.q[ids].float() * self.scale[ids]
