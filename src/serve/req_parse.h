/* src/serve/req_parse.h — the pure parts of reading the text routes' request
 * bodies (already parsed by jansson): the texts member, boolean flags, the
 * TEI /embed and /predict options and the OpenAI /v1/embeddings options.
 * No server state: limits come in as arguments and a refusal comes back as
 * an HTTP status with its message, which the route sends (request_json.c,
 * routes_tei.c, routes_openai.c; rj_bool_get() also completion_req.c).
 * tests/fuzz/fuzz_text_req.c holds these to their contracts. Pure; any
 * thread.
 * Internal to src/serve. */
#ifndef ANYTIME_SERVE_REQ_PARSE_H
#define ANYTIME_SERVE_REQ_PARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct rj_texts_t {
  size_t n;
  bool single;        /* the member was a bare string */
  const char **texts; /* point into the json_t; valid while it lives */
  size_t *lens;
  const char **pairs; /* NULL, or n entries: the text pair of an element given as
                         [text, text_pair] (NULL for the others) */
  size_t *pair_lens;
} rj_texts_t;

/* body[key] as texts: a string (n = 1, single) or a non-empty list of at
 * most max_inputs elements, each a string, [text] or [text, text_pair] (a
 * cross-encoder's input; the pair a non-empty string). Returns 0 (free
 * *out with rj_texts_free()), or the status to answer — 400, 413 (too
 * many), 500 (out of memory) — with the message in err[cap] and *out
 * empty. */
int rj_texts_get(json_t *body, const char *key, size_t max_inputs, rj_texts_t *out, char *err,
                 size_t cap);
void rj_texts_free(rj_texts_t *t);

/* body[key] as a boolean: absent or null gives dflt. Returns 0 or 400 (with
 * the message in err). */
int rj_bool_get(json_t *body, const char *key, bool dflt, bool *out, char *err, size_t cap);

/* POST /embed and /predict: "inputs" and the flags. */
typedef struct tei_req {
  rj_texts_t t; /* "inputs" */
  bool truncate, normalize, raw_scores;
  const char *prompt_name; /* "prompt_name" (borrowed from body), NULL if absent or null */
} tei_req;

/* Fill q from body (a JSON object); "truncate" defaults to truncate_dflt
 * (server.auto_truncate). Returns 0 (free with tei_req_free()) or the
 * status to answer (400, 413, 500) with the message in err; then nothing
 * needs freeing. */
int tei_req_parse(json_t *body, size_t max_inputs, bool truncate_dflt, tei_req *q, char *err,
                  size_t cap);
void tei_req_free(tei_req *q);

/* POST /v1/embeddings: "encoding_format" and "dimensions" for a model whose
 * embeddings have out_dim dimensions ("input" is read with rj_texts_get()). */
typedef struct oai_opts {
  bool base64;
  size_t dims; /* 0 = full; else 1..out_dim */
} oai_opts;

/* Returns 0 or 400 with the message in err. */
int oai_opts_parse(json_t *body, size_t out_dim, oai_opts *o, char *err, size_t cap);

#endif
