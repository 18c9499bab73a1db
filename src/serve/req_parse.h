/* src/serve/req_parse.h — the pure parts of reading the text routes' request
 * bodies (already parsed by jansson): the texts member, boolean flags, the
 * TEI routes' bodies (/embed, /predict with TEI's pair reading, /rerank,
 * /tokenize: each refuses a member TEI's request type does not define),
 * Cohere/Jina's POST /v1/rerank and the OpenAI /v1/embeddings options.
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

#include "anytime/tokenizer.h"

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


/* body["truncation_direction"]: absent or null gives AT_TRUNC_AS_TOKENIZER;
 * "Right"/"right" or "Left"/"left" (the spellings TEI's serde aliases
 * take). Returns 0 or 400. */
int rj_trunc_dir_get(json_t *body, at_trunc_direction *out, char *err, size_t cap);

/* body["dimensions"] for a model of out_dim dimensions (TEI's /embed,
 * OpenAI's /v1/embeddings): absent or null gives 0 (all); else an integer
 * in 1..out_dim. Returns 0 or 400 naming the limit. */
int rj_dims_get(json_t *body, size_t out_dim, size_t *dims, char *err, size_t cap);

/* body["inputs"] as TEI's /predict reads it (its PredictInput): a string
 * is one text; a list whose first element is a string is ONE input — [text]
 * or [text, text_pair] (a list of three or more strings is a 400); a list
 * whose first element is a list is a batch of 1..max_inputs inputs, each
 * [text] or [text, text_pair]. out->single is true for the one-input forms
 * (the answer is one flat list of scores). Each string non-empty is not
 * checked here (the text job does); a text pair must be non-empty. Returns
 * 0 (free with rj_texts_free()), 400, 413 or 500, as rj_texts_get(). */
int tei_predict_inputs_get(json_t *body, size_t max_inputs, rj_texts_t *out, char *err, size_t cap);

/* POST /embed and /predict. */
typedef enum tei_route { TEI_EMBED = 0, TEI_PREDICT = 1 } tei_route;
typedef struct tei_req {
  rj_texts_t t; /* "inputs" (/predict: tei_predict_inputs_get's reading) */
  bool truncate, normalize, raw_scores;
  at_trunc_direction trunc_dir; /* "truncation_direction" */
  size_t dims;                  /* /embed "dimensions": 0 = all, else 1..out_dim */
  const char *prompt_name;      /* "prompt_name" (borrowed from body), NULL if absent or null */
} tei_req;

/* Fill q from body (a JSON object) for `route`: members other than TEI's
 * (EmbedRequest: inputs, truncate, truncation_direction, prompt_name,
 * normalize, dimensions; PredictRequest: inputs, truncate,
 * truncation_direction, raw_scores) and "model" are a 400 naming them;
 * "truncate" defaults to truncate_dflt (server.auto_truncate); out_dim is
 * the embedder's size for "dimensions". Returns 0 (free with
 * tei_req_free()) or the status to answer (400, 413, 500) with the message
 * in err; then nothing needs freeing. */
int tei_req_parse(json_t *body, tei_route route, size_t max_inputs, bool truncate_dflt,
                  size_t out_dim, tei_req *q, char *err, size_t cap);
void tei_req_free(tei_req *q);

/* POST /rerank (TEI's RerankRequest): "query" (a non-empty string), "texts"
 * (a list of 1..max_inputs strings), "truncate", "truncation_direction",
 * "raw_scores", "return_text", "model"; anything else is a 400. Strings are
 * borrowed from body. Returns 0 (free with tei_rerank_free()) or 400, 413,
 * 500 with the message in err. */
typedef struct tei_rerank_req {
  const char *query;
  size_t query_len;
  rj_texts_t t; /* "texts" (never pairs, never single) */
  bool truncate, raw_scores, return_text;
  at_trunc_direction trunc_dir;
} tei_rerank_req;
int tei_rerank_parse(json_t *body, size_t max_inputs, bool truncate_dflt, tei_rerank_req *q,
                     char *err, size_t cap);
void tei_rerank_free(tei_rerank_req *q);

/* POST /v1/rerank, Cohere's and Jina's shape: "query" (a non-empty string),
 * "documents" (1..max_inputs elements, each a string or an object whose
 * "text" is a string: its other members are the client's own and are not
 * read), "top_n" (an integer >= 1; absent or null: every document; more than
 * there are: every document), "return_documents" (false by default, as
 * Cohere), "model". "rank_fields", "max_chunks_per_doc" and
 * "max_tokens_per_doc" are refused as not supported; any other member is a
 * 400 naming it. Returns 0 (free with cohere_rerank_free()) or 400, 413,
 * 500 with the message in err. */
typedef struct cohere_rerank_req {
  const char *query;
  size_t query_len;
  rj_texts_t t; /* the documents' texts, in order (borrowed from body) */
  size_t top_n; /* 1..t.n */
  bool return_documents;
} cohere_rerank_req;
int cohere_rerank_parse(json_t *body, size_t max_inputs, cohere_rerank_req *q, char *err,
                        size_t cap);
void cohere_rerank_free(cohere_rerank_req *q);

/* POST /tokenize (TEI's TokenizeRequest): "inputs" (a string, or a list of
 * 1..max_inputs strings: no pairs), "add_special_tokens" (default true),
 * "prompt_name", "model"; anything else is a 400. Returns 0 (free with
 * tei_tokenize_free()) or 400, 413, 500 with the message in err. */
typedef struct tei_tokenize_req {
  rj_texts_t t;
  bool add_special_tokens;
  const char *prompt_name; /* borrowed; NULL if absent or null */
} tei_tokenize_req;
int tei_tokenize_parse(json_t *body, size_t max_inputs, tei_tokenize_req *q, char *err, size_t cap);
void tei_tokenize_free(tei_tokenize_req *q);

/* POST /v1/embeddings: "encoding_format" and "dimensions" for a model whose
 * embeddings have out_dim dimensions ("input" is read with rj_texts_get()). */
typedef struct oai_opts {
  bool base64;
  size_t dims; /* 0 = full; else 1..out_dim */
} oai_opts;

/* Returns 0 or 400 with the message in err. */
int oai_opts_parse(json_t *body, size_t out_dim, oai_opts *o, char *err, size_t cap);

#endif
