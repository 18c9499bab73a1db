/* src/serve/completion_req.c — validating the bodies of POST /v1/completions
 * and POST /v1/chat/completions (see completion_req.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/completion_req.h"
#include "serve/fields.h"
#include "serve/req_parse.h"

static int get_number(json_t *body, const char *key, double lo, double hi, double dflt,
                      double *out, char *err, size_t cap) {
  json_t *v = json_object_get(body, key);
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  double x = json_is_number(v) ? json_number_value(v) : NAN;
  if (!(x >= lo && x <= hi)) {
    snprintf(err, cap, "\"%s\" must be a number in [%g, %g]", key, lo, hi);
    return 400;
  }
  *out = x;
  return 0;
}

static int get_int(json_t *body, const char *key, long long lo, long long hi, long long dflt,
                   long long *out, char *err, size_t cap) {
  json_t *v = json_object_get(body, key);
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
    snprintf(err, cap, "\"%s\" must be an integer in [%lld, %lld]", key, lo, hi);
    return 400;
  }
  *out = json_integer_value(v);
  return 0;
}



/* Fields both routes share. */
static int common_fields(json_t *body, const cmpl_limits *lim, cmpl_req *out, char *err,
                         size_t cap) {
  json_t *mv = json_object_get(body, "model");
  if (mv && !json_is_null(mv) && (!json_is_string(mv) || strcmp(json_string_value(mv), lim->model))) {
    snprintf(err, cap, "\"model\" must be \"%s\" (the text-generation model this server runs)",
             lim->model);
    return json_is_string(mv) ? 404 : 400;
  }
  int st;
  if ((st = get_int(body, "n", 1, CMPL_MAX_N, 1, &out->n, err, cap)) ||
      (st = get_int(body, "seed", -(1LL << 62), 1LL << 62, 0, &out->seed, err, cap)) ||
      (st = get_int(body, "top_k", 0, 1 << 20, 0, &out->top_k, err, cap)) ||
      (st = get_number(body, "temperature", 0, 2, 1, &out->temperature, err, cap)) ||
      (st = get_number(body, "top_p", 1e-9, 1, 1, &out->top_p, err, cap)) ||
      (st = get_number(body, "presence_penalty", -2, 2, 0, &out->presence_penalty, err, cap)) ||
      (st = get_number(body, "frequency_penalty", -2, 2, 0, &out->frequency_penalty, err, cap)) ||
      (st = rj_bool_get(body, "stream", false, &out->stream, err, cap)))
    return st;
  json_t *sv = json_object_get(body, "seed");
  out->has_seed = sv && !json_is_null(sv);
  json_t *lb = json_object_get(body, "logit_bias");
  if (lb && !json_is_null(lb) && !(json_is_object(lb) && json_object_size(lb) == 0)) {
    snprintf(err, cap, "\"logit_bias\" is not supported");
    return 400;
  }
  json_t *so = json_object_get(body, "stream_options");
  if (so && !json_is_null(so)) {
    json_t *iu = json_is_object(so) ? json_object_get(so, "include_usage") : NULL;
    if (!json_is_object(so) || (iu && !json_is_boolean(iu)) ||
        json_object_size(so) != (iu ? 1u : 0u)) {
      snprintf(err, cap, "\"stream_options\" must be {\"include_usage\": bool}");
      return 400;
    }
    out->include_usage = json_is_true(iu);
  }
  json_t *stop = json_object_get(body, "stop");
  if (stop && !json_is_null(stop)) {
    size_t ns = json_is_array(stop) ? json_array_size(stop) : 1;
    if ((!json_is_array(stop) && !json_is_string(stop)) || ns > TS_MAX_STOPS) {
      snprintf(err, cap, "\"stop\" must be a string or a list of up to %d strings", TS_MAX_STOPS);
      return 400;
    }
    for (size_t i = 0; i < ns; i++) {
      json_t *sv2 = json_is_array(stop) ? json_array_get(stop, i) : stop;
      if (!json_is_string(sv2) || json_string_length(sv2) == 0 ||
          json_string_length(sv2) > TS_MAX_STOP_LEN) {
        snprintf(err, cap, "each stop sequence must be a string of 1..%d bytes", TS_MAX_STOP_LEN);
        return 400;
      }
      out->stops[out->n_stops] = json_string_value(sv2);
      out->stop_len[out->n_stops] = json_string_length(sv2);
      out->n_stops++;
    }
  }
  return 0;
}

int cmpl_req_parse(json_t *body, const cmpl_limits *lim, cmpl_req *out, char *err, size_t cap) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(body)) {
    snprintf(err, cap, "the body must be a JSON object");
    return 400;
  }
  int st = serve_fields_check(body, serve_fields_completions, "/v1/completions", err, cap);
  if (st) return st;
  /* prompt: a string, or a list holding exactly one string */
  json_t *pv = json_object_get(body, "prompt");
  if (json_is_array(pv)) {
    if (json_array_size(pv) != 1 || !json_is_string(json_array_get(pv, 0))) {
      snprintf(err, cap,
               "\"prompt\" must be a string or a list of one string (one prompt per request)");
      return 400;
    }
    pv = json_array_get(pv, 0);
  }
  if (!json_is_string(pv)) {
    snprintf(err, cap, "\"prompt\" is required and must be a string");
    return 400;
  }
  out->prompt = json_string_value(pv);
  out->prompt_len = json_string_length(pv);
  if (memchr(out->prompt, '\0', out->prompt_len)) {
    snprintf(err, cap, "\"prompt\" contains a NUL character");
    return 400;
  }
  if ((st = common_fields(body, lim, out, err, cap))) return st;
  long long best_of, lp;
  if ((st = get_int(body, "max_tokens", 1, lim->max_tokens, lim->default_max_tokens,
                    &out->max_tokens, err, cap)) ||
      (st = get_int(body, "best_of", out->n, out->n, out->n, &best_of, err, cap)) ||
      (st = get_int(body, "logprobs", 0, 5, -1, &lp, err, cap)) ||
      (st = rj_bool_get(body, "echo", false, &out->echo, err, cap))) {
    if (!strncmp(err, "\"best_of\"", 9))
      snprintf(err, cap, "\"best_of\" must equal \"n\" (%lld): this server returns every choice",
               out->n);
    return st;
  }
  out->logprobs = lp >= 0;
  out->top_logprobs = lp >= 0 ? (int)lp : 0;
  json_t *sfx = json_object_get(body, "suffix");
  if (sfx && !json_is_null(sfx)) {
    snprintf(err, cap, "\"suffix\" is not supported");
    return 400;
  }
  return 0;
}

/* One message's content as a string: a string, a list of {"type": "text",
 * "text": ...} parts (joined), or null (only for an assistant turn). */
static json_t *message_content(json_t *c, const char *role, size_t i, char *err, size_t cap) {
  if (json_is_string(c)) return json_incref(c);
  if ((!c || json_is_null(c)) && !strcmp(role, "assistant")) return json_string("");
  if (!json_is_array(c)) {
    snprintf(err, cap, "messages[%zu].content must be a string or a list of text parts", i);
    return NULL;
  }
  size_t total = 0, j;
  json_t *part;
  json_array_foreach(c, j, part) {
    json_t *ty = json_object_get(part, "type"), *tx = json_object_get(part, "text");
    if (!json_is_object(part) || !json_is_string(ty) || strcmp(json_string_value(ty), "text") ||
        !json_is_string(tx) || json_object_size(part) != 2) {
      snprintf(err, cap,
               "messages[%zu].content[%zu] must be {\"type\": \"text\", \"text\": string} (this "
               "model reads text only)",
               i, j);
      return NULL;
    }
    total += json_string_length(tx);
  }
  char *buf = malloc(total + 1);
  if (!buf) {
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  size_t o = 0;
  json_array_foreach(c, j, part) {
    json_t *tx = json_object_get(part, "text");
    memcpy(buf + o, json_string_value(tx), json_string_length(tx));
    o += json_string_length(tx);
  }
  json_t *s = json_stringn_nocheck(buf, o);
  free(buf);
  return s;
}

int chat_req_parse(json_t *body, const cmpl_limits *lim, cmpl_req *out, char *err, size_t cap) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(body)) {
    snprintf(err, cap, "the body must be a JSON object");
    return 400;
  }
  int st = serve_fields_check(body, serve_fields_chat, "/v1/chat/completions", err, cap);
  if (st) return st;
  json_t *ms = json_object_get(body, "messages");
  if (!json_is_array(ms) || json_array_size(ms) == 0) {
    snprintf(err, cap, "\"messages\" is required and must be a non-empty list");
    return 400;
  }
  if ((st = common_fields(body, lim, out, err, cap))) return st;
  json_t *mct = json_object_get(body, "max_completion_tokens");
  const char *mkey = mct && !json_is_null(mct) ? "max_completion_tokens" : "max_tokens";
  long long top;
  /* absent: 0, the rest of the context (the route knows the prompt's length) */
  if ((st = get_int(body, mkey, 1, lim->max_tokens, 0, &out->max_tokens, err, cap)) ||
      (st = rj_bool_get(body, "logprobs", false, &out->logprobs, err, cap)) ||
      (st = get_int(body, "top_logprobs", 0, 20, 0, &top, err, cap)))
    return st;
  json_t *tl = json_object_get(body, "top_logprobs");
  if (tl && !json_is_null(tl) && !out->logprobs) {
    snprintf(err, cap, "\"top_logprobs\" needs \"logprobs\": true");
    return 400;
  }
  out->top_logprobs = (int)top;
  json_t *rf = json_object_get(body, "response_format");
  if (rf && !json_is_null(rf)) {
    json_t *ty = json_is_object(rf) ? json_object_get(rf, "type") : NULL;
    if (!json_is_string(ty) || strcmp(json_string_value(ty), "text") || json_object_size(rf) != 1) {
      snprintf(err, cap, "\"response_format\" other than {\"type\": \"text\"} is not supported");
      return 400;
    }
  }
  json_t *norm = json_array();
  if (!norm) {
    snprintf(err, cap, "out of memory");
    return 500;
  }
  size_t i;
  json_t *m;
  json_array_foreach(ms, i, m) {
    json_t *role = json_object_get(m, "role");
    const char *r = json_string_value(role);
    if (!json_is_object(m) || !r ||
        (strcmp(r, "system") && strcmp(r, "developer") && strcmp(r, "user") &&
         strcmp(r, "assistant"))) {
      snprintf(err, cap,
               "messages[%zu] must be an object whose \"role\" is system, developer, user or "
               "assistant",
               i);
      json_decref(norm);
      return 400;
    }
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) {
      if (strcmp(k, "role") && strcmp(k, "content") && strcmp(k, "name")) {
        snprintf(err, cap, "messages[%zu].%s is not supported", i, k);
        json_decref(norm);
        return 400;
      }
    }
    json_t *content = message_content(json_object_get(m, "content"), r, i, err, cap);
    if (!content) {
      json_decref(norm);
      return strcmp(err, "out of memory") ? 400 : 500;
    }
    if (memchr(json_string_value(content), '\0', json_string_length(content))) {
      json_decref(content);
      json_decref(norm);
      snprintf(err, cap, "messages[%zu].content contains a NUL character", i);
      return 400;
    }
    json_t *one = json_pack("{s:s, s:o}", "role", r, "content", content);
    json_t *name = json_object_get(m, "name");
    if (name && !json_is_null(name) && !json_is_string(name)) {
      json_decref(one);
      json_decref(norm);
      snprintf(err, cap, "messages[%zu].name must be a string", i);
      return 400;
    }
    if (one && json_is_string(name)) json_object_set(one, "name", name);
    if (!one || json_array_append_new(norm, one)) {
      json_decref(norm);
      snprintf(err, cap, "out of memory");
      return 500;
    }
  }
  out->messages = norm;
  return 0;
}

void cmpl_req_free(cmpl_req *q) {
  if (!q) return;
  json_decref(q->messages);
  q->messages = NULL;
}
