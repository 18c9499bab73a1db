/* src/text/tk_decode.c — ids back to text: the decoders (WordPiece,
 * ByteLevel, Metaspace, BPEDecoder, Replace, Fuse, Strip, ByteFallback,
 * Sequence) applied the way HF chains them: each decoder maps the list of
 * token strings to a new list, and the final list is concatenated.
 *
 * A token list is one byte buffer plus the start offset of each string
 * (tokens may contain NUL bytes: byte-level "Ā" decodes to 0x00). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tk.h"

typedef struct tlist {
  char *buf;
  size_t len, cap;
  size_t n;
  size_t *idx;
  size_t idx_cap;
} tlist;

static inline const char *tl_get(const tlist *l, size_t i, size_t *n) {
  size_t e = i + 1 < l->n ? l->idx[i + 1] : l->len;
  *n = e - l->idx[i];
  return l->buf + l->idx[i];
}
static at_status tl_add(tlist *l, const char *s, size_t n) {
  at_status st = TK_RESERVE(l->buf, l->cap, l->len + n + 1);
  if (st == AT_OK) st = TK_RESERVE(l->idx, l->idx_cap, l->n + 1);
  if (st != AT_OK) return st;
  if (n) memcpy(l->buf + l->len, s, n);
  l->idx[l->n++] = l->len;
  l->len += n;
  l->buf[l->len] = '\0';
  return AT_OK;
}
/* Append to the last string of the list (which must be the one being built). */
static at_status tl_cat(tlist *l, const char *s, size_t n) {
  at_status st = TK_RESERVE(l->buf, l->cap, l->len + n + 1);
  if (st != AT_OK) return st;
  if (n) memcpy(l->buf + l->len, s, n);
  l->len += n;
  l->buf[l->len] = '\0';
  return AT_OK;
}
static void tl_clear(tlist *l) { l->len = 0; l->n = 0; }

static const char *find_bytes(const char *h, size_t hn, const char *nd, size_t nn) {
  if (!nn || nn > hn) return NULL;
  for (size_t i = 0; i + nn <= hn; i++) {
    const char *q = memchr(h + i, nd[0], hn - nn - i + 1);
    if (!q) return NULL;
    if (memcmp(q, nd, nn) == 0) return q;
    i = (size_t)(q - h);
  }
  return NULL;
}

/* Replace every `from` by `to` in tok[0..n) writing into out's last string. */
static at_status replace_all(tlist *out, const char *tok, size_t n, const char *from, size_t fl,
                             const char *to, size_t tl) {
  size_t i = 0;
  while (i < n) {
    const char *q = find_bytes(tok + i, n - i, from, fl);
    if (!q) return tl_cat(out, tok + i, n - i);
    at_status st = tl_cat(out, tok + i, (size_t)(q - tok) - i);
    if (st == AT_OK) st = tl_cat(out, to, tl);
    if (st != AT_OK) return st;
    i = (size_t)(q - tok) + fl;
  }
  return AT_OK;
}

static const struct { const char *a, *b; } k_cleanup[] = {
    {" .", "."},  {" ?", "?"},   {" !", "!"},   {" ,", ","},   {" ' ", "'"},
    {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"},
    {" 've", "'ve"}, {" 're", "'re"}};

static at_status cleanup(tlist *out, tlist *tmp) {
  /* applied to the last string of `out`, one replacement after the other */
  for (size_t r = 0; r < sizeof k_cleanup / sizeof k_cleanup[0]; r++) {
    size_t start = out->idx[out->n - 1], n = out->len - start;
    if (!find_bytes(out->buf + start, n, k_cleanup[r].a, strlen(k_cleanup[r].a))) continue;
    tl_clear(tmp);
    at_status st = tl_add(tmp, "", 0);
    if (st == AT_OK) st = replace_all(tmp, out->buf + start, n, k_cleanup[r].a, strlen(k_cleanup[r].a),
                                      k_cleanup[r].b, strlen(k_cleanup[r].b));
    if (st != AT_OK) return st;
    out->len = start;
    out->n--;
    if ((st = tl_add(out, tmp->buf, tmp->len)) != AT_OK) return st;
  }
  return AT_OK;
}

/* Rust String::from_utf8_lossy: each maximal invalid subpart -> U+FFFD. */
static at_status lossy(tlist *out, const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t ok = tk_utf8_valid_prefix(s + i, n - i);
    at_status st = tl_cat(out, (const char *)s + i, ok);
    if (st != AT_OK) return st;
    i += ok;
    if (i >= n) break;
    /* length of the maximal invalid subpart starting at i */
    uint8_t c = s[i];
    size_t need = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    size_t k = 1;
    for (size_t j = 0; j < need && i + k < n; j++) {
      uint8_t b = s[i + k];
      if (j == 0 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) break;
      k++;
    }
    if ((st = tl_cat(out, "\xEF\xBF\xBD", 3)) != AT_OK) return st;
    i += k;
  }
  return AT_OK;
}

static at_status apply(const tk_dec *d, tlist *in, tlist *out, tlist *tmp);

static at_status apply_seq(const tk_dec *d, tlist *in, tlist *out, tlist *tmp) {
  for (size_t i = 0; i < d->n_items; i++) {
    tl_clear(out);
    at_status st = apply(&d->items[i], in, out, tmp);
    if (st != AT_OK) return st;
    tlist x = *in; *in = *out; *out = x;
  }
  /* result is in `in`; move it to `out` */
  tlist x = *in; *in = *out; *out = x;
  return AT_OK;
}

static at_status apply(const tk_dec *d, tlist *in, tlist *out, tlist *tmp) {
  at_status st = AT_OK;
  const char *p;
  size_t n;
  switch (d->kind) {
    case TK_D_SEQ:
      return apply_seq(d, in, out, tmp);
    case TK_D_WORDPIECE:
      for (size_t i = 0; i < in->n; i++) {
        p = tl_get(in, i, &n);
        if ((st = tl_add(out, "", 0)) != AT_OK) return st;
        if (i != 0) {
          if (n >= d->prefix_len && memcmp(p, d->prefix, d->prefix_len) == 0) {
            /* replacen(prefix, "", 1): the first occurrence, which is at 0 */
            st = tl_cat(out, p + d->prefix_len, n - d->prefix_len);
          } else {
            st = tl_cat(out, " ", 1);
            if (st == AT_OK) st = tl_cat(out, p, n);
          }
        } else {
          st = tl_cat(out, p, n);
        }
        if (st == AT_OK && d->cleanup) st = cleanup(out, tmp);
        if (st != AT_OK) return st;
      }
      return AT_OK;
    case TK_D_BYTELEVEL: {
      /* all tokens -> bytes, joined, then lossy UTF-8: one output string */
      tmp->len = 0;
      tmp->n = 0;
      if ((st = tl_add(tmp, "", 0)) != AT_OK) return st;
      for (size_t i = 0; i < in->n; i++) {
        p = tl_get(in, i, &n);
        bool all = true;
        uint32_t l;
        for (size_t j = 0; j < n && all; j += l) all = tk_cp_to_byte(tk_utf8_dec((const uint8_t *)p + j, &l)) >= 0;
        if (all) {
          for (size_t j = 0; j < n; j += l) {
            char b = (char)tk_cp_to_byte(tk_utf8_dec((const uint8_t *)p + j, &l));
            if ((st = tl_cat(tmp, &b, 1)) != AT_OK) return st;
          }
        } else if ((st = tl_cat(tmp, p, n)) != AT_OK) {
          return st;
        }
      }
      if ((st = tl_add(out, "", 0)) != AT_OK) return st;
      return lossy(out, (const uint8_t *)tmp->buf, tmp->len);
    }
    case TK_D_METASPACE:
      for (size_t i = 0; i < in->n; i++) {
        p = tl_get(in, i, &n);
        if ((st = tl_add(out, "", 0)) != AT_OK) return st;
        uint32_t l;
        for (size_t j = 0; j < n && st == AT_OK; j += l) {
          uint32_t c = tk_utf8_dec((const uint8_t *)p + j, &l);
          if (c == d->replacement) {
            if (i == 0 && d->prepend_scheme != TK_PREPEND_NEVER) continue;
            st = tl_cat(out, " ", 1);
          } else {
            st = tl_cat(out, p + j, l);
          }
        }
        if (st != AT_OK) return st;
      }
      return AT_OK;
    case TK_D_BPE:
      for (size_t i = 0; i < in->n; i++) {
        p = tl_get(in, i, &n);
        if ((st = tl_add(out, "", 0)) != AT_OK) return st;
        st = replace_all(out, p, n, d->prefix, d->prefix_len, i + 1 == in->n ? "" : " ",
                         i + 1 == in->n ? 0 : 1);
        if (st != AT_OK) return st;
      }
      return AT_OK;
    case TK_D_REPLACE:
      for (size_t i = 0; i < in->n; i++) {
        p = tl_get(in, i, &n);
        if ((st = tl_add(out, "", 0)) != AT_OK) return st;
        if ((st = replace_all(out, p, n, d->pattern, d->pattern_len, d->content, d->content_len)) != AT_OK)
          return st;
      }
      return AT_OK;
    case TK_D_FUSE:
      if ((st = tl_add(out, "", 0)) != AT_OK) return st;
      for (size_t i = 0; i < in->n; i++) {
        p = tl_get(in, i, &n);
        if ((st = tl_cat(out, p, n)) != AT_OK) return st;
      }
      return AT_OK;
    case TK_D_STRIP:
      for (size_t i = 0; i < in->n; i++) {
        p = tl_get(in, i, &n);
        size_t a = 0, b = n;
        uint32_t l;
        for (int k = 0; k < d->strip_left && a < b; k++) {
          if (tk_utf8_dec((const uint8_t *)p + a, &l) != d->strip_char) break;
          a += l;
        }
        for (int k = 0; k < d->strip_right && b > a; k++) {
          size_t j = b;
          do j--; while (j > a && ((uint8_t)p[j] & 0xC0) == 0x80);
          if (tk_utf8_dec((const uint8_t *)p + j, &l) != d->strip_char) break;
          b = j;
        }
        if ((st = tl_add(out, p + a, b - a)) != AT_OK) return st;
      }
      return AT_OK;
    case TK_D_BYTEFALLBACK: {
      /* runs of <0xNN> tokens become bytes; an invalid run gives one U+FFFD
       * per token, as HF does */
      size_t i = 0;
      while (i < in->n) {
        p = tl_get(in, i, &n);
        unsigned v;
        if (n == 6 && sscanf(p, "<0x%2X>", &v) == 1) {
          tl_clear(tmp);
          if ((st = tl_add(tmp, "", 0)) != AT_OK) return st;
          size_t runs = 0;
          while (i < in->n) {
            p = tl_get(in, i, &n);
            if (!(n == 6 && sscanf(p, "<0x%2X>", &v) == 1)) break;
            char bb = (char)v;
            if ((st = tl_cat(tmp, &bb, 1)) != AT_OK) return st;
            i++;
            runs++;
          }
          size_t blen = tmp->len;
          if (tk_utf8_valid_prefix((const uint8_t *)tmp->buf, blen) == blen) {
            if ((st = tl_add(out, tmp->buf, blen)) != AT_OK) return st;
          } else {
            for (size_t r = 0; r < runs; r++)
              if ((st = tl_add(out, "\xEF\xBF\xBD", 3)) != AT_OK) return st;
          }
          continue;
        }
        if ((st = tl_add(out, p, n)) != AT_OK) return st;
        i++;
      }
      return AT_OK;
    }
  }
  return at_fail(AT_ERR_UNSUPPORTED, "tokenizer: unknown decoder");
}

at_status at_tokenizer_decode(const at_tokenizer *t, at_tok_workspace *ws, const int32_t *ids,
                              size_t n, bool skip_special_tokens, const char **text_out,
                              size_t *len_out) {
  if (!t || !ws || !text_out || (n && !ids))
    return at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_decode: NULL argument");
  tlist a = {ws->dec, 0, ws->dec_cap, 0, ws->dec_idx, ws->dec_idx_cap};
  tlist b = {ws->dec2, 0, ws->dec2_cap, 0, ws->dec2_idx, ws->dec2_idx_cap};
  tlist c = {ws->dec3, 0, ws->dec3_cap, 0, ws->dec3_idx, ws->dec3_idx_cap};
  at_status st = AT_OK;
  for (size_t i = 0; i < n && st == AT_OK; i++) {
    if (ids[i] < 0 || (size_t)ids[i] >= t->n_ids || !t->id_str[ids[i]]) {
      st = at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_decode: id %d is not in the vocabulary", ids[i]);
      break;
    }
    if (skip_special_tokens && t->id_special[ids[i]]) continue;
    st = tl_add(&a, t->id_str[ids[i]], strlen(t->id_str[ids[i]]));
  }
  if (st == AT_OK) {
    if (t->dec) {
      st = apply(t->dec, &a, &b, &c);
    } else { /* no decoder: tokens joined by spaces */
      if ((st = tl_add(&b, "", 0)) == AT_OK) {
        for (size_t i = 0; i < a.n && st == AT_OK; i++) {
          size_t l;
          const char *p = tl_get(&a, i, &l);
          if (i) st = tl_cat(&b, " ", 1);
          if (st == AT_OK) st = tl_cat(&b, p, l);
        }
      }
    }
  }
  /* join the final list */
  if (st == AT_OK) {
    tl_clear(&a);
    st = tl_add(&a, "", 0);
    for (size_t i = 0; i < b.n && st == AT_OK; i++) {
      size_t l;
      const char *p = tl_get(&b, i, &l);
      st = tl_cat(&a, p, l);
    }
  }
  ws->dec = a.buf; ws->dec_cap = a.cap; ws->dec_idx = a.idx; ws->dec_idx_cap = a.idx_cap;
  ws->dec2 = b.buf; ws->dec2_cap = b.cap; ws->dec2_idx = b.idx; ws->dec2_idx_cap = b.idx_cap;
  ws->dec3 = c.buf; ws->dec3_cap = c.cap; ws->dec3_idx = c.idx; ws->dec3_idx_cap = c.idx_cap;
  if (st != AT_OK) return st;
  *text_out = ws->dec;
  if (len_out) *len_out = a.len;
  return AT_OK;
}
