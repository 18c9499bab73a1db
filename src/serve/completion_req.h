/* src/serve/completion_req.h — validating a POST /v1/completions body
 * (already parsed by jansson) into the fields the generation lane needs, with
 * OpenAI's defaults and our limits. Pure: no server state; the route calls it
 * and tests/fuzz/fuzz_completion_req.c holds it to its contract. Internal to
 * src/serve. */
#ifndef ANYTIME_SERVE_COMPLETION_REQ_H
#define ANYTIME_SERVE_COMPLETION_REQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "serve/textstream.h"

typedef struct cmpl_limits {
  const char *model;        /* the only accepted "model" (absent is fine) */
  int default_max_tokens;   /* when the body has none */
  int max_tokens;           /* cap */
} cmpl_limits;

typedef struct cmpl_req {
  const char *prompt;       /* points into the body; valid while it lives */
  size_t prompt_len;
  long long max_tokens, seed, top_k;
  double temperature, top_p;
  bool stream, echo, include_usage;
  const char *stops[TS_MAX_STOPS]; /* point into the body */
  size_t stop_len[TS_MAX_STOPS];
  int n_stops;
} cmpl_req;

/* Fill `out` from `body`. Returns 0, or the HTTP status to answer (400, or
 * 404 for another model's name) with the message in err. */
int cmpl_req_parse(json_t *body, const cmpl_limits *lim, cmpl_req *out, char *err, size_t cap);

#endif
