/* src/serve/v2_req.h — reading a KServe V2 POST /v2/models/{m}/infer body
 * (already parsed by jansson) against the model's signature: the "id", the
 * "outputs" selection, and either one BYTES input of texts or the model's
 * own tensors (names, datatypes, shapes, element limits, then the "data"
 * values, flat or nested, row-major). No server state: the signature and
 * limits come in as arguments, a refusal comes back as an HTTP status with
 * its message, which routes_v2.c sends. The route reads the data only
 * after admission (v2_req_read()), so a refused request reads none.
 * tests/fuzz/fuzz_v2_req.c holds these to their contract. Pure; any
 * thread. Internal to src/serve. */
#ifndef ANYTIME_SERVE_V2_REQ_H
#define ANYTIME_SERVE_V2_REQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "anytime/engine.h"
#include "anytime/tensor.h"

#define V2_MAX_ELEMS (1u << 22) /* elements of one input tensor */

typedef struct v2_sig {
  const at_model_info *mi; /* the model's inputs and outputs */
  bool embed;              /* an embedding model (else a classifier) */
  const char *model;       /* its name, for messages */
  size_t max_inputs;       /* texts, or batch rows, in one request */
  bool truncate_dflt;      /* texts: "parameters"."truncate" when absent (server.auto_truncate) */
} v2_sig;

typedef struct v2_req {
  const char *id; /* "id" (a string; points into the body), else NULL */
  bool has_id;
  size_t n_out_names;                    /* "outputs": the names asked for, in order */
  const char *out_names[AT_MAX_OUTPUTS]; /* tensor path: the model's own name strings */
  char out_name_store[AT_MAX_OUTPUTS][128];
  bool text; /* one BYTES input */
  /* text path */
  bool want[3];       /* logits, probabilities, embedding */
  bool truncate;      /* "parameters": {"truncate": bool}, else the default */
  const char **texts; /* point into the body; n_texts of them */
  size_t *lens;
  size_t n_texts;
  /* tensor path: names, dtypes (the model's) and shapes; data still NULL */
  size_t n_in;
  at_tensor in[AT_MAX_INPUTS];
  json_t *data[AT_MAX_INPUTS]; /* each input's "data" member (borrowed) */
  size_t numel[AT_MAX_INPUTS]; /* the product of its shape */
  size_t rows;                 /* the batch dimension, shared by every input */
} v2_req;

/* Fill q from body. Returns 0 (free with v2_req_free()), or the status to
 * answer — 400, 413 (more texts, rows or elements than allowed), 500 (out
 * of memory) — with the message in err[cap]; q then holds nothing to free
 * (v2_req_free() is still safe). */
int v2_req_parse(json_t *body, const v2_sig *sig, v2_req *q, char *err, size_t cap);

/* Read input k's "data" into buf (q->numel[k] elements of the input's
 * dtype: float, or int64_t for INT64/INT32 inputs). Returns 0 when it
 * holds exactly numel numbers of the right kind (integers for INT64; for
 * FP32 numbers within the float range, each stored as the nearest float),
 * else 400 with the message in err. */
int v2_req_read(const v2_req *q, size_t k, void *buf, char *err, size_t cap);

void v2_req_free(v2_req *q);

#endif
