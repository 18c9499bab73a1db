/* src/cli/cmd_run.c — `anytime run MODEL TEXT...`: resolve a model by name
 * (local path, ./models, Hugging Face cache), tokenize the texts, run them
 * through the engine (the same path the server uses, with the compiled-
 * artifact cache) and print the prediction: label and score for classifiers,
 * the embedding's dimension and first values for embedders; --json for a
 * machine-readable answer. Also the probe the cold-start benchmark times. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "anytime/tokenizer.h"
#include "cli/cli.h"

#define MAX_TEXTS 256
#define MAX_DIRS 16

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime run MODEL TEXT [TEXT...] [options]\n\n"
          "MODEL is a model directory or .onnx file, a name in ./models (or --dir), or a\n"
          "Hugging Face repo id ORG/NAME[@REVISION] in the hub cache (see `anytime ls`).\n"
          "Prints, per text, the label and probability (classifiers) or the embedding's\n"
          "dimension and first values (embedders; pooled over tokens as the export's\n"
          "1_Pooling/config.json says, mean by default, when the model gives per-token\n"
          "states, then L2-normalised). Texts are cut at the model's token limit (the\n"
          "smallest of its position table, max_seq_length and model_max_length).\n\n"
          "options:\n"
          "  --variant NAME     which variant to run (default: the most accurate, e.g. fp32)\n"
          "  --dir DIR          also look up bare names in DIR (repeatable; ./models always)\n"
          "  --cache-dir DIR    compiled-artifact cache root (default: see `anytime cache`)\n"
          "  --no-cache         do not use the compiled-artifact cache\n"
          "  --all-variants     load every variant of the family (as a server would), then\n"
          "                     answer with the chosen one\n"
          "  --json             print one JSON object\n");
}

typedef struct result {
  at_status status;
  char error[256];
  float *values; /* copied output */
  size_t n_values;
  int64_t shape[AT_MAX_DIMS];
  size_t ndim;
  size_t pool_skip; /* leading tokens pooling leaves out (a prompt's, include_prompt false) */
} result;

typedef struct pending {
  pthread_mutex_t lock;
  pthread_cond_t done;
  size_t remaining;
} pending;

typedef struct job {
  pending *pend;
  result *res;
  const char *output;
  int64_t *buf; /* its input tensors' storage (at_encodings_to_inputs) */
} job;

static void on_done(void *user, at_status status, const at_outputs *outputs,
                    const at_timing *timing, const char *error) {
  (void)timing;
  job *j = user;
  result *r = j->res;
  r->status = status;
  if (status != AT_OK) {
    snprintf(r->error, sizeof r->error, "%s", error ? error : "");
  } else {
    at_tensor t;
    if (at_outputs_get(outputs, 0, &t) != AT_OK || t.dtype != AT_DTYPE_FLOAT32) {
      r->status = AT_ERR_MODEL;
      snprintf(r->error, sizeof r->error, "output '%s' is not FP32", j->output);
    } else {
      r->n_values = at_tensor_numel(&t, NULL);
      r->ndim = t.ndim;
      memcpy(r->shape, t.shape, sizeof r->shape);
      r->values = malloc((r->n_values ? r->n_values : 1) * sizeof(float));
      if (r->values) memcpy(r->values, t.data, r->n_values * sizeof(float));
      else r->status = AT_ERR_NOMEM;
    }
  }
  pthread_mutex_lock(&j->pend->lock);
  if (--j->pend->remaining == 0) pthread_cond_signal(&j->pend->done);
  pthread_mutex_unlock(&j->pend->lock);
}

static const char *outcome_name(at_artifact_outcome o) {
  switch (o) {
    case AT_ARTIFACT_HIT: return "hit";
    case AT_ARTIFACT_BUILT: return "built";
    case AT_ARTIFACT_UNCACHED: return "unusable";
    default: return "off";
  }
}

/* Whether `d` is something `run` can answer with variant index vi; says
 * why not on stderr. */
static bool model_runnable(const at_model_desc *d, int vi, const char *variant) {
  if (vi < 0) {
    fprintf(stderr, "anytime run: %s has no variant '%s'; it has:", d->family, variant);
    for (size_t i = 0; i < d->n_variants; i++) fprintf(stderr, " %s", d->variants[i].name);
    fprintf(stderr, "\n");
    return false;
  }
  if (d->task == AT_TASK_GENERATOR) {
    fprintf(stderr,
            "anytime run: %s is a text-generation model: use `anytime generate --model %s "
            "\"prompt\"` (or serve it: POST /v1/completions)\n",
            d->family, d->spec);
    return false;
  }
  if (d->task == AT_TASK_UNKNOWN) {
    fprintf(stderr,
            "anytime run: cannot tell what %s computes: a classifier needs a \"logits\" output "
            "and id2label in config.json, an embedder a \"last_hidden_state\" or "
            "\"sentence_embedding\" output\n",
            d->family);
    return false;
  }
  if (!d->tokenizer_path) {
    fprintf(stderr, "anytime run: %s has no tokenizer.json or vocab.txt in %s\n", d->family,
            d->dir);
    return false;
  }
  return true;
}

/* A one-worker engine with variant vi at index 0 (and, with all_variants,
 * every other variant after it, as a server would load them). `cache` NULL
 * turns the artifact cache off; cache_root may be NULL (the default). */
static at_status open_engine(const at_model_desc *d, int vi, bool all_variants, const char *cache,
                             const char *cache_root, at_engine **eng) {
  char cache_dir[4096];
  at_session_params sp = at_session_default_params();
  at_status st;
  if (cache) {
    if ((st = at_artifact_cache_dir(cache_root, cache_dir, sizeof cache_dir)) != AT_OK) return st;
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
    if (k > 0 && (!all_variants || v == (size_t)vi)) continue;
    vsp[n] = sp;
    if (cache) vsp[n].artifact_variant = d->variants[v].name;
    spec[n] = (at_variant_spec){.name = d->variants[v].name, .model_path = d->variants[v].path,
                                .sp = &vsp[n]};
    n++;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if ((st = at_engine_add_variants(*eng, spec, n, cpus > 1 ? (int)cpus : 1, NULL, NULL)) != AT_OK)
    return st;
  return at_engine_start(*eng);
}

/* One text's answer: a classifier's label and scores (one softmax, or a
 * sigmoid per label for a multi-label model), or an embedder's pooled,
 * normalised vector; into jr, or printed when jr is NULL. */
static at_status print_result(const at_model_desc *d, const result *r, const char *text,
                              json_t *jr) {
  if (d->task == AT_TASK_CLASSIFIER) {
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
  /* [1, H] pooled by the graph, or [1, seq, H] per token: pooled as the
   * export says (the one text fills every row: no padding). */
  size_t h = r->ndim ? (size_t)r->shape[r->ndim - 1] : 0, seq = r->ndim == 3 ? (size_t)r->shape[1] : 1;
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

/* Every text's answer, as text lines or one JSON object. Returns the exit
 * code (AT_EXIT_FAIL if any text failed). */
static int print_results(const at_model_desc *d, int vi, at_engine *eng, const result *res,
                         const char *const *texts, size_t n_texts, bool json) {
  int rc = AT_EXIT_OK;
  json_t *jroot = NULL, *jres = NULL;
  if (json) {
    jroot = json_object();
    jres = json_array();
    json_object_set_new(jroot, "model", json_string(d->family));
    json_object_set_new(jroot, "variant", json_string(d->variants[vi].name));
    json_object_set_new(jroot, "task", json_string(at_model_task_name(d->task)));
    json_object_set_new(
        jroot, "artifact",
        json_string(outcome_name(at_session_artifact_outcome(at_engine_variant_session(eng, 0)))));
    json_object_set_new(jroot, "results", jres);
  }
  for (size_t t = 0; t < n_texts; t++) {
    const result *r = &res[t];
    if (r->status != AT_OK) {
      fprintf(stderr, "anytime run: text %zu: %s: %s\n", t + 1, at_strerror(r->status), r->error);
      rc = AT_EXIT_FAIL;
      continue;
    }
    json_t *jr = json ? json_object() : NULL;
    if (jr) {
      json_object_set_new(jr, "text", json_string(texts[t]));
      json_array_append_new(jres, jr);
    }
    if (print_result(d, r, texts[t], jr) != AT_OK) rc = AT_EXIT_FAIL;
    fflush(stdout);
  }
  if (json) {
    char *s = json_dumps(jroot, JSON_COMPACT);
    if (s) printf("%s\n", s);
    free(s);
    json_decref(jroot);
  }
  return rc;
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

int at_cli_run(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *model = NULL, *variant = NULL, *cache_root = NULL;
  const char *texts[MAX_TEXTS];
  const char *dirs[MAX_DIRS + 1] = {"models"};
  size_t n_texts = 0, n_dirs = 1;
  bool json = false, no_cache = false, all_variants = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--variant") == 0 && i + 1 < argc) variant = argv[++i];
    else if (strcmp(a, "--dir") == 0 && i + 1 < argc && n_dirs <= MAX_DIRS) dirs[n_dirs++] = argv[++i];
    else if (strcmp(a, "--cache-dir") == 0 && i + 1 < argc) cache_root = argv[++i];
    else if (strcmp(a, "--no-cache") == 0) no_cache = true;
    else if (strcmp(a, "--json") == 0) json = true;
    else if (strcmp(a, "--all-variants") == 0) all_variants = true;
    else if (a[0] == '-' && a[1] == '-') {
      fprintf(stderr, "anytime run: unknown option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    } else if (!model) model = a;
    else if (n_texts < MAX_TEXTS) texts[n_texts++] = a;
    else {
      fprintf(stderr, "anytime run: at most %d texts\n", MAX_TEXTS);
      return AT_EXIT_USAGE;
    }
  }
  if (!model || n_texts == 0) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }

  at_model_resolve_params rp = at_model_resolve_default_params();
  rp.model_dirs = dirs;
  rp.n_model_dirs = n_dirs;
  at_model_desc *d = NULL;
  at_status st = at_model_resolve(model, &rp, &d);
  if (st != AT_OK) return cli_report("run", st);
  int rc = AT_EXIT_FAIL;
  at_tokenizer *tok = NULL;
  at_tok_workspace *ws = NULL;
  at_engine *eng = NULL;
  job *jobs = NULL;
  result *res = NULL;
  pending pend = {.remaining = 0};
  pthread_mutex_init(&pend.lock, NULL);
  pthread_cond_init(&pend.done, NULL);

  int vi = variant ? at_model_desc_variant_index(d, variant) : 0;
  if (!model_runnable(d, vi, variant)) goto out;
  if ((st = at_tokenizer_load(d->tokenizer_path, &tok)) != AT_OK ||
      (st = at_tok_workspace_create(&ws)) != AT_OK) {
    rc = cli_report("run", st);
    goto out;
  }

  if ((st = open_engine(d, vi, all_variants, no_cache ? NULL : "", cache_root, &eng)) != AT_OK) {
    rc = cli_report("run", st);
    goto out;
  }
  const at_model_info *mi = at_engine_variant_info(eng, 0);
  jobs = calloc(n_texts, sizeof *jobs);
  res = calloc(n_texts, sizeof *res);
  if (!jobs || !res) {
    fprintf(stderr, "anytime run: out of memory\n");
    goto out;
  }
  at_encode_params encp = at_encode_default_params();
  if (d->max_tokens > 0) encp.max_length = (int)d->max_tokens;
  encp.pad_to = 0;
  const char *prompt = NULL;
  size_t pool_skip = 0;
  if ((st = default_prompt(d, tok, ws, &prompt, &pool_skip)) != AT_OK) {
    rc = cli_report("run", st);
    goto wait;
  }
  for (size_t t = 0; t < n_texts; t++) {
    at_encoding enc;
    if ((st = encode_text(tok, ws, prompt, texts[t], &encp, &enc)) != AT_OK) {
      rc = cli_report("run", st);
      goto wait;
    }
    res[t].pool_skip = pool_skip;
    job *j = &jobs[t];
    j->pend = &pend;
    j->res = &res[t];
    j->output = d->task_output;
    at_tensor in[3];
    size_t nin = 0;
    size_t L = enc.n ? enc.n : 1;
    if (!(j->buf = calloc(3 * L, sizeof *j->buf))) {
      fprintf(stderr, "anytime run: out of memory\n");
      goto wait;
    }
    if ((st = at_encodings_to_inputs(mi, &enc, 1, L, 0, j->buf, in, &nin)) != AT_OK) {
      rc = cli_report("run", st);
      goto wait;
    }
    pthread_mutex_lock(&pend.lock);
    pend.remaining++;
    pthread_mutex_unlock(&pend.lock);
    const char *outs[1] = {d->task_output};
    if ((st = at_engine_submit(eng, 0, in, nin, outs, 1, on_done, j)) != AT_OK) {
      pthread_mutex_lock(&pend.lock);
      pend.remaining--;
      pthread_mutex_unlock(&pend.lock);
      rc = cli_report("run", st);
      goto wait;
    }
  }
  rc = AT_EXIT_OK;
wait:
  pthread_mutex_lock(&pend.lock);
  while (pend.remaining) pthread_cond_wait(&pend.done, &pend.lock);
  pthread_mutex_unlock(&pend.lock);
  if (rc != AT_EXIT_OK) goto out;

  rc = print_results(d, vi, eng, res, texts, n_texts, json);

out:
  at_engine_destroy(eng);
  for (size_t t = 0; jobs && t < n_texts; t++) {
    free(jobs[t].buf);
    if (res) free(res[t].values);
  }
  free(jobs);
  free(res);
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(tok);
  at_model_desc_free(d);
  pthread_mutex_destroy(&pend.lock);
  pthread_cond_destroy(&pend.done);
  return rc;
}
