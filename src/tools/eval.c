/* src/tools/eval.c — `anytime eval`'s measurement (tools/eval.h): the
 * dataset in padded batches through one engine, argmax per row as each
 * batch comes back, then the accuracy and the confusion matrix.
 *
 * DESIGN: the calling thread encodes and submits batch after batch,
 * counting each in flight under evalctx.lock before its submit (and back
 * down when one is refused); each completion, on an engine worker, writes
 * only its own rows of the predictions, notes the first failure and counts
 * down under the lock, signalling `cond`. eval_run() waits for zero before
 * it frees anything a batch points at, and before it returns. */
#include "tools/eval.h"

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anytime/engine.h"
#include "anytime/tensor.h"
#include "anytime/tokenizer.h"

/* What the submitting thread and the completions share. */
typedef struct evalctx {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  size_t remaining; /* batches in flight; under lock */
  int failed;       /* under lock */
  char error[256];  /* under lock */
} evalctx;

/* One engine request: a run of rows. */
typedef struct batch {
  evalctx *ctx;
  size_t first, n; /* rows [first, first+n) of the dataset */
  int *pred;       /* where predictions go (global array) */
  size_t n_labels;
  int64_t *buf; /* input tensors' storage (at_encodings_to_inputs) */
} batch;

/* What every batch's submission needs. */
typedef struct evalrun {
  at_engine *eng;
  const at_model_desc *d;
  at_tokenizer *tok;
  at_tok_workspace *ws;
  at_encode_params encp;
  const at_model_info *mi;
  int32_t pad_id;
} evalrun;

/* The engine's completion callback (a worker thread). */
static void on_done(void *user, at_status status, const at_outputs *outputs,
                    const at_timing *timing, const char *error) {
  (void)timing;
  batch *b = user;
  evalctx *c = b->ctx;
  int fail = 0;
  char msg[256] = "";
  if (status != AT_OK) {
    fail = 1;
    snprintf(msg, sizeof msg, "%s: %s", at_strerror(status), error ? error : "");
  } else {
    at_tensor t;
    if (at_outputs_get(outputs, 0, &t) != AT_OK || t.dtype != AT_DTYPE_FLOAT32 || t.ndim != 2 ||
        t.shape[0] != (int64_t)b->n || t.shape[1] < 1) {
      fail = 1;
      snprintf(msg, sizeof msg, "the model's logits are not FP32 [batch, labels]");
    } else {
      const float *v = t.data;
      int64_t k = t.shape[1];
      for (size_t r = 0; r < b->n; r++) {
        int best = 0;
        for (int64_t j = 1; j < k; j++)
          if (v[r * k + j] > v[r * k + best]) best = (int)j;
        b->pred[b->first + r] = best;
      }
    }
  }
  pthread_mutex_lock(&c->lock);
  if (fail && !c->failed) {
    c->failed = 1;
    snprintf(c->error, sizeof c->error, "%s", msg);
  }
  c->remaining--;
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

int eval_parse_label(const char *s, const void *ctx) {
  const at_model_desc *d = ctx;
  char *end;
  long v = strtol(s, &end, 10);
  if (*s && !*end && v >= 0 && (size_t)v < d->n_labels) return (int)v;
  for (size_t i = 0; i < d->n_labels; i++)
    if (strcmp(s, d->labels[i]) == 0) return (int)i;
  return -1;
}

/* Tokenise one batch's texts, pad them into tensors and submit them to the
 * engine (waiting while its queue is full). */
static at_status submit_batch(const evalrun *er, batch *b, const char **texts, const size_t *lens,
                              at_encoding *enc) {
  at_status st;
  if ((st = at_tokenizer_encode_batch(er->tok, er->ws, texts, lens, b->n, &er->encp, enc)) != AT_OK)
    return st;
  size_t L = 1;
  for (size_t r = 0; r < b->n; r++)
    if (enc[r].n > L) L = enc[r].n;
  at_tensor in[3];
  size_t nin = 0;
  b->buf = calloc(3 * b->n * L, sizeof(int64_t));
  if (!b->buf) return at_fail(AT_ERR_NOMEM, "%s", "");
  if ((st = at_encodings_to_inputs(er->mi, enc, b->n, L, er->pad_id, b->buf, in, &nin)) != AT_OK)
    return st;
  evalctx *ctx = b->ctx;
  pthread_mutex_lock(&ctx->lock);
  ctx->remaining++;
  pthread_mutex_unlock(&ctx->lock);
  const char *outs[1] = {er->d->task_output};
  while ((st = at_engine_submit(er->eng, 0, in, nin, outs, 1, on_done, b)) == AT_ERR_QUEUE_FULL) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (st != AT_OK) {
    pthread_mutex_lock(&ctx->lock);
    ctx->remaining--;
    pthread_mutex_unlock(&ctx->lock);
  }
  return st;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every batch through the started engine, then wait for all answers. */
static at_status run_batches(evalrun *er, const eval_params *p, const cli_dataset *ds,
                             batch *batches, size_t n_batches, evalctx *ctx, eval_outcome *out) {
  size_t bsz = (size_t)p->batch, n = ds->n;
  const char **texts = malloc(bsz * sizeof *texts);
  size_t *lens = malloc(bsz * sizeof *lens);
  at_encoding *enc = malloc(bsz * sizeof *enc);
  if (!texts || !lens || !enc) {
    free(texts);
    free(lens);
    free(enc);
    return at_fail(AT_ERR_NOMEM, "%s", "");
  }
  double t0 = now_s();
  at_status st = AT_OK;
  for (size_t bi = 0; bi < n_batches && st == AT_OK; bi++) {
    batch *b = &batches[bi];
    b->ctx = ctx;
    b->first = bi * bsz;
    b->n = (n - b->first) < bsz ? n - b->first : bsz;
    b->pred = out->pred;
    b->n_labels = er->d->n_labels;
    for (size_t r = 0; r < b->n; r++)
      texts[r] = ds->texts[b->first + r], lens[r] = ds->lens[b->first + r];
    st = submit_batch(er, b, texts, lens, enc);
  }
  free(texts);
  free(lens);
  free(enc);
  pthread_mutex_lock(&ctx->lock);
  while (ctx->remaining) pthread_cond_wait(&ctx->cond, &ctx->lock);
  pthread_mutex_unlock(&ctx->lock);
  out->seconds = now_s() - t0;
  out->failed = ctx->failed != 0;
  snprintf(out->error, sizeof out->error, "%s", ctx->error);
  return st;
}

/* The tokenizer and a started engine in er, then every batch. */
static at_status eval_engine(evalrun *er, const eval_params *p, const cli_dataset *ds,
                             batch **batches, size_t n_batches, evalctx *ctx, eval_outcome *out) {
  const at_model_desc *d = er->d;
  at_status st;
  if ((st = at_tokenizer_load(d->tokenizer_path, &er->tok)) != AT_OK) return st;
  if ((st = at_tok_workspace_create(&er->ws)) != AT_OK) return st;
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = p->workers;
  ep.queue_capacity = n_batches + 1;
  const at_model_variant *v = &d->variants[p->variant];
  if ((st = at_engine_create(&ep, &er->eng)) != AT_OK ||
      (st = at_engine_add_variant(er->eng, v->name, v->path, NULL, NULL)) != AT_OK ||
      (st = at_engine_start(er->eng)) != AT_OK)
    return st;
  er->mi = at_engine_variant_info(er->eng, 0);
  if (!(*batches = calloc(n_batches, sizeof **batches))) return at_fail(AT_ERR_NOMEM, "%s", "");
  er->encp = at_encode_default_params();
  er->encp.pad_to = 0;
  if (p->max_length > 0)
    er->encp.max_length = p->max_length;
  else if (d->max_tokens > 0)
    er->encp.max_length = (int)d->max_tokens;
  er->pad_id = at_tokenizer_pad_id(er->tok);
  return run_batches(er, p, ds, *batches, n_batches, ctx, out);
}

at_status eval_run(const at_model_desc *d, const eval_params *p, const cli_dataset *ds,
                   eval_outcome *out) {
  memset(out, 0, sizeof *out);
  size_t n = ds->n;
  out->pred = malloc(n * sizeof *out->pred);
  if (!out->pred) return at_fail(AT_ERR_NOMEM, "%s", "");
  for (size_t r = 0; r < n; r++) out->pred[r] = -1;
  evalctx ctx = {.remaining = 0};
  pthread_mutex_init(&ctx.lock, NULL);
  pthread_cond_init(&ctx.cond, NULL);
  evalrun er = {.d = d};
  batch *batches = NULL;
  size_t n_batches = (n + (size_t)p->batch - 1) / (size_t)p->batch;
  at_status st = eval_engine(&er, p, ds, &batches, n_batches, &ctx, out);
  at_engine_destroy(er.eng);
  for (size_t bi = 0; batches && bi < n_batches; bi++) free(batches[bi].buf);
  free(batches);
  at_tok_workspace_destroy(er.ws);
  at_tokenizer_destroy(er.tok);
  pthread_mutex_destroy(&ctx.lock);
  pthread_cond_destroy(&ctx.cond);
  return st;
}

void eval_outcome_free(eval_outcome *out) {
  if (!out) return;
  free(out->pred);
  out->pred = NULL;
}

/* The confusion matrix as one JSON object on stdout. */
static void print_json(const at_model_desc *d, const eval_params *p, const char *data, size_t n,
                       size_t correct, const size_t *cm, double secs) {
  size_t k = d->n_labels;
  json_t *o = json_object(), *labels = json_array(), *m = json_array();
  for (size_t i = 0; i < k; i++) {
    json_array_append_new(labels, json_string(d->labels[i]));
    json_t *row = json_array();
    for (size_t j = 0; j < k; j++)
      json_array_append_new(row, json_integer((json_int_t)cm[i * k + j]));
    json_array_append_new(m, row);
  }
  json_object_set_new(o, "model", json_string(d->family));
  json_object_set_new(o, "variant", json_string(d->variants[p->variant].name));
  json_object_set_new(o, "data", json_string(data));
  json_object_set_new(o, "count", json_integer((json_int_t)n));
  json_object_set_new(o, "correct", json_integer((json_int_t)correct));
  json_object_set_new(o, "accuracy", json_real((double)correct / (double)n));
  json_object_set_new(o, "labels", labels);
  json_object_set_new(o, "confusion", m);
  json_object_set_new(o, "seconds", json_real(secs));
  char *s = json_dumps(o, JSON_COMPACT);
  printf("%s\n", s ? s : "{}");
  free(s);
  json_decref(o);
}

/* The same as text lines. */
static void print_text(const at_model_desc *d, const eval_params *p, const char *data, size_t n,
                       size_t correct, const size_t *cm, double secs) {
  size_t k = d->n_labels;
  const at_model_variant *v = &d->variants[p->variant];
  printf("model:     %s (%s, %s)\n", d->family, v->name, v->rel_path);
  printf("data:      %s\n", data);
  printf("count:     %zu\n", n);
  printf("accuracy:  %.4f (%zu/%zu)\n", (double)correct / (double)n, correct, n);
  printf("time:      %.2f s (%.0f texts/s, batch %d, %d workers)\n", secs, (double)n / secs,
         p->batch, p->workers);
  printf("confusion (rows: true, columns: predicted):\n%-14s", "");
  for (size_t j = 0; j < k; j++) printf(" %12.12s", d->labels[j]);
  printf("\n");
  for (size_t i = 0; i < k; i++) {
    printf("%-14.14s", d->labels[i]);
    for (size_t j = 0; j < k; j++) printf(" %12zu", cm[i * k + j]);
    printf("\n");
  }
}

at_status eval_print(const at_model_desc *d, const eval_params *p, const char *data,
                     const cli_dataset *ds, const eval_outcome *out, bool json) {
  size_t k = d->n_labels, n = ds->n, correct = 0;
  const int *truth = ds->labels, *pred = out->pred;
  size_t *cm = calloc(k * k, sizeof *cm);
  if (!cm) return AT_ERR_NOMEM;
  for (size_t r = 0; r < n; r++) {
    if ((size_t)pred[r] < k) cm[(size_t)truth[r] * k + (size_t)pred[r]]++;
    correct += truth[r] == pred[r];
  }
  if (json)
    print_json(d, p, data, n, correct, cm, out->seconds);
  else
    print_text(d, p, data, n, correct, cm, out->seconds);
  free(cm);
  return AT_OK;
}
