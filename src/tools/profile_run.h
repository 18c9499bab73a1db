/* src/tools/profile_run.h — the pipeline behind `anytime profile`: measure
 * every variant of a model family through the serving path and write the
 * planner's inputs.
 *
 * Through the serving path means: the variants are loaded into one at_engine
 * and driven through at_batcher exactly as `anytime serve` drives them, with
 * the family's tokenizer on a labelled held-out split. The service times are
 * measured by at_profile_measure (anytime/profile.h), the library's one
 * measuring core, which the server's start-up uses too; this pipeline adds
 * the accuracy pass (profile_accuracy.c), the plain-session cross-check and
 * the service-time tables (profile_service.c), the length buckets and the
 * length model (profile_length.c), and the frontier and the writing
 * (profile_write.c); profile_run.c drives them. For each variant:
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
 *     and its predictions must equal the engine's (embedders: every text's
 *     two vectors at cosine >= 0.99). Any disagreement aborts BEFORE
 *     anything is written.
 *   - with --length-buckets K, s(b) per length bucket (K quantile buckets
 *     of the split's token lengths) and the length model fitted to the
 *     buckets' s(1) (at_profile_fit_length): len_ref_tokens and
 *     len_cost_per_token, written into the variant's configuration, with a
 *     table at the end that sets the planner's estimate with and without
 *     it against each bucket's measured s(b).
 * Then the accuracy/cost Pareto frontier is computed and the configuration
 * (planner inputs) and the raw figures (JSON) are written atomically.
 *
 * The pipeline prints its progress, its figures and its errors on stderr
 * with the command's prefixes ("profile: ...", "anytime profile: ..."): it
 * is the command's body, not a library.
 *
 * Ownership: prof_run() copies the configuration it is given and only reads
 * the options and the dataset; everything it allocates is freed before it
 * returns. Thread-safety: no shared or static mutable state; one run uses
 * the calling thread (plus the engine's workers it starts and stops), so
 * runs in different threads do not interfere, except that both write to
 * stderr and to the files named. */
#ifndef ANYTIME_TOOLS_PROFILE_RUN_H
#define ANYTIME_TOOLS_PROFILE_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "anytime/server.h"
#include "tools/dataset.h"
#include "tools/report.h"

#define PROF_MAX_BATCH_SIZES 8    /* batch sizes measured at most */
#define PROF_MAX_LENGTH_BUCKETS 8 /* --length-buckets at most */

/* prof_run() returns the CLI's exit codes (tools/report.h). */

/* One profile's options, checked by the caller (the command's parser). */
typedef struct prof_options {
  /* the family file, or with `model` set the model argument: named in
   * messages; the written paths are relative to the family file's
   * directory, or with `model` set to out_cfg's */
  const char *family;
  const char *model;              /* non-NULL: the family came from --model */
  const char *data;               /* the labelled split, recorded in the JSON */
  const char *out_cfg, *out_json; /* the files written */
  int repeats;                    /* 1..16 passes */
  int iters;                      /* >= 3 batches per pass */
  int bs[PROF_MAX_BATCH_SIZES];   /* ascending, bs[0] == 1, at most 256 */
  int n_bs;
  int n_lb;           /* 0 (off) or 2..PROF_MAX_LENGTH_BUCKETS length buckets */
  double tol;         /* --agreement-tolerance, > 0 */
  double deadline_ms; /* written as the deadline; <= 0: the configuration's */
  int argc;           /* the command line, recorded in both files */
  char **argv;
} prof_options;

/* Profile every variant of every model of `cfg` on `ds` (labels: class ids)
 * as `o` says, then write o->out_cfg and o->out_json atomically; on any
 * disagreement between the serving path and the plain session, nothing is
 * written. Prints as the command does. Returns AT_EXIT_OK,
 * AT_EXIT_RUNTIME when ONNX Runtime could not be loaded (or is the wrong
 * version), else AT_EXIT_FAIL (a failed library call, a disagreement, a
 * file that cannot be written). */
int prof_run(const prof_options *o, const at_server_config *cfg, const cli_dataset *ds);

/* Write `len` bytes of `data` to `path` atomically: into path.tmp.<pid> in
 * the same directory (created, mode 0755, if missing), then renamed over
 * `path`. Returns 0, or -1 with errno set and no temporary file left. */
int prof_write_file_atomic(const char *path, const char *data, size_t len);

#endif /* ANYTIME_TOOLS_PROFILE_RUN_H */
