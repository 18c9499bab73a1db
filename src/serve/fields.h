/* src/serve/fields.h — the body members each JSON route reads: one list
 * per route, in one file (fields.c), like config_keys.c for settings. The
 * route's parser refuses any member outside its list with a 400 naming it,
 * so no field is silently ignored; the route table (routes.c) points at the
 * same list, and test_serve_routes holds docs/api.md's conformance tables
 * to it, both ways. Constant data and a pure function; any thread.
 * Internal to src/serve. */
#ifndef ANYTIME_SERVE_FIELDS_H
#define ANYTIME_SERVE_FIELDS_H

#include <jansson.h>

/* NULL-terminated lists. */
extern const char *const serve_fields_completions[]; /* POST /v1/completions */
extern const char *const serve_fields_chat[];        /* POST /v1/chat/completions */
extern const char *const serve_fields_embeddings[];  /* POST /v1/embeddings */
extern const char *const serve_fields_v1_rerank[];   /* POST /v1/rerank (Cohere/Jina) */
/* TEI's EmbedRequest, PredictRequest, RerankRequest and TokenizeRequest
 * members, plus "model" */
extern const char *const serve_fields_embed[];       /* POST /embed */
extern const char *const serve_fields_predict[];     /* POST /predict */
extern const char *const serve_fields_rerank[];      /* POST /rerank */
extern const char *const serve_fields_tokenize[];    /* POST /tokenize */

/* The first member of `body` (in its order) that is not in `fields`, or
 * NULL when there is none (or body is not an object). */
const char *serve_fields_unknown(json_t *body, const char *const *fields);

/* 0 when every member of `body` is in `fields`; else 400 with the message
 * in err: the first unknown member, and what `route` takes (tool calling
 * gets its own reason). */
int serve_fields_check(json_t *body, const char *const *fields, const char *route, char *err,
                       size_t cap);

#endif
