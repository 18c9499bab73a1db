/* src/serve/v2_req.h — reading a KServe V2 POST /v2/models/{m}/infer body
 * (already parsed by jansson) against the model's signature: the "id", the
 * "outputs" selection, and either one BYTES input of texts or the model's
 * own tensors (names, datatypes, shapes, element limits, then the "data"
 * values, flat or nested, row-major). No server state: the signature and
 * limits come in as arguments, a refusal comes back as an HTTP status with
 * its message, which routes_v2.c sends. The route reads the data only
 * after admission (v2_req_read()), so a refused request reads none.
 *
 * The binary tensor data extension (KServe V2 / Triton): a body whose
 * `Inference-Header-Content-Length: N` header says its first N bytes are
 * the JSON header and the rest raw tensor data; each input whose
 * "parameters" hold "binary_data_size": K takes the next K bytes, in input
 * order (little-endian, row-major; a BYTES element is a 4-byte
 * little-endian length and its bytes). v2_bin_split() reads the header,
 * v2_req_parse_bin() assigns the bytes; the same v2_req_read() reads JSON
 * or binary data. Which outputs the answer carries as binary
 * ("binary_data" per output, "binary_data_output" per request) comes back
 * in q->bin_out_default / q->out_bin.
 *
 * tests/fuzz/fuzz_v2_req.c and fuzz_v2_binary.c hold these to their
 * contract. Pure; any thread. Internal to src/serve. */
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
  json_t *data[AT_MAX_INPUTS]; /* each input's "data" member (borrowed), or NULL: */
  const unsigned char *raw[AT_MAX_INPUTS]; /* its binary data (points into the body) */
  size_t raw_len[AT_MAX_INPUTS];           /* = numel x the size of `wire` */
  at_dtype wire[AT_MAX_INPUTS];            /* the datatype the client sent (INT32 for an
                                              INT64 input is widened on reading) */
  size_t numel[AT_MAX_INPUTS]; /* the product of its shape */
  size_t rows;                 /* the batch dimension, shared by every input */
  /* binary answers: "parameters": {"binary_data_output": bool} on the
   * request (default for every output), and per named output k its own
   * "parameters": {"binary_data": bool} (1 / 0; -1 when not given) */
  bool bin_out_default;
  signed char out_bin[AT_MAX_OUTPUTS];
} v2_req;

#define V2_BIN_HEADER "Inference-Header-Content-Length"

/* The JSON header's length from the Inference-Header-Content-Length value
 * `value` (NULL: no header, the whole body is JSON) for a body of
 * body_len bytes. Returns 0 with *json_len set, or 400 with the message in
 * err: not a decimal number, 0, or more than the body holds. */
int v2_bin_split(const char *value, size_t body_len, size_t *json_len, char *err, size_t cap);

/* Fill q from body. Returns 0 (free with v2_req_free()), or the status to
 * answer — 400, 413 (more texts, rows or elements than allowed), 500 (out
 * of memory) — with the message in err[cap]; q then holds nothing to free
 * (v2_req_free() is still safe). */
int v2_req_parse(json_t *body, const v2_sig *sig, v2_req *q, char *err, size_t cap);
/* The same, for a body with binary data: bin[bin_len] are the bytes after
 * the JSON header (bin NULL: the request had no Inference-Header-Content-
 * Length, and any "binary_data_size" is refused). Every input with a
 * binary_data_size takes its bytes in order; 400 when an input has both
 * "data" and binary_data_size, a size is not a non-negative integer, a
 * tensor's size is not numel x its datatype's size, a BYTES element runs
 * past its size or is not UTF-8, the shape of a binary BYTES input does
 * not hold its element count, or the sizes do not add up to bin_len
 * exactly. Texts of a binary BYTES input point into bin (not
 * NUL-terminated: q->lens). */
int v2_req_parse_bin(json_t *body, const unsigned char *bin, size_t bin_len, const v2_sig *sig,
                     v2_req *q, char *err, size_t cap);
/* Length of an attention-mask row of S values that is ones then zeros
 * (at least one one); 0 for any other row. Shared by the HTTP and gRPC
 * tensor paths. */
size_t v2_mask_len(const int64_t *mask, size_t S);

/* Split n bytes of BYTES elements (each a 4-byte little-endian length and
 * that many bytes, as the binary extension and gRPC's raw_input_contents
 * carry them) into at most `max` texts pointing into raw. Returns 0 with
 * *count set, 413 past max, 400 (message in err) for an element that runs
 * past the end, stray bytes, or text that is not UTF-8. */
int v2_bytes_split(const unsigned char *raw, size_t n, size_t max, const char **texts,
                   size_t *lens, size_t *count, char *err, size_t cap);
/* Whether the answer carries output `name` as binary data. */
bool v2_req_out_binary(const v2_req *q, const char *name);

/* Read input k's "data" into buf (q->numel[k] elements of the input's
 * dtype: float, or int64_t for INT64/INT32 inputs). Returns 0 when it
 * holds exactly numel numbers of the right kind (integers for INT64; for
 * FP32 numbers within the float range, each stored as the nearest float),
 * else 400 with the message in err. Binary data (q->raw[k]) is decoded
 * from little-endian; FP32 values must be finite (as JSON's are). */
int v2_req_read(const v2_req *q, size_t k, void *buf, char *err, size_t cap);

void v2_req_free(v2_req *q);

#endif
