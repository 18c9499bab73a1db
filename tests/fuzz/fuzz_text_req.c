/* tests/fuzz/fuzz_text_req.c — libFuzzer driver for the text routes' request
 * bodies (src/serve/req_parse.c): every JSON object goes through the TEI
 * /embed and /predict parses (tei_req_parse), TEI's /rerank and /tokenize
 * parses, the Cohere/Jina /v1/rerank parse and the OpenAI /v1/embeddings
 * parse (oai_opts_parse: "encoding_format", "dimensions" for a 16-dimension
 * model; rj_texts_get: "input"), with max_inputs 8. Each answer is
 * compared with a reference decision written here from docs/api.md and
 * TEI's router types:
 *   - members: each route takes only its own (TEI's request type's, and
 *     "model"); any other is a 400;
 *   - texts (/embed, "input"): a string (one text, "single") or a list of
 *     1..8 elements, each a string or [text] / [text, text_pair] (the pair
 *     non-empty), returned in order and unaltered (the body's own strings,
 *     their full lengths; pairs only when given); an empty list or another
 *     element 400; over 8 is 413;
 *   - /predict "inputs" (TEI's PredictInput): a string, or a list whose
 *     first element is a string: one input of 1 or 2 strings (single); or
 *     a list of lists: a batch of 1..8 inputs, each [text] or [text, pair];
 *     anything else 400, a batch over 8 413;
 *   - flags: absent or null take the default (truncate the server's
 *     auto_truncate, normalize true, raw_scores false), booleans are taken
 *     as given, anything else is a 400; truncation_direction absent/null,
 *     "Left"/"left"/"Right"/"right", else 400; /embed dimensions absent,
 *     null or an integer in 1..16, else 400;
 *   - /rerank: a non-empty string "query", "texts" a list of 1..8 strings;
 *     /v1/rerank: "documents" 1..8 strings or objects with a string "text",
 *     "top_n" an integer >= 1 (capped at the count), rank_fields /
 *     max_chunks_per_doc / max_tokens_per_doc refused; /tokenize: a string
 *     or a list of 1..8 strings;
 *   - encoding_format: absent, null, "float" or "base64", else 400.
 * A refusal always carries a message. Seeds: tests/fuzz/corpus/text_req/. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/req_parse.h"

#define MAX_INPUTS 8
#define OUT_DIM 16

/* An element of a texts list as the reference reads it: a string, or
 * [text] / [text, text_pair] of strings with a non-empty pair. 0 if not. */
static int ref_elem(json_t *e, json_t **text, json_t **pair) {
  *text = *pair = NULL;
  if (json_is_string(e)) {
    *text = e;
    return 1;
  }
  if (!json_is_array(e) || json_array_size(e) < 1 || json_array_size(e) > 2) return 0;
  *text = json_array_get(e, 0);
  *pair = json_array_get(e, 1);
  if (!json_is_string(*text)) return 0;
  if (*pair && (!json_is_string(*pair) || json_string_length(*pair) == 0)) return 0;
  return 1;
}

/* The reference for a texts member: 0, 400 or 413. */
static int ref_texts(json_t *body, const char *key) {
  json_t *in = json_object_get(body, key), *t, *p;
  if (json_is_string(in)) return 0;
  if (!json_is_array(in) || json_array_size(in) == 0) return 400;
  if (json_array_size(in) > MAX_INPUTS) return 413;
  for (size_t i = 0; i < json_array_size(in); i++)
    if (!ref_elem(json_array_get(in, i), &t, &p)) return 400;
  return 0;
}

static void check_texts(json_t *body, const char *key, const rj_texts_t *t) {
  json_t *in = json_object_get(body, key);
  if (t->single != json_is_string(in)) abort();
  size_t n = t->single ? 1 : json_array_size(in);
  if (t->n != n || n < 1 || n > MAX_INPUTS) abort();
  int any_pair = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *s, *p;
    if (!ref_elem(t->single ? in : json_array_get(in, i), &s, &p)) abort();
    if (t->texts[i] != json_string_value(s) || t->lens[i] != json_string_length(s)) abort();
    if (p) {
      any_pair = 1;
      if (!t->pairs || t->pairs[i] != json_string_value(p) ||
          t->pair_lens[i] != json_string_length(p))
        abort();
    } else if (t->pairs && t->pairs[i]) {
      abort();
    }
  }
  if (any_pair != (t->pairs != NULL)) abort();
}

/* The reference for a flag: 0 or 400; *v its value. */
static int ref_bool(json_t *body, const char *key, bool dflt, bool *v) {
  json_t *j = json_object_get(body, key);
  *v = dflt;
  if (!j || json_is_null(j)) return 0;
  if (!json_is_boolean(j)) return 400;
  *v = json_is_true(j);
  return 0;
}

/* 0 when every member of body is in the NULL-terminated list, else 400. */
static int ref_members(json_t *body, const char *const *known) {
  const char *k;
  json_t *v;
  json_object_foreach(body, k, v) {
    int found = 0;
    for (const char *const *w = known; *w; w++) found |= !strcmp(*w, k);
    if (!found) return 400;
  }
  return 0;
}

static int is_str(json_t *j, const char *s) {
  return json_is_string(j) && json_string_length(j) == strlen(s) &&
         !strcmp(json_string_value(j), s);
}

static int ref_dir(json_t *body, at_trunc_direction *d) {
  json_t *j = json_object_get(body, "truncation_direction");
  *d = AT_TRUNC_AS_TOKENIZER;
  if (!j || json_is_null(j)) return 0;
  if (is_str(j, "Left") || is_str(j, "left"))
    *d = AT_TRUNC_LEFT;
  else if (is_str(j, "Right") || is_str(j, "right"))
    *d = AT_TRUNC_RIGHT;
  else
    return 400;
  return 0;
}

static int ref_dims(json_t *body, size_t *dims) {
  json_t *d = json_object_get(body, "dimensions");
  *dims = 0;
  if (!d || json_is_null(d)) return 0;
  if (!json_is_integer(d) || json_integer_value(d) < 1 || json_integer_value(d) > OUT_DIM)
    return 400;
  *dims = (size_t)json_integer_value(d);
  return 0;
}

/* /predict's one input: an array of 1 or 2 strings, the second non-empty. */
static int ref_pred_one(json_t *e) {
  if (!json_is_array(e) || json_array_size(e) < 1 || json_array_size(e) > 2) return 0;
  json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
  return json_is_string(a) && (!b || (json_is_string(b) && json_string_length(b) > 0));
}

/* TEI's PredictInput: 0, 400 or 413. */
static int ref_predict(json_t *body) {
  json_t *in = json_object_get(body, "inputs");
  if (json_is_string(in)) return 0;
  if (!json_is_array(in) || json_array_size(in) == 0) return 400;
  if (!json_is_array(json_array_get(in, 0))) return ref_pred_one(in) ? 0 : 400;
  if (json_array_size(in) > MAX_INPUTS) return 413;
  for (size_t i = 0; i < json_array_size(in); i++)
    if (!ref_pred_one(json_array_get(in, i))) return 400;
  return 0;
}

static void check_predict(json_t *body, const rj_texts_t *t) {
  json_t *in = json_object_get(body, "inputs");
  int one = json_is_string(in) || !json_is_array(json_array_get(in, 0));
  if (t->single != one) abort();
  size_t n = one ? 1 : json_array_size(in);
  if (t->n != n) abort();
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_is_string(in) ? NULL : one ? in : json_array_get(in, i);
    json_t *a = e ? json_array_get(e, 0) : in, *b = e ? json_array_get(e, 1) : NULL;
    if (t->texts[i] != json_string_value(a) || t->lens[i] != json_string_length(a)) abort();
    if (b && (!t->pairs || t->pairs[i] != json_string_value(b))) abort();
    if (!b && t->pairs && t->pairs[i]) abort();
  }
}

static void tei(json_t *body, tei_route route, bool truncate_dflt) {
  static const char *const ek[] = {"inputs",      "truncate",  "truncation_direction",
                                   "prompt_name", "normalize", "dimensions",
                                   "model",       NULL};
  static const char *const pk[] = {"inputs",     "truncate", "truncation_direction",
                                   "raw_scores", "model",    NULL};
  bool tr, no, rs;
  at_trunc_direction dir;
  size_t dims = 0;
  json_t *pn = json_object_get(body, "prompt_name");
  int want = ref_members(body, route == TEI_EMBED ? ek : pk);
  if (!want) want = route == TEI_PREDICT ? ref_predict(body) : ref_texts(body, "inputs");
  if (!want) want = ref_bool(body, "truncate", truncate_dflt, &tr);
  if (!want) want = ref_bool(body, "normalize", true, &no);
  if (!want) want = ref_bool(body, "raw_scores", false, &rs);
  if (!want) want = ref_dir(body, &dir);
  if (!want && route == TEI_EMBED) want = ref_dims(body, &dims);
  if (!want && pn && !json_is_null(pn) && !json_is_string(pn)) want = 400;
  tei_req q;
  char err[512] = "";
  int st = tei_req_parse(body, route, MAX_INPUTS, truncate_dflt, OUT_DIM, &q, err, sizeof err);
  if (st != want) abort();
  if (st) {
    if (!err[0] || q.t.texts || q.t.lens) abort();
    return;
  }
  if (route == TEI_PREDICT)
    check_predict(body, &q.t);
  else
    check_texts(body, "inputs", &q.t);
  if (q.truncate != tr || q.normalize != no || q.raw_scores != rs || q.trunc_dir != dir ||
      q.dims != dims)
    abort();
  tei_req_free(&q);
}

/* A list of 1..8 elements each accepted by ok(): 0, 400, 413. */
static int ref_list(json_t *l, int (*ok)(json_t *)) {
  if (!json_is_array(l) || json_array_size(l) == 0) return 400;
  if (json_array_size(l) > MAX_INPUTS) return 413;
  for (size_t i = 0; i < json_array_size(l); i++)
    if (!ok(json_array_get(l, i))) return 400;
  return 0;
}
static int str_ok(json_t *e) {
  return json_is_string(e);
}
static int doc_ok(json_t *e) {
  return json_is_string(e) || (json_is_object(e) && json_is_string(json_object_get(e, "text")));
}
static int query_ok(json_t *body) {
  json_t *q = json_object_get(body, "query");
  return json_is_string(q) && json_string_length(q) > 0;
}

static void rerank(json_t *body, bool truncate_dflt) {
  static const char *const k[] = {"query",      "texts",       "truncate", "truncation_direction",
                                  "raw_scores", "return_text", "model",    NULL};
  bool b;
  at_trunc_direction dir;
  int want = ref_members(body, k);
  if (!want && !query_ok(body)) want = 400;
  if (!want) want = ref_list(json_object_get(body, "texts"), str_ok);
  if (!want) want = ref_bool(body, "truncate", truncate_dflt, &b);
  if (!want) want = ref_bool(body, "raw_scores", false, &b);
  if (!want) want = ref_bool(body, "return_text", false, &b);
  if (!want) want = ref_dir(body, &dir);
  tei_rerank_req q;
  char err[512] = "";
  int st = tei_rerank_parse(body, MAX_INPUTS, truncate_dflt, &q, err, sizeof err);
  if (st != want || (st && !err[0])) abort();
  if (st) return;
  json_t *l = json_object_get(body, "texts");
  if (q.t.n != json_array_size(l) || q.trunc_dir != dir) abort();
  for (size_t i = 0; i < q.t.n; i++)
    if (q.t.texts[i] != json_string_value(json_array_get(l, i))) abort();
  tei_rerank_free(&q);
}

static void cohere(json_t *body) {
  static const char *const k[] = {"model", "query", "documents", "top_n", "return_documents", NULL};
  static const char *const unsup[] = {"rank_fields", "max_chunks_per_doc", "max_tokens_per_doc"};
  bool rd = false;
  int want = 0;
  for (int i = 0; i < 3; i++) {
    json_t *u = json_object_get(body, unsup[i]);
    if (u && !json_is_null(u)) want = 400;
  }
  if (!want) want = ref_members(body, k);
  if (!want && !query_ok(body)) want = 400;
  json_t *l = json_object_get(body, "documents"), *tn = json_object_get(body, "top_n");
  if (!want)
    want = ref_list(l, doc_ok) == 413 ? 413 : !json_is_array(l) || !json_array_size(l) ? 400 : 0;
  if (!want) want = ref_bool(body, "return_documents", false, &rd);
  size_t top = json_array_size(l);
  if (!want && tn && !json_is_null(tn)) {
    if (!json_is_integer(tn) || json_integer_value(tn) < 1)
      want = 400;
    else if ((uint64_t)json_integer_value(tn) < top)
      top = (size_t)json_integer_value(tn);
  }
  if (!want) want = ref_list(l, doc_ok);
  cohere_rerank_req q;
  char err[512] = "";
  int st = cohere_rerank_parse(body, MAX_INPUTS, &q, err, sizeof err);
  if (st != want || (st && !err[0])) abort();
  if (st) return;
  if (q.t.n != json_array_size(l) || q.top_n != top || q.return_documents != rd) abort();
  for (size_t i = 0; i < q.t.n; i++) {
    json_t *e = json_array_get(l, i);
    if (json_is_object(e)) e = json_object_get(e, "text");
    if (q.t.texts[i] != json_string_value(e) || q.t.lens[i] != json_string_length(e)) abort();
  }
  cohere_rerank_free(&q);
}

static void tokenize(json_t *body) {
  static const char *const k[] = {"inputs", "add_special_tokens", "prompt_name", "model", NULL};
  bool sp;
  json_t *in = json_object_get(body, "inputs"), *pn = json_object_get(body, "prompt_name");
  int want = ref_members(body, k);
  if (!want) want = ref_bool(body, "add_special_tokens", true, &sp);
  if (!want && pn && !json_is_null(pn) && !json_is_string(pn)) want = 400;
  if (!want && !json_is_string(in)) want = ref_list(in, str_ok);
  tei_tokenize_req q;
  char err[512] = "";
  int st = tei_tokenize_parse(body, MAX_INPUTS, &q, err, sizeof err);
  if (st != want || (st && !err[0])) abort();
  if (st) return;
  if (q.add_special_tokens != sp || q.t.single != json_is_string(in)) abort();
  if (q.t.n != (json_is_string(in) ? 1 : json_array_size(in))) abort();
  for (size_t i = 0; i < q.t.n; i++)
    if (q.t.texts[i] != json_string_value(json_is_string(in) ? in : json_array_get(in, i))) abort();
  tei_tokenize_free(&q);
}

static void openai(json_t *body) {
  int want = 0;
  bool b64 = false;
  size_t dims = 0;
  json_t *f = json_object_get(body, "encoding_format"), *d = json_object_get(body, "dimensions");
  if (f && !json_is_null(f)) {
    if (json_is_string(f) && !strcmp(json_string_value(f), "base64") && json_string_length(f) == 6)
      b64 = true;
    else if (!json_is_string(f) || strcmp(json_string_value(f), "float") ||
             json_string_length(f) != 5)
      want = 400;
  }
  if (!want && d && !json_is_null(d)) {
    if (json_is_integer(d) && json_integer_value(d) >= 1 && json_integer_value(d) <= OUT_DIM)
      dims = (size_t)json_integer_value(d);
    else
      want = 400;
  }
  oai_opts o;
  char err[256] = "";
  int st = oai_opts_parse(body, OUT_DIM, &o, err, sizeof err);
  if (st != want || (st && !err[0])) abort();
  if (!st && (o.base64 != b64 || o.dims != dims)) abort();
  rj_texts_t t;
  err[0] = '\0';
  st = rj_texts_get(body, "input", MAX_INPUTS, &t, err, sizeof err);
  if (st != ref_texts(body, "input")) abort();
  if (st) {
    if (!err[0] || t.texts || t.lens) abort();
    return;
  }
  check_texts(body, "input", &t);
  rj_texts_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t jerr;
  /* the flags rj_parse() uses; then a body that is not an object is refused there */
  json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
  if (!body) return 0;
  if (json_is_object(body)) {
    tei(body, TEI_EMBED, size & 1); /* server.auto_truncate either way */
    tei(body, TEI_PREDICT, size & 1);
    rerank(body, size & 1);
    cohere(body);
    tokenize(body);
    openai(body);
  }
  json_decref(body);
  return 0;
}
