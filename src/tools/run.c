/* src/tools/run.c — `anytime run`'s engine round trip (tools/run.h): one
 * engine with one worker, one request per text, answers copied out of the
 * engine's callback and awaited on a condition variable, then printed as
 * the server would score them (at_class_scores for classifiers; pooling
 * and L2 normalisation for embedders).
 *
 * DESIGN: the submitting thread counts requests in flight under
 * run_batch.lock before each submit (and back down when one is refused);
 * each completion, on an engine worker, fills only its own answer and
 * then counts down, signalling `done` at zero; run_texts() waits for zero
 * before it returns, so nothing a worker touches is freed or read early. */
#include "tools/run.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anytime/engine.h"
#include "anytime/session.h"
#include "anytime/tensor.h"
#include "anytime/tokenizer.h"

/* One text's answer, copied out of the engine's outputs. */
typedef struct answer {
  at_status status;
  char error[256];
  float *values; /* copied output */
  size_t n_values;
  int64_t shape[AT_MAX_DIMS];
  size_t ndim;
  size_t pool_skip; /* leading tokens pooling leaves out (a prompt's, include_prompt false) */
} answer;

/* One request in flight. */
typedef struct job {
  run_batch *b;
  answer *res;
  int64_t *buf; /* its input tensors' storage (at_encodings_to_inputs) */
} job;

struct run_batch {
  const at_model_desc *d; /* borrowed */
  int vi;                 /* the answering variant's index in d */
  at_tokenizer *tok;
  at_tok_workspace *ws;
  at_engine *eng;
  const char *const *texts; /* borrowed, n of them */
  size_t n;
  job *jobs;
  answer *res;
  pthread_mutex_t lock;
  pthread_cond_t done;
  size_t remaining; /* requests in flight; under lock */
};

/* The engine's completion callback (a worker thread). */
static void on_done(void *user, at_status status, const at_outputs *outputs,
                    const at_timing *timing, const char *error) {
  (void)timing;
  job *j = user;
  answer *r = j->res;
  r->status = status;
  if (status != AT_OK) {
    snprintf(r->error, sizeof r->error, "%s", error ? error : "");
  } else {
    at_tensor t;
    if (at_outputs_get(outputs, 0, &t) != AT_OK || t.dtype != AT_DTYPE_FLOAT32) {
      r->status = AT_ERR_MODEL;
      snprintf(r->error, sizeof r->error, "output '%s' is not FP32", j->b->d->task_output);
    } else {
      r->n_values = at_tensor_numel(&t, NULL);
      r->ndim = t.ndim;
      memcpy(r->shape, t.shape, sizeof r->shape);
      r->values = malloc((r->n_values ? r->n_values : 1) * sizeof(float));
      if (r->values)
        memcpy(r->values, t.data, r->n_values * sizeof(float));
      else
        r->status = AT_ERR_NOMEM;
    }
  }
  pthread_mutex_lock(&j->b->lock);
  if (--j->b->remaining == 0) pthread_cond_signal(&j->b->done);
  pthread_mutex_unlock(&j->b->lock);
}

/* A one-worker engine with variant vi at index 0 (and, with all_variants,
 * every other variant after it, as a server would load them). */
static at_status open_engine(const at_model_desc *d, int vi, const run_params *p, at_engine **eng) {
  char cache_dir[4096];
  at_session_params sp = at_session_default_params();
  at_status st;
  if (p->cache) {
    if ((st = at_artifact_cache_dir(p->cache_root, cache_dir, sizeof cache_dir)) != AT_OK)
      return st;
    sp.artifact_cache_dir = cache_dir;
    sp.artifact_model = d->family;
    sp.artifact_variant = d->variants[vi].name;
  }
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = 1;
  if ((st = at_engine_create(&ep, eng)) != AT_OK) return st;
  /* the answering variant is index 0; the family's others load beside it */
  enum { MAXV = 64 }; /* the engine's own limit */
  at_variant_spec spec[MAXV];
  at_session_params vsp[MAXV];
  int n = 0;
  for (size_t k = 0; k <= d->n_variants && n < MAXV; k++) {
    size_t v = k == 0 ? (size_t)vi : k - 1; /* vi first, then the others in order */
    if (k > 0 && (!p->all_variants || v == (size_t)vi)) continue;
    vsp[n] = sp;
    if (p->cache) vsp[n].artifact_variant = d->variants[v].name;
    spec[n] = (at_variant_spec){
        .name = d->variants[v].name, .model_path = d->variants[v].path, .sp = &vsp[n]};
    n++;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if ((st = at_engine_add_variants(*eng, spec, n, cpus > 1 ? (int)cpus : 1, NULL, NULL)) != AT_OK)
    return st;
  return at_engine_start(*eng);
}

at_status run_open(const at_model_desc *d, const run_params *p, run_batch **out) {
  run_batch *b = calloc(1, sizeof *b);
  *out = b;
  if (!b) return at_fail(AT_ERR_NOMEM, "%s", "");
  b->d = d;
  b->vi = p->variant;
  pthread_mutex_init(&b->lock, NULL);
  pthread_cond_init(&b->done, NULL);
  at_status st;
  if ((st = at_tokenizer_load(d->tokenizer_path, &b->tok)) != AT_OK ||
      (st = at_tok_workspace_create(&b->ws)) != AT_OK)
    return st;
  return open_engine(d, p->variant, p, &b->eng);
}

/* An embedder's default prompt (config_sentence_transformers.json), put
 * before each text as sentence-transformers' encode() and the server put
 * it, and with include_prompt false the tokens pooling leaves out
 * (at_tokenizer_prompt_tokens). *prompt NULL: none. */
static at_status default_prompt(const at_model_desc *d, const at_tokenizer *tok,
                                at_tok_workspace *ws, const char **prompt, size_t *skip) {
  *prompt = NULL;
  *skip = 0;
  if (d->task != AT_TASK_EMBEDDER || d->default_prompt < 0 ||
      (size_t)d->default_prompt >= d->n_prompts)
    return AT_OK;
  *prompt = d->prompt_texts[d->default_prompt];
  return d->pool_excludes_prompt ? at_tokenizer_prompt_tokens(tok, ws, *prompt, skip) : AT_OK;
}

/* Encode `text`, after `prompt` when there is one. */
static at_status encode_text(const at_tokenizer *tok, at_tok_workspace *ws, const char *prompt,
                             const char *text, const at_encode_params *encp, at_encoding *enc) {
  if (!prompt) return at_tokenizer_encode(tok, ws, text, strlen(text), NULL, 0, encp, enc);
  size_t pl = strlen(prompt), tl = strlen(text);
  char *joined = malloc(pl + tl + 1);
  if (!joined) return AT_ERR_NOMEM;
  memcpy(joined, prompt, pl);
  memcpy(joined + pl, text, tl + 1);
  at_status st = at_tokenizer_encode(tok, ws, joined, pl + tl, NULL, 0, encp, enc);
  free(joined);
  return st;
}

/* Encode text t and submit it. */
static at_status submit_one(run_batch *b, size_t t, const char *prompt, size_t pool_skip,
                            const at_encode_params *encp) {
  const at_model_desc *d = b->d;
  at_encoding enc;
  at_status st;
  if ((st = encode_text(b->tok, b->ws, prompt, b->texts[t], encp, &enc)) != AT_OK) return st;
  b->res[t].pool_skip = pool_skip;
  job *j = &b->jobs[t];
  j->b = b;
  j->res = &b->res[t];
  at_tensor in[3];
  size_t nin = 0;
  size_t L = enc.n ? enc.n : 1;
  if (!(j->buf = calloc(3 * L, sizeof *j->buf))) return at_fail(AT_ERR_NOMEM, "%s", "");
  const at_model_info *mi = at_engine_variant_info(b->eng, 0);
  if ((st = at_encodings_to_inputs(mi, &enc, 1, L, 0, j->buf, in, &nin)) != AT_OK) return st;
  pthread_mutex_lock(&b->lock);
  b->remaining++;
  pthread_mutex_unlock(&b->lock);
  const char *outs[1] = {d->task_output};
  if ((st = at_engine_submit(b->eng, 0, in, nin, outs, 1, on_done, j)) != AT_OK) {
    pthread_mutex_lock(&b->lock);
    b->remaining--;
    pthread_mutex_unlock(&b->lock);
  }
  return st;
}

at_status run_texts(run_batch *b, const char *const *texts, size_t n) {
  const at_model_desc *d = b->d;
  b->jobs = calloc(n, sizeof *b->jobs);
  b->res = calloc(n, sizeof *b->res);
  if (!b->jobs || !b->res) return at_fail(AT_ERR_NOMEM, "%s", "");
  b->texts = texts;
  b->n = n;
  at_encode_params encp = at_encode_default_params();
  if (d->max_tokens > 0) encp.max_length = (int)d->max_tokens;
  encp.pad_to = 0;
  const char *prompt = NULL;
  size_t pool_skip = 0;
  at_status st = default_prompt(d, b->tok, b->ws, &prompt, &pool_skip);
  for (size_t t = 0; st == AT_OK && t < n; t++) st = submit_one(b, t, prompt, pool_skip, &encp);
  pthread_mutex_lock(&b->lock);
  while (b->remaining) pthread_cond_wait(&b->done, &b->lock);
  pthread_mutex_unlock(&b->lock);
  return st;
}

static const char *outcome_name(at_artifact_outcome o) {
  switch (o) {
    case AT_ARTIFACT_HIT: return "hit";
    case AT_ARTIFACT_BUILT: return "built";
    case AT_ARTIFACT_UNCACHED: return "unusable";
    default: return "off";
  }
}

/* A classifier's answer: the label and its score (one softmax, or a
 * sigmoid per label for a multi-label model), every label's score in JSON. */
static at_status print_class(const at_model_desc *d, const answer *r, const char *text,
                             json_t *jr) {
  size_t n = r->n_values; /* [1, labels] */
  if (n == 0) return AT_OK;
  float *pr = calloc(n, sizeof *pr);
  if (!pr) return AT_ERR_NOMEM;
  at_class_scores(r->values, n, d->multi_label, pr); /* as the server scores */
  size_t best = 0;
  for (size_t k = 1; k < n; k++) best = r->values[k] > r->values[best] ? k : best;
  char fallback[32];
  snprintf(fallback, sizeof fallback, "LABEL_%zu", best);
  const char *label = best < d->n_labels ? d->labels[best] : fallback;
  if (jr) {
    json_object_set_new(jr, "label", json_string(label));
    json_object_set_new(jr, "score", json_real(pr[best]));
    json_t *scores = json_object();
    for (size_t k = 0; k < n; k++) {
      snprintf(fallback, sizeof fallback, "LABEL_%zu", k);
      json_object_set_new(scores, k < d->n_labels ? d->labels[k] : fallback, json_real(pr[k]));
    }
    json_object_set_new(jr, "scores", scores);
  } else {
    printf("%s\t%.4f\t%s\n", label, pr[best], text);
  }
  free(pr);
  return AT_OK;
}

/* One text's answer: a classifier's label and scores, or an embedder's
 * pooled, normalised vector; into jr, or printed when jr is NULL. */
static at_status print_answer(const at_model_desc *d, const answer *r, const char *text,
                              json_t *jr) {
  if (d->task == AT_TASK_CLASSIFIER) return print_class(d, r, text, jr);
  /* [1, H] pooled by the graph, or [1, seq, H] per token: pooled as the
   * export says (the one text fills every row: no padding). */
  size_t h = r->ndim ? (size_t)r->shape[r->ndim - 1] : 0;
  size_t seq = r->ndim == 3 ? (size_t)r->shape[1] : 1;
  float *pooled = calloc(h ? h : 1, sizeof *pooled);
  if (!pooled) return AT_ERR_NOMEM;
  if (h && seq)
    at_pool_from(r->ndim == 3 ? d->pooling : AT_POOL_NONE, r->values, seq, r->pool_skip, h, pooled);
  at_l2_normalize(pooled, h);
  if (jr) {
    json_t *arr = json_array();
    for (size_t k = 0; k < h; k++) json_array_append_new(arr, json_real(pooled[k]));
    json_object_set_new(jr, "dim", json_integer((json_int_t)h));
    json_object_set_new(jr, "embedding", arr);
  } else {
    printf("dim=%zu\t[", h);
    for (size_t k = 0; k < h && k < 5; k++) printf("%s%.5f", k ? ", " : "", pooled[k]);
    printf("%s]\t%s\n", h > 5 ? ", ..." : "", text);
  }
  free(pooled);
  return AT_OK;
}

size_t run_print(const run_batch *b, bool json) {
  const at_model_desc *d = b->d;
  size_t failed = 0;
  json_t *jroot = NULL, *jres = NULL;
  if (json) {
    at_artifact_outcome o = at_session_artifact_outcome(at_engine_variant_session(b->eng, 0));
    jroot = json_object();
    jres = json_array();
    json_object_set_new(jroot, "model", json_string(d->family));
    json_object_set_new(jroot, "variant", json_string(d->variants[b->vi].name));
    json_object_set_new(jroot, "task", json_string(at_model_task_name(d->task)));
    json_object_set_new(jroot, "artifact", json_string(outcome_name(o)));
    json_object_set_new(jroot, "results", jres);
  }
  for (size_t t = 0; t < b->n; t++) {
    const answer *r = &b->res[t];
    if (r->status != AT_OK) {
      fprintf(stderr, "anytime run: text %zu: %s: %s\n", t + 1, at_strerror(r->status), r->error);
      failed++;
      continue;
    }
    json_t *jr = json ? json_object() : NULL;
    if (jr) {
      json_object_set_new(jr, "text", json_string(b->texts[t]));
      json_array_append_new(jres, jr);
    }
    if (print_answer(d, r, b->texts[t], jr) != AT_OK) failed++;
    fflush(stdout);
  }
  if (json) {
    char *s = json_dumps(jroot, JSON_COMPACT);
    if (s) printf("%s\n", s);
    free(s);
    json_decref(jroot);
  }
  return failed;
}

void run_close(run_batch *b) {
  if (!b) return;
  at_engine_destroy(b->eng);
  for (size_t t = 0; b->jobs && t < b->n; t++) {
    free(b->jobs[t].buf);
    if (b->res) free(b->res[t].values);
  }
  free(b->jobs);
  free(b->res);
  at_tok_workspace_destroy(b->ws);
  at_tokenizer_destroy(b->tok);
  pthread_mutex_destroy(&b->lock);
  pthread_cond_destroy(&b->done);
  free(b);
}
