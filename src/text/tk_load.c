/* src/text/tk_load.c — building an at_tokenizer from a Hugging Face
 * tokenizer.json (jansson) or a BERT vocab.txt, and the final assembly shared
 * by both (id table, added-token matchers, padding defaults).
 *
 * Every component type is checked against what anytime implements; anything
 * else fails the load with AT_ERR_UNSUPPORTED and a message naming the
 * component and its "type", never a silent fallback. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tk.h"

#define FAILP(...) at_fail(AT_ERR_PARSE, "tokenizer.json: " __VA_ARGS__)
#define FAILU(...) at_fail(AT_ERR_UNSUPPORTED, "tokenizer.json: " __VA_ARGS__)

static char *dupn(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

static bool jbool(const json_t *o, const char *key, bool def) {
  json_t *v = json_object_get(o, key);
  if (json_is_boolean(v)) return json_is_true(v);
  return def;
}

static const char *jtype(const json_t *o) {
  json_t *t = json_object_get(o, "type");
  return json_is_string(t) ? json_string_value(t) : NULL;
}

static int behavior_of(const char *s) {
  if (!s) return -1;
  if (!strcmp(s, "Removed")) return TK_B_REMOVED;
  if (!strcmp(s, "Isolated")) return TK_B_ISOLATED;
  if (!strcmp(s, "MergedWithPrevious")) return TK_B_MERGED_PREV;
  if (!strcmp(s, "MergedWithNext")) return TK_B_MERGED_NEXT;
  if (!strcmp(s, "Contiguous")) return TK_B_CONTIGUOUS;
  return -1;
}

static at_status parse_pattern(const json_t *o, tk_pattern *p, const char *where) {
  json_t *pat = json_object_get(o, "pattern");
  if (!json_is_object(pat)) return FAILP("%s: \"pattern\" must be {\"String\":...} or {\"Regex\":...}", where);
  json_t *s = json_object_get(pat, "String"), *r = json_object_get(pat, "Regex");
  if (json_is_string(s)) return tk_pattern_compile(p, json_string_value(s), json_string_length(s), false, where);
  if (json_is_string(r)) return tk_pattern_compile(p, json_string_value(r), json_string_length(r), true, where);
  return FAILP("%s: \"pattern\" must be {\"String\":...} or {\"Regex\":...}", where);
}

static uint32_t first_cp(const char *s, size_t len) {
  if (!len) return 0;
  uint32_t n;
  return tk_utf8_dec((const uint8_t *)s, &n);
}

/* ------------------------------------------------------------ normalizer */
static at_status parse_norm(const json_t *o, tk_norm *n, int depth) {
  memset(n, 0, sizeof *n);
  const char *ty = jtype(o);
  if (!json_is_object(o) || !ty) return FAILP("normalizer without a \"type\"");
  if (depth > 8) return FAILU("normalizer Sequence nested too deeply");
  if (!strcmp(ty, "BertNormalizer")) {
    n->kind = TK_N_BERT;
    n->clean_text = jbool(o, "clean_text", true);
    n->chinese = jbool(o, "handle_chinese_chars", true);
    n->lowercase = jbool(o, "lowercase", true);
    json_t *sa = json_object_get(o, "strip_accents");
    n->strip_accents = json_is_boolean(sa) ? json_is_true(sa) : n->lowercase;
  } else if (!strcmp(ty, "NFC")) n->kind = TK_N_NFC;
  else if (!strcmp(ty, "NFD")) n->kind = TK_N_NFD;
  else if (!strcmp(ty, "NFKC")) n->kind = TK_N_NFKC;
  else if (!strcmp(ty, "NFKD")) n->kind = TK_N_NFKD;
  else if (!strcmp(ty, "Lowercase")) n->kind = TK_N_LOWER;
  else if (!strcmp(ty, "StripAccents")) n->kind = TK_N_STRIP_ACCENTS;
  else if (!strcmp(ty, "Strip")) {
    n->kind = TK_N_STRIP;
    n->left = jbool(o, "strip_left", true);
    n->right = jbool(o, "strip_right", true);
  } else if (!strcmp(ty, "Replace")) {
    n->kind = TK_N_REPLACE;
    at_status st = parse_pattern(o, &n->pat, "normalizer Replace");
    if (st != AT_OK) return st;
    json_t *c = json_object_get(o, "content");
    if (!json_is_string(c)) return FAILP("normalizer Replace: \"content\" must be a string");
    n->content = dupn(json_string_value(c), json_string_length(c));
    n->content_len = json_string_length(c);
    if (!n->content) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  } else if (!strcmp(ty, "Prepend")) {
    n->kind = TK_N_PREPEND;
    json_t *c = json_object_get(o, "prepend");
    if (!json_is_string(c)) return FAILP("normalizer Prepend: \"prepend\" must be a string");
    n->content = dupn(json_string_value(c), json_string_length(c));
    n->content_len = json_string_length(c);
    if (!n->content) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  } else if (!strcmp(ty, "Nmt")) {
    n->kind = TK_N_NMT;
  } else if (!strcmp(ty, "Precompiled")) {
    n->kind = TK_N_PRECOMPILED;
    json_t *c = json_object_get(o, "precompiled_charsmap");
    if (!json_is_string(c))
      return FAILP("normalizer Precompiled: \"precompiled_charsmap\" must be a base64 string");
    uint8_t *raw;
    size_t raw_len;
    at_status st = tk_base64_decode(json_string_value(c), json_string_length(c), &raw, &raw_len);
    if (st != AT_OK) return st;
    st = tk_charsmap_parse(raw, raw_len, &n->cmap);
    free(raw);
    if (st != AT_OK) return st;
  } else if (!strcmp(ty, "Sequence")) {
    n->kind = TK_N_SEQ;
    json_t *a = json_object_get(o, "normalizers");
    if (!json_is_array(a)) return FAILP("normalizer Sequence: \"normalizers\" must be an array");
    n->n_items = json_array_size(a);
    n->items = calloc(n->n_items ? n->n_items : 1, sizeof *n->items);
    if (!n->items) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < n->n_items; i++) {
      at_status st = parse_norm(json_array_get(a, i), &n->items[i], depth + 1);
      if (st != AT_OK) { n->n_items = i + 1; return st; }
    }
  } else {
    return FAILU("unsupported normalizer \"%s\"", ty);
  }
  return AT_OK;
}

/* --------------------------------------------------------- pre-tokenizer */
static int prepend_scheme_of(const json_t *o) {
  json_t *ps = json_object_get(o, "prepend_scheme");
  if (json_is_string(ps)) {
    const char *s = json_string_value(ps);
    if (!strcmp(s, "always")) return TK_PREPEND_ALWAYS;
    if (!strcmp(s, "first")) return TK_PREPEND_FIRST;
    if (!strcmp(s, "never")) return TK_PREPEND_NEVER;
    return -1;
  }
  return jbool(o, "add_prefix_space", true) ? TK_PREPEND_ALWAYS : TK_PREPEND_NEVER;
}

static at_status parse_pretok(const json_t *o, tk_pretok *p, int depth) {
  memset(p, 0, sizeof *p);
  const char *ty = jtype(o);
  if (!json_is_object(o) || !ty) return FAILP("pre_tokenizer without a \"type\"");
  if (depth > 8) return FAILU("pre_tokenizer Sequence nested too deeply");
  if (!strcmp(ty, "BertPreTokenizer")) p->kind = TK_P_BERT;
  else if (!strcmp(ty, "Whitespace")) p->kind = TK_P_WHITESPACE;
  else if (!strcmp(ty, "WhitespaceSplit")) p->kind = TK_P_WSSPLIT;
  else if (!strcmp(ty, "Punctuation")) {
    p->kind = TK_P_PUNCT;
    json_t *b = json_object_get(o, "behavior");
    p->behavior = b ? behavior_of(json_string_value(b)) : TK_B_ISOLATED;
    if (p->behavior < 0) return FAILU("pre_tokenizer Punctuation: unknown behavior");
  } else if (!strcmp(ty, "Digits")) {
    p->kind = TK_P_DIGITS;
    p->individual_digits = jbool(o, "individual_digits", false);
  } else if (!strcmp(ty, "Split")) {
    p->kind = TK_P_SPLIT;
    p->behavior = behavior_of(json_string_value(json_object_get(o, "behavior")));
    if (p->behavior < 0) return FAILU("pre_tokenizer Split: unknown behavior");
    p->invert = jbool(o, "invert", false);
    return parse_pattern(o, &p->pat, "pre_tokenizer Split");
  } else if (!strcmp(ty, "ByteLevel")) {
    p->kind = TK_P_BYTELEVEL;
    p->add_prefix_space = jbool(o, "add_prefix_space", true);
    p->use_regex = jbool(o, "use_regex", true);
  } else if (!strcmp(ty, "Metaspace")) {
    p->kind = TK_P_METASPACE;
    json_t *r = json_object_get(o, "replacement");
    if (!json_is_string(r) || !json_string_length(r)) return FAILP("pre_tokenizer Metaspace: \"replacement\" must be a character");
    p->replacement = first_cp(json_string_value(r), json_string_length(r));
    p->prepend_scheme = prepend_scheme_of(o);
    if (p->prepend_scheme < 0) return FAILU("pre_tokenizer Metaspace: unknown prepend_scheme");
    p->split = jbool(o, "split", true);
  } else if (!strcmp(ty, "CharDelimiterSplit")) {
    p->kind = TK_P_CHARDELIM;
    json_t *d = json_object_get(o, "delimiter");
    if (!json_is_string(d) || !json_string_length(d)) return FAILP("pre_tokenizer CharDelimiterSplit: \"delimiter\" must be a character");
    p->delim = first_cp(json_string_value(d), json_string_length(d));
  } else if (!strcmp(ty, "Sequence")) {
    p->kind = TK_P_SEQ;
    json_t *a = json_object_get(o, "pretokenizers");
    if (!json_is_array(a)) return FAILP("pre_tokenizer Sequence: \"pretokenizers\" must be an array");
    p->n_items = json_array_size(a);
    p->items = calloc(p->n_items ? p->n_items : 1, sizeof *p->items);
    if (!p->items) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < p->n_items; i++) {
      at_status st = parse_pretok(json_array_get(a, i), &p->items[i], depth + 1);
      if (st != AT_OK) { p->n_items = i + 1; return st; }
    }
  } else {
    return FAILU("unsupported pre_tokenizer \"%s\"", ty);
  }
  return AT_OK;
}

/* ------------------------------------------------------------------ model */
static at_status parse_vocab_obj(const json_t *v, tk_vocab *voc, const char *what) {
  if (!json_is_object(v)) return FAILP("model %s: \"vocab\" must be an object", what);
  const char *key;
  json_t *val;
  void *iter = json_object_iter((json_t *)v);
  while (iter) {
    key = json_object_iter_key(iter);
    val = json_object_iter_value(iter);
    if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) > INT32_MAX / 2)
      return FAILP("model %s: vocab entry \"%.40s\" must have a non-negative id", what, key);
#if JANSSON_VERSION_HEX >= 0x020e00
    size_t klen = json_object_iter_key_len(iter);
#else
    size_t klen = strlen(key);
#endif
    at_status st = tk_vocab_put(voc, key, klen, (int32_t)json_integer_value(val));
    if (st != AT_OK) return st;
    iter = json_object_iter_next((json_t *)v, iter);
  }
  return AT_OK;
}

static at_status opt_string(const json_t *o, const char *key, char **out, size_t *len) {
  json_t *v = json_object_get(o, key);
  *out = NULL;
  if (len) *len = 0;
  if (!v || json_is_null(v)) return AT_OK;
  if (!json_is_string(v)) return FAILP("model: \"%s\" must be a string or null", key);
  *out = dupn(json_string_value(v), json_string_length(v));
  if (!*out) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  if (len) *len = json_string_length(v);
  return AT_OK;
}

static at_status parse_merges(const json_t *a, tk_model *m) {
  if (!json_is_array(a)) return FAILP("model BPE: \"merges\" must be an array");
  size_t n = json_array_size(a);
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(a, i);
    const char *sa, *sb;
    size_t la, lb;
    if (json_is_string(e)) {
      const char *s = json_string_value(e);
      size_t l = json_string_length(e);
      const char *sp = memchr(s, ' ', l);
      if (!sp || memchr(sp + 1, ' ', l - (size_t)(sp - s) - 1))
        return FAILP("model BPE: merge %zu (\"%.60s\") is not two tokens separated by one space", i + 1, s);
      sa = s; la = (size_t)(sp - s); sb = sp + 1; lb = l - la - 1;
    } else if (json_is_array(e) && json_array_size(e) == 2 && json_is_string(json_array_get(e, 0)) &&
               json_is_string(json_array_get(e, 1))) {
      sa = json_string_value(json_array_get(e, 0)); la = json_string_length(json_array_get(e, 0));
      sb = json_string_value(json_array_get(e, 1)); lb = json_string_length(json_array_get(e, 1));
    } else {
      return FAILP("model BPE: merge %zu must be \"a b\" or [\"a\", \"b\"]", i + 1);
    }
    int32_t ia = tk_vocab_get(&m->vocab, sa, la), ib = tk_vocab_get(&m->vocab, sb, lb);
    if (ia < 0) return FAILP("model BPE: merge %zu: token \"%.*s\" is not in the vocabulary", i + 1, (int)(la > 60 ? 60 : la), sa);
    if (ib < 0) return FAILP("model BPE: merge %zu: token \"%.*s\" is not in the vocabulary", i + 1, (int)(lb > 60 ? 60 : lb), sb);
    size_t skip = m->prefix_len;
    if (skip > lb) skip = lb;
    char stackbuf[256];
    char *buf = la + lb - skip <= sizeof stackbuf ? stackbuf : malloc(la + lb);
    if (!buf) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
    memcpy(buf, sa, la);
    memcpy(buf + la, sb + skip, lb - skip);
    int32_t id = tk_vocab_get(&m->vocab, buf, la + lb - skip);
    if (buf != stackbuf) free(buf);
    if (id < 0) return FAILP("model BPE: merge %zu: the merged token is not in the vocabulary", i + 1);
    at_status st = tk_merges_put(&m->merges, ia, ib, (int32_t)i, id);
    if (st != AT_OK) return st;
  }
  return AT_OK;
}

/* Unigram: "vocab" is [[piece, score], ...] (ids are positions), "unk_id"
 * an index or null, "byte_fallback" a bool. HF's rules: an unk_id needs a
 * non-empty vocabulary that contains it. */
static at_status parse_unigram(const json_t *o, tk_model *m) {
  json_t *v = json_object_get(o, "vocab");
  if (!json_is_array(v)) return FAILP("model Unigram: \"vocab\" must be an array of [piece, score]");
  size_t n = json_array_size(v);
  if (n > INT32_MAX / 2) return at_fail(AT_ERR_LIMIT, "tokenizer.json: model Unigram: vocabulary too large");
  json_t *u = json_object_get(o, "unk_id");
  m->unk_id = -1;
  if (u && !json_is_null(u)) {
    if (!json_is_integer(u) || json_integer_value(u) < 0)
      return FAILP("model Unigram: \"unk_id\" must be a non-negative integer or null");
    if (!n) return FAILP("model Unigram: the vocabulary is empty but unk_id needs an entry");
    if ((size_t)json_integer_value(u) >= n)
      return FAILP("model Unigram: unk_id %lld is outside the %zu-entry vocabulary",
                   (long long)json_integer_value(u), n);
    m->unk_id = (int32_t)json_integer_value(u);
  }
  json_t *bf = json_object_get(o, "byte_fallback");
  if (bf && !json_is_null(bf) && !json_is_boolean(bf)) return FAILP("model Unigram: \"byte_fallback\" must be a bool");
  m->byte_fallback = json_is_true(bf);
  m->fuse_unk = true; /* always on for Unigram in HF */
  json_t *alpha = json_object_get(o, "alpha");
  if (json_is_number(alpha) && json_number_value(alpha) != 0.0)
    return FAILU("model Unigram: sampling (alpha) is not supported (it makes tokenization random)");
  size_t blob = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(json_array_get(e, 0)) ||
        !json_is_number(json_array_get(e, 1)))
      return FAILP("model Unigram: vocab entry %zu must be [piece, score]", i);
    size_t l = json_string_length(json_array_get(e, 0));
    if (tk_utf8_valid_prefix((const uint8_t *)json_string_value(json_array_get(e, 0)), l) != l)
      return FAILP("model Unigram: vocab entry %zu is not valid UTF-8", i);
    blob += l + 1;
  }
  m->n_pieces = n;
  m->scores = calloc(n ? n : 1, sizeof *m->scores);
  m->pieces = calloc(n ? n : 1, sizeof *m->pieces);
  m->pieces_blob = malloc(blob ? blob : 1);
  if (!m->scores || !m->pieces || !m->pieces_blob) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  m->min_score = HUGE_VAL;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i), *p = json_array_get(e, 0);
    const char *str = json_string_value(p);
    size_t l = json_string_length(p);
    memcpy(m->pieces_blob + off, str, l);
    m->pieces_blob[off + l] = '\0';
    m->pieces[i] = m->pieces_blob + off;
    off += l + 1;
    m->scores[i] = json_number_value(json_array_get(e, 1));
    if (m->scores[i] < m->min_score) m->min_score = m->scores[i];
    at_status st = tk_vocab_put(&m->vocab, str, l, (int32_t)i);
    if (st != AT_OK) return st;
    /* every char-boundary prefix, marked -1 unless it is a piece itself */
    uint32_t cl;
    for (size_t k = 0; k < l; k += cl) {
      (void)tk_utf8_dec((const uint8_t *)str + k, &cl);
      if (k + cl >= l) break;
      if ((st = tk_vocab_put(&m->prefixes, str, k + cl, INT32_MIN)) != AT_OK) return st; /* idempotent */
    }
  }
  return AT_OK;
}

static at_status parse_model(const json_t *o, tk_model *m) {
  if (!json_is_object(o)) return FAILP("\"model\" is missing or not an object");
  const char *ty = jtype(o);
  json_t *vocab = json_object_get(o, "vocab");
  if (!ty) { /* old files: infer from the fields, as HF's untagged deserializer does */
    if (json_object_get(o, "merges")) ty = "BPE";
    else if (json_is_array(vocab)) ty = "Unigram";
    else if (json_object_get(o, "continuing_subword_prefix") || json_object_get(o, "max_input_chars_per_word")) ty = "WordPiece";
    else ty = "WordLevel";
  }
  at_status st;
  char *unk = NULL;
  size_t unk_len = 0;
  m->unk_id = -1;
  if (!strcmp(ty, "WordPiece")) {
    m->kind = TK_M_WORDPIECE;
    if ((st = parse_vocab_obj(vocab, &m->vocab, "WordPiece")) != AT_OK) return st;
    if ((st = opt_string(o, "continuing_subword_prefix", &m->prefix, &m->prefix_len)) != AT_OK) return st;
    if (!m->prefix) { m->prefix = dupn("##", 2); m->prefix_len = 2; }
    json_t *mc = json_object_get(o, "max_input_chars_per_word");
    m->max_chars = json_is_integer(mc) ? (size_t)json_integer_value(mc) : 100;
    if ((st = opt_string(o, "unk_token", &unk, &unk_len)) != AT_OK) return st;
    if (!unk) { unk = dupn("[UNK]", 5); unk_len = 5; }
    m->unk_id = unk ? tk_vocab_get(&m->vocab, unk, unk_len) : -1;
    free(unk);
  } else if (!strcmp(ty, "BPE")) {
    m->kind = TK_M_BPE;
    json_t *dr = json_object_get(o, "dropout");
    if (dr && !json_is_null(dr) && json_number_value(dr) != 0.0)
      return FAILU("model BPE: dropout is not supported (it makes tokenization random)");
    if ((st = parse_vocab_obj(vocab, &m->vocab, "BPE")) != AT_OK) return st;
    if ((st = opt_string(o, "continuing_subword_prefix", &m->prefix, &m->prefix_len)) != AT_OK) return st;
    if ((st = opt_string(o, "end_of_word_suffix", &m->suffix, &m->suffix_len)) != AT_OK) return st;
    if (m->prefix_len > 32 || m->suffix_len > 32) return FAILU("model BPE: prefix/suffix longer than 32 bytes");
    m->fuse_unk = jbool(o, "fuse_unk", false);
    m->byte_fallback = jbool(o, "byte_fallback", false);
    m->ignore_merges = jbool(o, "ignore_merges", false);
    if ((st = opt_string(o, "unk_token", &unk, &unk_len)) != AT_OK) return st;
    if (unk) {
      m->unk_id = tk_vocab_get(&m->vocab, unk, unk_len);
      if (m->unk_id < 0) m->unk_id = -2;
      free(unk);
    }
    if ((st = parse_merges(json_object_get(o, "merges"), m)) != AT_OK) return st;
  } else if (!strcmp(ty, "Unigram")) {
    m->kind = TK_M_UNIGRAM;
    if ((st = parse_unigram(o, m)) != AT_OK) return st;
  } else if (!strcmp(ty, "WordLevel")) {
    m->kind = TK_M_WORDLEVEL;
    if ((st = parse_vocab_obj(vocab, &m->vocab, "WordLevel")) != AT_OK) return st;
    if ((st = opt_string(o, "unk_token", &unk, &unk_len)) != AT_OK) return st;
    m->unk_id = unk ? tk_vocab_get(&m->vocab, unk, unk_len) : -1;
    free(unk);
  } else {
    return FAILU("unsupported model \"%s\"", ty);
  }
  return tk_model_finish(m);
}

/* ---------------------------------------------------------- post-process */
static at_status pair_tok(const json_t *o, const char *key, int32_t *id, const char *what) {
  json_t *a = json_object_get(o, key);
  if (!json_is_array(a) || json_array_size(a) != 2 || !json_is_integer(json_array_get(a, 1)))
    return FAILP("post_processor %s: \"%s\" must be [token, id]", what, key);
  *id = (int32_t)json_integer_value(json_array_get(a, 1));
  return AT_OK;
}

static at_status parse_template(const json_t *arr, const json_t *specials, tk_tpl_piece **out,
                                size_t *n_out) {
  if (!json_is_array(arr)) return FAILP("post_processor TemplateProcessing: template must be an array");
  size_t n = json_array_size(arr);
  *out = calloc(n ? n : 1, sizeof **out);
  if (!*out) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  *n_out = n;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(arr, i);
    json_t *sq = json_object_get(e, "Sequence"), *sp = json_object_get(e, "SpecialToken");
    tk_tpl_piece *p = &(*out)[i];
    if (json_is_object(sq)) {
      const char *id = json_string_value(json_object_get(sq, "id"));
      p->seq = id && !strcmp(id, "B") ? 1 : 0;
      p->type_id = (int32_t)json_integer_value(json_object_get(sq, "type_id"));
    } else if (json_is_object(sp)) {
      p->special = true;
      const char *id = json_string_value(json_object_get(sp, "id"));
      p->type_id = (int32_t)json_integer_value(json_object_get(sp, "type_id"));
      json_t *def = id ? json_object_get(specials, id) : NULL;
      json_t *ids = json_object_get(def, "ids");
      if (!json_is_array(ids))
        return FAILP("post_processor TemplateProcessing: special token \"%s\" is not defined", id ? id : "?");
      p->n_ids = json_array_size(ids);
      p->ids = calloc(p->n_ids ? p->n_ids : 1, sizeof *p->ids);
      if (!p->ids) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
      for (size_t j = 0; j < p->n_ids; j++) p->ids[j] = (int32_t)json_integer_value(json_array_get(ids, j));
    } else {
      return FAILP("post_processor TemplateProcessing: piece %zu is neither Sequence nor SpecialToken", i);
    }
  }
  return AT_OK;
}

static at_status parse_post(const json_t *o, tk_post *p, int depth) {
  memset(p, 0, sizeof *p);
  const char *ty = jtype(o);
  if (!json_is_object(o) || !ty) return FAILP("post_processor without a \"type\"");
  if (depth > 4) return FAILU("post_processor Sequence nested too deeply");
  at_status st;
  if (!strcmp(ty, "BertProcessing")) {
    p->kind = TK_PP_BERT;
    if ((st = pair_tok(o, "sep", &p->sep_id, ty)) != AT_OK) return st;
    return pair_tok(o, "cls", &p->cls_id, ty);
  }
  if (!strcmp(ty, "RobertaProcessing")) {
    p->kind = TK_PP_ROBERTA;
    p->trim_offsets = jbool(o, "trim_offsets", true);
    p->add_prefix_space = jbool(o, "add_prefix_space", true);
    if ((st = pair_tok(o, "sep", &p->sep_id, ty)) != AT_OK) return st;
    return pair_tok(o, "cls", &p->cls_id, ty);
  }
  if (!strcmp(ty, "ByteLevel")) {
    p->kind = TK_PP_BYTELEVEL;
    p->trim_offsets = jbool(o, "trim_offsets", true);
    p->add_prefix_space = jbool(o, "add_prefix_space", true);
    return AT_OK;
  }
  if (!strcmp(ty, "TemplateProcessing")) {
    p->kind = TK_PP_TEMPLATE;
    json_t *sp = json_object_get(o, "special_tokens");
    if ((st = parse_template(json_object_get(o, "single"), sp, &p->single, &p->n_single)) != AT_OK) return st;
    return parse_template(json_object_get(o, "pair"), sp, &p->pair, &p->n_pair);
  }
  if (!strcmp(ty, "Sequence")) {
    p->kind = TK_PP_SEQ;
    json_t *a = json_object_get(o, "processors");
    if (!json_is_array(a)) return FAILP("post_processor Sequence: \"processors\" must be an array");
    p->n_items = json_array_size(a);
    p->items = calloc(p->n_items ? p->n_items : 1, sizeof *p->items);
    if (!p->items) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
    int assemblers = 0;
    for (size_t i = 0; i < p->n_items; i++) {
      if ((st = parse_post(json_array_get(a, i), &p->items[i], depth + 1)) != AT_OK) { p->n_items = i + 1; return st; }
      if (p->items[i].kind == TK_PP_SEQ) return FAILU("post_processor Sequence inside a Sequence");
      if (p->items[i].kind != TK_PP_BYTELEVEL) assemblers++;
    }
    if (assemblers > 1) return FAILU("post_processor Sequence with more than one token-adding processor");
    return AT_OK;
  }
  return FAILU("unsupported post_processor \"%s\"", ty);
}

void tk_post_free(tk_post *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n_single; i++) free(p->single[i].ids);
  for (size_t i = 0; i < p->n_pair; i++) free(p->pair[i].ids);
  free(p->single);
  free(p->pair);
  for (size_t i = 0; i < p->n_items; i++) tk_post_free(&p->items[i]);
  free(p->items);
  memset(p, 0, sizeof *p);
}

/* ---------------------------------------------------------------- decoder */
static at_status parse_dec(const json_t *o, tk_dec *d, int depth) {
  memset(d, 0, sizeof *d);
  const char *ty = jtype(o);
  if (!json_is_object(o) || !ty) return FAILP("decoder without a \"type\"");
  if (depth > 8) return FAILU("decoder Sequence nested too deeply");
  if (!strcmp(ty, "WordPiece")) {
    d->kind = TK_D_WORDPIECE;
    json_t *p = json_object_get(o, "prefix");
    const char *s = json_is_string(p) ? json_string_value(p) : "##";
    d->prefix_len = json_is_string(p) ? json_string_length(p) : 2;
    d->prefix = dupn(s, d->prefix_len);
    d->cleanup = jbool(o, "cleanup", true);
  } else if (!strcmp(ty, "ByteLevel")) {
    d->kind = TK_D_BYTELEVEL;
  } else if (!strcmp(ty, "Metaspace")) {
    d->kind = TK_D_METASPACE;
    json_t *r = json_object_get(o, "replacement");
    if (!json_is_string(r) || !json_string_length(r)) return FAILP("decoder Metaspace: \"replacement\" must be a character");
    d->replacement = first_cp(json_string_value(r), json_string_length(r));
    d->prepend_scheme = prepend_scheme_of(o);
    if (d->prepend_scheme < 0) return FAILU("decoder Metaspace: unknown prepend_scheme");
  } else if (!strcmp(ty, "BPEDecoder")) {
    d->kind = TK_D_BPE;
    json_t *p = json_object_get(o, "suffix");
    const char *s = json_is_string(p) ? json_string_value(p) : "</w>";
    d->prefix_len = json_is_string(p) ? json_string_length(p) : 4;
    d->prefix = dupn(s, d->prefix_len);
  } else if (!strcmp(ty, "Replace")) {
    d->kind = TK_D_REPLACE;
    json_t *pat = json_object_get(o, "pattern");
    json_t *s = json_object_get(pat, "String"), *c = json_object_get(o, "content");
    if (!json_is_string(s)) return FAILU("decoder Replace: only string patterns are supported");
    if (!json_is_string(c)) return FAILP("decoder Replace: \"content\" must be a string");
    d->pattern = dupn(json_string_value(s), json_string_length(s));
    d->pattern_len = json_string_length(s);
    d->content = dupn(json_string_value(c), json_string_length(c));
    d->content_len = json_string_length(c);
  } else if (!strcmp(ty, "Fuse")) {
    d->kind = TK_D_FUSE;
  } else if (!strcmp(ty, "ByteFallback")) {
    d->kind = TK_D_BYTEFALLBACK;
  } else if (!strcmp(ty, "Strip")) {
    d->kind = TK_D_STRIP;
    json_t *c = json_object_get(o, "content");
    d->strip_char = json_is_string(c) ? first_cp(json_string_value(c), json_string_length(c)) : ' ';
    d->strip_left = (int)json_integer_value(json_object_get(o, "start"));
    d->strip_right = (int)json_integer_value(json_object_get(o, "stop"));
  } else if (!strcmp(ty, "Sequence")) {
    d->kind = TK_D_SEQ;
    json_t *a = json_object_get(o, "decoders");
    if (!json_is_array(a)) return FAILP("decoder Sequence: \"decoders\" must be an array");
    d->n_items = json_array_size(a);
    d->items = calloc(d->n_items ? d->n_items : 1, sizeof *d->items);
    if (!d->items) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < d->n_items; i++) {
      at_status st = parse_dec(json_array_get(a, i), &d->items[i], depth + 1);
      if (st != AT_OK) { d->n_items = i + 1; return st; }
    }
  } else {
    return FAILU("unsupported decoder \"%s\"", ty);
  }
  return AT_OK;
}

void tk_dec_free(tk_dec *d) {
  if (!d) return;
  free(d->prefix);
  free(d->pattern);
  free(d->content);
  for (size_t i = 0; i < d->n_items; i++) tk_dec_free(&d->items[i]);
  free(d->items);
  memset(d, 0, sizeof *d);
}

/* --------------------------------------------------------------- top level */
static at_status parse_added(const json_t *a, at_tokenizer *t) {
  if (!a || json_is_null(a)) return AT_OK;
  if (!json_is_array(a)) return FAILP("\"added_tokens\" must be an array");
  size_t n = json_array_size(a);
  t->added = calloc(n ? n : 1, sizeof *t->added);
  if (!t->added) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(a, i);
    json_t *c = json_object_get(e, "content"), *id = json_object_get(e, "id");
    if (!json_is_string(c) || !json_is_integer(id) || json_integer_value(id) < 0 ||
        json_integer_value(id) > INT32_MAX / 2)
      return FAILP("added_tokens[%zu] needs a \"content\" string and a non-negative \"id\"", i);
    tk_added *ad = &t->added[t->n_added++];
    ad->len = json_string_length(c);
    ad->content = dupn(json_string_value(c), ad->len);
    if (!ad->content) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
    ad->id = (int32_t)json_integer_value(id);
    ad->special = jbool(e, "special", false);
    ad->single_word = jbool(e, "single_word", false);
    ad->lstrip = jbool(e, "lstrip", false);
    ad->rstrip = jbool(e, "rstrip", false);
    ad->normalized = jbool(e, "normalized", !ad->special);
  }
  return AT_OK;
}

static at_status parse_trunc_pad(const json_t *root, at_tokenizer *t) {
  json_t *tr = json_object_get(root, "truncation");
  if (tr && !json_is_null(tr)) {
    if (!json_is_object(tr)) return FAILP("\"truncation\" must be an object or null");
    json_t *ml = json_object_get(tr, "max_length");
    if (!json_is_integer(ml) || json_integer_value(ml) < 0) return FAILP("truncation: \"max_length\" must be a non-negative integer");
    t->trunc_on = true;
    t->trunc_max = (size_t)json_integer_value(ml);
    const char *s = json_string_value(json_object_get(tr, "strategy"));
    if (!s || !strcmp(s, "LongestFirst")) t->trunc_strategy = TK_TRUNC_LONGEST_FIRST;
    else if (!strcmp(s, "OnlyFirst")) t->trunc_strategy = TK_TRUNC_ONLY_FIRST;
    else if (!strcmp(s, "OnlySecond")) t->trunc_strategy = TK_TRUNC_ONLY_SECOND;
    else return FAILU("truncation: unsupported strategy \"%s\"", s);
    const char *d = json_string_value(json_object_get(tr, "direction"));
    t->trunc_left = d && !strcmp(d, "Left");
    json_t *stride = json_object_get(tr, "stride");
    if (json_is_integer(stride) && json_integer_value(stride) != 0)
      at_log(AT_LOG_INFO, "tokenizer", "truncation stride ignored: overflowing tokens are not returned");
  }
  json_t *pd = json_object_get(root, "padding");
  if (pd && !json_is_null(pd)) {
    if (!json_is_object(pd)) return FAILP("\"padding\" must be an object or null");
    t->pad_on = true;
    json_t *stg = json_object_get(pd, "strategy");
    if (json_is_string(stg) && !strcmp(json_string_value(stg), "BatchLongest")) {
      t->pad_batch_longest = true;
    } else if (json_is_object(stg) && json_is_integer(json_object_get(stg, "Fixed"))) {
      t->pad_fixed = (size_t)json_integer_value(json_object_get(stg, "Fixed"));
    } else {
      return FAILU("padding: unsupported strategy");
    }
    const char *d = json_string_value(json_object_get(pd, "direction"));
    t->pad_left = d && !strcmp(d, "Left");
    json_t *mult = json_object_get(pd, "pad_to_multiple_of");
    t->pad_multiple = json_is_integer(mult) ? (size_t)json_integer_value(mult) : 0;
    t->pad_id = (int32_t)json_integer_value(json_object_get(pd, "pad_id"));
    t->pad_type_id = (int32_t)json_integer_value(json_object_get(pd, "pad_type_id"));
    json_t *ptok = json_object_get(pd, "pad_token");
    if (json_is_string(ptok)) t->pad_token = dupn(json_string_value(ptok), json_string_length(ptok));
  } else {
    t->pad_id = -1;
  }
  return AT_OK;
}

at_status tk_load_json(const char *json, size_t len, at_tokenizer *t) {
  json_error_t err;
  json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
  if (!root) {
    /* duplicate keys are legal JSON that HF accepts (last wins); retry */
    root = json_loadb(json, len, JSON_ALLOW_NUL, &err);
    if (!root) return FAILP("line %d column %d: %s", err.line, err.column, err.text);
  }
  at_status st;
  if (!json_is_object(root)) { st = FAILP("top level must be an object"); goto done; }
  if ((st = parse_model(json_object_get(root, "model"), &t->model)) != AT_OK) goto done;
  if ((st = parse_added(json_object_get(root, "added_tokens"), t)) != AT_OK) goto done;
  json_t *o;
  if ((o = json_object_get(root, "normalizer")) && !json_is_null(o)) {
    t->norm = calloc(1, sizeof *t->norm);
    if (!t->norm) { st = at_fail(AT_ERR_NOMEM, "tokenizer: out of memory"); goto done; }
    if ((st = parse_norm(o, t->norm, 0)) != AT_OK) goto done;
  }
  if ((o = json_object_get(root, "pre_tokenizer")) && !json_is_null(o)) {
    t->pretok = calloc(1, sizeof *t->pretok);
    if (!t->pretok) { st = at_fail(AT_ERR_NOMEM, "tokenizer: out of memory"); goto done; }
    if ((st = parse_pretok(o, t->pretok, 0)) != AT_OK) goto done;
  }
  if ((o = json_object_get(root, "post_processor")) && !json_is_null(o)) {
    t->post = calloc(1, sizeof *t->post);
    if (!t->post) { st = at_fail(AT_ERR_NOMEM, "tokenizer: out of memory"); goto done; }
    if ((st = parse_post(o, t->post, 0)) != AT_OK) goto done;
  }
  if ((o = json_object_get(root, "decoder")) && !json_is_null(o)) {
    t->dec = calloc(1, sizeof *t->dec);
    if (!t->dec) { st = at_fail(AT_ERR_NOMEM, "tokenizer: out of memory"); goto done; }
    if ((st = parse_dec(o, t->dec, 0)) != AT_OK) goto done;
  }
  st = parse_trunc_pad(root, t);
done:
  json_decref(root);
  return st;
}

/* --------------------------------------------------------------- finishing */
static void describe(at_tokenizer *t) {
  static const char *nn[] = {"BertNormalizer", "NFC", "NFD", "NFKC", "NFKD", "Lowercase",
                             "StripAccents", "Strip", "Replace", "Prepend", "Sequence",
                             "Precompiled", "Nmt"};
  static const char *pn[] = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation",
                             "Digits", "Split", "ByteLevel", "Metaspace", "CharDelimiterSplit",
                             "Sequence"};
  static const char *mn[] = {"WordPiece", "BPE", "WordLevel", "Unigram"};
  static const char *ppn[] = {"BertProcessing", "RobertaProcessing", "TemplateProcessing",
                              "ByteLevel", "Sequence"};
  snprintf(t->describe, sizeof t->describe, "%s > %s > %s(%zu) > %s",
           t->norm ? nn[t->norm->kind] : "-", t->pretok ? pn[t->pretok->kind] : "-",
           mn[t->model.kind], t->n_ids, t->post ? ppn[t->post->kind] : "-");
}

at_status tk_finish_tokenizer(at_tokenizer *t) {
  (void)tk_byte_to_cp(0);
  int32_t max_id = -1;
  for (size_t i = 0; i < t->model.vocab.n; i++)
    if (t->model.vocab.ent[i].id > max_id) max_id = t->model.vocab.ent[i].id;
  for (size_t k = 0; k < t->n_added; k++)
    if (t->added[k].id > max_id) max_id = t->added[k].id;
  t->n_ids = (size_t)(max_id + 1);
  t->id_str = calloc(t->n_ids ? t->n_ids : 1, sizeof *t->id_str);
  t->id_special = calloc(t->n_ids ? t->n_ids : 1, 1);
  if (!t->id_str || !t->id_special) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  for (size_t i = 0; i < t->model.vocab.n; i++)
    t->id_str[t->model.vocab.ent[i].id] = tk_vocab_str(&t->model.vocab, i);
  for (size_t i = 0; i < t->model.n_pieces; i++) t->id_str[i] = t->model.pieces[i]; /* Unigram */
  for (size_t k = 0; k < t->n_added; k++) {
    tk_added *a = &t->added[k];
    if (!t->id_str[a->id]) t->id_str[a->id] = a->content;
    if (a->special) t->id_special[a->id] = 1;
    a->match = a->content;
    a->match_len = a->len;
  }
  /* normalized added tokens are matched in their normalized form */
  bool need_norm = false;
  for (size_t k = 0; k < t->n_added; k++) need_norm |= t->added[k].normalized && t->norm;
  if (need_norm) {
    at_tok_workspace *ws;
    at_status st = at_tok_workspace_create(&ws);
    if (st != AT_OK) return st;
    for (size_t k = 0; k < t->n_added && st == AT_OK; k++) {
      tk_added *a = &t->added[k];
      if (!a->normalized || !a->len) continue;
      if (tk_utf8_valid_prefix((const uint8_t *)a->content, a->len) != a->len) {
        st = FAILP("added token %d is not valid UTF-8", a->id);
        break;
      }
      ws->nb_len = 0;
      tk_norm_limit(ws, a->len);
      if ((st = TK_RESERVE(ws->nb, ws->nb_cap, a->len + 1)) != AT_OK) break;
      if ((st = TK_RESERVE(ws->al, ws->al_cap, a->len + 1)) != AT_OK) break;
      memcpy(ws->nb, a->content, a->len);
      for (uint32_t i = 0; i < a->len; i++) { ws->al[i].s = i; ws->al[i].e = i + 1; }
      ws->nb_len = a->len;
      tk_split sp = {0, (uint32_t)a->len, 0, -1};
      if ((st = tk_normalize(t->norm, ws, &sp)) != AT_OK) break;
      a->match = dupn((const char *)ws->nb + sp.off, sp.len);
      if (!a->match) { a->match = a->content; st = at_fail(AT_ERR_NOMEM, "tokenizer: out of memory"); break; }
      a->match_len = sp.len;
    }
    at_tok_workspace_destroy(ws);
    if (st != AT_OK) return st;
  }
  for (size_t k = 0; k < t->n_added; k++) {
    tk_added *a = &t->added[k];
    if (!a->match_len) continue;
    uint8_t c = (uint8_t)a->match[0];
    uint8_t *bm = a->normalized ? t->added_first_norm : t->added_first_raw;
    bm[c >> 3] |= (uint8_t)(1u << (c & 7));
  }
  if (t->pad_id < 0) {
    int32_t id = at_tokenizer_token_to_id(t, "[PAD]");
    if (id < 0) id = at_tokenizer_token_to_id(t, "<pad>");
    t->pad_id = id >= 0 ? id : 0;
  }
  if (t->post && t->post->kind == TK_PP_BERT &&
      ((size_t)t->post->cls_id >= t->n_ids || (size_t)t->post->sep_id >= t->n_ids))
    return FAILP("post_processor BertProcessing: [CLS]/[SEP] id outside the vocabulary");
  describe(t);
  return AT_OK;
}

/* ---------------------------------------------------------------- vocab.txt */
at_status at_tokenizer_from_vocab_txt(const char *txt, size_t len, bool lowercase,
                                      at_tokenizer **out) {
  if (!txt || !out) return at_fail(AT_ERR_INVALID_ARG, "at_tokenizer_from_vocab_txt: NULL argument");
  *out = NULL;
  at_tokenizer *t = calloc(1, sizeof *t);
  if (!t) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  at_status st = AT_OK;
  tk_model *m = &t->model;
  m->kind = TK_M_WORDPIECE;
  m->prefix = dupn("##", 2);
  m->prefix_len = 2;
  m->max_chars = 100;
  size_t line = 0, i = 0;
  while (i < len && st == AT_OK) {
    const char *nl = memchr(txt + i, '\n', len - i);
    size_t e = nl ? (size_t)(nl - txt) : len, l = e - i;
    while (l && (txt[i + l - 1] == '\r' || txt[i + l - 1] == ' ' || txt[i + l - 1] == '\t')) l--;
    if (tk_utf8_valid_prefix((const uint8_t *)txt + i, l) != l)
      st = at_fail(AT_ERR_PARSE, "vocab.txt: line %zu is not valid UTF-8", line + 1);
    else if (nl || l)
      st = tk_vocab_put(&m->vocab, txt + i, l, (int32_t)line);
    line++;
    i = e + 1;
  }
  if (st == AT_OK && !m->vocab.n) st = at_fail(AT_ERR_PARSE, "vocab.txt: empty vocabulary");
  if (st == AT_OK) st = tk_model_finish(m);
  m->unk_id = tk_vocab_get(&m->vocab, "[UNK]", 5);
  int32_t cls = tk_vocab_get(&m->vocab, "[CLS]", 5), sep = tk_vocab_get(&m->vocab, "[SEP]", 5);
  if (st == AT_OK && (cls < 0 || sep < 0 || m->unk_id < 0))
    st = at_fail(AT_ERR_PARSE, "vocab.txt: [UNK], [CLS] and [SEP] must all be in the vocabulary");
  if (st == AT_OK) {
    t->norm = calloc(1, sizeof *t->norm);
    t->pretok = calloc(1, sizeof *t->pretok);
    t->post = calloc(1, sizeof *t->post);
    t->dec = calloc(1, sizeof *t->dec);
    t->added = calloc(5, sizeof *t->added);
    if (!t->norm || !t->pretok || !t->post || !t->dec || !t->added)
      st = at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  }
  if (st == AT_OK) {
    t->norm->kind = TK_N_BERT;
    t->norm->clean_text = t->norm->chinese = true;
    t->norm->lowercase = t->norm->strip_accents = lowercase;
    t->pretok->kind = TK_P_BERT;
    t->post->kind = TK_PP_BERT;
    t->post->cls_id = cls;
    t->post->sep_id = sep;
    t->dec->kind = TK_D_WORDPIECE;
    t->dec->prefix = dupn("##", 2);
    t->dec->prefix_len = 2;
    t->dec->cleanup = true;
    static const char *sp[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (int k = 0; k < 5 && st == AT_OK; k++) {
      int32_t id = tk_vocab_get(&m->vocab, sp[k], strlen(sp[k]));
      if (id < 0) continue;
      tk_added *a = &t->added[t->n_added++];
      a->content = dupn(sp[k], strlen(sp[k]));
      if (!a->content) { st = at_fail(AT_ERR_NOMEM, "tokenizer: out of memory"); break; }
      a->len = strlen(sp[k]);
      a->id = id;
      a->special = true;
    }
    t->pad_id = -1;
  }
  if (st == AT_OK) st = tk_finish_tokenizer(t);
  if (st != AT_OK) {
    at_tokenizer_destroy(t);
    return st;
  }
  *out = t;
  return AT_OK;
}
