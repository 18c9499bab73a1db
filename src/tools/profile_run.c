/* src/tools/profile_run.c — the driver of the profile pipeline
 * (tools/profile_run.h): for each model of the family it tokenises the split
 * once, starts one engine with every variant, runs each variant's steps in
 * order (accuracy, the plain-session cross-check, the service time per batch
 * size, the length buckets; profile_accuracy.c, profile_service.c,
 * profile_length.c) with a progress line, and hands the figures to
 * profile_write.c; then, unless a variant disagreed with its plain session,
 * it writes the configuration and the raw figures. A progress bar is drawn
 * when stderr is a terminal. */
#include "tools/profile_run.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "anytime/server.h"
#include "tools/profile_impl.h"

int prof_report(at_status s) {
  return tools_report("profile", s);
}

const char *prof_cr(const prof_state *P) {
  return P->tty ? "\r" : "";
}

static void progress(const prof_state *P, double frac, const char *what) {
  if (P->tty) {
    int w = 30, f = (int)(frac * w + 0.5);
    fprintf(stderr, "\r[%.*s%*s] %3.0f%% %-50.50s", f, "##############################", w - f, "",
            frac * 100, what);
    if (frac >= 1) fprintf(stderr, "\n");
  } else {
    fprintf(stderr, "profile: %3.0f%% %s\n", frac * 100, what);
  }
}

/* Tokenise the split once, start the engine with every variant, and lay
 * out the batcher's items. Returns AT_EXIT_OK or an exit code. */
static int model_prepare(prof_state *P, int mi, prof_model *M) {
  at_server_model_config *mc = M->mc = &P->cfg.models[mi];
  M->task = !strcmp(mc->task, "embed");
  at_status st;
  at_tokenizer *tok = NULL;
  if ((st = at_tokenizer_load(mc->tokenizer, &tok)) != AT_OK) return prof_report(st);
  M->max_tokens = P->cfg.max_tokens;
  M->pool = AT_POOL_MEAN;
  if (mc->config_json[0]) { /* the export's limit and pooling, read as the server reads them */
    at_model_desc *md = NULL;
    if ((st = at_model_describe_files(mc->config_json, &md)) != AT_OK) {
      at_tokenizer_destroy(tok);
      return prof_report(st);
    }
    if (md->max_tokens > 0 && (size_t)md->max_tokens < M->max_tokens)
      M->max_tokens = (size_t)md->max_tokens;
    M->pool = md->pooling;
    at_model_desc_free(md);
  }
  at_tok_workspace *ws = NULL;
  at_encode_params ep = at_encode_default_params();
  ep.max_length = (int)M->max_tokens;
  ep.pad_to = 0;
  size_t n = P->ds->n;
  st = at_tok_workspace_create(&ws);
  if (st == AT_OK) { /* the caller frees what ids/lens hold, whatever happens here */
    M->ids = calloc(n, sizeof *M->ids);
    M->lens = calloc(n, sizeof *M->lens);
    if (!M->ids || !M->lens) st = at_fail(AT_ERR_NOMEM, "out of memory for %zu texts' ids", n);
  }
  for (size_t i = 0; i < n && st == AT_OK; i++) {
    at_encoding e;
    if ((st = at_tokenizer_encode(tok, ws, P->ds->texts[i], P->ds->lens[i], NULL, 0, &ep, &e)) !=
        AT_OK)
      break;
    if (!(M->ids[i] = malloc(e.n * sizeof(int64_t)))) {
      st = at_fail(AT_ERR_NOMEM, "out of memory for text %zu's ids", i);
      break;
    }
    for (size_t k = 0; k < e.n; k++) M->ids[i][k] = e.ids[k];
    M->lens[i] = e.n;
  }
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(tok);
  if (st != AT_OK) return prof_report(st);

  at_engine_params ep2 = at_engine_default_params();
  ep2.n_workers = P->cfg.workers;
  M->sp = at_session_default_params();
  M->sp.intra_op_threads = P->cfg.intra_op_threads;
  M->sp.cpu_mem_arena = P->cfg.cpu_arena; /* profile what serving runs */
  if ((st = at_engine_create(&ep2, &M->eng)) != AT_OK) return prof_report(st);
  M->vr = calloc((size_t)mc->n_variants, sizeof *M->vr);
  for (int v = 0; v < mc->n_variants; v++) {
    snprintf(M->vr[v].name, sizeof M->vr[v].name, "%s", mc->variants[v].name);
    snprintf(M->vr[v].path, sizeof M->vr[v].path, "%s", mc->variants[v].path);
    if ((st = at_engine_add_variant(M->eng, M->vr[v].name, M->vr[v].path, &M->sp, NULL)) != AT_OK)
      return prof_report(st);
  }
  if ((st = at_engine_start(M->eng)) != AT_OK) return prof_report(st);
  /* The task head, chosen as the server chooses it. */
  M->head = at_model_info_task_head(at_engine_variant_info(M->eng, 0), M->task, &M->pool, &M->dim);
  if (M->head < 0)
    return fprintf(stderr, "anytime profile: model '%s' has no %s output\n", mc->name,
                   M->task ? "[b,h] or [b,s,h]" : "[b,k]"),
           AT_EXIT_FAIL;
  M->items = calloc(n, sizeof *M->items);
  M->outs = calloc(n * M->dim, sizeof(float));
  M->ref_outs = calloc(M->dim, sizeof(float));
  M->all = malloc(n * sizeof *M->all);
  for (size_t i = 0; i < n; i++) {
    M->all[i] = i;
    M->items[i] = (prof_item){.ids = M->ids[i],
                              .len = M->lens[i],
                              .task = M->task,
                              .pool = M->pool,
                              .dim = M->dim,
                              .out = M->outs + i * M->dim,
                              .head = M->head};
  }
  M->rng = 0x5EED0001u + (uint64_t)mi;
  return AT_EXIT_OK;
}

static void model_free(prof_state *P, prof_model *M) {
  at_engine_destroy(M->eng);
  for (size_t i = 0; M->ids && i < P->ds->n; i++) free(M->ids[i]);
  free(M->ids), free(M->lens), free(M->items), free(M->outs), free(M->ref_outs), free(M->all);
  free(M->vr);
}

/* Every measurement of variant v, in order, with progress. */
static int profile_variant(prof_state *P, prof_model *M, int v) {
  prof_variant *x = &M->vr[v];
  const char *mn = M->mc->name;
  char what[160];
  snprintf(what, sizeof what, "%s/%s: accuracy on %zu texts", mn, x->name, P->ds->n);
  progress(P, (double)P->step / P->total_steps, what);
  int rc = prof_measure_accuracy(P, M, v);
  if (rc != AT_EXIT_OK) return rc;
  P->step++;

  snprintf(what, sizeof what, "%s/%s: reference session cross-check", mn, x->name);
  progress(P, (double)P->step / P->total_steps, what);
  at_session *ref = NULL;
  at_status st;
  if ((st = at_session_create(x->path, &M->sp, &ref)) != AT_OK) return prof_report(st);
  int64_t *mask = malloc(M->max_tokens * sizeof(int64_t)),
          *zeros = calloc(M->max_tokens, sizeof(int64_t));
  for (size_t k = 0; k < M->max_tokens; k++) mask[k] = 1;
  rc = prof_cross_check(P, M, v, ref, mask, zeros);
  P->step++;

  x->n_b = P->o->n_bs;
  for (int bi = 0; bi < P->o->n_bs && rc == AT_EXIT_OK; bi++) {
    snprintf(what, sizeof what, "%s/%s: service time, batch %d", mn, x->name, P->o->bs[bi]);
    progress(P, (double)P->step / P->total_steps, what);
    rc = prof_measure_batch(P, M, v, bi, ref, mask, zeros);
    P->step++;
  }
  if (rc == AT_EXIT_OK && P->o->n_lb) rc = prof_measure_length_buckets(P, M, v);
  if (rc == AT_EXIT_OK && P->o->n_lb) prof_fit_length_model(P, M, v);
  free(mask);
  free(zeros);
  at_session_destroy(ref);
  if (rc == AT_EXIT_OK) prof_judge_variant(P, M, v);
  return rc;
}

/* The run once P is set up: every model, then the files. */
static int run(prof_state *P) {
  const prof_options *o = P->o;
  at_status st;
  if ((st = at_runtime_version_info(&P->vi)) != AT_OK) return prof_report(st);
  P->jmodels = json_array();
  char tmpd[PATH_MAX];
  snprintf(tmpd, sizeof tmpd, "%s", o->model ? o->out_cfg : o->family);
  snprintf(P->famdir, sizeof P->famdir, "%s", dirname(tmpd));
  time_t tt = time(NULL);
  struct tm tm;
  strftime(P->now, sizeof P->now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&tt, &tm));
  snprintf(P->cmdline, sizeof P->cmdline, "anytime");
  for (int i = 0; i < o->argc; i++) {
    strncat(P->cmdline, " ", sizeof P->cmdline - strlen(P->cmdline) - 1);
    strncat(P->cmdline, o->argv[i], sizeof P->cmdline - strlen(P->cmdline) - 1);
  }
  P->best_b = 256; /* min over models of argmax_b b/s(b) of the most accurate variant */
  for (int mi = 0; mi < P->cfg.n_models; mi++)
    P->total_steps += P->cfg.models[mi].n_variants * (o->n_bs + 2 + o->n_lb);

  for (int mi = 0; mi < P->cfg.n_models && !P->failures; mi++) {
    prof_model M;
    memset(&M, 0, sizeof M);
    int rc = model_prepare(P, mi, &M);
    for (int v = 0; rc == AT_EXIT_OK && v < M.mc->n_variants && !P->failures; v++)
      rc = profile_variant(P, &M, v);
    if (rc == AT_EXIT_OK && !P->failures) prof_emit_model(P, &M);
    model_free(P, &M);
    if (rc != AT_EXIT_OK) return rc;
  }
  progress(P, 1.0, P->failures ? "aborted" : "done");
  if (P->failures) {
    fprintf(stderr,
            "anytime profile: %d disagreement(s) between the serving path and the plain "
            "session; nothing was written\n",
            P->failures);
    return AT_EXIT_FAIL;
  }
  if (P->checks.len) fputs(P->checks.s, stderr);
  return prof_write_outputs(P);
}

int prof_run(const prof_options *o, const at_server_config *cfg, const cli_dataset *ds) {
  prof_state *P = calloc(1, sizeof *P); /* large (paths, the config): not on the stack */
  if (!P) return prof_report(at_fail(AT_ERR_NOMEM, "out of memory"));
  P->o = o;
  P->ds = ds;
  P->cfg = *cfg;
  P->deadline_ms = o->deadline_ms > 0 ? o->deadline_ms : cfg->deadline_ms;
  P->tty = isatty(2);
  int rc = run(P);
  json_decref(P->jmodels);
  prof_buf_free(&P->checks);
  free(P);
  return rc;
}
