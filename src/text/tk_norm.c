/* src/text/tk_norm.c — the transform engine (HF NormalizedString alignment
 * rules, see tk.h) and the normalizers: BertNormalizer, NFC/NFD/NFKC/NFKD,
 * Lowercase, StripAccents, Strip, Replace, Prepend, Sequence, Nmt and
 * Precompiled (SentencePiece's charsmap, see tk_charsmap.c).
 *
 * Each normalizer is written as the same sequence of (char, change) edits HF
 * applies, because offsets depend on it; cheap scans skip passes that would
 * change nothing (pure ASCII text never enters the Unicode passes). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tk.h"

/* ------------------------------------------------------------ transforms */
/* The normalised text of one request may not pass this many bytes. A
 * Replace whose pattern matches the empty string inserts its content at
 * every position, and a Sequence of such passes multiplies the length each
 * time (the long fuzz found a tokenizer.json that grew 20 characters past a
 * gigabyte of RAM and 15 s). Real normalisers expand a text a few times at
 * most; the request body itself is capped at server.max_body_bytes. */
#define TK_MAX_NORM_BYTES ((size_t)64 << 20)
/* ... nor, counting every pass's output (each pass appends its result to
 * the workspace), 64 bytes per byte of the text plus 64 KiB: real chains
 * write a few times the text in all (Llama's Prepend + Replace about 7x).
 * Without this a 20-byte text could still be blown up to the 64 MiB cap
 * pass after pass (about 1 s per text in a release build, 10 s under the
 * sanitizers: the long fuzz's slowest input). tk_norm_limit sets it. */
#define TK_NORM_TOTAL_GROWTH 64
#define TK_NORM_TOTAL_SLACK ((size_t)64 << 10)

void tk_norm_limit(at_tok_workspace *ws, size_t text_len) {
  size_t cap = TK_MAX_NORM_BYTES;
  if (text_len < (cap - TK_NORM_TOTAL_SLACK) / TK_NORM_TOTAL_GROWTH)
    cap = TK_NORM_TOTAL_GROWTH * text_len + TK_NORM_TOTAL_SLACK;
  ws->nb_limit = cap;
}
/* ... and one pass may not write more than 32 bytes per input byte plus
 * 4 KiB (NFKD expands a character 18x at most; Prepend adds a constant),
 * so such a Replace is refused at its first pass, before it costs time. */
#define TK_PASS_GROWTH 32
#define TK_PASS_SLACK ((size_t)4 << 10)

static at_status pass_too_long(void) {
  return at_fail(AT_ERR_LIMIT, "tokenizer: a normalizer grew the text more than %dx (a Replace "
                 "that matches the empty string?)", TK_PASS_GROWTH);
}

static inline at_status reserve_out(at_tok_workspace *ws, size_t extra) {
  at_status st;
  size_t cap = ws->nb_limit ? ws->nb_limit : TK_MAX_NORM_BYTES;
  if (ws->nb_len + extra > cap)
    return at_fail(AT_ERR_LIMIT, "tokenizer: the normalizers grew the text past %zu bytes (%dx "
                   "the text plus 64 KiB, at most 64 MiB; a Replace that matches the empty "
                   "string?)", cap, TK_NORM_TOTAL_GROWTH);
  if ((st = TK_RESERVE(ws->nb, ws->nb_cap, ws->nb_len + extra)) != AT_OK) return st;
  return TK_RESERVE(ws->al, ws->al_cap, ws->nb_len + extra);
}

static inline void skip_char(tk_xf *x) {
  if (x->pos >= x->src_len) return;
  uint32_t n;
  (void)tk_utf8_dec(x->ws->nb + x->src + x->pos, &n);
  x->pos += n;
}

void tk_xf_begin(tk_xf *x, at_tok_workspace *ws, const tk_split *sp, uint32_t initial_chars) {
  x->ws = ws;
  x->src = sp->off;
  x->src_len = sp->len;
  x->pos = 0;
  x->out = (uint32_t)ws->nb_len;
  x->limit = TK_PASS_GROWTH * (size_t)sp->len + TK_PASS_SLACK;
  x->base = sp->base;
  x->st = reserve_out(ws, (size_t)sp->len + 16);
  for (uint32_t i = 0; i < initial_chars; i++) skip_char(x);
}

void tk_xf_emit(tk_xf *x, uint32_t cp, int change) {
  if (x->st != AT_OK) return;
  at_tok_workspace *ws = x->ws;
  tk_span a;
  if (change > 0) {
    if (x->pos < 1) a.s = a.e = x->base;
    else a = ws->al[x->src + x->pos - 1];
  } else if (x->pos < x->src_len) {
    a = ws->al[x->src + x->pos];
  } else if (x->src_len) {
    a = ws->al[x->src + x->src_len - 1];
  } else {
    a.s = a.e = x->base;
  }
  if (change <= 0) skip_char(x);
  for (int k = 0; k < -change; k++) skip_char(x);
  if (ws->nb_len - x->out + 4 > x->limit) {
    x->st = pass_too_long();
    return;
  }
  if ((x->st = reserve_out(ws, 4)) != AT_OK) return;
  uint32_t n = tk_utf8_enc(cp, ws->nb + ws->nb_len);
  for (uint32_t i = 0; i < n; i++) ws->al[ws->nb_len + i] = a;
  ws->nb_len += n;
}

void tk_xf_copy(tk_xf *x, uint32_t bytes) {
  if (x->st != AT_OK) return;
  at_tok_workspace *ws = x->ws;
  if (bytes > x->src_len - x->pos) bytes = x->src_len - x->pos;
  if (ws->nb_len - x->out + bytes > x->limit) {
    x->st = pass_too_long();
    return;
  }
  if ((x->st = reserve_out(ws, bytes)) != AT_OK) return;
  memcpy(ws->nb + ws->nb_len, ws->nb + x->src + x->pos, bytes);
  memcpy(ws->al + ws->nb_len, ws->al + x->src + x->pos, bytes * sizeof(tk_span));
  ws->nb_len += bytes;
  x->pos += bytes;
}

at_status tk_xf_end(tk_xf *x, tk_split *sp) {
  if (x->st != AT_OK) return x->st;
  if (x->ws->nb_len > UINT32_MAX / 2) return at_fail(AT_ERR_LIMIT, "tokenizer: text too long");
  sp->off = x->out;
  sp->len = (uint32_t)(x->ws->nb_len - x->out);
  return AT_OK;
}

static inline uint32_t cp_at(const at_tok_workspace *ws, const tk_split *sp, uint32_t i,
                             uint32_t *n) {
  return tk_utf8_dec(ws->nb + sp->off + i, n);
}

static bool all_ascii(const at_tok_workspace *ws, const tk_split *sp) {
  const uint8_t *p = ws->nb + sp->off;
  uint8_t acc = 0;
  for (uint32_t i = 0; i < sp->len; i++) acc |= p[i];
  return acc < 0x80;
}

/* filter(keep) with HF's change encoding: each kept char carries -(removed
 * chars after it); chars removed before the first kept one are the initial
 * offset. `map` rewrites kept chars 1:1 (HF's .map after .filter). */
typedef bool (*keep_fn)(uint32_t c, const void *arg);
typedef uint32_t (*map_fn)(uint32_t c);
static uint32_t map_ws_to_space(uint32_t c) { return tk_is_ws(c) ? ' ' : c; }
static at_status filter_map(at_tok_workspace *ws, tk_split *sp, keep_fn keep, const void *arg,
                            map_fn map) {
  uint32_t i = 0, n, lead = 0;
  bool any = false;
  while (i < sp->len) { /* is there anything to do? */
    uint32_t c = cp_at(ws, sp, i, &n);
    if (!keep(c, arg) || (map && map(c) != c)) { any = true; break; }
    i += n;
  }
  if (!any) return AT_OK;
  for (i = 0; i < sp->len; i += n) {
    uint32_t c = cp_at(ws, sp, i, &n);
    if (keep(c, arg)) break;
    lead++;
  }
  tk_xf x;
  tk_xf_begin(&x, ws, sp, lead);
  uint32_t pending = 0;
  int removed = 0;
  bool have = false;
  for (; i < sp->len; i += n) {
    uint32_t c = cp_at(ws, sp, i, &n);
    if (keep(c, arg)) {
      if (have) tk_xf_emit(&x, pending, -removed);
      pending = map ? map(c) : c;
      have = true;
      removed = 0;
    } else {
      removed++;
    }
  }
  if (have) tk_xf_emit(&x, pending, -removed);
  return tk_xf_end(&x, sp);
}

static bool keep_clean(uint32_t c, const void *arg) {
  (void)arg;
  return !(c == 0 || c == 0xFFFD || tk_is_bert_control(c));
}
static bool keep_not_mn(uint32_t c, const void *arg) { (void)arg; return !tk_is_mn(c); }
static bool keep_not_mark(uint32_t c, const void *arg) { (void)arg; return !tk_is_mark(c); }

static at_status chinese_pass(at_tok_workspace *ws, tk_split *sp) {
  uint32_t n;
  bool any = false;
  for (uint32_t i = 0; i < sp->len; i += n)
    if (tk_is_cjk(cp_at(ws, sp, i, &n))) { any = true; break; }
  if (!any) return AT_OK;
  tk_xf x;
  tk_xf_begin(&x, ws, sp, 0);
  for (uint32_t i = 0; i < sp->len; i += n) {
    uint32_t c = cp_at(ws, sp, i, &n);
    if (tk_is_cjk(c)) {
      tk_xf_emit(&x, ' ', 1);
      tk_xf_emit(&x, c, 0);
      tk_xf_emit(&x, ' ', 1);
    } else {
      tk_xf_copy(&x, n);
    }
  }
  return tk_xf_end(&x, sp);
}

static at_status lower_pass(at_tok_workspace *ws, tk_split *sp) {
  uint32_t n, m[3];
  bool any = false;
  for (uint32_t i = 0; i < sp->len; i += n) {
    uint32_t c = cp_at(ws, sp, i, &n);
    if (tk_lower(c, m) != 1 || m[0] != c) { any = true; break; }
  }
  if (!any) return AT_OK;
  if (all_ascii(ws, sp)) { /* 1:1, same length: rewrite a copy in place */
    tk_xf x;
    tk_xf_begin(&x, ws, sp, 0);
    uint32_t start = (uint32_t)ws->nb_len;
    tk_xf_copy(&x, sp->len);
    if (x.st == AT_OK)
      for (uint32_t i = start; i < ws->nb_len; i++)
        if (ws->nb[i] >= 'A' && ws->nb[i] <= 'Z') ws->nb[i] += 32;
    return tk_xf_end(&x, sp);
  }
  tk_xf x;
  tk_xf_begin(&x, ws, sp, 0);
  for (uint32_t i = 0; i < sp->len; i += n) {
    uint32_t c = cp_at(ws, sp, i, &n);
    int k = tk_lower(c, m);
    if (k == 1 && m[0] == c) { tk_xf_copy(&x, n); continue; }
    for (int j = 0; j < k; j++) tk_xf_emit(&x, m[j], j > 0 ? 1 : 0);
  }
  return tk_xf_end(&x, sp);
}

/* Decomposition stream as unicode-normalization-alignments produces it: each
 * source char's decomposition (first 0, rest +1), canonically reordered by a
 * stable sort on combining class in blocks that end at each starter. The
 * stream is staged in ws->u32 as (cp, change, ccc) triples. */
typedef struct { uint32_t cp; int32_t change; int32_t ccc; uint32_t idx; } dent;

static int dent_cmp(const void *a, const void *b) {
  const dent *x = a, *y = b;
  if (x->ccc != y->ccc) return x->ccc < y->ccc ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void sort_block(dent *d, size_t n) {
  if (n < 2) return;
  if (n <= 32) {
    for (size_t i = 1; i < n; i++) {
      dent t = d[i];
      size_t j = i;
      while (j > 0 && d[j - 1].ccc > t.ccc) { d[j] = d[j - 1]; j--; }
      d[j] = t;
    }
  } else {
    for (size_t i = 0; i < n; i++) d[i].idx = (uint32_t)i;
    qsort(d, n, sizeof *d, dent_cmp);
  }
}

static at_status decompose_stream(at_tok_workspace *ws, const tk_split *sp, bool compat,
                                  dent **out, size_t *n_out) {
  size_t cap_bytes = ws->u32_cap * sizeof(uint32_t);
  dent *d = (dent *)ws->u32;
  size_t cap = cap_bytes / sizeof(dent), n = 0, pend = 0;
  uint32_t len, buf[32];
  for (uint32_t i = 0; i < sp->len; i += len) {
    uint32_t c = cp_at(ws, sp, i, &len);
    int k = tk_decompose(c, compat, buf);
    if (n + (size_t)k > cap) {
      size_t need = (n + (size_t)k) * sizeof(dent) / sizeof(uint32_t) + 1;
      at_status st = TK_RESERVE(ws->u32, ws->u32_cap, need);
      if (st != AT_OK) return st;
      d = (dent *)ws->u32;
      cap = ws->u32_cap * sizeof(uint32_t) / sizeof(dent);
    }
    for (int j = 0; j < k; j++) {
      int ccc = tk_ccc(buf[j]);
      if (ccc == 0) {
        sort_block(d + pend, n - pend);
        pend = n;
      }
      d[n].cp = buf[j];
      d[n].change = j > 0 ? 1 : 0;
      d[n].ccc = ccc;
      n++;
    }
  }
  sort_block(d + pend, n - pend);
  *out = d;
  *n_out = n;
  return AT_OK;
}

static bool needs_unicode_pass(const at_tok_workspace *ws, const tk_split *sp, bool compat) {
  uint32_t n;
  for (uint32_t i = 0; i < sp->len; i += n) {
    uint32_t c = cp_at(ws, sp, i, &n);
    if (c >= (compat ? 0xA0u : 0xC0u)) return true;
  }
  return false;
}

static at_status nf_pass(at_tok_workspace *ws, tk_split *sp, bool compat, bool compose) {
  if (!needs_unicode_pass(ws, sp, compat)) return AT_OK;
  dent *d;
  size_t n;
  at_status st = decompose_stream(ws, sp, compat, &d, &n);
  if (st != AT_OK) return st;
  tk_xf x;
  tk_xf_begin(&x, ws, sp, 0);
  if (!compose) {
    for (size_t i = 0; i < n; i++) tk_xf_emit(&x, d[i].cp, d[i].change);
    return tk_xf_end(&x, sp);
  }
  /* Recomposition, the state machine of unicode-normalization-alignments:
   * a composee (last starter) absorbs following chars that compose with it
   * unless blocked; blocked chars wait in a buffer until the next starter. */
  size_t bstart = 0, bn = 0; /* buffer = indices into d (reused in place) */
  bool have_k = false;
  uint32_t kc = 0;
  int32_t kch = 0;
  int last_ccc = -1;
  dent *buf = d; /* buffered entries are written behind the read cursor */
  for (size_t i = 0; i < n; i++) {
    uint32_t ch = d[i].cp;
    int32_t change = d[i].change;
    int cls = d[i].ccc;
    if (!have_k) {
      if (cls != 0) { tk_xf_emit(&x, ch, change); continue; }
      have_k = true; kc = ch; kch = change;
      continue;
    }
    if (last_ccc < 0) {
      uint32_t r = tk_compose(kc, ch);
      if (r) { kc = r; kch = kch + change - 1; continue; }
      if (cls == 0) { tk_xf_emit(&x, kc, kch); kc = ch; kch = change; continue; }
      buf[bstart + bn].cp = ch; buf[bstart + bn].change = change; bn++;
      last_ccc = cls;
    } else {
      if (last_ccc >= cls) {
        if (cls == 0) {
          tk_xf_emit(&x, kc, kch);
          for (size_t j = 0; j < bn; j++) tk_xf_emit(&x, buf[bstart + j].cp, buf[bstart + j].change);
          bn = 0;
          kc = ch; kch = change; last_ccc = -1;
          continue;
        }
        buf[bstart + bn].cp = ch; buf[bstart + bn].change = change; bn++;
        last_ccc = cls;
        continue;
      }
      uint32_t r = tk_compose(kc, ch);
      if (r) { kc = r; kch = kch + change - 1; continue; }
      buf[bstart + bn].cp = ch; buf[bstart + bn].change = change; bn++;
      last_ccc = cls;
    }
  }
  if (have_k) {
    /* Finished: the composee first, then the blocked chars, as HF does. */
    tk_xf_emit(&x, kc, kch);
    for (size_t j = 0; j < bn; j++) tk_xf_emit(&x, buf[bstart + j].cp, buf[bstart + j].change);
  }
  return tk_xf_end(&x, sp);
}

static at_status bert_norm(const tk_norm *nm, at_tok_workspace *ws, tk_split *sp) {
  at_status st;
  if (all_ascii(ws, sp)) {
    /* ASCII: drop controls, whitespace -> ' ', lowercase; nothing else can
     * apply and each kept char keeps its own alignment. */
    bool any = false;
    const uint8_t *p = ws->nb + sp->off;
    for (uint32_t i = 0; i < sp->len && !any; i++) {
      uint8_t c = p[i];
      if (c < 0x20 || c == 0x7F || (nm->lowercase && c >= 'A' && c <= 'Z')) any = true;
    }
    if (!any) return AT_OK;
    if ((st = reserve_out(ws, sp->len)) != AT_OK) return st;
    p = ws->nb + sp->off;
    uint32_t out = (uint32_t)ws->nb_len;
    for (uint32_t i = 0; i < sp->len; i++) {
      uint8_t c = p[i];
      if (nm->clean_text) {
        if (c == '\t' || c == '\n' || c == '\r') c = ' ';
        else if (c < 0x20 || c == 0x7F) continue; /* incl. \v \f: controls first */
      }
      if (nm->lowercase && c >= 'A' && c <= 'Z') c += 32;
      ws->nb[ws->nb_len] = c;
      ws->al[ws->nb_len] = ws->al[sp->off + i];
      ws->nb_len++;
    }
    sp->off = out;
    sp->len = (uint32_t)(ws->nb_len - out);
    return AT_OK;
  }
  if (nm->clean_text && (st = filter_map(ws, sp, keep_clean, NULL, map_ws_to_space)) != AT_OK) return st;
  if (nm->chinese && (st = chinese_pass(ws, sp)) != AT_OK) return st;
  if (nm->strip_accents) {
    if ((st = nf_pass(ws, sp, false, false)) != AT_OK) return st;
    if ((st = filter_map(ws, sp, keep_not_mn, NULL, NULL)) != AT_OK) return st;
  }
  if (nm->lowercase && (st = lower_pass(ws, sp)) != AT_OK) return st;
  return AT_OK;
}

/* HF's lrstrip, including its mix of units: the trailing bound compares a
 * char index with the BYTE length, so on non-ASCII text trailing whitespace
 * survives exactly as it does there. */
static at_status strip_pass(at_tok_workspace *ws, tk_split *sp, bool left, bool right) {
  uint32_t n, nchars = 0, lead = 0, trail = 0;
  bool in_lead = true;
  for (uint32_t i = 0; i < sp->len; i += n) {
    uint32_t c = cp_at(ws, sp, i, &n);
    nchars++;
    if (in_lead && tk_is_ws(c)) lead++;
    else in_lead = false;
    if (tk_is_ws(c)) trail++;
    else trail = 0;
  }
  if (!left) lead = 0;
  if (!right) trail = 0;
  if (!lead && !trail) return AT_OK;
  int64_t blen = sp->len;
  tk_xf x;
  tk_xf_begin(&x, ws, sp, lead);
  int64_t idx = 0;
  for (uint32_t i = 0; i < sp->len; i += n, idx++) {
    uint32_t c = cp_at(ws, sp, i, &n);
    if (idx < (int64_t)lead || idx >= blen - (int64_t)trail) continue;
    tk_xf_emit(&x, c, idx == blen - (int64_t)trail - 1 ? -(int)trail : 0);
  }
  return tk_xf_end(&x, sp);
}

static at_status replace_pass(const tk_norm *nm, at_tok_workspace *ws, tk_split *sp) {
  at_status st = AT_OK;
  long nm_ = tk_pattern_find(&nm->pat, ws, ws->nb + sp->off, sp->len, &st);
  if (nm_ < 0) return st;
  if (nm_ == 0) return AT_OK;
  tk_xf x;
  tk_xf_begin(&x, ws, sp, 0);
  for (long k = 0; k < nm_ && x.st == AT_OK; k++) { /* a pass past its limit stops here */
    uint32_t s = ws->m[k].s, e = ws->m[k].e;
    if (s > x.pos) tk_xf_copy(&x, s - x.pos);
    while (x.pos < e) skip_char(&x);
    const uint8_t *c = (const uint8_t *)nm->content;
    uint32_t cl;
    for (size_t i = 0; i < nm->content_len; i += cl) tk_xf_emit(&x, tk_utf8_dec(c + i, &cl), 1);
  }
  tk_xf_copy(&x, sp->len - x.pos);
  return tk_xf_end(&x, sp);
}

static at_status prepend_pass(const tk_norm *nm, at_tok_workspace *ws, tk_split *sp) {
  if (!sp->len || !nm->content_len) return AT_OK;
  uint32_t fl;
  uint32_t first = cp_at(ws, sp, 0, &fl);
  tk_xf x;
  tk_xf_begin(&x, ws, sp, 0);
  const uint8_t *c = (const uint8_t *)nm->content;
  uint32_t cl;
  int j = 0;
  for (size_t i = 0; i < nm->content_len; i += cl, j++) tk_xf_emit(&x, tk_utf8_dec(c + i, &cl), j ? 1 : 0);
  tk_xf_emit(&x, first, 1);
  tk_xf_copy(&x, sp->len - x.pos);
  return tk_xf_end(&x, sp);
}

/* Nmt: SentencePiece's nmt_nfkc control-character rules (no NFKC): drop
 * ASCII/C1 controls, then turn other break-like characters into ' '. */
static bool keep_nmt(uint32_t c, const void *arg) {
  (void)arg;
  return !((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F ||
           c == 0x8F || c == 0x9F);
}
static uint32_t map_nmt(uint32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0C: case 0x0D: case 0x1680: case 0x2028: case 0x2029:
    case 0x2581: case 0xFEFF: case 0xFFFD:
      return ' ';
  }
  return (c >= 0x200B && c <= 0x200F) ? ' ' : c;
}

/* Precompiled. HF's rule (not SentencePiece's longest match): walk the text
 * by extended grapheme cluster; a cluster shorter than 6 bytes that the
 * charsmap knows (its shortest known prefix, see tk_charsmap_lookup) is
 * replaced whole; otherwise each char is looked up alone. The edits are
 * collected as HF's (char, change) list, including its quirk that a
 * shrinking replacement charges the difference to the LAST entry of the
 * list so far (possibly an earlier cluster's), then applied at once. */
static at_status ed_push(at_tok_workspace *ws, size_t *n, uint32_t cp, int32_t change) {
  at_status st = TK_RESERVE(ws->ed, ws->ed_cap, *n + 1);
  if (st != AT_OK) return st;
  ws->ed[*n].cp = cp;
  ws->ed[*n].change = change;
  (*n)++;
  return AT_OK;
}

static at_status ed_replace(at_tok_workspace *ws, size_t *n, int32_t old_chars, const char *r,
                            size_t rlen) {
  int32_t new_chars = 0;
  uint32_t l;
  at_status st;
  for (size_t i = 0; i < rlen; i += l, new_chars++)
    if ((st = ed_push(ws, n, tk_utf8_dec((const uint8_t *)r + i, &l), 0)) != AT_OK) return st;
  int32_t diff = new_chars - old_chars;
  if (diff > 0) {
    for (int32_t k = 0; k < diff; k++) ws->ed[*n - 1 - (size_t)k].change = 1;
  } else if (diff < 0 && *n) {
    ws->ed[*n - 1].change += diff;
  }
  return AT_OK;
}

static at_status precompiled_pass(const tk_charsmap *cm, at_tok_workspace *ws, tk_split *sp) {
  size_t ne = 0;
  bool modified = false;
  at_status st;
  uint32_t i = 0, l;
  while (i < sp->len) {
    /* the grapheme cluster [i, j) */
    const uint8_t *s = ws->nb + sp->off;
    uint32_t prev = tk_utf8_dec(s + i, &l), j = i + l;
    int32_t chars = 1;
    utf8proc_int32_t state = 0;
    while (j < sp->len) {
      uint32_t l2, c = tk_utf8_dec(s + j, &l2);
      if (utf8proc_grapheme_break_stateful((utf8proc_int32_t)prev, (utf8proc_int32_t)c, &state)) break;
      prev = c;
      j += l2;
      chars++;
    }
    const char *r;
    size_t rl;
    if (j - i < 6) {
      int f = tk_charsmap_lookup(cm, s + i, j - i, &r, &rl);
      if (f < 0) return AT_ERR_PARSE;
      if (f) {
        modified = true;
        if ((st = ed_replace(ws, &ne, chars, r, rl)) != AT_OK) return st;
        i = j;
        continue;
      }
    }
    for (; i < j; i += l) {
      s = ws->nb + sp->off;
      uint32_t c = tk_utf8_dec(s + i, &l);
      int f = tk_charsmap_lookup(cm, s + i, l, &r, &rl);
      if (f < 0) return AT_ERR_PARSE;
      if (f) {
        modified = true;
        st = ed_replace(ws, &ne, 1, r, rl);
      } else {
        st = ed_push(ws, &ne, c, 0);
      }
      if (st != AT_OK) return st;
    }
  }
  if (!modified) return AT_OK;
  tk_xf x;
  tk_xf_begin(&x, ws, sp, 0);
  for (size_t k = 0; k < ne; k++) tk_xf_emit(&x, ws->ed[k].cp, ws->ed[k].change);
  return tk_xf_end(&x, sp);
}

at_status tk_normalize(const tk_norm *nm, at_tok_workspace *ws, tk_split *sp) {
  switch (nm->kind) {
    case TK_N_BERT: return bert_norm(nm, ws, sp);
    case TK_N_NFD: return nf_pass(ws, sp, false, false);
    case TK_N_NFKD: return nf_pass(ws, sp, true, false);
    case TK_N_NFC: return nf_pass(ws, sp, false, true);
    case TK_N_NFKC: return nf_pass(ws, sp, true, true);
    case TK_N_LOWER: return lower_pass(ws, sp);
    case TK_N_STRIP_ACCENTS: return filter_map(ws, sp, keep_not_mark, NULL, NULL);
    case TK_N_STRIP: return strip_pass(ws, sp, nm->left, nm->right);
    case TK_N_REPLACE: return replace_pass(nm, ws, sp);
    case TK_N_PREPEND: return prepend_pass(nm, ws, sp);
    case TK_N_PRECOMPILED: return precompiled_pass(&nm->cmap, ws, sp);
    case TK_N_NMT: return filter_map(ws, sp, keep_nmt, NULL, map_nmt);
    case TK_N_SEQ:
      for (size_t i = 0; i < nm->n_items; i++) {
        at_status st = tk_normalize(&nm->items[i], ws, sp);
        if (st != AT_OK) return st;
      }
      return AT_OK;
  }
  return at_fail(AT_ERR_UNSUPPORTED, "tokenizer: unknown normalizer");
}

void tk_norm_free(tk_norm *nm) {
  if (!nm) return;
  for (size_t i = 0; i < nm->n_items; i++) tk_norm_free(&nm->items[i]);
  free(nm->items);
  tk_pattern_free(&nm->pat);
  tk_charsmap_free(&nm->cmap);
  free(nm->content);
  memset(nm, 0, sizeof *nm);
}
