/* src/serve/req_parse.c — reading the text routes' request bodies without
 * server state (see req_parse.h). The messages are the ones the routes have
 * always sent; request_json.c's rj_texts()/rj_bool() wrap these and send
 * them. */
#include "serve/req_parse.h"

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

int tei_req_parse(json_t *body, size_t max_inputs, bool truncate_dflt, tei_req *q, char *err,
                  size_t cap) {
  memset(q, 0, sizeof *q);
  int st = rj_texts_get(body, "inputs", max_inputs, &q->t, err, cap);
  if (st) return st;
  if ((st = rj_bool_get(body, "truncate", truncate_dflt, &q->truncate, err, cap)) ||
      (st = rj_bool_get(body, "normalize", true, &q->normalize, err, cap)) ||
      (st = rj_bool_get(body, "raw_scores", false, &q->raw_scores, err, cap))) {
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
  json_t *dv = json_object_get(body, "dimensions");
  if (dv && !json_is_null(dv)) {
    if (!json_is_integer(dv) || json_integer_value(dv) < 1 ||
        (size_t)json_integer_value(dv) > out_dim) {
      snprintf(err, cap, "\"dimensions\" must be an integer in 1..%zu", out_dim);
      return 400;
    }
    o->dims = (size_t)json_integer_value(dv);
  }
  return 0;
}
