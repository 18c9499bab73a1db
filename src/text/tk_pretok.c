/* src/text/tk_pretok.c — pre-tokenizers and the splitting machinery they
 * share: patterns (literal strings, PCRE2 regexes), HF's five delimiter
 * behaviours, and a hand-written matcher for the GPT-2 split regex
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (the unit tests check it against PCRE2 running that very regex).
 *
 * Splitting never copies text: a piece is a byte range of its parent's
 * normalized bytes and keeps their alignments. Only ByteLevel (bytes to the
 * GPT-2 alphabet) and Metaspace (spaces to the replacement, prefix) rewrite
 * text, through the transform engine. */
#include <stdlib.h>
#include <string.h>

#include "text/tk.h"

/* ---------------------------------------------------------------- patterns */
at_status tk_pattern_compile(tk_pattern *p, const char *src, size_t len, bool regex,
                             const char *where) {
  memset(p, 0, sizeof *p);
  p->kind = regex ? TK_PAT_REGEX : TK_PAT_STRING;
  p->str = malloc(len + 1);
  if (!p->str) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  memcpy(p->str, src, len);
  p->str[len] = '\0';
  p->len = len;
  if (!regex) return AT_OK;
  int err;
  PCRE2_SIZE eoff;
  p->re = pcre2_compile((PCRE2_SPTR)src, len, PCRE2_UTF | PCRE2_UCP, &err, &eoff, NULL);
  if (!p->re) {
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(err, msg, sizeof msg);
    return at_fail(AT_ERR_UNSUPPORTED, "tokenizer.json: %s: regex /%s/ not supported by PCRE2 "
                   "(at %zu: %s)", where, p->str, (size_t)eoff, (const char *)msg);
  }
  (void)pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* optional speed-up */
  return AT_OK;
}

void tk_pattern_free(tk_pattern *p) {
  if (p->re) pcre2_code_free(p->re);
  free(p->str);
  memset(p, 0, sizeof *p);
}

static at_status push_match(at_tok_workspace *ws, size_t *n, uint32_t s, uint32_t e, int m) {
  at_status st = TK_RESERVE(ws->m, ws->m_cap, *n + 1);
  if (st != AT_OK) return st;
  ws->m[*n].s = s;
  ws->m[*n].e = e;
  ws->m[*n].match = m;
  (*n)++;
  return AT_OK;
}

long tk_pattern_find(const tk_pattern *p, at_tok_workspace *ws, const uint8_t *s, size_t n,
                     at_status *st) {
  size_t cnt = 0;
  *st = AT_OK;
  if (p->kind == TK_PAT_STRING) {
    if (!p->len) return 0;
    size_t i = 0;
    while (i + p->len <= n) {
      const uint8_t *q = memchr(s + i, (uint8_t)p->str[0], n - i - p->len + 1);
      if (!q) break;
      size_t at = (size_t)(q - s);
      if (memcmp(q, p->str, p->len) == 0) {
        if ((*st = push_match(ws, &cnt, (uint32_t)at, (uint32_t)(at + p->len), 1)) != AT_OK) return -1;
        i = at + p->len;
      } else {
        i = at + 1;
      }
    }
    return (long)cnt;
  }
  if (!ws->md) {
    ws->md = pcre2_match_data_create(16, NULL);
    if (!ws->md) { *st = at_fail(AT_ERR_NOMEM, "tokenizer: out of memory"); return -1; }
  }
  size_t i = 0;
  while (i <= n) {
    int rc = pcre2_match(p->re, s, n, i, PCRE2_NO_UTF_CHECK, ws->md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0 && rc != 0) {
      *st = at_fail(AT_ERR_LIMIT, "tokenizer: regex /%s/ failed (PCRE2 error %d)", p->str, rc);
      return -1;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(ws->md);
    size_t ms = ov[0], me = ov[1];
    if ((*st = push_match(ws, &cnt, (uint32_t)ms, (uint32_t)me, 1)) != AT_OK) return -1;
    if (me > ms) {
      i = me;
    } else { /* empty match: step over one character */
      if (ms >= n) break;
      uint32_t l;
      (void)tk_utf8_dec(s + ms, &l);
      i = ms + l;
    }
  }
  return (long)cnt;
}

/* --------------------------------------------------------- split engine */
static at_status out_split(at_tok_workspace *ws, uint32_t off, uint32_t len) {
  return tk_push_split(ws, off, len, -1);
}

/* ws->m[0..n) holds (range, is_match) entries tiling the split; apply the
 * behaviour and append the kept pieces to sp2. */
static at_status apply_behavior(at_tok_workspace *ws, const tk_split *sp, size_t n, int behavior) {
  tk_match *m = ws->m;
  size_t k = 0;
  switch (behavior) {
    case TK_B_REMOVED:
      for (size_t i = 0; i < n; i++)
        if (!m[i].match) m[k++] = m[i];
      break;
    case TK_B_ISOLATED:
      k = n;
      break;
    case TK_B_CONTIGUOUS: {
      int prev = 0;
      for (size_t i = 0; i < n; i++) {
        int im = m[i].match;
        if (im == prev && k) m[k - 1].e = m[i].e;
        else m[k++] = m[i];
        prev = im;
      }
      break;
    }
    case TK_B_MERGED_PREV: {
      int prev = 0;
      for (size_t i = 0; i < n; i++) {
        int im = m[i].match;
        if (im && !prev && k) m[k - 1].e = m[i].e;
        else m[k++] = m[i];
        prev = im;
      }
      break;
    }
    case TK_B_MERGED_NEXT: {
      /* Fold from the right, writing from the end of the array. */
      int prev = 0;
      size_t w = n;
      for (size_t i = n; i-- > 0;) {
        int im = m[i].match;
        if (im && !prev && w < n) m[w].s = m[i].s;
        else m[--w] = m[i];
        prev = im;
      }
      k = n - w;
      memmove(m, m + w, k * sizeof *m);
      break;
    }
  }
  for (size_t i = 0; i < k; i++) {
    at_status st = out_split(ws, sp->off + m[i].s, m[i].e - m[i].s);
    if (st != AT_OK) return st;
  }
  return AT_OK;
}

/* Matches of a per-character predicate: every matching char is one match. */
typedef bool (*char_pred)(uint32_t c, uint32_t arg);
static long char_matches(at_tok_workspace *ws, const tk_split *sp, char_pred f, uint32_t arg,
                         at_status *st) {
  size_t cnt = 0;
  uint32_t last = 0, n;
  const uint8_t *s = ws->nb + sp->off;
  for (uint32_t i = 0; i < sp->len; i += n) {
    uint32_t c = tk_utf8_dec(s + i, &n);
    if (f(c, arg)) {
      if (last < i && (*st = push_match(ws, &cnt, last, i, 0)) != AT_OK) return -1;
      if ((*st = push_match(ws, &cnt, i, i + n, 1)) != AT_OK) return -1;
      last = i + n;
    }
  }
  if (last < sp->len && (*st = push_match(ws, &cnt, last, sp->len, 0)) != AT_OK) return -1;
  return (long)cnt;
}

static bool pred_ws(uint32_t c, uint32_t a) { (void)a; return tk_is_ws(c); }
static bool pred_punct(uint32_t c, uint32_t a) { (void)a; return tk_is_punct(c); }
static bool pred_digit(uint32_t c, uint32_t a) { (void)a; return tk_is_number(c); }
static bool pred_eq(uint32_t c, uint32_t a) { return c == a; }

static at_status split_pred(at_tok_workspace *ws, const tk_split *sp, char_pred f, uint32_t arg,
                            int behavior) {
  at_status st = AT_OK;
  long n = char_matches(ws, sp, f, arg, &st);
  if (n < 0) return st;
  return apply_behavior(ws, sp, (size_t)n, behavior);
}

static at_status split_pattern(at_tok_workspace *ws, const tk_split *sp, const tk_pattern *p,
                               int behavior, bool invert) {
  at_status st = AT_OK;
  long nm = tk_pattern_find(p, ws, ws->nb + sp->off, sp->len, &st);
  if (nm < 0) return st;
  /* Interleave the gaps (in place, from the back) and apply `invert`. */
  size_t n = (size_t)nm, total = 0;
  uint32_t prev = 0;
  for (size_t i = 0; i < n; i++) {
    if (ws->m[i].s > prev) total++;
    total++;
    prev = ws->m[i].e;
  }
  if (prev < sp->len || n == 0) total++;
  if ((st = TK_RESERVE(ws->m, ws->m_cap, total)) != AT_OK) return st;
  size_t w = total;
  uint32_t end = sp->len;
  if (n == 0) {
    ws->m[0].s = 0; ws->m[0].e = sp->len; ws->m[0].match = invert ? 1 : 0;
  } else {
    if (ws->m[n - 1].e < sp->len) {
      w--; ws->m[w].s = ws->m[n - 1].e; ws->m[w].e = end; ws->m[w].match = invert;
    }
    for (size_t i = n; i-- > 0;) {
      uint32_t s = ws->m[i].s, e = ws->m[i].e;
      w--; ws->m[w].s = s; ws->m[w].e = e; ws->m[w].match = !invert;
      uint32_t gs = i ? ws->m[i - 1].e : 0;
      if (s > gs) { w--; ws->m[w].s = gs; ws->m[w].e = s; ws->m[w].match = invert; }
    }
  }
  if (!sp->len) return AT_OK;
  return apply_behavior(ws, sp, total, behavior);
}

/* ------------------------------------------------------------- splitters */
static at_status bert_split(at_tok_workspace *ws, const tk_split *sp) {
  /* whitespace removed, punctuation isolated (HF's two splits fused) */
  const uint8_t *s = ws->nb + sp->off;
  uint32_t start = 0, n;
  at_status st;
  for (uint32_t i = 0; i < sp->len; i += n) {
    uint32_t c;
    if (s[i] < 0x80) { c = s[i]; n = 1; }
    else c = tk_utf8_dec(s + i, &n);
    if (tk_is_ws(c)) {
      if ((st = out_split(ws, sp->off + start, i - start)) != AT_OK) return st;
      start = i + n;
    } else if (tk_is_punct(c)) {
      if ((st = out_split(ws, sp->off + start, i - start)) != AT_OK) return st;
      if ((st = out_split(ws, sp->off + i, n)) != AT_OK) return st;
      start = i + n;
    }
  }
  return out_split(ws, sp->off + start, sp->len - start);
}

/* Whitespace: the matches of \w+|[^\w\s]+ are kept, the rest removed. */
static at_status whitespace_split(at_tok_workspace *ws, const tk_split *sp) {
  const uint8_t *s = ws->nb + sp->off;
  uint32_t n, start = 0;
  int cls_run = 0; /* 0 none, 1 word, 2 other */
  at_status st;
  for (uint32_t i = 0; i < sp->len; i += n) {
    uint32_t c = tk_utf8_dec(s + i, &n);
    int cls = tk_is_word(c) ? 1 : tk_is_ws(c) ? 0 : 2;
    if (cls != cls_run) {
      if (cls_run && (st = out_split(ws, sp->off + start, i - start)) != AT_OK) return st;
      start = i;
      cls_run = cls;
    }
  }
  if (cls_run) return out_split(ws, sp->off + start, sp->len - start);
  return AT_OK;
}

static inline int g2_class(uint32_t c) { /* 0 ws, 1 letter, 2 number, 3 other */
  if (c < 0x80) {
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return 1;
    if (c >= '0' && c <= '9') return 2;
    if (c == ' ' || (c >= 9 && c <= 13)) return 0;
    return 3;
  }
  if (tk_is_ws(c)) return 0;
  if (tk_is_letter(c)) return 1;
  if (tk_is_number(c)) return 2;
  return 3;
}

size_t tk_gpt2_next(const uint8_t *s, size_t n, size_t i) {
  uint32_t l;
  uint32_t c = tk_utf8_dec(s + i, &l);
  if (c == '\'' && i + 1 < n) {
    uint8_t a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n) {
      uint8_t b = s[i + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
  }
  size_t j = i;
  int cls = g2_class(c);
  if (c == ' ' && i + 1 < n) {
    uint32_t l2;
    int cls2 = g2_class(tk_utf8_dec(s + i + 1, &l2));
    if (cls2 != 0) { j = i + 1; cls = cls2; }
  }
  if (cls != 0) {
    uint32_t m;
    size_t k = j;
    while (k < n && g2_class(tk_utf8_dec(s + k, &m)) == cls) k += m;
    return k;
  }
  /* whitespace run */
  size_t k = i, last = i;
  int count = 0;
  uint32_t m;
  while (k < n && g2_class(tk_utf8_dec(s + k, &m)) == 0) { last = k; k += m; count++; }
  if (k == n) return n;
  if (count >= 2) return last;
  return k;
}

static at_status gpt2_split(at_tok_workspace *ws, const tk_split *sp) {
  const uint8_t *s = ws->nb + sp->off;
  size_t i = 0;
  at_status st;
  while (i < sp->len) {
    size_t e = tk_gpt2_next(s, sp->len, i);
    if ((st = out_split(ws, sp->off + (uint32_t)i, (uint32_t)(e - i))) != AT_OK) return st;
    s = ws->nb + sp->off; /* out_split never moves nb, but stay safe */
    i = e;
  }
  return AT_OK;
}

/* Bytes to the GPT-2 alphabet; every byte of a char keeps its alignment. */
static at_status bytelevel_map(at_tok_workspace *ws, tk_split *sp) {
  size_t need = (size_t)sp->len * 2;
  at_status st;
  if ((st = TK_RESERVE(ws->nb, ws->nb_cap, ws->nb_len + need)) != AT_OK) return st;
  if ((st = TK_RESERVE(ws->al, ws->al_cap, ws->nb_len + need)) != AT_OK) return st;
  uint32_t out = (uint32_t)ws->nb_len;
  const uint8_t *s = ws->nb + sp->off;
  for (uint32_t i = 0; i < sp->len; i++) {
    uint32_t cp = tk_byte_to_cp(s[i]);
    tk_span a = ws->al[sp->off + i];
    uint32_t k = tk_utf8_enc(cp, ws->nb + ws->nb_len);
    for (uint32_t j = 0; j < k; j++) ws->al[ws->nb_len + j] = a;
    ws->nb_len += k;
  }
  sp->off = out;
  sp->len = (uint32_t)(ws->nb_len - out);
  return AT_OK;
}

static at_status prepend_str(at_tok_workspace *ws, tk_split *sp, uint32_t cp) {
  uint32_t fl;
  uint32_t first = tk_utf8_dec(ws->nb + sp->off, &fl);
  tk_xf x;
  tk_xf_begin(&x, ws, sp, 0);
  tk_xf_emit(&x, cp, 0);
  tk_xf_emit(&x, first, 1);
  tk_xf_copy(&x, sp->len - x.pos);
  return tk_xf_end(&x, sp);
}

static at_status metaspace_one(const tk_pretok *p, at_tok_workspace *ws, tk_split sp) {
  at_status st;
  /* replace ' ' by the replacement (each inserted char takes the space's
   * alignment, as HF's replace does) */
  if (memchr(ws->nb + sp.off, ' ', sp.len)) {
    tk_xf x;
    tk_xf_begin(&x, ws, &sp, 0);
    const uint8_t *s;
    /* x.st: once the pass is over its limit, copy and emit stop moving
     * x.pos, and stepping one byte a time to the next space was quadratic */
    while (x.pos < sp.len && x.st == AT_OK) {
      s = ws->nb + sp.off;
      const uint8_t *q = memchr(s + x.pos, ' ', sp.len - x.pos);
      if (!q) { tk_xf_copy(&x, sp.len - x.pos); break; }
      uint32_t at = (uint32_t)(q - s);
      tk_xf_copy(&x, at - x.pos);
      x.pos += 1; /* consume the space */
      tk_xf_emit(&x, p->replacement, 1);
    }
    if ((st = tk_xf_end(&x, &sp)) != AT_OK) return st;
  }
  if (sp.len) {
    uint32_t fl;
    uint32_t first = tk_utf8_dec(ws->nb + sp.off, &fl);
    bool pre = false;
    if (p->prepend_scheme == TK_PREPEND_ALWAYS) pre = first != p->replacement;
    else if (p->prepend_scheme == TK_PREPEND_FIRST) pre = first != p->replacement && sp.base == 0;
    if (pre && (st = prepend_str(ws, &sp, p->replacement)) != AT_OK) return st;
  }
  if (!p->split) return out_split(ws, sp.off, sp.len);
  return split_pred(ws, &sp, pred_eq, p->replacement, TK_B_MERGED_NEXT);
}

static at_status pretok_one(const tk_pretok *p, at_tok_workspace *ws, tk_split sp) {
  switch (p->kind) {
    case TK_P_BERT: return bert_split(ws, &sp);
    case TK_P_WHITESPACE: return whitespace_split(ws, &sp);
    case TK_P_WSSPLIT: return split_pred(ws, &sp, pred_ws, 0, TK_B_REMOVED);
    case TK_P_PUNCT: return split_pred(ws, &sp, pred_punct, 0, p->behavior);
    case TK_P_DIGITS:
      return split_pred(ws, &sp, pred_digit, 0,
                        p->individual_digits ? TK_B_ISOLATED : TK_B_CONTIGUOUS);
    case TK_P_CHARDELIM: return split_pred(ws, &sp, pred_eq, p->delim, TK_B_REMOVED);
    case TK_P_SPLIT: return split_pattern(ws, &sp, &p->pat, p->behavior, p->invert);
    case TK_P_METASPACE: return metaspace_one(p, ws, sp);
    case TK_P_BYTELEVEL: {
      at_status st;
      if (p->add_prefix_space && sp.len && ws->nb[sp.off] != ' ' &&
          (st = prepend_str(ws, &sp, ' ')) != AT_OK)
        return st;
      size_t first = ws->sp2_n;
      if (p->use_regex) {
        if ((st = gpt2_split(ws, &sp)) != AT_OK) return st;
      } else if ((st = out_split(ws, sp.off, sp.len)) != AT_OK) {
        return st;
      }
      for (size_t i = first; i < ws->sp2_n; i++)
        if ((st = bytelevel_map(ws, &ws->sp2[i])) != AT_OK) return st;
      return AT_OK;
    }
  }
  return at_fail(AT_ERR_UNSUPPORTED, "tokenizer: unknown pre-tokenizer");
}

static at_status pretok_pass(const tk_pretok *p, at_tok_workspace *ws) {
  ws->sp2_n = 0;
  at_status st;
  for (size_t i = 0; i < ws->sp_n; i++) {
    tk_split sp = ws->sp[i];
    st = sp.token >= 0 ? tk_keep_split(ws, sp) : pretok_one(p, ws, sp);
    if (st != AT_OK) return st;
  }
  tk_swap_splits(ws);
  return AT_OK;
}

at_status tk_pretokenize(const tk_pretok *p, at_tok_workspace *ws) {
  if (p->kind != TK_P_SEQ) return pretok_pass(p, ws);
  for (size_t i = 0; i < p->n_items; i++) {
    at_status st = tk_pretokenize(&p->items[i], ws);
    if (st != AT_OK) return st;
  }
  return AT_OK;
}

void tk_pretok_free(tk_pretok *p) {
  if (!p) return;
  tk_pattern_free(&p->pat);
  for (size_t i = 0; i < p->n_items; i++) tk_pretok_free(&p->items[i]);
  free(p->items);
}
