/* src/tools/profile_impl.h — what the files of the profile pipeline
 * (src/tools/profile_*.c) share and nothing else includes: one run's state,
 * one model's state, one variant's figures, and the steps profile_run.c
 * calls in order. The interface for callers is tools/profile_run.h.
 *
 * Ownership: a prof_state is made and freed by prof_run(); a prof_model by
 * profile_run.c's model_prepare()/model_free(), one model at a time; the
 * steps fill the figures of the variant they are given. Thread-safety: a
 * run's state belongs to the thread running prof_run(); the batcher's
 * completion callbacks write only their own prof_item (profile_accuracy.c). */
#ifndef ANYTIME_TOOLS_PROFILE_IMPL_H
#define ANYTIME_TOOLS_PROFILE_IMPL_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/anytime.h"
#include "anytime/profile.h"
#include "anytime/server.h"
#include "tools/dataset.h"
#include "tools/profile_run.h"

#define PROF_MAX_PASSES 16 /* --repeats at most */

struct prof_latch;

/* One text of the accuracy pass: what the batcher is given and where its
 * task output goes. */
typedef struct prof_item {
  struct prof_latch *l;
  int head; /* output index of the task head */
  int64_t *ids;
  size_t len;
  int task;        /* 0 classify, 1 embed */
  at_pooling pool; /* embed */
  size_t dim;
  float *out; /* dim floats */
  at_status st;
} prof_item;

/* One variant's figures. */
typedef struct prof_variant {
  char name[64], path[AT_PATH_CAP];
  double accuracy;
  int n_b;
  int batch[PROF_MAX_BATCH_SIZES];
  double service_s[PROF_MAX_BATCH_SIZES]; /* median of pass medians */
  double spread_pct[PROF_MAX_BATCH_SIZES];
  double pass_medians[PROF_MAX_BATCH_SIZES][PROF_MAX_PASSES];
  /* the same with every worker running a batch at once (0: one worker) */
  double busy_s[PROF_MAX_BATCH_SIZES];
  double busy_spread_pct[PROF_MAX_BATCH_SIZES];
  double busy_pass_medians[PROF_MAX_BATCH_SIZES][PROF_MAX_PASSES];
  double ref_s1, ref_passes[PROF_MAX_PASSES], agree_pct, max_abs_diff;
  double min_cosine; /* embedders: engine vs plain session, worst text */
  size_t pred_disagreements;
  double cost;
  bool frontier;
  /* --length-buckets: s(b) alone over texts of one length bucket at a time */
  int n_lb;
  size_t lb_lo[PROF_MAX_LENGTH_BUCKETS], lb_hi[PROF_MAX_LENGTH_BUCKETS],
      lb_texts[PROF_MAX_LENGTH_BUCKETS];   /* tokens, inclusive */
  double lb_mean[PROF_MAX_LENGTH_BUCKETS]; /* mean tokens of a bucket's texts */
  double lb_s[PROF_MAX_LENGTH_BUCKETS][PROF_MAX_BATCH_SIZES];
  double lb_pass[PROF_MAX_LENGTH_BUCKETS][PROF_MAX_BATCH_SIZES][PROF_MAX_PASSES];
  /* the length model fitted to lb_s[.][0] (at_profile_fit_length): what
   * the configuration gets (0, 0 when it could not be fitted, and why) */
  double mixed_mean;   /* mean tokens of the whole split: the table's texts */
  double mixed_median; /* their median (the record only) */
  at_profile_length_fit fit;
  double len_ref, len_cost;
  char fit_why[256];
} prof_variant;

/* A growing text buffer: the written configuration has no size limit (64
 * variants with 4 KiB paths are about 300 KiB), and a fixed buffer filled
 * with `o += snprintf(buf + o, cap - o, ...)` runs off its end once a write
 * is truncated. After an allocation failure it only records `oom`. */
typedef struct prof_buf {
  char *s;
  size_t len, cap;
  bool oom;
} prof_buf;

void prof_buf_printf(prof_buf *b, const char *fmt, ...) AT_PRINTF(2, 3);
void prof_buf_free(prof_buf *b);

/* One run of the pipeline: its options, the family, the split, and what is
 * written at the end. */
typedef struct prof_state {
  const prof_options *o;
  const cli_dataset *ds;
  double deadline_ms;   /* o->deadline_ms, else the configuration's */
  at_server_config cfg; /* a copy: the figures are written into it */
  at_version_info vi;
  json_t *jmodels;
  bool offered[AT_SERVER_MAX_MODELS * AT_SERVER_MAX_VARIANTS]; /* on the frontier */
  char famdir[PATH_MAX], now[64], cmdline[2048];
  int failures, best_b, total_steps, step;
  bool tty;        /* stderr is a terminal: a progress bar */
  prof_buf checks; /* --length-buckets: the check tables, printed at the end */
} prof_state;

/* One model being profiled: its split tokenised, its engine, the items the
 * batcher fills, and each variant's figures. */
typedef struct prof_model {
  at_server_model_config *mc;
  int task; /* 0 classify, 1 embed */
  size_t max_tokens, dim;
  at_pooling pool;
  int head;
  int64_t **ids;
  size_t *lens;
  at_engine *eng;
  at_session_params sp;
  prof_item *items;
  float *outs, *ref_outs;
  size_t *all;
  prof_variant *vr;
  uint64_t rng;
} prof_model;

/* Print "anytime profile: <status text>: <detail>" for a failed library
 * call and return its exit code (AT_EXIT_RUNTIME for runtime load and
 * version errors, else AT_EXIT_FAIL). */
int prof_report(at_status s);
/* "\r" when a progress bar may be on the line, else "". */
const char *prof_cr(const prof_state *P);

/* The steps, in the order profile_run.c calls them for variant v; each
 * returns AT_EXIT_OK or an exit code after printing why. */
int prof_measure_accuracy(prof_state *P, prof_model *M, int v);
int prof_cross_check(prof_state *P, prof_model *M, int v, at_session *ref, int64_t *mask,
                     int64_t *zeros);
int prof_measure_batch(prof_state *P, prof_model *M, int v, int bi, at_session *ref, int64_t *mask,
                       int64_t *zeros);
int prof_measure_length_buckets(prof_state *P, prof_model *M, int v);
void prof_fit_length_model(prof_state *P, prof_model *M, int v);
/* Counts a disagreement in P->failures. */
void prof_judge_variant(prof_state *P, prof_model *M, int v);

/* After every variant of M: its frontier, its YAML figures and JSON record. */
void prof_emit_model(prof_state *P, prof_model *M);
/* The JSON record of v's length buckets and of its length model, and its
 * check table (appended to `out`). */
json_t *prof_length_buckets_json(const prof_variant *x, int repeats);
json_t *prof_length_model_json(const prof_variant *x);
void prof_length_check(prof_buf *out, const char *model, const prof_variant *x);
/* The configuration and the raw figures, written atomically. */
int prof_write_outputs(prof_state *P);

#endif /* ANYTIME_TOOLS_PROFILE_IMPL_H */
