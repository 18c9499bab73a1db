/* src/serve/req_parse.c — reading the text routes' request bodies without
 * server state (see req_parse.h): the TEI routes' bodies as TEI's router
 * types read them (its PredictInput pair reading, TruncationDirection's
 * spellings, EmbedRequest.dimensions), Cohere/Jina's /v1/rerank body and
 * the OpenAI embeddings options. request_json.c's rj_texts()/rj_bool() wrap
 * the generic ones and send their refusals; routes_tei.c sends the rest.
 * Pure: no allocation beyond the texts' pointer arrays, any thread. */
#include "serve/req_parse.h"
#include "serve/fields.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rj_texts_get(json_t *body, const char *key, size_t max_inputs, rj_texts_t *out, char *err,
                 size_t cap) {
  memset(out, 0, sizeof *out);
  json_t *in = json_object_get(body, key);
  if (!in) {
    snprintf(err, cap, "missing \"%s\": give a string or a list of strings", key);
    return 400;
  }
  if (json_is_string(in)) {
    out->single = true;
    out->n = 1;
  } else if (json_is_array(in)) {
    out->n = json_array_size(in);
    if (out->n == 0) {
      snprintf(err, cap, "\"%s\" is an empty list", key);
      return 400;
    }
    if (out->n > max_inputs) {
      snprintf(err, cap, "%zu inputs in one request; the limit is %zu (server.max_inputs)", out->n,
               max_inputs);
      out->n = 0;
      return 413;
    }
  } else {
    snprintf(err, cap, "\"%s\" must be a string or a list of strings", key);
    return 400;
  }
  out->texts = calloc(out->n, sizeof *out->texts);
  out->lens = calloc(out->n, sizeof *out->lens);
  if (!out->texts || !out->lens) {
    rj_texts_free(out);
    snprintf(err, cap, "out of memory");
    return 500;
  }
  for (size_t i = 0; i < out->n; i++) {
    json_t *s = out->single ? in : json_array_get(in, i);
    json_t *second = NULL;
    if (json_is_array(s) && json_array_size(s) >= 1 && json_array_size(s) <= 2) {
      /* [text] or [text, text_pair] (a cross-encoder's input) */
      second = json_array_get(s, 1);
      s = json_array_get(s, 0);
      if (second && !json_is_string(second)) s = NULL;
    }
    if (!json_is_string(s)) {
      rj_texts_free(out);
      snprintf(err, cap,
               "\"%s\"[%zu] is not a string or a [text, text_pair] list of "
               "strings (token-id inputs are not supported)",
               key, i);
      return 400;
    }
    out->texts[i] = json_string_value(s);
    out->lens[i] = json_string_length(s);
    if (second) {
      if (!out->pairs) {
        out->pairs = calloc(out->n, sizeof *out->pairs);
        out->pair_lens = calloc(out->n, sizeof *out->pair_lens);
        if (!out->pairs || !out->pair_lens) {
          rj_texts_free(out);
          snprintf(err, cap, "out of memory");
          return 500;
        }
      }
      out->pairs[i] = json_string_value(second);
      out->pair_lens[i] = json_string_length(second);
      if (out->pair_lens[i] == 0) {
        rj_texts_free(out);
        snprintf(err, cap, "\"%s\"[%zu]: the text pair is an empty string", key, i);
        return 400;
      }
    }
  }
  return 0;
}

void rj_texts_free(rj_texts_t *t) {
  free(t->texts);
  free(t->lens);
  free(t->pairs);
  free(t->pair_lens);
  t->texts = NULL;
  t->lens = NULL;
  t->pairs = NULL;
  t->pair_lens = NULL;
  t->n = 0;
}

int rj_bool_get(json_t *body, const char *key, bool dflt, bool *out, char *err, size_t cap) {
  json_t *v = json_object_get(body, key);
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  if (!json_is_boolean(v)) {
    snprintf(err, cap, "\"%s\" must be true or false", key);
    return 400;
  }
  *out = json_is_true(v);
  return 0;
}

int rj_trunc_dir_get(json_t *body, at_trunc_direction *out, char *err, size_t cap) {
  json_t *v = json_object_get(body, "truncation_direction");
  *out = AT_TRUNC_AS_TOKENIZER;
  if (!v || json_is_null(v)) return 0;
  const char *d = json_is_string(v) ? json_string_value(v) : "";
  size_t n = json_is_string(v) ? json_string_length(v) : 0;
  if (n == 5 && (!strcmp(d, "Right") || !strcmp(d, "right"))) {
    *out = AT_TRUNC_RIGHT;
    return 0;
  }
  if (n == 4 && (!strcmp(d, "Left") || !strcmp(d, "left"))) {
    *out = AT_TRUNC_LEFT;
    return 0;
  }
  snprintf(err, cap, "\"truncation_direction\" must be \"Right\" or \"Left\"");
  return 400;
}

int rj_dims_get(json_t *body, size_t out_dim, size_t *dims, char *err, size_t cap) {
  json_t *dv = json_object_get(body, "dimensions");
  *dims = 0;
  if (!dv || json_is_null(dv)) return 0;
  if (!json_is_integer(dv) || json_integer_value(dv) < 1 ||
      (uint64_t)json_integer_value(dv) > (uint64_t)out_dim) {
    snprintf(err, cap,
             "\"dimensions\" must be an integer in 1..%zu (the model's embedding size is %zu)",
             out_dim, out_dim);
    return 400;
  }
  *dims = (size_t)json_integer_value(dv);
  return 0;
}

/* Room for n texts (and their pairs when `pairs`). 0 or 500. */
static int texts_alloc(rj_texts_t *t, size_t n, bool pairs, char *err, size_t cap) {
  t->n = n;
  t->texts = calloc(n, sizeof *t->texts);
  t->lens = calloc(n, sizeof *t->lens);
  if (pairs) {
    t->pairs = calloc(n, sizeof *t->pairs);
    t->pair_lens = calloc(n, sizeof *t->pair_lens);
  }
  if (t->texts && t->lens && (!pairs || (t->pairs && t->pair_lens))) return 0;
  rj_texts_free(t);
  snprintf(err, cap, "out of memory");
  return 500;
}

/* Input i of a /predict body: `e` is [text] or [text, text_pair]. */
static int predict_elem(json_t *e, size_t i, rj_texts_t *t, char *err, size_t cap) {
  size_t k = json_is_array(e) ? json_array_size(e) : 0;
  json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
  if (!json_is_array(e) || k < 1 || k > 2 || !json_is_string(a) || (b && !json_is_string(b))) {
    snprintf(err, cap,
             "\"inputs\"[%zu] must be [text] or [text, text_pair] (strings): a batch is a list "
             "of such lists, as TEI's /predict reads it",
             i);
    return 400;
  }
  t->texts[i] = json_string_value(a);
  t->lens[i] = json_string_length(a);
  if (b) {
    t->pairs[i] = json_string_value(b);
    t->pair_lens[i] = json_string_length(b);
    if (t->pair_lens[i] == 0) {
      snprintf(err, cap, "\"inputs\"[%zu]: the text pair is an empty string", i);
      return 400;
    }
  }
  return 0;
}

int tei_predict_inputs_get(json_t *body, size_t max_inputs, rj_texts_t *out, char *err,
                           size_t cap) {
  memset(out, 0, sizeof *out);
  json_t *in = json_object_get(body, "inputs");
  if (!in) {
    snprintf(err, cap, "missing \"inputs\": give a string, [text, text_pair] or a list of those");
    return 400;
  }
  if (json_is_string(in)) {
    int st = texts_alloc(out, 1, false, err, cap);
    if (st) return st;
    out->single = true;
    out->texts[0] = json_string_value(in);
    out->lens[0] = json_string_length(in);
    return 0;
  }
  if (!json_is_array(in)) {
    snprintf(err, cap,
             "\"inputs\" must be a string or a list: [text, text_pair], or a batch of "
             "[text] / [text, text_pair] lists");
    return 400;
  }
  size_t n = json_array_size(in);
  if (n == 0) {
    snprintf(err, cap, "\"inputs\" is an empty list");
    return 400;
  }
  int st;
  if (!json_is_array(json_array_get(in, 0))) { /* one input: [text] or [text, text_pair] */
    if (n > 2) {
      snprintf(err, cap,
               "\"inputs\" is a list of %zu strings: a list of strings is one input, [text] or "
               "[text, text_pair] (TEI's /predict); send a batch as a list of lists, "
               "[[text], [text, text_pair], ...]",
               n);
      return 400;
    }
    for (size_t i = 0; i < n; i++)
      if (!json_is_string(json_array_get(in, i))) {
        snprintf(err, cap,
                 "\"inputs\"[%zu] is not a string: a list whose first element is a "
                 "string is one input, [text] or [text, text_pair]; a batch is a list of lists",
                 i);
        return 400;
      }
    if ((st = texts_alloc(out, 1, n == 2, err, cap))) return st;
    out->single = true;
    if ((st = predict_elem(in, 0, out, err, cap))) rj_texts_free(out); /* an empty pair */
    return st;
  }
  if (n > max_inputs) {
    snprintf(err, cap, "%zu inputs in one request; the limit is %zu (server.max_inputs)", n,
             max_inputs);
    return 413;
  }
  bool any_pair = false;
  for (size_t i = 0; i < n; i++) any_pair |= json_array_size(json_array_get(in, i)) == 2;
  if ((st = texts_alloc(out, n, any_pair, err, cap))) return st;
  for (size_t i = 0; i < n; i++)
    if ((st = predict_elem(json_array_get(in, i), i, out, err, cap))) {
      rj_texts_free(out);
      return st;
    }
  return 0;
}

int tei_req_parse(json_t *body, tei_route route, size_t max_inputs, bool truncate_dflt,
                  size_t out_dim, tei_req *q, char *err, size_t cap) {
  memset(q, 0, sizeof *q);
  int st = serve_fields_check(body, route == TEI_EMBED ? serve_fields_embed : serve_fields_predict,
                            route == TEI_EMBED ? "/embed" : "/predict", err, cap);
  if (st) return st;
  st = route == TEI_PREDICT ? tei_predict_inputs_get(body, max_inputs, &q->t, err, cap)
                            : rj_texts_get(body, "inputs", max_inputs, &q->t, err, cap);
  if (st) return st;
  if ((st = rj_bool_get(body, "truncate", truncate_dflt, &q->truncate, err, cap)) ||
      (st = rj_bool_get(body, "normalize", true, &q->normalize, err, cap)) ||
      (st = rj_bool_get(body, "raw_scores", false, &q->raw_scores, err, cap)) ||
      (st = rj_trunc_dir_get(body, &q->trunc_dir, err, cap)) ||
      (route == TEI_EMBED && (st = rj_dims_get(body, out_dim, &q->dims, err, cap)))) {
    rj_texts_free(&q->t);
    return st;
  }
  json_t *pn = json_object_get(body, "prompt_name");
  if (pn && !json_is_null(pn)) {
    if (!json_is_string(pn)) {
      snprintf(err, cap, "\"prompt_name\" must be a string (one of the model's prompts)");
      rj_texts_free(&q->t);
      return 400;
    }
    q->prompt_name = json_string_value(pn);
  }
  return 0;
}

void tei_req_free(tei_req *q) {
  rj_texts_free(&q->t);
}

/* body["query"] as a non-empty string. 0 or 400. */
static int query_get(json_t *body, const char **s, size_t *len, char *err, size_t cap) {
  json_t *q = json_object_get(body, "query");
  if (!json_is_string(q) || json_string_length(q) == 0) {
    snprintf(err, cap, "\"query\" must be a non-empty string");
    return 400;
  }
  *s = json_string_value(q);
  *len = json_string_length(q);
  return 0;
}

/* body[key] as a list of 1..max_inputs elements; *n its size. 0, 400, 413. */
static int list_get(json_t *body, const char *key, const char *what, size_t max_inputs,
                    json_t **list, char *err, size_t cap) {
  *list = json_object_get(body, key);
  if (!json_is_array(*list)) {
    snprintf(err, cap, "%s\"%s\" must be a list of %s", *list ? "" : "missing ", key, what);
    return 400;
  }
  size_t n = json_array_size(*list);
  if (n == 0) {
    snprintf(err, cap, "\"%s\" is an empty list", key);
    return 400;
  }
  if (n > max_inputs) {
    snprintf(err, cap, "%zu inputs in one request; the limit is %zu (server.max_inputs)", n,
             max_inputs);
    return 413;
  }
  return 0;
}

/* The texts of a rerank request's list (checked by list_get): strings, or
 * with `objects` also {"text": string} objects (Cohere's documents). 400
 * naming the first element that is neither. */
static int fill_texts(json_t *list, const char *key, bool objects, rj_texts_t *t, char *err,
                      size_t cap) {
  size_t n = json_array_size(list);
  int st;
  if ((st = texts_alloc(t, n, false, err, cap))) return st;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(list, i);
    if (objects && json_is_object(e)) e = json_object_get(e, "text");
    if (!json_is_string(e)) {
      rj_texts_free(t);
      snprintf(err, cap, "\"%s\"[%zu] %s", key, i,
               objects ? "must be a string or an object with a string \"text\""
                       : "is not a string: \"texts\" must be a list of strings");
      return 400;
    }
    t->texts[i] = json_string_value(e);
    t->lens[i] = json_string_length(e);
  }
  return 0;
}

int tei_rerank_parse(json_t *body, size_t max_inputs, bool truncate_dflt, tei_rerank_req *q,
                     char *err, size_t cap) {
  memset(q, 0, sizeof *q);
  json_t *list;
  int st;
  if ((st = serve_fields_check(body, serve_fields_rerank, "/rerank", err, cap)) ||
      (st = query_get(body, &q->query, &q->query_len, err, cap)) ||
      (st = list_get(body, "texts", "strings", max_inputs, &list, err, cap)) ||
      (st = rj_bool_get(body, "truncate", truncate_dflt, &q->truncate, err, cap)) ||
      (st = rj_bool_get(body, "raw_scores", false, &q->raw_scores, err, cap)) ||
      (st = rj_bool_get(body, "return_text", false, &q->return_text, err, cap)) ||
      (st = rj_trunc_dir_get(body, &q->trunc_dir, err, cap)))
    return st;
  return fill_texts(list, "texts", false, &q->t, err, cap);
}

void tei_rerank_free(tei_rerank_req *q) {
  rj_texts_free(&q->t);
}

int cohere_rerank_parse(json_t *body, size_t max_inputs, cohere_rerank_req *q, char *err,
                        size_t cap) {
  memset(q, 0, sizeof *q);
  json_t *list, *tn = json_object_get(body, "top_n");
  int st;
  if ((st = serve_fields_check(body, serve_fields_v1_rerank, "/v1/rerank", err, cap)) ||
      (st = query_get(body, &q->query, &q->query_len, err, cap)) ||
      (st = list_get(body, "documents", "strings or {\"text\": string} objects", max_inputs, &list,
                     err, cap)) ||
      (st = rj_bool_get(body, "return_documents", false, &q->return_documents, err, cap)))
    return st;
  size_t n = json_array_size(list);
  q->top_n = n;
  if (tn && !json_is_null(tn)) {
    if (!json_is_integer(tn) || json_integer_value(tn) < 1) {
      snprintf(err, cap, "\"top_n\" must be an integer of at least 1");
      return 400;
    }
    if ((uint64_t)json_integer_value(tn) < (uint64_t)n) q->top_n = (size_t)json_integer_value(tn);
  }
  return fill_texts(list, "documents", true, &q->t, err, cap);
}

void cohere_rerank_free(cohere_rerank_req *q) {
  rj_texts_free(&q->t);
}

int tei_tokenize_parse(json_t *body, size_t max_inputs, tei_tokenize_req *q, char *err,
                       size_t cap) {
  memset(q, 0, sizeof *q);
  int st;
  json_t *in = json_object_get(body, "inputs");
  if ((st = serve_fields_check(body, serve_fields_tokenize, "/tokenize", err, cap)) ||
      (st = rj_bool_get(body, "add_special_tokens", true, &q->add_special_tokens, err, cap)))
    return st;
  json_t *pn = json_object_get(body, "prompt_name");
  if (pn && !json_is_null(pn)) {
    if (!json_is_string(pn)) {
      snprintf(err, cap, "\"prompt_name\" must be a string (one of the model's prompts)");
      return 400;
    }
    q->prompt_name = json_string_value(pn);
  }
  if (json_is_string(in)) {
    if ((st = texts_alloc(&q->t, 1, false, err, cap))) return st;
    q->t.single = true;
    q->t.texts[0] = json_string_value(in);
    q->t.lens[0] = json_string_length(in);
    return 0;
  }
  json_t *list;
  if (!in) {
    snprintf(err, cap, "missing \"inputs\": give a string or a list of strings");
    return 400;
  }
  if ((st = list_get(body, "inputs", "strings", max_inputs, &list, err, cap))) {
    if (st == 400 && !json_is_array(in))
      snprintf(err, cap, "\"inputs\" must be a string or a list of strings");
    return st;
  }
  size_t n = json_array_size(list);
  if ((st = texts_alloc(&q->t, n, false, err, cap))) return st;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(list, i);
    if (!json_is_string(e)) {
      tei_tokenize_free(q);
      snprintf(err, cap,
               "\"inputs\"[%zu] is not a string: /tokenize takes a string or a list "
               "of strings (no text pairs)",
               i);
      return 400;
    }
    q->t.texts[i] = json_string_value(e);
    q->t.lens[i] = json_string_length(e);
  }
  return 0;
}

void tei_tokenize_free(tei_tokenize_req *q) {
  rj_texts_free(&q->t);
}

int oai_opts_parse(json_t *body, size_t out_dim, oai_opts *o, char *err, size_t cap) {
  memset(o, 0, sizeof *o);
  json_t *fmt = json_object_get(body, "encoding_format");
  if (fmt && !json_is_null(fmt)) {
    const char *f = json_is_string(fmt) ? json_string_value(fmt) : "";
    if (!strcmp(f, "base64")) {
      o->base64 = true;
    } else if (strcmp(f, "float")) {
      snprintf(err, cap, "\"encoding_format\" must be \"float\" or \"base64\"");
      return 400;
    }
  }
  return rj_dims_get(body, out_dim, &o->dims, err, cap);
}
