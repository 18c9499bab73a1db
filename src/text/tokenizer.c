/* src/text/tokenizer.c — the public tokenizer API (anytime/tokenizer.h): the
 * encode pipeline, added-token matching, truncation, post-processing
 * (BertProcessing, RobertaProcessing, TemplateProcessing, ByteLevel,
 * Sequence), padding, offset units, and the workspace.
 *
 * DESIGN. at_tokenizer is immutable once loaded; every call takes an
 * at_tok_workspace (one per thread) that holds all scratch and results.
 * Buffers in the workspace grow to the largest input seen and are reused:
 * steady-state encoding does not allocate. Per text the pipeline is HF's:
 * added tokens are split out of the raw text, each remaining piece is
 * normalized, added tokens marked "normalized" are split out of the
 * normalized pieces, the rest is pre-tokenized and run through the model.
 * Token offsets are carried as original byte offsets from then on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/tk.h"

at_encode_params at_encode_default_params(void) {
  at_encode_params p;
  p.add_special_tokens = true;
  p.offsets = AT_OFFSETS_BYTES;
  p.max_length = -1;
  p.pad_to = -1;
  p.truncation_direction = AT_TRUNC_AS_TOKENIZER;
  return p;
}

/* ------------------------------------------------------------- workspace */
at_status at_tok_workspace_create(at_tok_workspace **out) {
  if (!out) return at_fail(AT_ERR_INVALID_ARG, "at_tok_workspace_create: out is NULL");
  *out = calloc(1, sizeof **out);
  if (!*out) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  return AT_OK;
}

void at_tok_workspace_destroy(at_tok_workspace *ws) {
  if (!ws) return;
  free(ws->nb); free(ws->al); free(ws->sp); free(ws->sp2); free(ws->tk);
  free(ws->sym); free(ws->heap); free(ws->u32); free(ws->cmap); free(ws->m);
  free(ws->o_i32); free(ws->o_off); free(ws->o_str); free(ws->o_tlen); free(ws->dec); free(ws->dec2); free(ws->dec3);
  free(ws->dec_idx); free(ws->dec2_idx); free(ws->dec3_idx);
  free(ws->seg); free(ws->vn); free(ws->ed); free(ws->tstr);
  if (ws->md) pcre2_match_data_free(ws->md);
  free(ws);
}

/* ---------------------------------------------------------- added tokens */
/* Leftmost-longest match of an added token at or after `from` in s[0..n).
 * Returns the token index or -1; *at gets the match start. */
static long added_find(const at_tokenizer *t, bool normalized, const uint8_t *s, size_t n,
                       size_t from, size_t *at) {
  const uint8_t *bm = normalized ? t->added_first_norm : t->added_first_raw;
  for (size_t i = from; i < n; i++) {
    uint8_t c = s[i];
    if (!(bm[c >> 3] & (1u << (c & 7)))) continue;
    long best = -1;
    size_t best_len = 0;
    for (size_t k = 0; k < t->n_added; k++) {
      const tk_added *a = &t->added[k];
      if (a->normalized != normalized || !a->match_len || a->match_len > n - i) continue;
      if (a->match_len > best_len && memcmp(s + i, a->match, a->match_len) == 0) {
        best = (long)k;
        best_len = a->match_len;
      }
    }
    if (best >= 0) { *at = i; return best; }
  }
  return -1;
}

static inline uint32_t last_cp_before(const uint8_t *s, size_t i) {
  size_t j = i;
  do j--; while (j > 0 && (s[j] & 0xC0) == 0x80);
  uint32_t l;
  return tk_utf8_dec(s + j, &l);
}

at_status tk_push_split(at_tok_workspace *ws, uint32_t off, uint32_t len, int32_t token) {
  if (!len) return AT_OK;
  at_status st = TK_RESERVE(ws->sp2, ws->sp2_cap, ws->sp2_n + 1);
  if (st != AT_OK) return st;
  tk_split *d = &ws->sp2[ws->sp2_n++];
  d->off = off;
  d->len = len;
  d->base = ws->al[off].s;
  d->token = token;
  return AT_OK;
}

/* Split one piece on the added tokens of one kind (HF find_matches). */
static at_status split_added(const at_tokenizer *t, at_tok_workspace *ws, const tk_split *sp,
                             bool normalized) {
  const uint8_t *s = ws->nb + sp->off;
  size_t n = sp->len, start_off = 0, from = 0, at;
  at_status st;
  long k;
  while (from < n && (k = added_find(t, normalized, s, n, from, &at)) >= 0) {
    const tk_added *a = &t->added[k];
    size_t start = at, stop = at + a->match_len;
    from = stop; /* matches never overlap, even skipped ones (Aho-Corasick iteration) */
    if (a->single_word) {
      bool start_space = start == 0 || !tk_is_word(last_cp_before(s, start));
      uint32_t l;
      bool stop_space = stop == n || !tk_is_word(tk_utf8_dec(s + stop, &l));
      if (!start_space || !stop_space) continue;
    }
    if (start < start_off) start = start_off; /* after an rstrip swallowed it */
    if (stop <= start_off) continue;
    if (a->lstrip) {
      size_t ns = start;
      while (ns > 0) {
        size_t j = ns;
        do j--; while (j > 0 && (s[j] & 0xC0) == 0x80);
        uint32_t l;
        if (!tk_is_ws(tk_utf8_dec(s + j, &l))) break;
        ns = j;
      }
      start = ns > start_off ? ns : start_off;
    }
    if (a->rstrip) {
      uint32_t l;
      while (stop < n && tk_is_ws(tk_utf8_dec(s + stop, &l))) stop += l;
    }
    if (start_off < start &&
        (st = tk_push_split(ws, sp->off + (uint32_t)start_off, (uint32_t)(start - start_off), -1)) != AT_OK)
      return st;
    if ((st = tk_push_split(ws, sp->off + (uint32_t)start, (uint32_t)(stop - start), a->id)) != AT_OK)
      return st;
    start_off = stop;
    s = ws->nb + sp->off;
  }
  if (start_off < n)
    return tk_push_split(ws, sp->off + (uint32_t)start_off, (uint32_t)(n - start_off), -1);
  return AT_OK;
}

at_status tk_keep_split(at_tok_workspace *ws, tk_split sp) {
  at_status st = TK_RESERVE(ws->sp2, ws->sp2_cap, ws->sp2_n + 1);
  if (st == AT_OK) ws->sp2[ws->sp2_n++] = sp;
  return st;
}

void tk_swap_splits(at_tok_workspace *ws) {
  tk_split *tmp = ws->sp; ws->sp = ws->sp2; ws->sp2 = tmp;
  size_t c = ws->sp_cap; ws->sp_cap = ws->sp2_cap; ws->sp2_cap = c;
  ws->sp_n = ws->sp2_n;
  ws->sp2_n = 0;
}

/* Encode one text into ws->tk (appending). */
static at_status encode_seq(const at_tokenizer *t, at_tok_workspace *ws, const char *text,
                            size_t len, int32_t type_id) {
  at_status st;
  if (len > AT_TOKENIZER_MAX_TEXT_BYTES)
    return at_fail(AT_ERR_LIMIT, "tokenizer: text of %zu bytes exceeds the %zu-byte limit", len,
                   (size_t)AT_TOKENIZER_MAX_TEXT_BYTES);
  size_t ok = tk_utf8_valid_prefix((const uint8_t *)text, len);
  if (ok != len) return at_fail(AT_ERR_INVALID_ARG, "tokenizer: invalid UTF-8 at byte %zu", ok);
  ws->nb_len = 0;
  tk_norm_limit(ws, len);
  if ((st = TK_RESERVE(ws->nb, ws->nb_cap, len * 3 + 64)) != AT_OK) return st;
  if ((st = TK_RESERVE(ws->al, ws->al_cap, len * 3 + 64)) != AT_OK) return st;
  memcpy(ws->nb, text, len);
  for (uint32_t i = 0, l; i < len; i += l) {
    const uint8_t *p = (const uint8_t *)text + i;
    l = *p < 0x80 ? 1 : *p < 0xE0 ? 2 : *p < 0xF0 ? 3 : 4;
    for (uint32_t j = 0; j < l; j++) { ws->al[i + j].s = i; ws->al[i + j].e = i + l; }
  }
  ws->nb_len = len;
  ws->sp_n = ws->sp2_n = 0;
  if (!len) return AT_OK;
  tk_split whole = {0, (uint32_t)len, 0, -1};
  bool has_raw = false, has_norm = false;
  for (size_t k = 0; k < t->n_added; k++) {
    if (t->added[k].normalized) has_norm = true;
    else has_raw = true;
  }
  if (has_raw) {
    if ((st = split_added(t, ws, &whole, false)) != AT_OK) return st;
  } else {
    if ((st = TK_RESERVE(ws->sp2, ws->sp2_cap, 1)) != AT_OK) return st;
    ws->sp2[0] = whole;
    ws->sp2_n = 1;
  }
  tk_swap_splits(ws);
  /* normalize each piece, then split the normalized added tokens out */
  for (size_t i = 0; i < ws->sp_n; i++) {
    tk_split sp = ws->sp[i];
    if (sp.token >= 0) {
      if ((st = tk_keep_split(ws, sp)) != AT_OK) return st;
      continue;
    }
    if (t->norm && (st = tk_normalize(t->norm, ws, &sp)) != AT_OK) return st;
    if (!sp.len) continue;
    if (has_norm) {
      if ((st = split_added(t, ws, &sp, true)) != AT_OK) return st;
    } else {
      /* HF slices every normalized piece here even with no token to find,
       * so the piece starts where its first normalized char came from (a
       * normalizer that dropped leading chars moves it: Metaspace "first") */
      sp.base = ws->al[sp.off].s;
      if ((st = tk_keep_split(ws, sp)) != AT_OK) return st;
    }
  }
  tk_swap_splits(ws);
  if (t->pretok && (st = tk_pretokenize(t->pretok, ws)) != AT_OK) return st;
  for (size_t i = 0; i < ws->sp_n; i++) {
    const tk_split *sp = &ws->sp[i];
    size_t before = ws->tk_n;
    if (sp->token >= 0) {
      if ((st = TK_RESERVE(ws->tk, ws->tk_cap, ws->tk_n + 1)) != AT_OK) return st;
      tk_tok *o = &ws->tk[ws->tk_n++];
      o->id = sp->token;
      o->s = ws->al[sp->off].s;
      o->e = ws->al[sp->off + sp->len - 1].e;
      o->word = (int32_t)i;
      o->special = 0;
      o->str = -1;
      /* HF reports the matched text (with any stripped spaces) as the token */
      const char *cs = (size_t)o->id < t->n_ids ? t->id_str[o->id] : NULL;
      if (!cs || strlen(cs) != sp->len || memcmp(cs, ws->nb + sp->off, sp->len) != 0) {
        if ((st = tk_tok_own_str(ws, ws->tk_n - 1, ws->nb + sp->off, sp->len)) != AT_OK) return st;
      }
    } else if ((st = tk_model_tokenize(&t->model, ws, sp, (int32_t)i)) != AT_OK) {
      return st;
    }
    for (size_t k = before; k < ws->tk_n; k++) ws->tk[k].type_id = type_id;
  }
  return AT_OK;
}

at_status tk_tok_own_str(at_tok_workspace *ws, size_t k, const uint8_t *s, uint32_t n) {
  if (ws->tstr_len + n + 5 > (size_t)INT32_MAX) return at_fail(AT_ERR_LIMIT, "tokenizer: too much text in one call");
  at_status st = TK_RESERVE(ws->tstr, ws->tstr_cap, ws->tstr_len + n + 5);
  if (st != AT_OK) return st;
  memcpy(ws->tstr + ws->tstr_len, &n, 4);
  memcpy(ws->tstr + ws->tstr_len + 4, s, n);
  ws->tstr[ws->tstr_len + 4 + n] = '\0';
  ws->tk[k].str = (int32_t)(ws->tstr_len + 4);
  ws->tstr_len += n + 5;
  return AT_OK;
}

/* ----------------------------------------------------------- post-process */
size_t tk_post_added(const tk_post *p, bool pair) {
  if (!p) return 0;
  switch (p->kind) {
    case TK_PP_BERT: return pair ? 3 : 2;
    case TK_PP_ROBERTA: return pair ? 4 : 2;
    case TK_PP_BYTELEVEL: return 0;
    case TK_PP_TEMPLATE: {
      size_t n = 0;
      const tk_tpl_piece *tp = pair ? p->pair : p->single;
      size_t c = pair ? p->n_pair : p->n_single;
      for (size_t i = 0; i < c; i++)
        if (tp[i].special) n += tp[i].n_ids;
      return n;
    }
    case TK_PP_SEQ: {
      size_t n = 0;
      for (size_t i = 0; i < p->n_items; i++) n += tk_post_added(&p->items[i], pair);
      return n;
    }
  }
  return 0;
}

/* HF byte_level::process_offsets */
static void trim_offsets(const at_tokenizer *t, tk_tok *tk, size_t n, bool add_prefix_space) {
  for (size_t i = 0; i < n; i++) {
    const char *str = (tk[i].id >= 0 && (size_t)tk[i].id < t->n_ids) ? t->id_str[tk[i].id] : NULL;
    if (!str) continue;
    const uint8_t *s = (const uint8_t *)str;
    size_t len = strlen(str), lead = 0, trail = 0;
    uint32_t l;
    for (size_t j = 0; j < len; j += l) {
      uint32_t c = tk_utf8_dec(s + j, &l);
      if (c == 0x120 || tk_is_ws(c)) lead++;
      else break;
    }
    for (size_t j = 0; j < len; j += l) { /* trailing: count from the end */
      uint32_t c = tk_utf8_dec(s + j, &l);
      if (c == 0x120 || tk_is_ws(c)) trail++;
      else trail = 0;
    }
    if (!lead && !trail) continue;
    if (lead) {
      bool first = i == 0 || tk[i].s == 0;
      if (first && add_prefix_space && lead == 1) lead = 0;
      uint32_t ns = tk[i].s + (uint32_t)lead;
      tk[i].s = ns < tk[i].e ? ns : tk[i].e;
    }
    if (trail && tk[i].e >= trail) {
      uint32_t ne = tk[i].e - (uint32_t)trail;
      tk[i].e = ne > tk[i].s ? ne : tk[i].s;
    }
  }
}

typedef struct seqs {
  tk_tok *a, *b;
  size_t na, nb;
  bool pair;
} seqs;

static at_status emit(at_tok_workspace *ws, tk_tok *dst, size_t *k, int32_t id, int32_t type_id) {
  (void)ws;
  dst[*k].id = id;
  dst[*k].type_id = type_id;
  dst[*k].word = -1;
  dst[*k].s = dst[*k].e = 0;
  dst[*k].special = 1;
  dst[*k].str = -1;
  (*k)++;
  return AT_OK;
}

static void copy_seq(tk_tok *dst, size_t *k, const tk_tok *src, size_t n, int32_t type_id,
                     bool set_type) {
  for (size_t i = 0; i < n; i++) {
    dst[*k] = src[i];
    if (set_type) dst[*k].type_id = type_id;
    (*k)++;
  }
}

/* Assemble the final token list of one item into dst (room for na+nb+added). */
static size_t assemble(const at_tokenizer *t, const tk_post *p, seqs *q, tk_tok *dst,
                       bool add_special) {
  size_t k = 0;
  if (!p || p->kind == TK_PP_BYTELEVEL) {
    copy_seq(dst, &k, q->a, q->na, 0, false);
    if (q->pair) copy_seq(dst, &k, q->b, q->nb, 1, false);
    return k;
  }
  switch (p->kind) {
    case TK_PP_BERT:
      if (!add_special) {
        copy_seq(dst, &k, q->a, q->na, 0, false);
        if (q->pair) copy_seq(dst, &k, q->b, q->nb, 1, false);
        return k;
      }
      emit(NULL, dst, &k, p->cls_id, 0);
      copy_seq(dst, &k, q->a, q->na, 0, true);
      emit(NULL, dst, &k, p->sep_id, 0);
      if (q->pair) {
        copy_seq(dst, &k, q->b, q->nb, 1, true);
        emit(NULL, dst, &k, p->sep_id, 1);
      }
      return k;
    case TK_PP_ROBERTA:
      if (!add_special) {
        copy_seq(dst, &k, q->a, q->na, 0, true);
        if (q->pair) copy_seq(dst, &k, q->b, q->nb, 0, true);
        return k;
      }
      emit(NULL, dst, &k, p->cls_id, 0);
      copy_seq(dst, &k, q->a, q->na, 0, true);
      emit(NULL, dst, &k, p->sep_id, 0);
      if (q->pair) {
        emit(NULL, dst, &k, p->sep_id, 0);
        copy_seq(dst, &k, q->b, q->nb, 0, true);
        emit(NULL, dst, &k, p->sep_id, 0);
      }
      return k;
    case TK_PP_TEMPLATE: {
      const tk_tpl_piece *tp = q->pair ? p->pair : p->single;
      size_t c = q->pair ? p->n_pair : p->n_single;
      for (size_t i = 0; i < c; i++) {
        if (tp[i].special) {
          if (!add_special) continue;
          for (size_t j = 0; j < tp[i].n_ids; j++) emit(NULL, dst, &k, tp[i].ids[j], tp[i].type_id);
        } else if (tp[i].seq == 0) {
          copy_seq(dst, &k, q->a, q->na, tp[i].type_id, true);
        } else if (q->pair) {
          copy_seq(dst, &k, q->b, q->nb, tp[i].type_id, true);
        }
      }
      return k;
    }
  }
  (void)t;
  return k;
}

static const tk_post *assembler_of(const tk_post *p) {
  if (!p) return NULL;
  if (p->kind != TK_PP_SEQ) return p->kind == TK_PP_BYTELEVEL ? NULL : p;
  const tk_post *r = NULL;
  for (size_t i = 0; i < p->n_items; i++)
    if (p->items[i].kind != TK_PP_BYTELEVEL) r = &p->items[i];
  return r;
}

static void apply_trims(const at_tokenizer *t, const tk_post *p, seqs *q) {
  if (!p) return;
  if (p->kind == TK_PP_SEQ) {
    for (size_t i = 0; i < p->n_items; i++) apply_trims(t, &p->items[i], q);
    return;
  }
  if ((p->kind == TK_PP_BYTELEVEL || p->kind == TK_PP_ROBERTA) && p->trim_offsets) {
    trim_offsets(t, q->a, q->na, p->add_prefix_space);
    if (q->pair) trim_offsets(t, q->b, q->nb, p->add_prefix_space);
  }
}

static void truncate_seq(tk_tok *s, size_t *n, size_t keep, bool left) {
  if (*n <= keep) return;
  if (left) memmove(s, s + (*n - keep), keep * sizeof *s);
  *n = keep;
}

static at_status truncate_item(const at_tokenizer *t, seqs *q, size_t max_len, bool add_special,
                               bool left) {
  size_t added = add_special ? tk_post_added(t->post, q->pair) : 0;
  if (added > max_len)
    return at_fail(AT_ERR_LIMIT, "tokenizer: max_length %zu is shorter than the %zu special tokens",
                   max_len, added);
  size_t m = max_len - added;
  if (!q->pair) {
    truncate_seq(q->a, &q->na, m, left);
    return AT_OK;
  }
  size_t total = q->na + q->nb;
  if (total <= m) return AT_OK;
  if (t->trunc_strategy == TK_TRUNC_LONGEST_FIRST) {
    size_t n1 = q->na, n2 = q->nb;
    bool swap = false;
    if (n1 > n2) { size_t x = n1; n1 = n2; n2 = x; swap = true; }
    if (n1 > m) n2 = n1;
    else n2 = (n1 > m - n1) ? n1 : m - n1;
    if (n1 + n2 > m) { n1 = m / 2; n2 = n1 + m % 2; }
    if (swap) { size_t x = n1; n1 = n2; n2 = x; }
    truncate_seq(q->a, &q->na, n1, left);
    truncate_seq(q->b, &q->nb, n2, left);
    return AT_OK;
  }
  size_t to_remove = total - m;
  tk_tok *ts = t->trunc_strategy == TK_TRUNC_ONLY_FIRST ? q->a : q->b;
  size_t *tn = t->trunc_strategy == TK_TRUNC_ONLY_FIRST ? &q->na : &q->nb;
  if (*tn <= to_remove)
    return at_fail(AT_ERR_LIMIT, "tokenizer: sequence too short to truncate by %zu tokens", to_remove);
  truncate_seq(ts, tn, *tn - to_remove, left);
  return AT_OK;
}

/* Convert byte offsets to code-point offsets (HF's BytesToCharOffsetConverter). */
static at_status to_char_offsets(at_tok_workspace *ws, const char *text, size_t len, tk_tok *tk,
                                 size_t n) {
  at_status st = TK_RESERVE(ws->cmap, ws->cmap_cap, len + 1);
  if (st != AT_OK) return st;
  uint32_t ci = 0;
  for (size_t i = 0; i < len; i++) {
    if (i && ((uint8_t)text[i] & 0xC0) != 0x80) ci++;
    ws->cmap[i] = ci;
  }
  for (size_t i = 0; i < n; i++) {
    if (tk[i].special) continue;
    uint32_t s = tk[i].s, e = tk[i].e;
    if (s >= len) continue; /* HF leaves such offsets as they are */
    uint32_t ns = ws->cmap[s];
    uint32_t ne = e < len ? ws->cmap[e] : (e >= 1 && e - 1 < len ? ws->cmap[e - 1] + 1 : ns + 1);
    tk[i].s = ns;
    tk[i].e = ne;
  }
  return AT_OK;
}

static at_status encode_items(const at_tokenizer *t, at_tok_workspace *ws,
                              const char *const *texts, const size_t *lens,
                              const char *const *pairs, const size_t *pair_lens, size_t n,
                              const at_encode_params *prm, at_encoding *out) {
  if (!t || !ws || !out || (n && (!texts || !lens)))
    return at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_encode: NULL argument");
  at_encode_params dp = at_encode_default_params();
  if (!prm) prm = &dp;
  at_status st;
  bool trunc = t->trunc_on;
  size_t trunc_max = t->trunc_max;
  if (prm->max_length == 0) trunc = false;
  else if (prm->max_length > 0) { trunc = true; trunc_max = (size_t)prm->max_length; }
  bool left = prm->truncation_direction == AT_TRUNC_LEFT ||
              (prm->truncation_direction == AT_TRUNC_AS_TOKENIZER && t->trunc_left);
  bool pad = t->pad_on, batch_longest = t->pad_batch_longest;
  size_t pad_fixed = t->pad_fixed;
  if (prm->pad_to == 0) pad = false;
  else if (prm->pad_to > 0) { pad = true; batch_longest = false; pad_fixed = (size_t)prm->pad_to; }

  /* tokens of every item: ws->tk holds raw tokens, then the final lists are
   * assembled behind them; seg[2i], seg[2i+1] delimit item i's final list. */
  if ((st = TK_RESERVE(ws->seg, ws->seg_cap, 2 * n + 2)) != AT_OK) return st;
  if ((st = TK_RESERVE(ws->tk, ws->tk_cap, 16)) != AT_OK) return st; /* never NULL below */
  ws->tk_n = 0;
  ws->tstr_len = 0;
  size_t longest = 0;
  for (size_t i = 0; i < n; i++) {
    if (!texts[i] && lens[i]) return at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_encode: NULL text");
    size_t a0 = ws->tk_n;
    if ((st = encode_seq(t, ws, texts[i] ? texts[i] : "", lens[i], 0)) != AT_OK) return st;
    size_t a1 = ws->tk_n;
    bool pair = pairs && pairs[i];
    if (pair && (st = encode_seq(t, ws, pairs[i], pair_lens[i], 1)) != AT_OK) return st;
    size_t b1 = ws->tk_n;
    seqs q = {ws->tk + a0, ws->tk + a1, a1 - a0, b1 - a1, pair};
    if (trunc && (st = truncate_item(t, &q, trunc_max, prm->add_special_tokens, left)) != AT_OK)
      return st;
    size_t na = q.na, nbb = q.nb;
    if (pair && q.b != ws->tk + a0 + na) { /* close the gap left by truncating A */
      memmove(ws->tk + a0 + na, q.b, nbb * sizeof(tk_tok));
    }
    ws->tk_n = a0 + na + nbb;
    q.a = ws->tk + a0;
    q.b = ws->tk + a0 + na;
    if (prm->offsets == AT_OFFSETS_CHARS) {
      if ((st = to_char_offsets(ws, texts[i] ? texts[i] : "", lens[i], q.a, na)) != AT_OK) return st;
      if (pair && (st = to_char_offsets(ws, pairs[i], pair_lens[i], q.b, nbb)) != AT_OK) return st;
    }
    apply_trims(t, t->post, &q);
    size_t room = na + nbb + tk_post_added(t->post, pair) + 8;
    size_t fstart = ws->tk_n;
    if ((st = TK_RESERVE(ws->tk, ws->tk_cap, fstart + room)) != AT_OK) return st;
    q.a = ws->tk + a0;
    q.b = ws->tk + a0 + na;
    tk_tok *dst = ws->tk + fstart;
    size_t k = assemble(t, assembler_of(t->post), &q, dst, prm->add_special_tokens);
    /* move the final list down over the raw tokens */
    memmove(ws->tk + a0, dst, k * sizeof(tk_tok));
    ws->tk_n = a0 + k;
    ws->seg[2 * i] = a0;
    ws->seg[2 * i + 1] = a0 + k;
    if (k > longest) longest = k;
  }
  /* padding */
  size_t total = 0;
  size_t target_all = 0;
  if (pad) {
    target_all = batch_longest ? longest : pad_fixed;
    if (t->pad_multiple > 1 && target_all % t->pad_multiple)
      target_all += t->pad_multiple - target_all % t->pad_multiple;
  }
  for (size_t i = 0; i < n; i++) {
    size_t len = ws->seg[2 * i + 1] - ws->seg[2 * i];
    total += (pad && len < target_all) ? target_all : len;
  }
  if ((st = TK_RESERVE(ws->o_i32, ws->o_i32_cap, total * 5 + 1)) != AT_OK) return st;
  if ((st = TK_RESERVE(ws->o_off, ws->o_off_cap, total + 1)) != AT_OK) return st;
  if ((st = TK_RESERVE(ws->o_str, ws->o_str_cap, total + 1)) != AT_OK) return st;
  if ((st = TK_RESERVE(ws->o_tlen, ws->o_tlen_cap, total + 1)) != AT_OK) return st;
  size_t pad_len;
  int32_t *ids = ws->o_i32, *types = ids + total, *mask = types + total, *spec = mask + total,
          *words = spec + total;
  size_t w = 0;
  const char *pad_str = t->pad_token ? t->pad_token
                        : (t->pad_id >= 0 && (size_t)t->pad_id < t->n_ids) ? t->id_str[t->pad_id]
                                                                            : "";
  if (!pad_str) pad_str = ""; /* a pad id with no string (a gap in the ids) */
  pad_len = strlen(pad_str);
  for (size_t i = 0; i < n; i++) {
    size_t s0 = ws->seg[2 * i], len = ws->seg[2 * i + 1] - s0;
    size_t npad = (pad && len < target_all) ? target_all - len : 0;
    size_t start = w;
    if (npad && t->pad_left) {
      for (size_t j = 0; j < npad; j++, w++) {
        ids[w] = t->pad_id; types[w] = t->pad_type_id; mask[w] = 0; spec[w] = 1; words[w] = -1;
        ws->o_off[w][0] = ws->o_off[w][1] = 0; ws->o_str[w] = pad_str;
        ws->o_tlen[w] = (uint32_t)pad_len;
      }
    }
    for (size_t j = 0; j < len; j++, w++) {
      const tk_tok *tk = &ws->tk[s0 + j];
      ids[w] = tk->id; types[w] = tk->type_id; mask[w] = 1; spec[w] = tk->special;
      words[w] = tk->word;
      ws->o_off[w][0] = tk->s; ws->o_off[w][1] = tk->e;
      if (tk->str >= 0) { /* own string: length stored just before it */
        memcpy(&ws->o_tlen[w], ws->tstr + tk->str - 4, 4);
        ws->o_str[w] = ws->tstr + tk->str;
      } else {
        ws->o_str[w] = (tk->id >= 0 && (size_t)tk->id < t->n_ids && t->id_str[tk->id]) ? t->id_str[tk->id] : "";
        ws->o_tlen[w] = (uint32_t)strlen(ws->o_str[w]);
      }
    }
    if (npad && !t->pad_left) {
      for (size_t j = 0; j < npad; j++, w++) {
        ids[w] = t->pad_id; types[w] = t->pad_type_id; mask[w] = 0; spec[w] = 1; words[w] = -1;
        ws->o_off[w][0] = ws->o_off[w][1] = 0; ws->o_str[w] = pad_str;
        ws->o_tlen[w] = (uint32_t)pad_len;
      }
    }
    out[i].n = w - start;
    out[i].ids = ids + start;
    out[i].type_ids = types + start;
    out[i].attention_mask = mask + start;
    out[i].special_tokens_mask = spec + start;
    out[i].word_ids = words + start;
    out[i].offsets = (const uint32_t(*)[2])(ws->o_off + start);
    out[i].tokens = ws->o_str + start;
    out[i].token_lens = ws->o_tlen + start;
  }
  return AT_OK;
}

at_status at_tokenizer_prompt_tokens(const at_tokenizer *t, at_tok_workspace *ws,
                                     const char *prompt, size_t *out) {
  if (!prompt || !out) return at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_prompt_tokens: NULL");
  at_encode_params ep = at_encode_default_params();
  ep.max_length = 0;
  ep.pad_to = 0;
  at_encoding e;
  at_status st = at_tokenizer_encode(t, ws, prompt, strlen(prompt), NULL, 0, &ep, &e);
  *out = st == AT_OK && e.n > 0 ? e.n - 1 : 0;
  return st;
}

at_status at_tokenizer_encode(const at_tokenizer *t, at_tok_workspace *ws, const char *text,
                              size_t len, const char *pair, size_t pair_len,
                              const at_encode_params *params, at_encoding *out) {
  if (!text && len) return at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_encode: text is NULL");
  const char *texts[1] = {text ? text : ""};
  const size_t lens[1] = {len};
  const char *pairs[1] = {pair};
  const size_t plens[1] = {pair_len};
  return encode_items(t, ws, texts, lens, pair ? pairs : NULL, plens, 1, params, out);
}

at_status at_tokenizer_encode_batch(const at_tokenizer *t, at_tok_workspace *ws,
                                    const char *const *texts, const size_t *lens, size_t n,
                                    const at_encode_params *params, at_encoding *out) {
  return encode_items(t, ws, texts, lens, NULL, NULL, n, params, out);
}

/* ------------------------------------------------------------ accessors */
size_t at_tokenizer_vocab_size(const at_tokenizer *t) { return t ? t->n_ids : 0; }

const char *at_tokenizer_id_to_token(const at_tokenizer *t, int32_t id) {
  if (!t || id < 0 || (size_t)id >= t->n_ids) return NULL;
  return t->id_str[id];
}

int32_t at_tokenizer_token_to_id(const at_tokenizer *t, const char *token) {
  if (!t || !token) return -1;
  size_t len = strlen(token);
  for (size_t k = 0; k < t->n_added; k++)
    if (t->added[k].len == len && memcmp(t->added[k].content, token, len) == 0) return t->added[k].id;
  return tk_vocab_get(&t->model.vocab, token, len);
}

int32_t at_tokenizer_pad_id(const at_tokenizer *t) { return t ? t->pad_id : 0; }
const char *at_tokenizer_describe(const at_tokenizer *t) { return t ? t->describe : ""; }

void at_tokenizer_destroy(at_tokenizer *t) {
  if (!t) return;
  if (t->norm) { tk_norm_free(t->norm); free(t->norm); }
  if (t->pretok) { tk_pretok_free(t->pretok); free(t->pretok); }
  if (t->post) { tk_post_free(t->post); free(t->post); }
  if (t->dec) { tk_dec_free(t->dec); free(t->dec); }
  tk_model_free(&t->model);
  for (size_t k = 0; k < t->n_added; k++) {
    if (t->added[k].match != t->added[k].content) free(t->added[k].match);
    free(t->added[k].content);
  }
  free(t->added);
  free(t->id_str);
  free(t->id_special);
  free(t->pad_token);
  free(t);
}

/* ---------------------------------------------------------------- loading */
static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

at_status at_tokenizer_load(const char *path, at_tokenizer **out) {
  if (!path || !out) return at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_load: NULL argument");
  *out = NULL;
  struct stat stt;
  if (stat(path, &stt) != 0) return at_fail(AT_ERR_NOT_FOUND, "tokenizer: %s: no such file", path);
  if (S_ISDIR(stt.st_mode)) {
    char p[4096];
    snprintf(p, sizeof p, "%s/tokenizer.json", path);
    if (stat(p, &stt) == 0) return at_tokenizer_load(p, out);
    snprintf(p, sizeof p, "%s/vocab.txt", path);
    if (stat(p, &stt) == 0) return at_tokenizer_load(p, out);
    return at_fail(AT_ERR_NOT_FOUND, "tokenizer: %s has neither tokenizer.json nor vocab.txt", path);
  }
  char *buf = NULL;
  size_t len = 0;
  at_status st = at_read_file(path, AT_TOKENIZER_MAX_JSON_BYTES, "tokenizer", &buf, &len);
  if (st != AT_OK) return st;
  if (ends_with(path, ".txt")) st = at_tokenizer_from_vocab_txt(buf, len, true, out);
  else st = at_tokenizer_from_json(buf, len, out);
  free(buf);
  return st == AT_OK ? st : at_fail_in(st, path);
}

at_status at_tokenizer_from_json(const char *json, size_t len, at_tokenizer **out) {
  if (!json || !out) return at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_from_json: NULL argument");
  *out = NULL;
  if (len > AT_TOKENIZER_MAX_JSON_BYTES) return at_fail(AT_ERR_LIMIT, "tokenizer.json too large");
  at_tokenizer *t = calloc(1, sizeof *t);
  if (!t) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  at_status st = tk_load_json(json, len, t);
  if (st == AT_OK) st = tk_finish_tokenizer(t);
  if (st != AT_OK) {
    at_tokenizer_destroy(t);
    return st;
  }
  *out = t;
  return AT_OK;
}
