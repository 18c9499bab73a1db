/* src/serve/request_json.c — reading request bodies: parse JSON (jansson
 * rejects invalid UTF-8 and malformed documents with a position), and turn
 * an "inputs"/"input" member that is a string or a list of strings into
 * arrays the text pipeline takes. Every failure becomes a 400 that names
 * the problem. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/request_json.h"

json_t *rj_parse(req_ctx *r, enum MHD_Result *res) {
  if (!r->body || r->body_len == 0) {
    *res = serve_error(r, 400, "empty body: expected a JSON object");
    return NULL;
  }
  json_error_t err;
  json_t *j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &err);
  if (!j) {
    if (strstr(err.text, "decode byte") || strstr(err.text, "UTF-8"))
      *res = serve_error(r, 400, "invalid UTF-8 in the body at line %d column %d: %s", err.line,
                         err.column, err.text);
    else
      *res = serve_error(r, 400, "malformed JSON at line %d column %d: %s", err.line, err.column,
                         err.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    *res = serve_error(r, 400, "expected a JSON object at the top level");
    return NULL;
  }
  return j;
}

int rj_texts(req_ctx *r, json_t *body, const char *key, rj_texts_t *out, enum MHD_Result *res) {
  memset(out, 0, sizeof *out);
  json_t *in = json_object_get(body, key);
  if (!in) {
    *res = serve_error(r, 400, "missing \"%s\": give a string or a list of strings", key);
    return -1;
  }
  if (json_is_string(in)) {
    out->single = true;
    out->n = 1;
  } else if (json_is_array(in)) {
    out->n = json_array_size(in);
    if (out->n == 0) {
      *res = serve_error(r, 400, "\"%s\" is an empty list", key);
      return -1;
    }
    if (out->n > r->srv->cfg.max_inputs) {
      *res = serve_error(r, 413, "%zu inputs in one request; the limit is %zu (server.max_inputs)",
                         out->n, r->srv->cfg.max_inputs);
      return -1;
    }
  } else {
    *res = serve_error(r, 400, "\"%s\" must be a string or a list of strings", key);
    return -1;
  }
  out->texts = calloc(out->n, sizeof *out->texts);
  out->lens = calloc(out->n, sizeof *out->lens);
  if (!out->texts || !out->lens) {
    rj_texts_free(out);
    *res = serve_error(r, 500, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < out->n; i++) {
    json_t *s = out->single ? in : json_array_get(in, i);
    if (!json_is_string(s)) {
      rj_texts_free(out);
      *res = serve_error(r, 400, "\"%s\"[%zu] is not a string (token-id inputs are not supported)",
                         key, i);
      return -1;
    }
    out->texts[i] = json_string_value(s);
    out->lens[i] = json_string_length(s);
  }
  return 0;
}

void rj_texts_free(rj_texts_t *t) {
  free(t->texts);
  free(t->lens);
  t->texts = NULL;
  t->lens = NULL;
}

int rj_bool(req_ctx *r, json_t *body, const char *key, bool dflt, bool *out, enum MHD_Result *res) {
  json_t *v = json_object_get(body, key);
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  if (!json_is_boolean(v)) {
    *res = serve_error(r, 400, "\"%s\" must be true or false", key);
    return -1;
  }
  *out = json_is_true(v);
  return 0;
}

double rj_deadline_s(req_ctx *r) {
  const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "x-deadline-ms");
  if (!h) return 0;
  char *end;
  double ms = strtod(h, &end);
  if (end == h || *end || !(ms > 0)) return -1; /* invalid: the route answers 400 */
  return ms / 1000.0;
}
