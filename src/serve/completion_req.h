/* src/serve/completion_req.h — validating the bodies of the two OpenAI
 * generation routes, POST /v1/completions and POST /v1/chat/completions
 * (already parsed by jansson), into the fields the generation lane needs,
 * with OpenAI's defaults and our limits. Every member the route does not
 * know is refused with 400 naming it (never silently ignored); "user",
 * "store", "metadata" and "service_tier" are accepted and ignored. Pure: no
 * server state; the routes call it and tests/fuzz/fuzz_completion_req.c
 * holds it to its contract. Internal to src/serve. */
#ifndef ANYTIME_SERVE_COMPLETION_REQ_H
#define ANYTIME_SERVE_COMPLETION_REQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "serve/textstream.h"

#define CMPL_MAX_N 16 /* choices per request */

typedef struct cmpl_limits {
  const char *model;        /* the only accepted "model" (absent is fine) */
  int default_max_tokens;   /* when the body has none */
  int max_tokens;           /* cap */
} cmpl_limits;

typedef struct cmpl_req {
  /* /v1/completions: the prompt (points into the body) and echo */
  const char *prompt;
  size_t prompt_len;
  bool echo;
  /* /v1/chat/completions: the messages, each {"role": string, "content":
   * string} (content parts joined, null content as ""), a new reference
   * the caller releases with cmpl_req_free(); NULL on the other route */
  json_t *messages;
  long long max_tokens, seed, top_k, n;
  bool has_seed;            /* false: the caller draws a seed */
  double temperature, top_p, presence_penalty, frequency_penalty;
  bool stream, include_usage;
  bool logprobs;            /* report log-probabilities ... */
  int top_logprobs;         /* ... with this many alternatives (0..20) */
  const char *stops[TS_MAX_STOPS]; /* point into the body */
  size_t stop_len[TS_MAX_STOPS];
  int n_stops;
} cmpl_req;

/* Fill `out` from a /v1/completions body. Returns 0, or the HTTP status to
 * answer (400, or 404 for another model's name) with the message in err.
 * "logprobs" is the legacy integer (0..5 alternatives). */
int cmpl_req_parse(json_t *body, const cmpl_limits *lim, cmpl_req *out, char *err, size_t cap);

/* Fill `out` from a /v1/chat/completions body: "messages" (non-empty; roles
 * system, developer, user, assistant; content a string, a list of text
 * parts, or null for an assistant turn), "max_completion_tokens" or
 * "max_tokens" (absent: max_tokens 0, which the route makes the rest of
 * the context, as OpenAI's and vLLM's chat routes do), "logprobs" (bool)
 * with "top_logprobs" (0..20). Same returns as cmpl_req_parse; on 0
 * release with cmpl_req_free(). */
int chat_req_parse(json_t *body, const cmpl_limits *lim, cmpl_req *out, char *err, size_t cap);

void cmpl_req_free(cmpl_req *q);

#endif
