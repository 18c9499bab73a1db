/* src/cli/cmd_eval.c — `anytime eval --model DIR --data FILE.csv`: accuracy
 * of a classifier on a labelled CSV (header label,text), measured through the
 * serving path: tokenizer -> at_engine_submit (worker pool, shared session)
 * -> argmax over the logits. Prints accuracy, count and the confusion matrix
 * (rows: true label, columns: predicted), or one JSON object with --json. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "anytime/model.h"
#include "anytime/tokenizer.h"
#include "cli/cli.h"
#include "tools/dataset.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime eval --model DIR --data FILE.csv [options]\n\n"
          "Runs the classifier in DIR (Hugging Face layout: config.json with id2label,\n"
          "tokenizer.json or vocab.txt, onnx/*.onnx) over every row of FILE.csv (label,text,\n"
          "or any columns under a header naming label and text; labels are ids or id2label\n"
          "names) through the engine, and prints accuracy, count and the confusion matrix.\n\n"
          "options:\n"
          "  --variant V       variant name (fp32, int8, ...) or path in DIR such as\n"
          "                    onnx/model.onnx (default: the most accurate)\n"
          "  --batch N         texts per engine request (default 16)\n"
          "  --workers N       engine worker threads (default 2)\n"
          "  --max-length N    truncate to N tokens (default: the model's token limit)\n"
          "  --json            print one JSON object\n");
}

typedef struct evalctx {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  size_t remaining;
  int failed;
  char error[256];
} evalctx;

typedef struct batch {
  evalctx *ctx;
  size_t first, n;       /* rows [first, first+n) of the dataset */
  int *pred;             /* where predictions go (global array) */
  size_t n_labels;
  int64_t *buf;          /* input tensors' storage (at_encodings_to_inputs) */
} batch;

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

/* The eval label rule: an id below the model's label count, or a name in
 * its id2label. -1 for neither. */
static int parse_label(const char *s, const void *ctx) {
  const at_model_desc *d = ctx;
  char *end;
  long v = strtol(s, &end, 10);
  if (*s && !*end && v >= 0 && (size_t)v < d->n_labels) return (int)v;
  for (size_t i = 0; i < d->n_labels; i++)
    if (strcmp(s, d->labels[i]) == 0) return (int)i;
  return -1;
}

/* Accuracy and the confusion matrix, as text or one JSON object. Returns
 * the exit code. */
static int report(const at_model_desc *d, int vi, const char *data, const int *truth,
                  const int *pred, size_t n, double secs, int bsz, int workers, bool json) {
    size_t k = d->n_labels, correct = 0;
    size_t *cm = calloc(k * k, sizeof *cm);
    if (!cm) return AT_EXIT_FAIL;
    for (size_t r = 0; r < n; r++) {
      if ((size_t)pred[r] < k) cm[(size_t)truth[r] * k + (size_t)pred[r]]++;
      correct += truth[r] == pred[r];
    }
    double acc = (double)correct / (double)n;
    if (json) {
      json_t *o = json_object(), *labels = json_array(), *m = json_array();
      for (size_t i = 0; i < k; i++) {
        json_array_append_new(labels, json_string(d->labels[i]));
        json_t *row = json_array();
        for (size_t j = 0; j < k; j++) json_array_append_new(row, json_integer((json_int_t)cm[i * k + j]));
        json_array_append_new(m, row);
      }
      json_object_set_new(o, "model", json_string(d->family));
      json_object_set_new(o, "variant", json_string(d->variants[vi].name));
      json_object_set_new(o, "data", json_string(data));
      json_object_set_new(o, "count", json_integer((json_int_t)n));
      json_object_set_new(o, "correct", json_integer((json_int_t)correct));
      json_object_set_new(o, "accuracy", json_real(acc));
      json_object_set_new(o, "labels", labels);
      json_object_set_new(o, "confusion", m);
      json_object_set_new(o, "seconds", json_real(secs));
      char *s = json_dumps(o, JSON_COMPACT);
      printf("%s\n", s ? s : "{}");
      free(s);
      json_decref(o);
    } else {
      printf("model:     %s (%s, %s)\n", d->family, d->variants[vi].name, d->variants[vi].rel_path);
      printf("data:      %s\n", data);
      printf("count:     %zu\n", n);
      printf("accuracy:  %.4f (%zu/%zu)\n", acc, correct, n);
      printf("time:      %.2f s (%.0f texts/s, batch %d, %d workers)\n", secs, (double)n / secs, bsz, workers);
      printf("confusion (rows: true, columns: predicted):\n%-14s", "");
      for (size_t j = 0; j < k; j++) printf(" %12.12s", d->labels[j]);
      printf("\n");
      for (size_t i = 0; i < k; i++) {
        printf("%-14.14s", d->labels[i]);
        for (size_t j = 0; j < k; j++) printf(" %12zu", cm[i * k + j]);
        printf("\n");
      }
    }
    free(cm);
    return AT_EXIT_OK;
}

/* The variant `variant` names (by name or by path in the model directory),
 * else the first; -1 (said on stderr) when there is no such variant. */
static int variant_index(const at_model_desc *d, const char *model, const char *variant) {
  if (!variant) return 0;
  for (size_t k = 0; k < d->n_variants; k++)
    if (!strcmp(d->variants[k].name, variant) || !strcmp(d->variants[k].rel_path, variant))
      return (int)k;
  fprintf(stderr, "anytime eval: %s has no variant '%s'; it has:", model, variant);
  for (size_t k = 0; k < d->n_variants; k++)
    fprintf(stderr, " %s (%s)", d->variants[k].name, d->variants[k].rel_path);
  fprintf(stderr, "\n");
  return -1;
}

/* Tokenise one batch's texts, pad them into tensors and submit them to the
 * engine (waiting while its queue is full). False when it could not: *rc
 * then holds the exit code, or the error was printed. */
static bool submit_batch(at_engine *eng, const at_model_desc *d, const at_tokenizer *tok,
                         at_tok_workspace *ws, const at_encode_params *encp,
                         const at_model_info *mi, int32_t pad_id, batch *b,
                         const char **texts, const size_t *lens, at_encoding *enc, int *rc) {
  at_status st;
  if ((st = at_tokenizer_encode_batch(tok, ws, texts, lens, b->n, encp, enc)) != AT_OK) {
    *rc = cli_report("eval", st);
    return false;
  }
  size_t L = 1;
  for (size_t r = 0; r < b->n; r++)
    if (enc[r].n > L) L = enc[r].n;
  at_tensor in[3];
  size_t nin = 0;
  b->buf = calloc(3 * b->n * L, sizeof(int64_t));
  if (!b->buf) {
    fprintf(stderr, "anytime eval: out of memory\n");
    return false;
  }
  if ((st = at_encodings_to_inputs(mi, enc, b->n, L, pad_id, b->buf, in, &nin)) != AT_OK) {
    *rc = cli_report("eval", st);
    return false;
  }
  evalctx *ctx = b->ctx;
  pthread_mutex_lock(&ctx->lock);
  ctx->remaining++;
  pthread_mutex_unlock(&ctx->lock);
  const char *outs[1] = {d->task_output};
  while ((st = at_engine_submit(eng, 0, in, nin, outs, 1, on_done, b)) == AT_ERR_QUEUE_FULL) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (st != AT_OK) {
    pthread_mutex_lock(&ctx->lock);
    ctx->remaining--;
    pthread_mutex_unlock(&ctx->lock);
    *rc = cli_report("eval", st);
    return false;
  }
  return true;
}

int at_cli_eval(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *model = NULL, *data = NULL, *variant = NULL;
  int bsz = 16, workers = 2, max_len = -1;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--model") && i + 1 < argc) model = argv[++i];
    else if (!strcmp(a, "--data") && i + 1 < argc) data = argv[++i];
    else if (!strcmp(a, "--variant") && i + 1 < argc) variant = argv[++i];
    else if (!strcmp(a, "--batch") && i + 1 < argc) bsz = atoi(argv[++i]);
    else if (!strcmp(a, "--workers") && i + 1 < argc) workers = atoi(argv[++i]);
    else if (!strcmp(a, "--max-length") && i + 1 < argc) max_len = atoi(argv[++i]);
    else if (!strcmp(a, "--json")) json = true;
    else { usage(stderr); return AT_EXIT_USAGE; }
  }
  if (!model || !data || bsz < 1 || bsz > 4096 || workers < 1 || workers > 256) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }
  int rc = AT_EXIT_FAIL;
  at_model_desc *d = NULL;
  cli_dataset ds = {0};
  at_tokenizer *tok = NULL;
  at_tok_workspace *ws = NULL;
  at_engine *eng = NULL;
  int *truth = NULL, *pred = NULL;
  batch *batches = NULL;
  size_t n_batches = 0;
  evalctx ctx = {.remaining = 0};
  pthread_mutex_init(&ctx.lock, NULL);
  pthread_cond_init(&ctx.cond, NULL);

  at_model_resolve_params rp = at_model_resolve_default_params();
  at_status st = at_model_resolve(model, &rp, &d);
  if (st != AT_OK) return cli_report("eval", st);
  if (d->n_labels < 2 || !d->task_output) {
    fprintf(stderr, "anytime eval: %s is not a classifier (config.json needs id2label and the "
                    "graph a \"logits\" output)\n", model);
    goto out;
  }
  int vi = variant_index(d, model, variant);
  if (vi < 0) goto out;
  if (!d->tokenizer_path) {
    fprintf(stderr, "anytime eval: %s has no tokenizer.json or vocab.txt\n", model);
    goto out;
  }
  char what[96], err[512];
  snprintf(what, sizeof what, "an id below %zu or a name in id2label", d->n_labels);
  cli_labels rule = {.parse = parse_label, .ctx = d, .what = what};
  if (cli_dataset_load(data, &rule, &ds, err, sizeof err) != 0) {
    fprintf(stderr, "anytime eval: %s\n", err);
    goto out;
  }
  size_t n = ds.n;
  truth = ds.labels; /* owned by ds */
  pred = malloc(n * sizeof *pred);
  if (!pred) { fprintf(stderr, "anytime eval: out of memory\n"); goto out; }
  for (size_t r = 0; r < n; r++) pred[r] = -1;
  if ((st = at_tokenizer_load(d->tokenizer_path, &tok)) != AT_OK ||
      (st = at_tok_workspace_create(&ws)) != AT_OK) {
    rc = cli_report("eval", st);
    goto out;
  }
  n_batches = (n + (size_t)bsz - 1) / (size_t)bsz;
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = workers;
  ep.queue_capacity = n_batches + 1;
  if ((st = at_engine_create(&ep, &eng)) != AT_OK ||
      (st = at_engine_add_variant(eng, d->variants[vi].name, d->variants[vi].path, NULL, NULL)) != AT_OK ||
      (st = at_engine_start(eng)) != AT_OK) {
    rc = cli_report("eval", st);
    goto out;
  }
  const at_model_info *mi = at_engine_variant_info(eng, 0);
  batches = calloc(n_batches, sizeof *batches);
  if (!batches) { fprintf(stderr, "anytime eval: out of memory\n"); goto out; }
  at_encode_params encp = at_encode_default_params();
  encp.pad_to = 0;
  if (max_len > 0) encp.max_length = max_len;
  else if (d->max_tokens > 0) encp.max_length = (int)d->max_tokens;
  const char **texts = malloc((size_t)bsz * sizeof *texts);
  size_t *lens = malloc((size_t)bsz * sizeof *lens);
  at_encoding *enc = malloc((size_t)bsz * sizeof *enc);
  if (!texts || !lens || !enc) { free(texts); free(lens); free(enc); fprintf(stderr, "anytime eval: out of memory\n"); goto out; }
  uint64_t t0 = 0;
  {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  }
  int32_t pad_id = at_tokenizer_pad_id(tok);
  for (size_t bi = 0; bi < n_batches; bi++) {
    batch *b = &batches[bi];
    b->ctx = &ctx;
    b->first = bi * (size_t)bsz;
    b->n = (n - b->first) < (size_t)bsz ? n - b->first : (size_t)bsz;
    b->pred = pred;
    b->n_labels = d->n_labels;
    for (size_t r = 0; r < b->n; r++)
      texts[r] = ds.texts[b->first + r], lens[r] = ds.lens[b->first + r];
    if (!submit_batch(eng, d, tok, ws, &encp, mi, pad_id, b, texts, lens, enc, &rc)) break;
  }
  free(texts);
  free(lens);
  free(enc);
  pthread_mutex_lock(&ctx.lock);
  while (ctx.remaining) pthread_cond_wait(&ctx.cond, &ctx.lock);
  pthread_mutex_unlock(&ctx.lock);
  if (ctx.failed) {
    fprintf(stderr, "anytime eval: inference failed: %s\n", ctx.error);
    goto out;
  }
  for (size_t r = 0; r < n; r++)
    if (pred[r] < 0) goto out; /* a batch was not submitted; the error is printed */
  {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double secs = (double)((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - t0) / 1e9;
    rc = report(d, vi, data, truth, pred, n, secs, bsz, workers, json);
  }
out:
  at_engine_destroy(eng);
  for (size_t bi = 0; batches && bi < n_batches; bi++) free(batches[bi].buf);
  free(batches);
  free(pred);
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(tok);
  cli_dataset_free(&ds);
  at_model_desc_free(d);
  pthread_mutex_destroy(&ctx.lock);
  pthread_cond_destroy(&ctx.cond);
  return rc;
}
