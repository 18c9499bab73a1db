/* anytime/engine.h — the in-process inference engine.
 *
 * An at_engine holds model variants (one shared at_session each) and a pool
 * of worker threads. Callers submit requests asynchronously; a worker runs
 * the variant's session (ORT Run, concurrently with the other workers, no
 * global lock) and calls the request's completion callback with the outputs.
 *
 * Lifecycle: create -> add_variant (one or more) -> start -> submit* ->
 * destroy. destroy() stops accepting, lets the workers finish every request
 * that was admitted (each gets its callback exactly once), then joins them.
 *
 * Buffers: input tensor descriptors are copied into the request at submit;
 * the data they point to is NOT copied and must stay valid until the
 * callback has been called. Outputs are passed to the callback as an
 * at_outputs owned by the engine and valid only during the callback (zero
 * copy); copy out what you need.
 *
 * Thread-safety: at_engine_submit() may be called from any number of threads
 * at once. add_variant/start/destroy must be called from one thread and not
 * concurrently with submit. Callbacks run on worker threads and must not call
 * at_engine_destroy().
 */
#ifndef ANYTIME_ENGINE_H
#define ANYTIME_ENGINE_H

#include "anytime/api.h"

#include <stdint.h>

#include "anytime/session.h"
#include "anytime/status.h"
#include "anytime/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AT_MAX_INPUTS 32
#define AT_MAX_OUTPUTS 32

typedef struct at_engine at_engine;

typedef struct at_engine_params {
  int n_workers;          /* worker threads sharing the sessions; default 2 */
  size_t queue_capacity;  /* admitted-but-unfinished requests; default 1024 */
  /* 0 (default) or >= 2: each variant also gets a second session whose Runs
   * use this many intra-op threads, and a Run that starts while no other Run
   * of the engine is going (an idle pool: low load) uses it, so one request
   * alone is not held to one core. Runs that start while another is going use
   * the variant's own session (the one at_session_params asked for). Costs a
   * second session per variant (memory: a second copy of the weights unless
   * they are mapped from the artifact cache). */
  int idle_intra_op_threads;
} at_engine_params;

/* Timestamps (CLOCK_MONOTONIC, nanoseconds) of one request's life. */
typedef struct at_timing {
  uint64_t submitted_ns;
  uint64_t started_ns;   /* a worker picked it up */
  uint64_t finished_ns;  /* Run returned */
  /* Other Runs of this engine that were in progress at some moment during
   * this one (0..n_workers-1): 0 means it had the machine's workers to
   * itself, n_workers-1 that the whole pool was busy. The planner keeps a
   * separate correction factor for full-pool Runs (anytime/plan.h). */
  int peers;
} at_timing;

/* Completion callback: called exactly once per admitted request, on a worker
 * thread. `status` is AT_OK or the at_session_run() failure; `outputs` is
 * NULL on failure and otherwise valid only until the callback returns.
 * On failure `error` holds the detail text (valid during the call). */
typedef void (*at_done_fn)(void *user, at_status status, const at_outputs *outputs,
                           const at_timing *timing, const char *error);

AT_API at_engine_params at_engine_default_params(void);

/* Create an engine (no threads yet). *out must be freed with
 * at_engine_destroy(). Returns AT_OK, AT_ERR_INVALID_ARG, AT_ERR_NOMEM. */
AT_API at_status at_engine_create(const at_engine_params *params, at_engine **out);

/* Load a variant from `model_path` with session options `sp` (NULL =
 * defaults) and give it the next index (0, 1, ...) in *out_index (may be
 * NULL). Only before at_engine_start(). Returns AT_OK, AT_ERR_STATE (already
 * started), AT_ERR_LIMIT (more than 64 variants) or any at_session_create()
 * failure. */
AT_API at_status at_engine_add_variant(at_engine *e, const char *name, const char *model_path,
                                       const at_session_params *sp, int *out_index);

/* One variant to load: its name, model file and session options (sp NULL =
 * defaults). The strings and sp are read during the call only. */
typedef struct at_variant_spec {
  const char *name;
  const char *model_path;
  const at_session_params *sp;
} at_variant_spec;

/* Load n variants as one step: their sessions are created at the same time
 * on up to `parallel` threads (the caller's included; <= 1 = one after
 * another on the caller), then added in the order given, so variant specs[k]
 * gets index first + k (*first_index, may be NULL). Session creation is most
 * of a start-up (graph optimisation, weights), so a family of variants loads
 * in about the time of its largest on a multi-core host. All or nothing: on
 * failure no variant is added, every session made is destroyed, and the
 * status and message are those of the first failing spec in the given order,
 * whose position goes to *failed_at (may be NULL). Only before
 * at_engine_start(). A helper thread that cannot start leaves its share to
 * the others. Returns AT_OK, AT_ERR_INVALID_ARG, AT_ERR_STATE, AT_ERR_LIMIT,
 * AT_ERR_NOMEM or the first at_session_create() failure. */
AT_API at_status at_engine_add_variants(at_engine *e, const at_variant_spec *specs, int n, int parallel,
                                        int *first_index, int *failed_at);

/* Number of variants, their names and signatures (owned by the engine). */
AT_API int at_engine_variant_count(const at_engine *e);
AT_API const char *at_engine_variant_name(const at_engine *e, int index);
AT_API const at_model_info *at_engine_variant_info(const at_engine *e, int index);
/* The shared session of a variant (for callers that also run directly). */
AT_API at_session *at_engine_variant_session(at_engine *e, int index);

/* Start the worker threads. Returns AT_OK, AT_ERR_STATE (no variants, or
 * already started), AT_ERR_THREAD. */
AT_API at_status at_engine_start(at_engine *e);

/* Admit one request for `variant`. Input descriptors are copied; their data
 * must outlive the callback. `output_names` (NULL/0 = all outputs) is copied
 * too. On AT_OK the callback will be called exactly once; on any other status
 * it will not be called.
 * Returns AT_OK, AT_ERR_INVALID_ARG (bad variant index, too many inputs or
 * outputs, NULL callback), AT_ERR_STATE (not started), AT_ERR_SHUTDOWN
 * (destroy has begun), AT_ERR_QUEUE_FULL (queue_capacity requests are
 * admitted and unfinished). */
AT_API at_status at_engine_submit(at_engine *e, int variant, const at_tensor *inputs,
                                  size_t n_inputs, const char *const *output_names,
                                  size_t n_outputs, at_done_fn done, void *user);

/* Number of worker threads (the n_workers the engine was created with). */
AT_API int at_engine_worker_count(const at_engine *e);
/* Runs so far that took a variant's idle-pool session (idle_intra_op_threads;
 * always 0 without it). Thread-safe. */
AT_API uint64_t at_engine_solo_runs(const at_engine *e);

/* What the Runs so far took, summed over every worker: how many finished,
 * their wall time, and the CPU time their threads spent inside them (the
 * thread's own clock, read before and after each Run: ONNX Runtime's work
 * with one intra-op thread; with more, the other threads' share is not in
 * it). A worker's CPU beyond run_cpu_ns is what the engine, the batcher
 * and the callbacks cost around the Runs. Thread-safe; zeros for NULL. */
typedef struct at_engine_totals {
  uint64_t runs;
  uint64_t run_wall_ns;
  uint64_t run_cpu_ns;
} at_engine_totals;
AT_API at_engine_totals at_engine_totals_get(const at_engine *e);

/* Requests admitted and not yet completed (queued + running). */
AT_API size_t at_engine_pending(const at_engine *e);

/* Stop accepting, finish everything admitted, join the workers and free the
 * engine and its sessions. NULL is a no-op. */
AT_API void at_engine_destroy(at_engine *e);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_ENGINE_H */
