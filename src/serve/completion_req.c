/* src/serve/completion_req.c — POST /v1/completions body validation (see
 * completion_req.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "serve/completion_req.h"
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


int cmpl_req_parse(json_t *body, const cmpl_limits *lim, cmpl_req *out, char *err, size_t cap) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(body)) {
    snprintf(err, cap, "the body must be a JSON object");
    return 400;
  }
  json_t *mv = json_object_get(body, "model");
  if (mv && !json_is_null(mv) && (!json_is_string(mv) || strcmp(json_string_value(mv), lim->model))) {
    snprintf(err, cap, "\"model\" must be \"%s\" (the text-generation model this server runs)",
             lim->model);
    return json_is_string(mv) ? 404 : 400;
  }
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
  long long one;
  double zero;
  int st;
  if ((st = get_int(body, "max_tokens", 1, lim->max_tokens, lim->default_max_tokens,
                    &out->max_tokens, err, cap)) ||
      (st = get_int(body, "n", 1, 1, 1, &one, err, cap)) ||
      (st = get_int(body, "best_of", 1, 1, 1, &one, err, cap)) ||
      (st = get_int(body, "seed", -(1LL << 62), 1LL << 62, 0, &out->seed, err, cap)) ||
      (st = get_int(body, "top_k", 0, 1 << 20, 0, &out->top_k, err, cap)) ||
      (st = get_number(body, "temperature", 0, 2, 1, &out->temperature, err, cap)) ||
      (st = get_number(body, "top_p", 1e-9, 1, 1, &out->top_p, err, cap)) ||
      (st = get_number(body, "presence_penalty", 0, 0, 0, &zero, err, cap)) ||
      (st = get_number(body, "frequency_penalty", 0, 0, 0, &zero, err, cap)) ||
      (st = rj_bool_get(body, "stream", false, &out->stream, err, cap)) ||
      (st = rj_bool_get(body, "echo", false, &out->echo, err, cap)))
    return st;
  json_t *lp = json_object_get(body, "logprobs");
  if (lp && !json_is_null(lp) && !(json_is_integer(lp) && json_integer_value(lp) == 0)) {
    snprintf(err, cap, "\"logprobs\" is not supported");
    return 400;
  }
  json_t *sfx = json_object_get(body, "suffix");
  if (sfx && !json_is_null(sfx)) {
    snprintf(err, cap, "\"suffix\" is not supported");
    return 400;
  }
  json_t *so = json_object_get(body, "stream_options");
  if (so && !json_is_null(so)) {
    json_t *iu = json_is_object(so) ? json_object_get(so, "include_usage") : NULL;
    if (!json_is_object(so) || (iu && !json_is_boolean(iu))) {
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
      json_t *sv = json_is_array(stop) ? json_array_get(stop, i) : stop;
      if (!json_is_string(sv) || json_string_length(sv) == 0 ||
          json_string_length(sv) > TS_MAX_STOP_LEN) {
        snprintf(err, cap, "each stop sequence must be a string of 1..%d bytes", TS_MAX_STOP_LEN);
        return 400;
      }
      out->stops[out->n_stops] = json_string_value(sv);
      out->stop_len[out->n_stops] = json_string_length(sv);
      out->n_stops++;
    }
  }
  return 0;
}
