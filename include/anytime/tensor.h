/* anytime/tensor.h — plain tensor descriptors and model signatures.
 *
 * An at_tensor describes a dense, row-major tensor in memory the caller owns:
 * anytime never copies or frees `data` of an input; ONNX Runtime reads it in
 * place. Output tensors handed back by anytime point into memory anytime owns
 * (see at_outputs in session.h).
 *
 * Thread-safety: plain data; no functions here keep state.
 */
#ifndef ANYTIME_TENSOR_H
#define ANYTIME_TENSOR_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AT_MAX_DIMS 8

typedef enum at_dtype {
  AT_DTYPE_UNKNOWN = 0,
  AT_DTYPE_FLOAT32,
  AT_DTYPE_INT64,
  AT_DTYPE_INT32,
  AT_DTYPE_UINT8,
  AT_DTYPE_INT8,
  AT_DTYPE_BOOL,
  AT_DTYPE_FLOAT16,
  AT_DTYPE_FLOAT64,
  AT_DTYPE_STRING,
} at_dtype;

typedef struct at_tensor {
  const char *name;            /* model input/output name */
  at_dtype dtype;
  size_t ndim;                 /* <= AT_MAX_DIMS */
  int64_t shape[AT_MAX_DIMS];  /* concrete dimensions, all >= 0 */
  void *data;                  /* row-major elements; not owned by anytime */
} at_tensor;

/* One input or output in a model's signature. A dimension of -1 is dynamic;
 * its symbolic name (e.g. "batch") is in dim_names[i], or "" if unnamed. */
typedef struct at_value_info {
  const char *name;
  at_dtype dtype;
  size_t ndim;
  int64_t dims[AT_MAX_DIMS];
  const char *dim_names[AT_MAX_DIMS];
} at_value_info;

/* Everything anytime knows about a loaded model's signature and metadata.
 * Owned by the session/engine that returned it; valid until that is destroyed. */
typedef struct at_model_info {
  size_t n_inputs;
  const at_value_info *inputs;
  size_t n_outputs;
  const at_value_info *outputs;
  const char *producer_name;     /* e.g. "pytorch" */
  const char *producer_version;
  const char *graph_name;
  const char *domain;
  int64_t ir_version;            /* ONNX IR version; 0 if unknown (.ort files) */
  int64_t opset;                 /* default-domain opset; 0 if unknown */
} at_model_info;

/* An encoder's text inputs for a [batch, seq] block of int64 ids, in the
 * graph's input order: "input_ids" gets ids, "attention_mask" mask, and any
 * other input (token_type_ids) `other` (zeros, or type ids); at most three
 * inputs are filled. Returns how many. Pure: the tensors borrow the
 * buffers. The one place that names the three inputs for the plain paths
 * (the server's start-up timing and space check, profile's cross-check). */
AT_API size_t at_text_inputs(const at_model_info *mi, int64_t batch, int64_t seq, int64_t *ids,
                             int64_t *mask, int64_t *other, at_tensor out[3]);

/* "FP32", "INT64", ... (KServe V2 datatype names). Static; never NULL. */
AT_API const char *at_dtype_name(at_dtype t);
/* Bytes per element; 0 for STRING/UNKNOWN. */
AT_API size_t at_dtype_size(at_dtype t);
/* Number of elements (product of shape; 1 for a scalar). Returns 0 and sets
 * *overflow when the product overflows size_t; overflow may be NULL. */
AT_API size_t at_tensor_numel(const at_tensor *t, int *overflow);

/* How an embedder turns per-token vectors into one vector per text, as the
 * export's sentence-transformers files say (1_Pooling/config.json); mean when
 * nothing says otherwise. Over the text's real tokens (padding excluded). */
typedef enum at_pooling {
  AT_POOL_MEAN = 0,       /* pooling_mode_mean_tokens (and the default) */
  AT_POOL_CLS,            /* pooling_mode_cls_token: the first token's vector */
  AT_POOL_MAX,            /* pooling_mode_max_tokens: element-wise maximum */
  AT_POOL_MEAN_SQRT_LEN,  /* pooling_mode_mean_sqrt_len_tokens: sum / sqrt(n) */
  AT_POOL_WEIGHTED_MEAN,  /* pooling_mode_weightedmean_tokens: position t weighs t+1 */
  AT_POOL_LAST,           /* pooling_mode_lasttoken: the last real token's vector */
  AT_POOL_NONE,           /* the graph already outputs one vector per text
                             ("sentence_embedding"): nothing to pool */
} at_pooling;

/* Mean of the first n_rows rows of a row-major [*, dim] float matrix into
 * out[dim] (the masked mean pooling of an encoder's last_hidden_state over a
 * sequence's real tokens). n_rows >= 1. Pure. */
AT_API void at_mean_pool(const float *x, size_t n_rows, size_t dim, float *out);


/* Pool the first n_rows rows of a row-major [*, dim] float matrix (an
 * encoder's per-token output for one text, padding excluded) into out[dim]
 * as `mode` says; AT_POOL_NONE copies row 0. n_rows >= 1. Pure. */
AT_API void at_pool(at_pooling mode, const float *x, size_t n_rows, size_t dim, float *out);

/* The same, leaving the first `skip` rows out of the modes that read every
 * row (mean, max, mean_sqrt_len, weighted mean: its weights stay the rows'
 * positions t + 1), as sentence-transformers does for a prompt with
 * include_prompt false; cls and lasttoken are unchanged. At least the last
 * row is always kept. Pure. */
AT_API void at_pool_from(at_pooling mode, const float *x, size_t n_rows, size_t skip, size_t dim,
                         float *out);

/* Scale v[0..n) to unit L2 length (a zero vector is left as it is). Pure. */
AT_API void at_l2_normalize(float *v, size_t n);
/* The cosine of a and b (0 when either is zero), summed in double. Pure. */
AT_API double at_cosine(const float *a, const float *b, size_t n);

/* A classifier's scores from its n logits into out[n]: one softmax over
 * them, or, for a multi-label model (problem_type
 * multi_label_classification), an independent sigmoid per logit. Sums in
 * double. n >= 1. Pure. The one scoring rule of the server's routes
 * (/predict, V2, /rerank) and `anytime run`. */
AT_API void at_class_scores(const float *logits, size_t n, bool multi_label, float *out);

/* "mean", "cls", "max", "mean_sqrt_len", "weighted_mean", "last", "none";
 * "?" for a value outside the enum. Static. */
AT_API const char *at_pooling_name(at_pooling p);

/* The output a task head reads: the one called `name` if the model has it,
 * else the first FP32 output of rank `rank`. Returns its index, or -1. */
AT_API int at_model_info_head_output(const at_model_info *mi, const char *name, size_t rank);

/* The task head of an encoder graph, as the server, `profile` and `run`
 * read it: a classifier's "logits" [batch, labels]; an embedder's
 * "sentence_embedding" [batch, dim] when the graph pools (then *pool is set
 * to AT_POOL_NONE), else "last_hidden_state" [batch, seq, dim] (*pool left as
 * the export says). Falls back to the first float output of that rank.
 * Returns the output index and sets *dim (> 0), or -1 when there is none. */
AT_API int at_model_info_task_head(const at_model_info *mi, bool embed, at_pooling *pool, size_t *dim);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_TENSOR_H */
