/* src/cli/cmd_profile.c — `anytime profile`: measure every variant of a model
 * family through the serving path and write the planner's inputs.
 *
 * Through the serving path means: the variants are loaded into one at_engine
 * and driven through at_batcher exactly as `anytime serve` drives them, with
 * the family's tokenizer on the held-out test split. The service times are
 * measured by at_profile_measure (anytime/profile.h, src/engine/profile.c),
 * the library's one measuring core, which the server's start-up uses too;
 * this file keeps the options, the accuracy pass, the plain-session
 * cross-check, the frontier and the writing. For each variant:
 *   - accuracy over the whole split (classifiers: argmax vs label;
 *     embedders: leave-one-out 5-nearest-neighbour label agreement of the
 *     normalised embeddings, pooled as the export says);
 *   - service time per batch size (the Run time of batches of exactly b
 *     sentences drawn from the split), --repeats independent passes, each the
 *     median of --iters batches; reported as the median of pass medians with
 *     service_time_spread_pct = (max - min) / median of pass medians;
 *   - the same with the whole worker pool busy (service_busy_ms): one batch
 *     per worker submitted at once, timing only Runs that had every other
 *     worker running too. Workers that share a host's cores, caches and
 *     memory bandwidth each run slower side by side than alone; the planner
 *     starts its full-pool correction factor from this ratio;
 *   - a cross-check against a separately created plain session run serially
 *     (batch 1; timed on the same sentence just before each timed engine
 *     batch of 1, through at_profile_measure's hook): its service time must
 *     agree with the engine's batch-1 time within --agreement-tolerance,
 *     and its predictions must equal the
 *     engine's (embedders: every vector within 1e-4). Any disagreement aborts
 *     BEFORE anything is written.
 *   - with --length-buckets K, s(b) per length bucket (K quantile buckets
 *     of the split's token lengths) and the length model fitted to the
 *     buckets' s(1) (at_profile_fit_length): len_ref_tokens and
 *     len_cost_per_token, written into the variant's configuration, with a
 *     table at the end that sets the planner's estimate with and without
 *     it against each bucket's measured s(b).
 * Then the accuracy/cost Pareto frontier is computed and configs/serving.yaml
 * (planner inputs) and results/variant_profiles.json (all raw figures) are
 * written atomically. A progress bar is drawn when stderr is a terminal. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "anytime/batcher.h"
#include "anytime/plan.h"
#include "anytime/profile.h"
#include "anytime/server.h"
#include "anytime/tokenizer.h"
#include "cli/cli.h"
#include "tools/dataset.h"
#include "anytime/clock.h"

#define MAX_B 8 /* batch sizes measured */
#define MAX_LB 8 /* length buckets (--length-buckets) */

typedef struct latch {
  pthread_mutex_t m;
  pthread_cond_t c;
  int left;
} latch;

typedef struct pitem {
  latch *l;
  int head;  /* output index of the task head */
  int64_t *ids;
  size_t len;
  int task; /* 0 classify, 1 embed */
  at_pooling pool; /* embed */
  size_t dim;
  float *out; /* dim floats */
  at_status st;
} pitem;

static void on_item(void *user, at_status st, const at_item_result *r, const char *err) {
  (void)err;
  pitem *it = user;
  it->st = st;
  if (st == AT_OK) {
    const float *d = r->outputs[it->head].data;
    if (!it->task) {
      memcpy(it->out, d, it->dim * sizeof(float));
    } else {
      at_pool(it->pool, d, r->len, it->dim, it->out);
    }
  }
  pthread_mutex_lock(&it->l->m);
  if (--it->l->left == 0) pthread_cond_signal(&it->l->c);
  pthread_mutex_unlock(&it->l->m);
}

/* Submit items[idx[0..n)] to the batcher for engine variant ev and wait
 * (the accuracy pass; the timing runs in at_profile_measure). */
static int run_items(at_batcher *b, int ev, pitem *items, const size_t *idx, size_t n) {
  latch l = {.left = (int)n};
  pthread_mutex_init(&l.m, NULL);
  pthread_cond_init(&l.c, NULL);
  for (size_t i = 0; i < n; i++) {
    pitem *it = &items[idx[i]];
    it->l = &l;
    at_batch_item bi = {.input_ids = it->ids, .len = it->len, .done = on_item, .user = it};
    while (at_batcher_submit(b, ev, &bi) == AT_ERR_QUEUE_FULL) usleep(100);
  }
  pthread_mutex_lock(&l.m);
  while (l.left > 0) pthread_cond_wait(&l.c, &l.m);
  pthread_mutex_unlock(&l.m);
  pthread_mutex_destroy(&l.m);
  pthread_cond_destroy(&l.c);
  for (size_t i = 0; i < n; i++)
    if (items[idx[i]].st != AT_OK) return -1;
  return 0;
}


static int g_tty;
static void progress(double frac, const char *what) {
  if (g_tty) {
    int w = 30, f = (int)(frac * w + 0.5);
    fprintf(stderr, "\r[%.*s%*s] %3.0f%% %-50.50s", f, "##############################", w - f, "",
            frac * 100, what);
    if (frac >= 1) fprintf(stderr, "\n");
  } else {
    fprintf(stderr, "profile: %3.0f%% %s\n", frac * 100, what);
  }
}

typedef struct vres {
  char name[64], path[AT_PATH_CAP];
  double accuracy;
  int n_b;
  int batch[MAX_B];
  double service_s[MAX_B];       /* median of pass medians */
  double spread_pct[MAX_B];
  double pass_medians[MAX_B][16];
  /* the same with every worker running a batch at once (0: one worker) */
  double busy_s[MAX_B];
  double busy_spread_pct[MAX_B];
  double busy_pass_medians[MAX_B][16];
  double ref_s1, ref_passes[16], agree_pct, max_abs_diff;
  double min_cosine; /* embedders: engine vs plain session, worst text */
  size_t pred_disagreements;
  double cost;
  bool frontier;
  /* --length-buckets: s(b) alone over texts of one length bucket at a time */
  int n_lb;
  size_t lb_lo[MAX_LB], lb_hi[MAX_LB], lb_texts[MAX_LB]; /* tokens, inclusive */
  double lb_mean[MAX_LB]; /* mean tokens of a bucket's texts */
  double lb_s[MAX_LB][MAX_B];
  double lb_pass[MAX_LB][MAX_B][16];
  /* the length model fitted to lb_s[.][0] (at_profile_fit_length): what
   * the configuration gets (0, 0 when it could not be fitted, and why) */
  double mixed_mean;   /* mean tokens of the whole split: the table's texts */
  double mixed_median; /* their median (the record only) */
  at_profile_length_fit fit;
  double len_ref, len_cost;
  char fit_why[256];
} vres;

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime profile [--family FILE | --model MODEL] [--data FILE.csv] [--repeats N]\n"
          "                       [--iters N] [--batch-sizes 1,2,4,8,16] [--length-buckets K]\n"
          "                       [--agreement-tolerance X] [--deadline-ms MS]\n"
          "                       [--out-config FILE] [--out-json FILE]\n\n"
          "Measures every variant of every model in the family (default\n"
          "configs/family.yaml) through the serving path (engine + batcher + tokenizer)\n"
          "on the held-out split (default $ANYTIME_DATA_DIR/pang-lee/test.csv):\n"
          "accuracy, service time per batch size (median of --repeats passes, default 3,\n"
          "each the median of --iters batches, default 40) alone and with every\n"
          "worker running a batch at once (service_busy_ms), cross-checked against a\n"
          "separate plain session (service times within --agreement-tolerance, default\n"
          "0.15, and identical predictions). On any disagreement it aborts before\n"
          "writing. Writes configs/serving.yaml and results/variant_profiles.json\n"
          "(variants off the accuracy/cost Pareto frontier are recorded as dominated and\n"
          "left out of the planner's configuration).\n\n"
          "--length-buckets K (2..8; default off) also times s(b), alone, over texts of\n"
          "one length bucket at a time: K buckets of about equal count from the split's\n"
          "token lengths (short / medium / long for K = 3), written to the JSON as each\n"
          "variant's by_length (with each bucket's mean tokens). From the buckets' s(1)\n"
          "it fits the cost of a text as a + b x tokens (least squares, weighted by\n"
          "texts) and writes each variant's length model into the configuration:\n"
          "len_ref_tokens (the split's mean tokens, what the tables were timed on) and\n"
          "len_cost_per_token = b / (a + b x len_ref_tokens); the planner prices a text of\n"
          "t tokens at 1 + len_cost_per_token x (t - len_ref_tokens) times the table. It\n"
          "prints how that and the one table price each bucket (model_ms in the JSON).\n"
          "With one distinct bucket or no fit it writes 0 and 0 (off) and says why.\n\n"
          "--model MODEL profiles one export instead of a family file: a directory, a\n"
          "name in ./models or a hub repo id ORG/NAME[@REV] (as `anytime run` takes),\n"
          "whose ONNX graphs (model.onnx, model_quantized.onnx, model_O4.onnx, ...)\n"
          "become the variants of one family; --data must then be labelled text of its\n"
          "task (label,text; classifiers: labels by id or config.json name; embedders:\n"
          "5-nearest-neighbour label agreement). Server settings are the defaults.\n");
}

/* A growing text buffer for the written configuration: the YAML has no
 * size limit (64 variants with 4 KiB paths are about 300 KiB), and a fixed
 * buffer filled with `o += snprintf(buf + o, cap - o, ...)` runs off its
 * end once a write is truncated. The buffers are file-static so that an
 * early return leaves them reachable, not leaked; the command frees them
 * when it finishes. */
typedef struct ybuf {
  char *s;
  size_t len, cap;
  bool oom;
} ybuf;

static void yput(ybuf *b, const char *fmt, ...) AT_PRINTF(2, 3);
static void yput(ybuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || b->oom) {
    b->oom = true;
    return;
  }
  size_t need = b->len + (size_t)n + 1;
  if (need > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) cap *= 2;
    char *ns = realloc(b->s, cap);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns, b->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

static void ybuf_free(ybuf *b) {
  free(b->s);
  *b = (ybuf){0};
}

static ybuf g_yaml_out;
static ybuf g_check_out; /* --length-buckets: the check tables, printed at the end */

static void rel_path(char *dst, size_t cap, const char *path, const char *dir) {
  size_t dl = strlen(dir);
  if (!strncmp(path, dir, dl) && path[dl] == '/') snprintf(dst, cap, "%s", path + dl + 1);
  else {
    char rp[PATH_MAX];
    snprintf(dst, cap, "%s", realpath(path, rp) ? rp : path);
  }
}

static int write_atomic(const char *path, const char *data) {
  char tmp[PATH_MAX], d[PATH_MAX];
  snprintf(d, sizeof d, "%s", path);
  char *dn = dirname(d);
  mkdir(dn, 0755);
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  int ok = fputs(data, f) >= 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* One run of `anytime profile`: its options, the family, the split, and
 * what is written at the end. */
typedef struct prof {
  const char *family, *out_cfg, *model, *out_json;
  char data[PATH_MAX];
  int repeats, iters, bs[MAX_B], n_bs, n_lb;
  double tol, deadline;
  at_server_config cfg;
  cli_dataset ds;
  at_version_info vi;
  json_t *jmodels;
  bool offered[AT_SERVER_MAX_MODELS * AT_SERVER_MAX_VARIANTS]; /* on the frontier */
  char famdir[PATH_MAX], now[64], cmdline[2048];
  int failures, best_b, total_steps, step;
} prof;

/* One model being profiled: its split tokenised, its engine, the items the
 * batcher fills, and each variant's figures. */
typedef struct pmodel {
  at_server_model_config *mc;
  int task; /* 0 classify, 1 embed */
  size_t max_tokens, dim;
  at_pooling pool;
  int head;
  int64_t **ids;
  size_t *lens;
  at_engine *eng;
  at_session_params sp;
  pitem *items;
  float *outs, *ref_outs;
  size_t *all;
  vres *vr;
  uint64_t rng;
} pmodel;

static int parse_args(int argc, char **argv, prof *P) {
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return fprintf(stderr, "anytime profile: %s needs a value\n", a), AT_EXIT_USAGE;
    if (!strcmp(a, "--family")) P->family = v;
    else if (!strcmp(a, "--model")) P->model = v;
    else if (!strcmp(a, "--data")) snprintf(P->data, sizeof P->data, "%s", v);
    else if (!strcmp(a, "--out-config")) P->out_cfg = v;
    else if (!strcmp(a, "--out-json")) P->out_json = v;
    else if (!strcmp(a, "--repeats")) P->repeats = atoi(v);
    else if (!strcmp(a, "--iters")) P->iters = atoi(v);
    else if (!strcmp(a, "--length-buckets")) P->n_lb = atoi(v);
    else if (!strcmp(a, "--agreement-tolerance")) P->tol = atof(v);
    else if (!strcmp(a, "--deadline-ms")) P->deadline = atof(v);
    else if (!strcmp(a, "--batch-sizes")) {
      P->n_bs = 0;
      for (const char *q = v; *q && P->n_bs < MAX_B;) {
        P->bs[P->n_bs++] = atoi(q);
        q = strchr(q, ',');
        if (!q) break;
        q++;
      }
    } else {
      fprintf(stderr, "anytime profile: unknown option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
  }
  if (P->repeats < 1 || P->repeats > 16 || P->iters < 3 || !(P->tol > 0) || P->n_bs < 1 ||
      P->bs[0] != 1) {
    fprintf(stderr, "anytime profile: need 1 <= --repeats <= 16, --iters >= 3, --agreement-tolerance "
                    "> 0, and batch sizes starting at 1\n");
    return AT_EXIT_USAGE;
  }
  if (P->n_lb && (P->n_lb < 2 || P->n_lb > MAX_LB))
    return fprintf(stderr, "anytime profile: --length-buckets is 2..%d\n", MAX_LB), AT_EXIT_USAGE;
  for (int k = 1; k < P->n_bs; k++)
    if (P->bs[k] <= P->bs[k - 1] || P->bs[k] > 256)
      return fprintf(stderr, "anytime profile: batch sizes must ascend, at most 256\n"), AT_EXIT_USAGE;
  return AT_EXIT_OK;
}

/* The plain session's inputs for text i (batch 1): ids, an all-ones mask,
 * zeros for anything else. */
static size_t plain_inputs(const at_model_info *info, const pmodel *M, size_t i,
                           int64_t *mask, int64_t *zeros, at_tensor in[3]) {
  return at_text_inputs(info, 1, (int64_t)M->lens[i], M->ids[i], mask, zeros, in);
}

/* Tokenise the split once, start the engine with every variant, and lay
 * out the batcher's items. Returns AT_EXIT_OK or an exit code. */
static int model_prepare(prof *P, int mi, pmodel *M) {
  at_server_model_config *mc = M->mc = &P->cfg.models[mi];
  M->task = !strcmp(mc->task, "embed");
  at_status st;
  at_tokenizer *tok = NULL;
  if ((st = at_tokenizer_load(mc->tokenizer, &tok)) != AT_OK) return cli_report("profile", st);
  M->max_tokens = P->cfg.max_tokens;
  M->pool = AT_POOL_MEAN;
  if (mc->config_json[0]) { /* the export's limit and pooling, read as the server reads them */
    at_model_desc *md = NULL;
    if ((st = at_model_describe_files(mc->config_json, &md)) != AT_OK)
      return cli_report("profile", st);
    if (md->max_tokens > 0 && (size_t)md->max_tokens < M->max_tokens)
      M->max_tokens = (size_t)md->max_tokens;
    M->pool = md->pooling;
    at_model_desc_free(md);
  }
  at_tok_workspace *ws = NULL;
  at_tok_workspace_create(&ws);
  at_encode_params ep = at_encode_default_params();
  ep.max_length = (int)M->max_tokens;
  ep.pad_to = 0;
  size_t n = P->ds.n;
  M->ids = calloc(n, sizeof *M->ids);
  M->lens = calloc(n, sizeof *M->lens);
  for (size_t i = 0; i < n; i++) {
    at_encoding e;
    if ((st = at_tokenizer_encode(tok, ws, P->ds.texts[i], P->ds.lens[i], NULL, 0, &ep, &e)) != AT_OK)
      return cli_report("profile", st);
    M->ids[i] = malloc(e.n * sizeof(int64_t));
    for (size_t k = 0; k < e.n; k++) M->ids[i][k] = e.ids[k];
    M->lens[i] = e.n;
  }
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(tok);

  at_engine_params ep2 = at_engine_default_params();
  ep2.n_workers = P->cfg.workers;
  M->sp = at_session_default_params();
  M->sp.intra_op_threads = P->cfg.intra_op_threads;
  M->sp.cpu_mem_arena = P->cfg.cpu_arena; /* profile what serving runs */
  if ((st = at_engine_create(&ep2, &M->eng)) != AT_OK) return cli_report("profile", st);
  M->vr = calloc((size_t)mc->n_variants, sizeof *M->vr);
  for (int v = 0; v < mc->n_variants; v++) {
    snprintf(M->vr[v].name, sizeof M->vr[v].name, "%s", mc->variants[v].name);
    snprintf(M->vr[v].path, sizeof M->vr[v].path, "%s", mc->variants[v].path);
    if ((st = at_engine_add_variant(M->eng, M->vr[v].name, M->vr[v].path, &M->sp, NULL)) != AT_OK)
      return cli_report("profile", st);
  }
  if ((st = at_engine_start(M->eng)) != AT_OK) return cli_report("profile", st);
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
    M->items[i] = (pitem){.ids = M->ids[i], .len = M->lens[i], .task = M->task, .pool = M->pool,
                          .dim = M->dim, .out = M->outs + i * M->dim, .head = M->head};
  }
  M->rng = 0x5EED0001u + (uint64_t)mi;
  return AT_EXIT_OK;
}

static void model_free(prof *P, pmodel *M) {
  at_engine_destroy(M->eng);
  for (size_t i = 0; M->ids && i < P->ds.n; i++) free(M->ids[i]);
  free(M->ids), free(M->lens), free(M->items), free(M->outs), free(M->ref_outs), free(M->all);
  free(M->vr);
}

/* Variant v's accuracy through the batcher (batches of up to 16):
 * classifiers argmax against the label, embedders leave-one-out 5-NN label
 * agreement on the normalised vectors. */
static int measure_accuracy(prof *P, pmodel *M, int v) {
  const cli_dataset *ds = &P->ds;
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = 16;
  bp.max_queue_delay_us = 2000;
  bp.max_seq_len = M->max_tokens;
  bp.max_queued_items = ds->n + 16;
  at_batcher *b = NULL;
  at_status st;
  if ((st = at_batcher_create(M->eng, &bp, &b)) != AT_OK) return cli_report("profile", st);
  if (run_items(b, v, M->items, M->all, ds->n) != 0)
    return fprintf(stderr, "anytime profile: inference failed\n"), AT_EXIT_FAIL;
  at_batcher_destroy(b);
  size_t correct = 0, dim = M->dim;
  pitem *items = M->items;
  if (!M->task) {
    for (size_t i = 0; i < ds->n; i++) {
      size_t am = 0;
      for (size_t k = 1; k < dim; k++)
        if (items[i].out[k] > items[i].out[am]) am = k;
      correct += (int)am == ds->labels[i];
    }
  } else { /* leave-one-out 5-NN label agreement, cosine on normalised vectors */
    float *nv = malloc(ds->n * dim * sizeof(float));
    for (size_t i = 0; i < ds->n; i++) {
      memcpy(nv + i * dim, items[i].out, dim * sizeof *nv);
      at_l2_normalize(nv + i * dim, dim);
    }
    for (size_t i = 0; i < ds->n; i++) {
      double best[5] = {-2, -2, -2, -2, -2};
      int lab[5] = {0};
      for (size_t j = 0; j < ds->n; j++) {
        if (j == i) continue;
        double c = 0;
        for (size_t h = 0; h < dim; h++) c += (double)nv[i * dim + h] * nv[j * dim + h];
        if (c > best[4]) {
          int k = 4;
          while (k > 0 && c > best[k - 1]) best[k] = best[k - 1], lab[k] = lab[k - 1], k--;
          best[k] = c, lab[k] = ds->labels[j];
        }
      }
      int votes = 0;
      for (int k = 0; k < 5; k++) votes += lab[k] == 1;
      correct += (votes >= 3) == (ds->labels[i] == 1);
    }
    free(nv);
  }
  M->vr[v].accuracy = (double)correct / (double)ds->n;
  return AT_EXIT_OK;
}

/* The reference: the plain session `ref`, serial, batch 1, whole split,
 * against what the batcher produced (prediction disagreements, max |diff|,
 * embedders' worst cosine). */
static int cross_check(prof *P, pmodel *M, int v, at_session *ref, int64_t *mask,
                       int64_t *zeros) {
  vres *x = &M->vr[v];
  const at_model_info *rinfo = at_session_info(ref);
  size_t dim = M->dim;
  float *ro = M->ref_outs;
  x->pred_disagreements = 0;
  x->max_abs_diff = 0;
  x->min_cosine = 1;
  for (size_t i = 0; i < P->ds.n; i++) {
    at_tensor in[3];
    size_t n_in = plain_inputs(rinfo, M, i, mask, zeros, in);
    at_outputs *o = NULL;
    at_status st;
    if ((st = at_session_run(ref, in, n_in, NULL, 0, &o)) != AT_OK) return cli_report("profile", st);
    at_tensor t;
    at_outputs_get(o, (size_t)M->head, &t);
    const float *d = t.data;
    if (!M->task) memcpy(ro, d, dim * sizeof(float));
    else at_pool(M->pool, d, M->lens[i], dim, ro);
    at_outputs_free(o);
    const float *eo = M->items[i].out;
    size_t a1 = 0, a2 = 0;
    for (size_t k = 0; k < dim; k++) {
      double df = fabs((double)ro[k] - (double)eo[k]);
      if (df > x->max_abs_diff) x->max_abs_diff = df;
      if (ro[k] > ro[a1]) a1 = k;
      if (eo[k] > eo[a2]) a2 = k;
    }
    if (!M->task && a1 != a2) x->pred_disagreements++;
    if (M->task) {
      double cs = at_cosine(ro, eo, dim);
      if (cs < x->min_cosine) x->min_cosine = cs;
    }
  }
  return AT_EXIT_OK;
}

/* The plain session's side of the batch-1 timing: at_profile_measure calls
 * ref_time() just before each timed engine batch of one, so the same
 * sentence goes through the plain session and then through the engine,
 * alternating item by item, and load from elsewhere on the host falls on
 * both paths alike. */
typedef struct refclock {
  const pmodel *M;
  at_session *ref;
  int64_t *mask, *zeros;
  double tr[AT_PROFILE_MAX_PASSES][AT_PROFILE_MAX_ITERS]; /* [pass][iter] seconds */
  at_status st;
} refclock;

static void ref_time(void *user, int pass, int iter, const size_t *seqs, size_t n) {
  refclock *rc = user;
  (void)n;
  at_tensor in[3];
  size_t n_in = plain_inputs(at_session_info(rc->ref), rc->M, seqs[0], rc->mask, rc->zeros, in);
  at_outputs *o = NULL;
  uint64_t t0 = at_now_ns();
  at_status st = at_session_run(rc->ref, in, n_in, NULL, 0, &o);
  rc->tr[pass][iter] = (double)(at_now_ns() - t0) / 1e9;
  at_outputs_free(o);
  if (st != AT_OK && rc->st == AT_OK) rc->st = st;
}

/* Service time of variant v at batch size bs[bi], alone and with the whole
 * pool busy, --repeats passes of --iters batches (at_profile_measure); at
 * batch 1 the same sentences go through the plain session too,
 * interleaved. */
static int measure_batch(prof *P, pmodel *M, int v, int bi, at_session *ref, int64_t *mask,
                         int64_t *zeros) {
  vres *x = &M->vr[v];
  int bsz = P->bs[bi], repeats = P->repeats;
  static refclock clk; /* 64 KiB: not on the stack */
  clk = (refclock){.M = M, .ref = ref, .mask = mask, .zeros = zeros, .st = AT_OK};
  at_profile_params pp = at_profile_default_params();
  pp.batch_size = bsz;
  pp.iters = P->iters < AT_PROFILE_MAX_ITERS ? P->iters : AT_PROFILE_MAX_ITERS;
  pp.passes = repeats;
  pp.busy = true; /* measured when the pool has more than one worker */
  pp.rng = &M->rng;
  if (bsz == 1) pp.on_batch = ref_time, pp.user = &clk;
  at_profile_result r;
  at_status st = at_profile_measure(M->eng, v, (const int64_t *const *)M->ids, M->lens, P->ds.n,
                                    &pp, &r);
  if (st == AT_OK && clk.st != AT_OK) st = clk.st;
  if (st != AT_OK) return cli_report("profile", st);
  for (int p = 0; p < repeats; p++) {
    x->pass_medians[bi][p] = r.pass_s[p];
    x->busy_pass_medians[bi][p] = r.busy_pass_s[p];
    if (bsz == 1) x->ref_passes[p] = at_profile_median(clk.tr[p], (size_t)pp.iters);
  }
  double med = r.median_s;
  x->batch[bi] = bsz;
  x->service_s[bi] = med;
  x->spread_pct[bi] = r.spread_pct;
  x->busy_s[bi] = r.busy_median_s; /* 0: one worker, or a pass without full-pool Runs */
  x->busy_spread_pct[bi] = r.busy_spread_pct;
  if (x->busy_s[bi] > 7.95 * med) { /* the planner refuses a busy factor above 8 */
    fprintf(stderr,
            "profile: WARNING: %s/%s batch %d: busy %.4f ms is %.1fx alone %.4f ms; written "
            "as 7.95x, under the planner's bound (other work on the host during profiling?)\n",
            M->mc->name, x->name, bsz, x->busy_s[bi] * 1e3, x->busy_s[bi] / med, med * 1e3);
    x->busy_s[bi] = 7.95 * med; /* under 8 after the YAML rounding too */
  }
  return AT_EXIT_OK;
}

/* --length-buckets: s(b) of variant v, alone, at every batch size, over
 * the texts of one length bucket at a time (at_profile_length_cuts splits
 * the split's token lengths by quantile; at_profile_measure draws each
 * batch from one bucket's texts). */
static int measure_length_buckets(prof *P, pmodel *M, int v) {
  vres *x = &M->vr[v];
  size_t n = P->ds.n, cuts[MAX_LB], *scratch = malloc(n * sizeof *scratch);
  if (!scratch) return cli_report("profile", at_fail(AT_ERR_NOMEM, "out of memory"));
  x->n_lb = at_profile_length_cuts(M->lens, n, P->n_lb, scratch, cuts);
  free(scratch);
  double *dl = malloc(n * sizeof *dl);
  if (!dl) return cli_report("profile", at_fail(AT_ERR_NOMEM, "out of memory"));
  for (size_t i = 0; i < n; i++) dl[i] = (double)M->lens[i];
  x->mixed_median = at_profile_median(dl, n);
  free(dl);
  double total = 0;
  for (size_t i = 0; i < n; i++) total += (double)M->lens[i];
  x->mixed_mean = total / (double)n;
  for (int k = 0; k < x->n_lb; k++) {
    x->lb_lo[k] = k ? cuts[k - 1] + 1 : 1;
    x->lb_hi[k] = k < x->n_lb - 1 ? cuts[k] : AT_PROFILE_MAX_SEQ_LEN;
    x->lb_texts[k] = 0;
    double tok = 0;
    for (size_t i = 0; i < n; i++)
      if (M->lens[i] >= x->lb_lo[k] && M->lens[i] <= x->lb_hi[k]) x->lb_texts[k]++, tok += (double)M->lens[i];
    x->lb_mean[k] = tok / (double)x->lb_texts[k];
    for (int bi = 0; bi < P->n_bs; bi++) {
      at_profile_params pp = at_profile_default_params();
      pp.batch_size = P->bs[bi];
      pp.iters = P->iters < AT_PROFILE_MAX_ITERS ? P->iters : AT_PROFILE_MAX_ITERS;
      pp.passes = P->repeats;
      pp.busy = false;
      pp.rng = &M->rng;
      pp.min_len = x->lb_lo[k], pp.max_len = x->lb_hi[k];
      at_profile_result r;
      at_status st = at_profile_measure(M->eng, v, (const int64_t *const *)M->ids, M->lens, n,
                                        &pp, &r);
      if (st != AT_OK) return cli_report("profile", st);
      x->lb_s[k][bi] = r.median_s;
      memcpy(x->lb_pass[k][bi], r.pass_s, (size_t)P->repeats * sizeof(double));
    }
    fprintf(stderr, "%sprofile: %s/%s texts of %zu..%zu tokens (%zu): s(%d) %.4f ms, s(%d) %.4f ms\n",
            g_tty ? "\r" : "", M->mc->name, x->name, x->lb_lo[k], x->lb_hi[k], x->lb_texts[k],
            P->bs[0], x->lb_s[k][0] * 1e3, P->bs[P->n_bs - 1], x->lb_s[k][P->n_bs - 1] * 1e3);
    P->step++;
  }
  return AT_EXIT_OK;
}

/* The planner's estimate of a batch of bucket k at batch size bs[bi] under
 * v's length model: the mixed table's s(b) times the weight of the
 * bucket's mean length (at_plan_variant_weight, the planner's own). */
static double model_s(const vres *x, int k, int bi) {
  at_plan_variant lm = {.len_ref_tokens = x->len_ref, .len_cost_per_token = x->len_cost};
  return x->service_s[bi] * at_plan_variant_weight(&lm, x->lb_mean[k]);
}

/* x to d significant digits. */
static double round_sig(double x, int d) {
  if (!(x > 0)) return x;
  double p = pow(10, d - 1 - floor(log10(x)));
  return round(x * p) / p;
}

/* v's length model from its buckets' s at the smallest batch size (1),
 * each weighted by its text count (at_profile_fit_length), relative to the
 * length at which the fitted cost a + b·t equals the table's own s(1), so
 * that the planner's price of a t-token text, s(1)·w(t), is the fitted
 * cost itself. Not the split's mean length: the table is the median of
 * Runs over mixed texts, and with a long tail of documents that median is
 * a short text's time — on a split with a quarter documents at BERT-base
 * size s(1) was half the bucket-weighted mean cost, and prices relative to
 * the mean length came out at half the measured times in every bucket.
 * Rounded as it is worth (the reference to 0.01 token, the cost to 6
 * digits, never past cost x ref = 1); the reference is kept in
 * 1..100000. 0, 0 and a line on stderr when it cannot be fitted. */
static void fit_length_model(pmodel *M, int v) {
  vres *x = &M->vr[v];
  double t[MAX_LB], s1[MAX_LB], w[MAX_LB];
  for (int k = 0; k < x->n_lb; k++)
    t[k] = x->lb_mean[k], s1[k] = x->lb_s[k][0], w[k] = (double)x->lb_texts[k];
  double ref = round(x->mixed_mean * 100) / 100;
  x->len_ref = x->len_cost = 0;
  x->fit_why[0] = '\0';
  at_status st = at_profile_fit_length(t, s1, w, (size_t)x->n_lb, ref < 1 ? 1 : ref, &x->fit);
  if (st == AT_OK && x->fit.b_s > 0) { /* again, anchored where the line meets the table */
    double at = (x->service_s[0] - x->fit.a_s) / x->fit.b_s;
    at = round(at * 100) / 100;
    st = at_profile_fit_length(t, s1, w, (size_t)x->n_lb, at < 1 ? 1 : at > 1e5 ? 1e5 : at,
                               &x->fit);
  }
  if (st != AT_OK) {
    snprintf(x->fit_why, sizeof x->fit_why, "%s", at_last_error());
  } else if (x->fit.len_cost_per_token <= 0) {
    snprintf(x->fit_why, sizeof x->fit_why,
             "s(%d) does not grow with length over the buckets (slope clamped to 0)", x->batch[0]);
  } else {
    x->len_ref = x->fit.len_ref_tokens;
    x->len_cost = round_sig(x->fit.len_cost_per_token, 6);
    if (x->len_cost * x->len_ref > 1 || x->len_cost > 1) x->len_cost = x->fit.len_cost_per_token;
  }
  if (x->fit_why[0])
    fprintf(stderr, "%sprofile: %s/%s: no length model (%s); writing len_ref_tokens 0, "
            "len_cost_per_token 0\n", g_tty ? "\r" : "", M->mc->name, x->name, x->fit_why);
}

/* The JSON record of v's length buckets: [{min_len, max_len, texts,
 * mean_tokens, by_batch: [{batch, service_time_ms, model_ms,
 * pass_medians_ms}]}]; model_ms is the length model's estimate (model_s). */
static json_t *length_buckets_json(const vres *x, int repeats) {
  json_t *a = json_array();
  for (int k = 0; k < x->n_lb; k++) {
    json_t *jb = json_array();
    for (int bi = 0; bi < x->n_b; bi++) {
      json_t *passes = json_array();
      for (int p = 0; p < repeats; p++) json_array_append_new(passes, json_real(x->lb_pass[k][bi][p] * 1e3));
      json_array_append_new(jb, json_pack("{s:i, s:f, s:f, s:o}", "batch", x->batch[bi],
                                          "service_time_ms", x->lb_s[k][bi] * 1e3, "model_ms",
                                          model_s(x, k, bi) * 1e3, "pass_medians_ms", passes));
    }
    json_array_append_new(a, json_pack("{s:I, s:I, s:I, s:f, s:o}", "min_len",
                                       (json_int_t)x->lb_lo[k], "max_len", (json_int_t)x->lb_hi[k],
                                       "texts", (json_int_t)x->lb_texts[k], "mean_tokens",
                                       x->lb_mean[k], "by_batch", jb));
  }
  return a;
}

/* The JSON record of v's length model: the fit and what was written. */
static json_t *length_model_json(const vres *x) {
  json_t *o = json_pack("{s:f, s:f, s:i, s:i, s:s, s:f, s:f, s:f, s:f}", "mixed_mean_tokens",
                        x->mixed_mean, "mixed_median_tokens", x->mixed_median, "fit_batch", x->batch[0], "buckets", x->n_lb, "fit",
                        x->fit_why[0] ? "off" : x->fit.through_origin ? "through_origin"
                                                                      : "least_squares",
                        "a_ms", x->fit.a_s * 1e3, "b_ms_per_token", x->fit.b_s * 1e3,
                        "len_ref_tokens", x->len_ref, "len_cost_per_token", x->len_cost);
  if (x->fit_why[0]) json_object_set_new(o, "why_off", json_string(x->fit_why));
  return o;
}

/* The check table of v's length model, for the end of the run: per bucket
 * and batch size the measured s(b), the one table's estimate (the mixed
 * s(b)) and the length model's, each estimate also as a ratio to the
 * measurement (> 1: it overprices). */
static void length_check(ybuf *out, const char *model, const vres *x) {
  if (x->fit_why[0])
    yput(out, "profile: length model of %s/%s: off (%s)\n", model, x->name, x->fit_why);
  else
    yput(out, "profile: length model of %s/%s: s(%d) = %.4g + %.4g x tokens ms over %d buckets%s;"
         " len_ref_tokens %g, len_cost_per_token %g\n", model, x->name, x->batch[0],
         x->fit.a_s * 1e3, x->fit.b_s * 1e3, x->n_lb,
         x->fit.through_origin ? " (through the origin)" : "", x->len_ref, x->len_cost);
  yput(out, "profile:   %-11s %7s %5s %11s %11s %6s %11s %6s\n", "tokens", "mean", "batch",
       "measured", "one table", "ratio", "by length", "ratio");
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {0, 0};
  for (int k = 0; k < x->n_lb; k++) {
    char range[32];
    if (k == x->n_lb - 1 && x->lb_hi[k] >= AT_PROFILE_MAX_SEQ_LEN)
      snprintf(range, sizeof range, "%zu+", x->lb_lo[k]);
    else
      snprintf(range, sizeof range, "%zu..%zu", x->lb_lo[k], x->lb_hi[k]);
    for (int bi = 0; bi < x->n_b; bi++) {
      double m = x->lb_s[k][bi], r[2] = {x->service_s[bi] / m, model_s(x, k, bi) / m};
      for (int j = 0; j < 2; j++) {
        if (r[j] < lo[j]) lo[j] = r[j];
        if (r[j] > hi[j]) hi[j] = r[j];
      }
      yput(out, "profile:   %-11s %7.1f %5d %8.4f ms %8.4f ms %6.2f %8.4f ms %6.2f\n",
           bi ? "" : range, x->lb_mean[k], x->batch[bi], m * 1e3, x->service_s[bi] * 1e3, r[0],
           model_s(x, k, bi) * 1e3, r[1]);
    }
  }
  yput(out, "profile:   estimate / measured: one table %.2f..%.2f, by length %.2f..%.2f\n", lo[0],
       hi[0], lo[1], hi[1]);
}

/* Does variant v's engine path agree with its plain session? Prints the
 * figures; counts a disagreement in P->failures. */
static void judge_variant(prof *P, pmodel *M, int v) {
  vres *x = &M->vr[v];
  const char *mn = M->mc->name;
  double rp[16];
  memcpy(rp, x->ref_passes, (size_t)P->repeats * sizeof(double));
  x->ref_s1 = at_profile_median(rp, (size_t)P->repeats);
  x->agree_pct = 100.0 * fabs(x->service_s[0] - x->ref_s1) / x->ref_s1;
  bool time_ok = x->agree_pct <= P->tol * 100.0;
  /* Classifiers: identical predictions. Embedders: every text's two vectors
   * point the same way (cosine >= 0.99). Not a tight abs tolerance: int8
   * graphs quantise activations with one scale per batch, so a padded
   * batch legitimately differs from batch 1 by more than float rounding
   * (measured: worst cosine 0.9985 for the default int8 embedder). */
  bool pred_ok = M->task ? x->min_cosine >= 0.99 : x->pred_disagreements == 0;
  fprintf(stderr, "%sprofile: %s/%s accuracy %.4f, s(1) %.4f ms (reference %.4f ms, %.1f%% apart)"
          ", with every worker busy %.4f ms\n", g_tty ? "\r" : "", mn, x->name, x->accuracy,
          x->service_s[0] * 1e3, x->ref_s1 * 1e3, x->agree_pct, x->busy_s[0] * 1e3);
  if (!M->task) fprintf(stderr, "profile:   %zu prediction disagreements, max |logit diff| %.3g\n",
                        x->pred_disagreements, x->max_abs_diff);
  else fprintf(stderr, "profile:   max |embedding diff| %.3g, min cosine %.6f\n", x->max_abs_diff,
               x->min_cosine);
  if (!time_ok) {
    fprintf(stderr, "profile: DISAGREEMENT: %s/%s engine batch-1 service time %.4f ms vs plain "
            "session %.4f ms differ by %.1f%% > tolerance %.1f%%\n", mn, x->name,
            x->service_s[0] * 1e3, x->ref_s1 * 1e3, x->agree_pct, P->tol * 100);
    P->failures++;
  }
  if (!pred_ok) {
    fprintf(stderr, "profile: DISAGREEMENT: %s/%s engine and plain session disagree: %zu "
            "predictions, max |diff| %.3g\n", mn, x->name, x->pred_disagreements, x->max_abs_diff);
    P->failures++;
  }
}

/* Every measurement of variant v, in order, with progress. */
static int profile_variant(prof *P, pmodel *M, int v) {
  vres *x = &M->vr[v];
  const char *mn = M->mc->name;
  char what[160];
  snprintf(what, sizeof what, "%s/%s: accuracy on %zu texts", mn, x->name, P->ds.n);
  progress((double)P->step / P->total_steps, what);
  int rc = measure_accuracy(P, M, v);
  if (rc != AT_EXIT_OK) return rc;
  P->step++;

  snprintf(what, sizeof what, "%s/%s: reference session cross-check", mn, x->name);
  progress((double)P->step / P->total_steps, what);
  at_session *ref = NULL;
  at_status st;
  if ((st = at_session_create(x->path, &M->sp, &ref)) != AT_OK) return cli_report("profile", st);
  int64_t *mask = malloc(M->max_tokens * sizeof(int64_t)), *zeros = calloc(M->max_tokens, sizeof(int64_t));
  for (size_t k = 0; k < M->max_tokens; k++) mask[k] = 1;
  rc = cross_check(P, M, v, ref, mask, zeros);
  P->step++;

  x->n_b = P->n_bs;
  for (int bi = 0; bi < P->n_bs && rc == AT_EXIT_OK; bi++) {
    snprintf(what, sizeof what, "%s/%s: service time, batch %d", mn, x->name, P->bs[bi]);
    progress((double)P->step / P->total_steps, what);
    rc = measure_batch(P, M, v, bi, ref, mask, zeros);
    P->step++;
  }
  if (rc == AT_EXIT_OK && P->n_lb) rc = measure_length_buckets(P, M, v);
  if (rc == AT_EXIT_OK && P->n_lb) fit_length_model(M, v);
  free(mask);
  free(zeros);
  at_session_destroy(ref);
  if (rc == AT_EXIT_OK) judge_variant(P, M, v);
  return rc;
}

/* The model's frontier, the batch size its most accurate frontier variant
 * prefers (into P->best_b), its YAML section and its JSON record. */
static void emit_model(prof *P, pmodel *M) {
  at_server_model_config *mc = M->mc;
  vres *vr = M->vr;
  int repeats = P->repeats;
  /* frontier over (accuracy, cost = s(1) relative to the most accurate) */
  double acc[AT_SERVER_MAX_VARIANTS], cost[AT_SERVER_MAX_VARIANTS], best_acc = -1, ref_cost = 1;
  for (int v = 0; v < mc->n_variants; v++)
    if (vr[v].accuracy > best_acc) best_acc = vr[v].accuracy, ref_cost = vr[v].service_s[0];
  bool on[AT_SERVER_MAX_VARIANTS];
  for (int v = 0; v < mc->n_variants; v++) {
    acc[v] = vr[v].accuracy;
    cost[v] = vr[v].cost = vr[v].service_s[0] / ref_cost;
  }
  at_plan_frontier(acc, cost, (size_t)mc->n_variants, on);
  int top = 0;
  for (int v = 1; v < mc->n_variants; v++)
    if (on[v] && (!on[top] || vr[v].accuracy > vr[top].accuracy)) top = v;
  int bb = 1;
  double best_rate = 0;
  for (int bi = 0; bi < vr[top].n_b; bi++)
    if (vr[top].batch[bi] / vr[top].service_s[bi] > best_rate)
      best_rate = vr[top].batch[bi] / vr[top].service_s[bi], bb = vr[top].batch[bi];
  if (bb < P->best_b) P->best_b = bb;

  /* the figures go into the configuration (at_server_config_models_yaml
   * writes it), rounded as they are worth: accuracy and cost to 1e-4 */
  json_t *jv = json_array();
  size_t mi = (size_t)(mc - P->cfg.models);
  for (int v = 0; v < mc->n_variants; v++) {
    vres *x = &vr[v];
    at_server_variant_config *vc = &mc->variants[v];
    x->frontier = P->offered[mi * AT_SERVER_MAX_VARIANTS + (size_t)v] = on[v];
    snprintf(vc->path, sizeof vc->path, "%s", x->path);
    vc->accuracy = round(x->accuracy * 1e4) / 1e4;
    vc->cost = round(x->cost * 1e4) / 1e4;
    vc->n_points = vc->n_busy_points = 0;
    if (x->n_lb) /* measured now; else what the family file had carries over */
      vc->len_ref_tokens = x->len_ref, vc->len_cost_per_token = x->len_cost;
    for (int bi = 0; bi < x->n_b; bi++) {
      vc->batch[vc->n_points] = x->batch[bi];
      vc->service_s[vc->n_points++] = x->service_s[bi];
      if (x->busy_s[bi] > 0 && vc->n_busy_points == bi) { /* the leading run of busy figures */
        vc->busy_batch[vc->n_busy_points] = x->batch[bi];
        vc->busy_s[vc->n_busy_points++] = x->busy_s[bi];
      }
    }
    char rp2[PATH_MAX];
    rel_path(rp2, sizeof rp2, x->path, P->famdir);
    json_t *jb = json_array();
    for (int bi = 0; bi < x->n_b; bi++) {
      json_t *passes = json_array();
      for (int p = 0; p < repeats; p++) json_array_append_new(passes, json_real(x->pass_medians[bi][p] * 1e3));
      json_t *row = json_pack("{s:i, s:f, s:f, s:o}", "batch", x->batch[bi],
                              "service_time_ms", x->service_s[bi] * 1e3,
                              "service_time_spread_pct", x->spread_pct[bi],
                              "pass_medians_ms", passes);
      if (x->busy_s[bi] > 0) {
        json_t *bp = json_array();
        for (int p = 0; p < repeats; p++)
          json_array_append_new(bp, json_real(x->busy_pass_medians[bi][p] * 1e3));
        json_object_set_new(row, "busy_service_time_ms", json_real(x->busy_s[bi] * 1e3));
        json_object_set_new(row, "busy_service_time_spread_pct", json_real(x->busy_spread_pct[bi]));
        json_object_set_new(row, "busy_pass_medians_ms", bp);
      }
      json_array_append_new(jb, row);
    }
    json_t *rpasses = json_array();
    for (int p = 0; p < repeats; p++) json_array_append_new(rpasses, json_real(x->ref_passes[p] * 1e3));
    json_t *jx = json_pack(
        "{s:s, s:s, s:f, s:s, s:f, s:f, s:b, s:o, s:{s:f, s:o, s:f, s:I, s:f, s:f}}", "name", x->name,
        "path", rp2, "accuracy", x->accuracy, "accuracy_metric",
        M->task ? "5nn_label_agreement" : "argmax_accuracy", "cost", x->cost,
        "service_time_ms", x->service_s[0] * 1e3, "on_frontier", (int)on[v], "by_batch", jb,
        "reference", "service_time_ms", x->ref_s1 * 1e3, "pass_medians_ms", rpasses,
        "service_time_difference_pct", x->agree_pct, "prediction_disagreements",
        (json_int_t)x->pred_disagreements, "max_abs_output_diff", x->max_abs_diff,
        "min_cosine", x->min_cosine);
    json_object_set_new(jx, "len_ref_tokens", json_real(vc->len_ref_tokens));
    json_object_set_new(jx, "len_cost_per_token", json_real(vc->len_cost_per_token));
    if (x->n_lb) {
      json_object_set_new(jx, "by_length", length_buckets_json(x, repeats));
      json_object_set_new(jx, "length_model", length_model_json(x));
      length_check(&g_check_out, mc->name, x);
    }
    json_array_append_new(jv, jx);
  }
  json_array_append_new(P->jmodels, json_pack("{s:s, s:s, s:I, s:o}", "name", mc->name, "task",
                                              mc->task, "texts", (json_int_t)P->ds.n, "variants", jv));
}

/* This host's CPU, for the record. */
static void host_cpu(char *cpu, size_t cap) {
  snprintf(cpu, cap, "unknown");
  FILE *ci = fopen("/proc/cpuinfo", "r");
  if (!ci) return;
  char line[512];
  while (fgets(line, sizeof line, ci))
    if (!strncmp(line, "model name", 10)) {
      char *c = strchr(line, ':');
      if (c) snprintf(cpu, cap, "%s", c + 2);
      cpu[strcspn(cpu, "\n")] = '\0';
      break;
    }
  fclose(ci);
}

/* The configuration and the raw figures, written atomically. */
static int write_outputs(prof *P) {
  char cpu[256];
  host_cpu(cpu, sizeof cpu);
  json_t *batches = json_array();
  for (int k = 0; k < P->n_bs; k++) json_array_append_new(batches, json_integer(P->bs[k]));
  json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:o, s:f, s:s, s:O}",
                           "command", P->cmdline, "date", P->now, "anytime", AT_VERSION_STRING,
                           "ort_version", P->vi.library_release, "host_cpu", cpu, "cpus",
                           (int)sysconf(_SC_NPROCESSORS_ONLN), "workers", P->cfg.workers,
                           "intra_op_threads", P->cfg.intra_op_threads, "repeats", P->repeats,
                           "iters", P->iters, "batch_sizes", batches, "agreement_tolerance", P->tol,
                           "data", P->data, "models", P->jmodels);
  if (P->best_b == 256) P->best_b = P->cfg.max_batch_size;
  /* every setting of the family file carries over (one writer: config.c),
   * with the batch size and deadline this profile chose */
  at_server_config wcfg = P->cfg;
  wcfg.deadline_ms = P->deadline;
  if (wcfg.max_deadline_ms < P->deadline) wcfg.max_deadline_ms = P->deadline;
  char *settings = at_server_config_settings_yaml(&wcfg, P->best_b);
  if (!settings) {
    json_decref(root);
    return fprintf(stderr, "anytime profile: out of memory writing the configuration\n"),
           AT_EXIT_FAIL;
  }
  char *models = at_server_config_models_yaml(&P->cfg, P->famdir, P->offered);
  if (!models) {
    free(settings);
    json_decref(root);
    return fprintf(stderr, "anytime profile: out of memory writing the configuration\n"),
           AT_EXIT_FAIL;
  }
  ybuf *out = &g_yaml_out;
  ybuf_free(out);
  yput(out,
       "# Written by `%s` on %s\n# (ONNX Runtime %s). Service times are medians of %d passes through\n"
       "# the serving path; results/variant_profiles.json has every raw figure.\n"
       "# batching.max_batch_size: the batch size with the most texts per second for the\n"
       "# most accurate variant(s) on this host (b / s(b) from the tables below).\n%s",
       P->cmdline, P->now, P->vi.library_release, P->repeats, settings);
  free(settings);
  yput(out, "%s", models);
  free(models);
  /* the generation lane is not profiled here: carry its section over */
  char *gen_yaml = at_server_config_generator_yaml(&P->cfg);
  if (!gen_yaml) {
    json_decref(root);
    return fprintf(stderr, "anytime profile: out of memory writing the configuration\n"),
           AT_EXIT_FAIL;
  }
  yput(out, "%s", gen_yaml);
  free(gen_yaml);
  if (out->oom) {
    json_decref(root);
    return fprintf(stderr, "anytime profile: out of memory writing the configuration\n"), AT_EXIT_FAIL;
  }
  char *js = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
  json_decref(root);
  int w1 = write_atomic(P->out_json, js), w2 = write_atomic(P->out_cfg, out->s);
  ybuf_free(out);
  free(js);
  if (w1 || w2) {
    fprintf(stderr, "anytime profile: cannot write %s or %s: %s\n", P->out_json, P->out_cfg,
            strerror(errno));
    return AT_EXIT_FAIL;
  }
  fprintf(stderr, "profile: wrote %s and %s\n", P->out_cfg, P->out_json);
  return AT_EXIT_OK;
}

int at_cli_profile(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) return usage(stdout), AT_EXIT_OK;
  static prof P; /* large (paths, the config): not on the stack */
  memset(&P, 0, sizeof P);
  ybuf_free(&g_check_out);
  P.family = "configs/family.yaml", P.out_cfg = "configs/serving.yaml";
  P.out_json = "results/variant_profiles.json";
  cli_default_test_csv(P.data, sizeof P.data);
  P.repeats = 3, P.iters = 40, P.tol = 0.15, P.deadline = -1;
  static const int def_bs[] = {1, 2, 4, 8, 16};
  memcpy(P.bs, def_bs, sizeof def_bs);
  P.n_bs = 5;
  int rc = parse_args(argc, argv, &P);
  if (rc != AT_EXIT_OK) return rc;
  g_tty = isatty(2);
  P.cfg = at_server_config_default();
  at_status st = P.model ? cli_config_from_model(P.model, NULL, true, &P.cfg)
                         : at_server_config_load(P.family, &P.cfg);
  if (st != AT_OK) return cli_report("profile", st);
  if (P.model && P.cfg.n_models == 0)
    return fprintf(stderr, "anytime profile: %s is a text-generation model; profile measures "
                   "classifiers and embedders\n", P.model), AT_EXIT_USAGE;
  if (P.model) P.family = P.model; /* for messages; written paths are relative to the output */
  if (P.deadline <= 0) P.deadline = P.cfg.deadline_ms;
  char err[512];
  if (cli_dataset_load(P.data, &cli_labels_int, &P.ds, err, sizeof err) != 0)
    return fprintf(stderr, "anytime profile: %s\n", err), AT_EXIT_FAIL;
  fprintf(stderr, "profile: %s, %zu held-out texts from %s, %d repeats x %d batches\n", P.family,
          P.ds.n, P.data, P.repeats, P.iters);
  if ((st = at_runtime_version_info(&P.vi)) != AT_OK) return cli_report("profile", st);
  P.jmodels = json_array();
  char tmpd[PATH_MAX];
  snprintf(tmpd, sizeof tmpd, "%s", P.model ? P.out_cfg : P.family);
  snprintf(P.famdir, sizeof P.famdir, "%s", dirname(tmpd));
  time_t tt = time(NULL);
  strftime(P.now, sizeof P.now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
  snprintf(P.cmdline, sizeof P.cmdline, "anytime");
  for (int i = 0; i < argc; i++) {
    strncat(P.cmdline, " ", sizeof P.cmdline - strlen(P.cmdline) - 1);
    strncat(P.cmdline, argv[i], sizeof P.cmdline - strlen(P.cmdline) - 1);
  }
  P.best_b = 256; /* min over models of argmax_b b/s(b) of the most accurate variant */
  for (int mi = 0; mi < P.cfg.n_models; mi++)
    P.total_steps += P.cfg.models[mi].n_variants * (P.n_bs + 2 + P.n_lb);

  for (int mi = 0; mi < P.cfg.n_models && !P.failures; mi++) {
    pmodel M;
    memset(&M, 0, sizeof M);
    rc = model_prepare(&P, mi, &M);
    for (int v = 0; rc == AT_EXIT_OK && v < M.mc->n_variants && !P.failures; v++)
      rc = profile_variant(&P, &M, v);
    if (rc == AT_EXIT_OK && !P.failures) emit_model(&P, &M);
    model_free(&P, &M);
    if (rc != AT_EXIT_OK) {
      json_decref(P.jmodels);
      cli_dataset_free(&P.ds);
      return rc;
    }
  }
  progress(1.0, P.failures ? "aborted" : "done");
  if (P.failures) {
    fprintf(stderr, "anytime profile: %d disagreement(s) between the serving path and the plain "
                    "session; nothing was written\n", P.failures);
    json_decref(P.jmodels);
    cli_dataset_free(&P.ds);
    return AT_EXIT_FAIL;
  }
  if (g_check_out.len) fputs(g_check_out.s, stderr);
  ybuf_free(&g_check_out);
  rc = write_outputs(&P);
  json_decref(P.jmodels);
  cli_dataset_free(&P.ds);
  return rc;
}
