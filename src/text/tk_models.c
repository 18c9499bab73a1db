/* src/text/tk_models.c — the models that turn one pre-token into tokens:
 * WordPiece (greedy longest match with a continuation prefix), BPE (merges by
 * rank, leftmost first; byte-level when the pre-tokenizer maps bytes to the
 * GPT-2 alphabet; continuation prefix, end-of-word suffix, unk fusing, byte
 * fallback, ignore_merges), WordLevel (whole-word lookup) and Unigram
 * (SentencePiece's best path over the lattice of vocabulary pieces, with
 * unk fusing and byte fallback as HF does them).
 *
 * Scratch (BPE symbols and merge heap) lives in the workspace; the models
 * themselves are read-only, so any number of threads may share them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tk.h"

static inline at_status push_tok(at_tok_workspace *ws, const tk_split *sp, int32_t id, uint32_t a,
                                 uint32_t b, int32_t word) {
  at_status st = TK_RESERVE(ws->tk, ws->tk_cap, ws->tk_n + 1);
  if (st != AT_OK) return st;
  tk_tok *t = &ws->tk[ws->tk_n++];
  t->id = id;
  t->type_id = 0;
  t->word = word;
  t->special = 0;
  t->str = -1;
  if (b > a) {
    t->s = ws->al[sp->off + a].s;
    t->e = ws->al[sp->off + b - 1].e;
  } else {
    t->s = t->e = sp->base + a;
  }
  return AT_OK;
}

/* ------------------------------------------------------------- WordPiece */
static at_status wordpiece(const tk_model *m, at_tok_workspace *ws, const tk_split *sp,
                           int32_t word) {
  const uint8_t *s = ws->nb + sp->off;
  uint32_t len = sp->len;
  size_t chars = 0;
  for (uint32_t i = 0; i < len; i++) chars += (s[i] & 0xC0) != 0x80;
  if (m->unk_id < 0 && chars > m->max_chars)
    return at_fail(AT_ERR_MODEL, "WordPiece: unk token missing from the vocabulary");
  if (chars > m->max_chars) return push_tok(ws, sp, m->unk_id, 0, len, word);
  size_t mark = ws->tk_n;
  uint32_t start = 0;
  while (start < len) {
    const tk_vocab *v = start ? &m->cont : &m->vocab;
    uint32_t end = len;
    if (end - start > v->max_len) {
      end = start + (uint32_t)v->max_len;
      while (end > start && (s[end] & 0xC0) == 0x80) end--;
    }
    int32_t id = -1;
    while (start < end) {
      id = tk_vocab_get(v, (const char *)s + start, end - start);
      if (id >= 0) break;
      do end--; while (end > start && (s[end] & 0xC0) == 0x80);
    }
    if (id < 0) {
      ws->tk_n = mark;
      if (m->unk_id < 0) return at_fail(AT_ERR_MODEL, "WordPiece: unk token missing from the vocabulary");
      return push_tok(ws, sp, m->unk_id, 0, len, word);
    }
    at_status st = push_tok(ws, sp, id, start, end, word);
    if (st != AT_OK) return st;
    s = ws->nb + sp->off;
    start = end;
  }
  return AT_OK;
}

/* ------------------------------------------------------------------- BPE */
static inline bool heap_less(const tk_heap_ent *a, const tk_heap_ent *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}
static void heap_push(tk_heap_ent *h, size_t *n, tk_heap_ent e) {
  size_t i = (*n)++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!heap_less(&e, &h[p])) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = e;
}
static tk_heap_ent heap_pop(tk_heap_ent *h, size_t *n) {
  tk_heap_ent top = h[0], last = h[--(*n)];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, b = i;
    const tk_heap_ent *best = &last;
    if (l < *n && heap_less(&h[l], best)) { b = l; best = &h[l]; }
    if (r < *n && heap_less(&h[r], best)) { b = r; }
    if (b == i) break;
    h[i] = h[b];
    i = b;
  }
  if (*n) h[i] = last;
  return top;
}

static at_status bpe_unk_missing(void) {
  return at_fail(AT_ERR_MODEL, "BPE: unk token missing from the vocabulary");
}

static at_status bpe(const tk_model *m, at_tok_workspace *ws, const tk_split *sp, int32_t word) {
  uint32_t len = sp->len;
  if (!len) return AT_OK;
  const uint8_t *s = ws->nb + sp->off;
  if (m->ignore_merges) {
    int32_t id = tk_vocab_get(&m->vocab, (const char *)s, len);
    if (id >= 0) return push_tok(ws, sp, id, 0, len, word);
  }
  at_status st;
  if ((st = TK_RESERVE(ws->sym, ws->sym_cap, (size_t)len + 1)) != AT_OK) return st;
  tk_sym *sym = ws->sym;
  int32_t n = 0;
  int32_t unk = -1;
  uint32_t unk_len = 0;
  char buf[96];
  uint32_t cl;
  for (uint32_t i = 0; i < len; i += cl) {
    uint32_t cp = tk_utf8_dec(s + i, &cl);
    bool first = i == 0, last = i + cl == len;
    int32_t id;
    if (cp < 0x800 && !(last && m->suffix_len)) {
      id = (first || !m->prefix_len) ? m->char_id[cp] : m->cont_char_id[cp];
    } else {
      size_t k = 0;
      if (!first && m->prefix_len) { memcpy(buf, m->prefix, m->prefix_len); k = m->prefix_len; }
      memcpy(buf + k, s + i, cl);
      k += cl;
      if (last && m->suffix_len) { memcpy(buf + k, m->suffix, m->suffix_len); k += m->suffix_len; }
      id = tk_vocab_get(&m->vocab, buf, k);
    }
    if (id >= 0) {
      if (unk >= 0) {
        sym[n].id = unk; sym[n].len = unk_len; n++;
        unk = -1;
      }
      sym[n].id = id; sym[n].len = cl; n++;
      continue;
    }
    if (m->byte_fallback) {
      bool ok = true;
      for (uint32_t b = 0; b < cl; b++) ok = ok && m->byte_ids[s[i + b]] >= 0;
      if (ok) {
        /* HF adds the byte tokens as they come (a pending unk stays pending) */
        if ((st = TK_RESERVE(ws->sym, ws->sym_cap, (size_t)n + cl + len + 1)) != AT_OK) return st;
        sym = ws->sym;
        for (uint32_t b = 0; b < cl; b++) { sym[n].id = m->byte_ids[s[i + b]]; sym[n].len = 1; n++; }
        continue;
      }
    }
    if (m->unk_id == -2) return bpe_unk_missing();
    if (m->unk_id >= 0) {
      if (unk >= 0 && m->fuse_unk) {
        unk_len += cl;
      } else {
        if (unk >= 0) { sym[n].id = unk; sym[n].len = unk_len; n++; }
        unk = m->unk_id;
        unk_len = cl;
      }
    }
  }
  if (unk >= 0) { sym[n].id = unk; sym[n].len = unk_len; n++; }
  for (int32_t i = 0; i < n; i++) { sym[i].prev = i - 1; sym[i].next = i + 1 < n ? i + 1 : -1; }
  if (n > 1 && m->merges.n) {
    if ((st = TK_RESERVE(ws->heap, ws->heap_cap, (size_t)n * 2 + 2)) != AT_OK) return st;
    tk_heap_ent *h = ws->heap;
    size_t hn = 0, hcap = ws->heap_cap;
    for (int32_t i = 0; i + 1 < n; i++) {
      int32_t r, id;
      if (tk_merges_get(&m->merges, sym[i].id, sym[i + 1].id, &r, &id))
        heap_push(h, &hn, (tk_heap_ent){r, i, id});
    }
    while (hn) {
      tk_heap_ent top = heap_pop(h, &hn);
      tk_sym *cur = &sym[top.pos];
      if (cur->len == 0 || cur->next < 0) continue;
      tk_sym *right = &sym[cur->next];
      int32_t r, id;
      if (!tk_merges_get(&m->merges, cur->id, right->id, &r, &id) || id != top.id) continue;
      cur->id = top.id;
      cur->len += right->len;
      cur->next = right->next;
      right->len = 0;
      if (cur->next >= 0) sym[cur->next].prev = top.pos;
      if (hn + 2 > hcap) {
        if ((st = TK_RESERVE(ws->heap, ws->heap_cap, hn + 2)) != AT_OK) return st;
        h = ws->heap;
        hcap = ws->heap_cap;
      }
      if (cur->prev >= 0 && tk_merges_get(&m->merges, sym[cur->prev].id, cur->id, &r, &id))
        heap_push(h, &hn, (tk_heap_ent){r, cur->prev, id});
      if (cur->next >= 0 && tk_merges_get(&m->merges, cur->id, sym[cur->next].id, &r, &id))
        heap_push(h, &hn, (tk_heap_ent){r, top.pos, id});
    }
  }
  uint32_t off = 0;
  for (int32_t i = 0; i < n; i++) {
    if (!sym[i].len) continue;
    if ((st = push_tok(ws, sp, sym[i].id, off, off + sym[i].len, word)) != AT_OK) return st;
    off += sym[i].len;
  }
  return AT_OK;
}

/* ------------------------------------------------------------- WordLevel */
static at_status wordlevel(const tk_model *m, at_tok_workspace *ws, const tk_split *sp,
                           int32_t word) {
  int32_t id = tk_vocab_get(&m->vocab, (const char *)ws->nb + sp->off, sp->len);
  if (id < 0) id = m->unk_id;
  if (id < 0) return at_fail(AT_ERR_MODEL, "WordLevel: unk token missing from the vocabulary");
  return push_tok(ws, sp, id, 0, sp->len, word);
}

/* --------------------------------------------------------------- Unigram */
/* HF's optimised Viterbi (models/unigram/model.rs encode_optimized): for each
 * char start, every piece that starts there extends the best path ending
 * at its end (strictly better scores win, so among equals the first
 * candidate stays: earlier starts, then shorter pieces). When no piece
 * covers exactly the one char, an unk node scoring min_score - 10 does.
 * The path is read back from the end; consecutive unk-id nodes fuse into
 * one string. Each resulting string is then looked up: a piece gives its
 * id; otherwise byte fallback gives <0xNN> tokens (all spanning the whole
 * string) if every byte has one, else the unk id — and HF reports such a
 * token's string as the text itself, kept in ws->tstr. */
static at_status unigram_missing_unk(void) {
  return at_fail(AT_ERR_MODEL, "Unigram: text needs the unk token but the model has no unk_id");
}

static at_status unigram_emit(const tk_model *m, at_tok_workspace *ws, const tk_split *sp,
                              uint32_t a, uint32_t b, int32_t word) {
  const char *s = (const char *)ws->nb + sp->off + a;
  uint32_t n = b - a;
  int32_t id = tk_vocab_get(&m->vocab, s, n);
  if (id >= 0) return push_tok(ws, sp, id, a, b, word);
  at_status st;
  if (m->byte_fallback) {
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) ok = m->byte_ids[(uint8_t)s[i]] >= 0;
    if (ok) {
      for (uint32_t i = 0; i < n; i++) {
        uint8_t byte = ws->nb[sp->off + a + i];
        if ((st = push_tok(ws, sp, m->byte_ids[byte], a, b, word)) != AT_OK) return st;
      }
      return AT_OK;
    }
  }
  if (m->unk_id < 0) return unigram_missing_unk();
  if ((st = push_tok(ws, sp, m->unk_id, a, b, word)) != AT_OK) return st;
  return tk_tok_own_str(ws, ws->tk_n - 1, ws->nb + sp->off + a, n);
}

static at_status unigram(const tk_model *m, at_tok_workspace *ws, const tk_split *sp,
                         int32_t word) {
  uint32_t len = sp->len;
  if (!len) return AT_OK;
  at_status st = TK_RESERVE(ws->vn, ws->vn_cap, (size_t)len + 1);
  if (st != AT_OK) return st;
  tk_vnode *vn = ws->vn;
  for (uint32_t i = 0; i <= len; i++) { vn[i].score = 0.0; vn[i].start = -1; vn[i].id = 0; }
  const uint8_t *s = ws->nb + sp->off;
  double unk_score = m->min_score - 10.0;
  uint32_t mb;
  for (uint32_t at = 0; at < len; at += mb) {
    double here = vn[at].score;
    (void)tk_utf8_dec(s + at, &mb);
    bool single = false;
    uint32_t l;
    for (uint32_t end = at; end < len;) {
      (void)tk_utf8_dec(s + end, &l);
      end += l;
      int32_t id = tk_vocab_get(&m->vocab, (const char *)s + at, end - at);
      if (id >= 0) {
        double cand = m->scores[id] + here;
        if (vn[end].start < 0 || cand > vn[end].score) {
          vn[end].score = cand;
          vn[end].start = (int32_t)at;
          vn[end].id = id;
        }
        if (end - at == mb) single = true;
      }
      if (tk_vocab_get(&m->prefixes, (const char *)s + at, end - at) != INT32_MIN) break;
    }
    if (!single) {
      if (m->unk_id < 0) return unigram_missing_unk();
      double cand = unk_score + here;
      if (vn[at + mb].start < 0 || cand > vn[at + mb].score) {
        vn[at + mb].score = cand;
        vn[at + mb].start = (int32_t)at;
        vn[at + mb].id = m->unk_id;
      }
    }
  }
  /* the path's piece ends, last first, into ws->u32 */
  size_t nb = 0;
  for (uint32_t e = len; e > 0; e = (uint32_t)vn[e].start) nb++;
  if ((st = TK_RESERVE(ws->u32, ws->u32_cap, nb + 1)) != AT_OK) return st;
  uint32_t *bd = ws->u32; /* path ends, from the last */
  size_t k = 0;
  for (uint32_t e = len; e > 0; e = (uint32_t)vn[e].start) bd[k++] = e;
  /* forward: fuse runs of unk-id nodes */
  uint32_t start = 0;
  for (size_t i = nb; i-- > 0;) {
    uint32_t e = bd[i];
    bool unk = m->unk_id >= 0 && vn[e].id == m->unk_id;
    if (unk) {
      bool next_unk = i > 0 && vn[bd[i - 1]].id == m->unk_id;
      if (next_unk) continue; /* the run goes on */
    }
    if ((st = unigram_emit(m, ws, sp, start, e, word)) != AT_OK) return st;
    start = e;
  }
  return AT_OK;
}

at_status tk_model_tokenize(const tk_model *m, at_tok_workspace *ws, const tk_split *sp,
                            int32_t word) {
  switch (m->kind) {
    case TK_M_WORDPIECE: return wordpiece(m, ws, sp, word);
    case TK_M_BPE: return bpe(m, ws, sp, word);
    case TK_M_WORDLEVEL: return wordlevel(m, ws, sp, word);
    case TK_M_UNIGRAM: return unigram(m, ws, sp, word);
  }
  return at_fail(AT_ERR_UNSUPPORTED, "tokenizer: unknown model");
}

at_status tk_model_finish(tk_model *m) {
  if (m->kind == TK_M_WORDPIECE) {
    for (size_t i = 0; i < m->vocab.n; i++) {
      const char *str = tk_vocab_str(&m->vocab, i);
      size_t l = m->vocab.ent[i].len;
      if (l >= m->prefix_len && memcmp(str, m->prefix, m->prefix_len) == 0) {
        at_status st = tk_vocab_put(&m->cont, str + m->prefix_len, l - m->prefix_len,
                                    m->vocab.ent[i].id);
        if (st != AT_OK) return st;
      }
    }
  }
  if (m->kind == TK_M_UNIGRAM) {
    for (int b = 0; b < 256; b++) {
      char t[8];
      snprintf(t, sizeof t, "<0x%02X>", b);
      m->byte_ids[b] = tk_vocab_get(&m->vocab, t, 6);
    }
  }
  if (m->kind == TK_M_BPE) {
    m->char_id = malloc(0x800 * sizeof *m->char_id);
    m->cont_char_id = malloc(0x800 * sizeof *m->cont_char_id);
    if (!m->char_id || !m->cont_char_id) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
    char buf[80];
    for (uint32_t cp = 0; cp < 0x800; cp++) {
      uint8_t u[4];
      uint32_t k = tk_utf8_enc(cp, u);
      m->char_id[cp] = tk_vocab_get(&m->vocab, (const char *)u, k);
      if (m->prefix_len && m->prefix_len < 64) {
        memcpy(buf, m->prefix, m->prefix_len);
        memcpy(buf + m->prefix_len, u, k);
        m->cont_char_id[cp] = tk_vocab_get(&m->vocab, buf, m->prefix_len + k);
      } else {
        m->cont_char_id[cp] = m->char_id[cp];
      }
    }
    for (int b = 0; b < 256; b++) {
      char t[8];
      snprintf(t, sizeof t, "<0x%02X>", b);
      m->byte_ids[b] = tk_vocab_get(&m->vocab, t, 6);
    }
  }
  return AT_OK;
}

void tk_model_free(tk_model *m) {
  tk_vocab_free(&m->vocab);
  tk_vocab_free(&m->cont);
  free(m->prefix);
  free(m->suffix);
  free(m->merges.keys);
  free(m->merges.rank);
  free(m->merges.id);
  free(m->char_id);
  free(m->cont_char_id);
  tk_vocab_free(&m->prefixes);
  free(m->scores);
  free(m->pieces);
  free(m->pieces_blob);
  memset(m, 0, sizeof *m);
}
