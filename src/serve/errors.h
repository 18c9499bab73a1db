/* src/serve/errors.h — the one writer of error bodies. Each protocol the
 * server speaks has the error object its clients read:
 *   OpenAI (/v1/...):   {"error": {"message", "type", "param", "code"}}, as
 *                        the OpenAI SDKs read error.message/type/param/code;
 *   KServe V2 (/v2...): {"error": "message"}, as the V2 REST spec says;
 *   TEI and the rest:   {"error": "message", "error_type": "..."}, as Text
 *                        Embeddings Inference answers.
 * The protocol is chosen by the request's path (serve_proto_of), so a
 * refusal, a parse error and a failed Run of one route look alike.
 * Pure functions; any thread. Internal to src/serve. */
#ifndef ANYTIME_SERVE_ERRORS_H
#define ANYTIME_SERVE_ERRORS_H

#include <stddef.h>

typedef enum serve_proto {
  SERVE_PROTO_TEI = 0, /* TEI routes, health, /metrics, unknown paths */
  SERVE_PROTO_OPENAI,  /* /v1 and below */
  SERVE_PROTO_V2,      /* /v2 and below */
} serve_proto;

/* The protocol whose error object a request for `url` gets. */
serve_proto serve_proto_of(const char *url);

/* The error body for `status` and `msg` in protocol p (malloc'd JSON, its
 * length in *len; NULL only when memory runs out). `code` and `param` are
 * OpenAI's error.code and error.param (NULL: the code the status implies —
 * serve_error_code() — and no param); the other protocols have no place for
 * them. */
char *serve_error_body(serve_proto p, int status, const char *code, const char *param,
                       const char *msg, size_t *len);

/* OpenAI's error.type for an HTTP status: invalid_request_error (4xx),
 * authentication_error (401), rate_limit_error (429), server_error (5xx). */
const char *serve_error_type(int status);
/* The error.code a status implies when the caller names none
 * (docs/api.md, "Errors"). */
const char *serve_error_code(int status);
/* TEI's error_type for a status: Validation, Overloaded, Unhealthy,
 * Backend (TEI's own names), Unauthorized, NotFound, MethodNotAllowed. */
const char *serve_tei_error_type(int status);

#endif
