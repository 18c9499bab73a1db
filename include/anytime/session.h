/* anytime/session.h — one ONNX Runtime session over one model file.
 *
 * An at_session is the plain, direct path: create it from an .onnx (or .ort)
 * file, ask for its signature, run it synchronously on the calling thread.
 * The engine (engine.h) shares one at_session per variant among its workers;
 * tests and benchmarks create a separate at_session as the independent
 * reference path.
 *
 * Inputs are wrapped, not copied: ORT reads the caller's buffers in place.
 * Outputs are allocated by ORT and owned by an at_outputs handle; the tensors
 * it exposes point straight into ORT's buffers (no copy) and stay valid until
 * at_outputs_free().
 *
 * Thread-safety: at_session_run() may be called concurrently from any number
 * of threads on the same session (ORT's Run is thread-safe on the CPU EP, and
 * anytime adds no lock). create/destroy must not race with run.
 */
#ifndef ANYTIME_SESSION_H
#define ANYTIME_SESSION_H

#include "anytime/api.h"

#include <stdbool.h>

#include "anytime/status.h"
#include "anytime/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum at_opt_level {
  AT_OPT_DISABLE = 0,
  AT_OPT_BASIC = 1,
  AT_OPT_EXTENDED = 2,
  AT_OPT_ALL = 99,
} at_opt_level;

typedef struct at_session_params {
  int intra_op_threads;        /* threads one Run may use; default 1 */
  int inter_op_threads;        /* default 1 */
  bool allow_spinning;         /* intra-op spin-waiting; default false */
  /* ONNX Runtime's CPU memory arena (one arena per session, behind one
   * lock): default true, ORT's own default. false sends every tensor
   * allocation of a Run to malloc. Several threads running one session at
   * once contend for the arena's lock; measured on a 2-core host under HTTP
   * load, a Run cost up to 1.9x its CPU with the arena (docs/benchmarks.md,
   * "What a served Run costs"). With it off, glibc's default of trimming
   * and re-faulting freed heap memory costs page faults on every Run of a
   * few hundred KiB: fix the thresholds first (mallopt M_MMAP_THRESHOLD
   * and M_TRIM_THRESHOLD, as the anytime program does). */
  bool cpu_mem_arena;
  at_opt_level opt_level;      /* default AT_OPT_ALL */
  const char *optimized_model_path; /* if set, ORT saves the optimised graph here */
  bool optimized_as_ort;       /* save that graph in .ort format (default true) */
  /* Compiled-artifact cache (see anytime/model.h): an artifacts directory,
   * e.g. from at_artifact_cache_dir(). If set (and optimized_model_path is
   * not), the optimised graph is loaded from the cache when a valid artifact
   * for this model, ORT release, opt_level, provider and CPU exists, and saved
   * there otherwise. Cache trouble is logged and never fails the create.
   * Default NULL (no cache). */
  const char *artifact_cache_dir;
  const char *artifact_model;   /* recorded with a saved artifact ("org/name"); may be NULL */
  const char *artifact_variant; /* recorded with a saved artifact ("int8"); may be NULL */
} at_session_params;

/* What the artifact cache did for a session. */
typedef enum at_artifact_outcome {
  AT_ARTIFACT_OFF = 0,   /* no cache was asked for */
  AT_ARTIFACT_HIT,       /* loaded from a valid cached artifact */
  AT_ARTIFACT_BUILT,     /* no usable artifact: loaded the model and saved one */
  AT_ARTIFACT_UNCACHED,  /* cache unusable (unwritable, I/O error): plain load */
} at_artifact_outcome;

typedef struct at_session at_session;
typedef struct at_outputs at_outputs;

/* Defaults as documented on each field. */
AT_API at_session_params at_session_default_params(void);

/* Load `model_path`. Initialises the runtime if needed (see runtime.h).
 * On success *out owns the session; free it with at_session_destroy().
 * Returns AT_OK, AT_ERR_INVALID_ARG, AT_ERR_NOT_FOUND (no such file),
 * AT_ERR_MODEL (ORT could not load it; at_last_error() has ORT's message),
 * AT_ERR_NOMEM, or any at_runtime_init() failure. */
AT_API at_status at_session_create(const char *model_path, const at_session_params *params,
                                   at_session **out);

/* What the artifact cache did when `s` was created (AT_ARTIFACT_OFF for NULL). */
AT_API at_artifact_outcome at_session_artifact_outcome(const at_session *s);

/* Free a session. NULL is a no-op. No run may be in progress. */
AT_API void at_session_destroy(at_session *s);

/* The model's signature and metadata; owned by the session. Never NULL for a
 * live session. */
AT_API const at_model_info *at_session_info(const at_session *s);

/* Index of the input/output called `name`, or -1. */
AT_API int at_session_input_index(const at_session *s, const char *name);
AT_API int at_session_output_index(const at_session *s, const char *name);

/* Run the model once on the calling thread.
 * `inputs` must name every model input exactly once, with the model's dtype
 * and rank and with every fixed dimension matching. `output_names` selects
 * outputs (NULL/0 = all, in model order). On success *out owns the results;
 * free with at_outputs_free().
 * Returns AT_OK, AT_ERR_INVALID_ARG, AT_ERR_SHAPE (at_last_error() names the
 * offending tensor and what was expected), AT_ERR_NOT_FOUND (unknown output
 * name), AT_ERR_ORT (ORT failed; its message in at_last_error()),
 * AT_ERR_NOMEM. */
AT_API at_status at_session_run(at_session *s, const at_tensor *inputs, size_t n_inputs,
                                const char *const *output_names, size_t n_outputs,
                                at_outputs **out);

/* at_session_run with memory for some outputs: where into[i].data is not
 * NULL (i in the order requested), ONNX Runtime writes output i there, with
 * into[i]'s dtype and shape, instead of allocating it (into[i].name is not
 * read). The buffer may be one of the inputs' (a decoder's past and present
 * sharing memory). *out's view of such an output points at into[i].data;
 * the caller keeps that memory alive until at_outputs_free. into == NULL is
 * at_session_run. Same statuses. */
AT_API at_status at_session_run_into(at_session *s, const at_tensor *inputs, size_t n_inputs,
                                     const char *const *output_names, size_t n_outputs,
                                     const at_tensor *into, at_outputs **out);

/* Number of tensors in `o`. */
AT_API size_t at_outputs_count(const at_outputs *o);
/* View of output i (in the order requested). The view points into memory
 * owned by `o`; it is valid until at_outputs_free(o). Returns AT_OK or
 * AT_ERR_INVALID_ARG (index out of range). */
AT_API at_status at_outputs_get(const at_outputs *o, size_t i, at_tensor *view);
/* Free outputs. NULL is a no-op. */
AT_API void at_outputs_free(at_outputs *o);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_SESSION_H */
