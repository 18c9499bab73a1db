/* tests/fuzz/fuzz_text_req.c — libFuzzer driver for the text routes' request
 * bodies (src/serve/req_parse.c): every JSON object goes through the TEI
 * /embed and /predict parse (tei_req_parse: "inputs", "truncate",
 * "normalize", "raw_scores") and the OpenAI /v1/embeddings parse
 * (oai_opts_parse: "encoding_format", "dimensions" for a 16-dimension
 * model; rj_texts_get: "input"), with max_inputs 8. Each answer is
 * compared with a reference decision written here from docs/api.md:
 *   - texts: a string (one text, "single") or a list of 1..8 elements,
 *     each a string or [text] / [text, text_pair] (a cross-encoder's
 *     input, the pair non-empty), returned in order and unaltered (the
 *     body's own strings, their full lengths; pairs only when given); an
 *     empty list or another element 400; over 8 is 413;
 *   - flags: absent or null take the default (truncate the server's
 *     auto_truncate, normalize true, raw_scores false), booleans are taken
 *     as given, anything else is a 400;
 *   - encoding_format: absent, null, "float" or "base64", else 400;
 *     dimensions: absent, null or an integer in 1..16, else 400.
 * A refusal always carries a message. Seeds: tests/fuzz/corpus/text_req/. */
#include <jansson.h>
#include <stdint.h>
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
      if (!t->pairs || t->pairs[i] != json_string_value(p) || t->pair_lens[i] != json_string_length(p))
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

static void tei(json_t *body, bool truncate_dflt) {
  bool tr, no, rs;
  int want = ref_texts(body, "inputs");
  if (!want) want = ref_bool(body, "truncate", truncate_dflt, &tr);
  if (!want) want = ref_bool(body, "normalize", true, &no);
  if (!want) want = ref_bool(body, "raw_scores", false, &rs);
  tei_req q;
  char err[256] = "";
  int st = tei_req_parse(body, MAX_INPUTS, truncate_dflt, &q, err, sizeof err);
  if (st != want) abort();
  if (st) {
    if (!err[0] || q.t.texts || q.t.lens) abort();
    return;
  }
  check_texts(body, "inputs", &q.t);
  if (q.truncate != tr || q.normalize != no || q.raw_scores != rs) abort();
  tei_req_free(&q);
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
    tei(body, size & 1); /* server.auto_truncate either way */
    openai(body);
  }
  json_decref(body);
  return 0;
}
