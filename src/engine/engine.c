/* src/engine/engine.c — the worker pool that runs requests on shared
 * sessions (see anytime/engine.h for the contract).
 *
 * DESIGN
 *   Threads: any number of submitting threads; n_workers worker threads.
 *   Sessions: one at_session per variant, shared by every worker; Run is
 *     called concurrently with no lock around it. With idle_intra_op_threads
 *     a variant has a second ("solo") session with that many intra-op
 *     threads: a Run that finds no other Run going when it starts takes it.
 *     The choice is made once, at the start; a request that arrives during a
 *     solo Run runs beside it on the plain session (briefly more threads
 *     than cores), and the next Run that starts alone takes the solo one
 *     again. So at low load one request gets the idle cores, and at
 *     saturation every Run is a one-thread Run, as without the option.
 *   Requests: queue_capacity slots are allocated at create time; submit takes
 *     a free slot, copies the tensor descriptors into it and appends its index
 *     to a FIFO ring; a worker pops it, runs it, calls the callback and
 *     returns the slot. No allocation per request in the engine itself.
 *   Invariant: pending == (slots not on the free list) == queued + running;
 *     every admitted request leaves through exactly one callback.
 *   Shutdown: destroy sets `stopping` (submit then refuses), workers drain
 *     the ring and exit when it is empty, destroy joins them.
 *   Totals: each Run adds its wall time and its thread's CPU time (read
 *     before and after) to atomics (at_engine_totals_get), so a worker's CPU
 *     beyond its Runs' — the engine, batcher and callbacks — can be told
 *     apart from ONNX Runtime's (bench/run_cost.sh).
 *   Lock: one mutex `lock` guards ring, free list, pending, started and
 *     stopping. It is never held while Run or a callback executes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anytime/engine.h"
#include "core/fault.h"
#include "core/internal.h"

#define AT_ENGINE_MAX_VARIANTS 64

typedef struct request {
  int variant;
  size_t n_in, n_out;
  at_tensor inputs[AT_MAX_INPUTS];
  const char *out_names[AT_MAX_OUTPUTS]; /* interned by the session */
  at_done_fn done;
  void *user;
  at_timing timing;
  size_t next_free;
} request;

typedef struct engine_variant {
  char *name;
  at_session *session;
  at_session *solo; /* idle_intra_op_threads' session, or NULL */
} engine_variant;

struct at_engine {
  at_engine_params p;
  int n_variants;
  engine_variant variants[AT_ENGINE_MAX_VARIANTS];
  pthread_t *threads;
  int n_threads;

  pthread_mutex_t lock;
  pthread_cond_t work;   /* signalled when the ring gains a request or on stop */
  request *slots;        /* queue_capacity slots, fixed */
  size_t *ring;          /* guarded by lock: FIFO of slot indices */
  size_t ring_head;      /* guarded by lock */
  size_t ring_count;     /* guarded by lock */
  size_t free_head;      /* guarded by lock: first free slot, or SIZE_MAX */
  size_t pending;        /* guarded by lock */
  int started;           /* guarded by lock */
  int stopping;          /* guarded by lock */
  atomic_int running;              /* Runs in progress (for at_timing.peers) */
  atomic_uint_least64_t run_starts; /* Runs ever started */
  atomic_uint_least64_t solo_runs;  /* of which on a solo session */
  atomic_uint_least64_t runs_done, run_wall_ns, run_cpu_ns; /* at_engine_totals */
};

at_engine_params at_engine_default_params(void) {
  at_engine_params p;
  p.n_workers = 2;
  p.queue_capacity = 1024;
  p.idle_intra_op_threads = 0;
  return p;
}

at_status at_engine_create(const at_engine_params *params, at_engine **out) {
  if (!out) return at_fail(AT_ERR_INVALID_ARG, "out is NULL");
  *out = NULL;
  at_engine_params p = params ? *params : at_engine_default_params();
  if (p.n_workers < 1 || p.n_workers > 1024)
    return at_fail(AT_ERR_INVALID_ARG, "n_workers must be 1..1024, got %d", p.n_workers);
  if (p.idle_intra_op_threads != 0 && (p.idle_intra_op_threads < 2 || p.idle_intra_op_threads > 1024))
    return at_fail(AT_ERR_INVALID_ARG, "idle_intra_op_threads must be 0 (off) or 2..1024, got %d",
                   p.idle_intra_op_threads);
  if (p.queue_capacity < 1 || p.queue_capacity > (1u << 24))
    return at_fail(AT_ERR_INVALID_ARG, "queue_capacity must be 1..16777216, got %zu",
                   p.queue_capacity);
  at_engine *e = calloc(1, sizeof *e);
  if (!e) return at_fail(AT_ERR_NOMEM, "out of memory");
  e->p = p;
  atomic_init(&e->running, 0);
  atomic_init(&e->run_starts, 0);
  atomic_init(&e->solo_runs, 0);
  atomic_init(&e->runs_done, 0);
  atomic_init(&e->run_wall_ns, 0);
  atomic_init(&e->run_cpu_ns, 0);
  e->slots = calloc(p.queue_capacity, sizeof *e->slots);
  e->ring = calloc(p.queue_capacity, sizeof *e->ring);
  e->threads = calloc((size_t)p.n_workers, sizeof *e->threads);
  if (!e->slots || !e->ring || !e->threads) {
    free(e->slots);
    free(e->ring);
    free(e->threads);
    free(e);
    return at_fail(AT_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < p.queue_capacity; i++)
    e->slots[i].next_free = (i + 1 < p.queue_capacity) ? i + 1 : SIZE_MAX;
  e->free_head = 0;
  pthread_mutex_init(&e->lock, NULL);
  pthread_cond_init(&e->work, NULL);
  *out = e;
  return AT_OK;
}

/* The shared state of one round of session creation: each loader takes the
 * next spec by an atomic counter and fills its own slots. solo_threads > 0:
 * make the specs' solo sessions (that many intra-op threads) instead. */
typedef struct load_job {
  const at_variant_spec *specs;
  int n;
  int solo_threads;
  atomic_int next;
  at_session **sess;
  at_status *st;
  char **err; /* the failure's message, copied on the thread that failed */
} load_job;

static void *load_some(void *arg) {
  load_job *j = arg;
  for (int k; (k = atomic_fetch_add(&j->next, 1)) < j->n;) {
    at_session_params sp = j->specs[k].sp ? *j->specs[k].sp : at_session_default_params();
    if (j->solo_threads > 0) sp.intra_op_threads = j->solo_threads;
    j->st[k] = at_session_create(j->specs[k].model_path, &sp, &j->sess[k]);
    if (j->st[k] != AT_OK) j->err[k] = strdup(at_last_error()); /* NULL: reported below */
  }
  return NULL;
}

/* Create every session of `j`, on up to `parallel` threads. */
static void load_all(load_job *j, int parallel) {
  int extra = (parallel < j->n ? parallel : j->n) - 1;
  pthread_t th[AT_ENGINE_MAX_VARIANTS];
  int started = 0;
  for (int t = 0; t < extra; t++)
    if (pthread_create(&th[started], NULL, load_some, j) == 0) started++;
  load_some(j);
  for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
}

/* One round over specs[0..n) into sess[], st[] (err[] freed here). Returns
 * AT_OK or the first failure in order (position into *failed_at). */
static at_status load_round(const at_variant_spec *specs, int n, int parallel, int solo_threads,
                            at_session **sess, int *failed_at) {
  at_status st[AT_ENGINE_MAX_VARIANTS];
  char *err[AT_ENGINE_MAX_VARIANTS] = {0};
  load_job j = {.specs = specs, .n = n, .solo_threads = solo_threads, .sess = sess, .st = st,
                .err = err};
  atomic_init(&j.next, 0);
  load_all(&j, parallel);
  at_status rc = AT_OK;
  for (int k = 0; k < n; k++) {
    if (rc == AT_OK && st[k] != AT_OK) {
      rc = at_fail(st[k], "%s%s", solo_threads > 0 ? "the idle-pool session: " : "",
                   err[k] ? err[k] : "loading failed (message lost: out of memory)");
      if (failed_at) *failed_at = k;
    }
    free(err[k]);
  }
  return rc;
}

at_status at_engine_add_variants(at_engine *e, const at_variant_spec *specs, int n, int parallel,
                                 int *first_index, int *failed_at) {
  if (failed_at) *failed_at = -1;
  if (!e || n < 1 || !specs) return at_fail(AT_ERR_INVALID_ARG, "engine and variants are required");
  for (int k = 0; k < n; k++)
    if (!specs[k].name || !specs[k].model_path) {
      if (failed_at) *failed_at = k;
      return at_fail(AT_ERR_INVALID_ARG, "variant %d: name and model_path are required", k);
    }
  if (e->started) return at_fail(AT_ERR_STATE, "variants must be added before at_engine_start");
  if (n > AT_ENGINE_MAX_VARIANTS - e->n_variants)
    return at_fail(AT_ERR_LIMIT, "at most %d variants per engine", AT_ENGINE_MAX_VARIANTS);
  at_session *sess[AT_ENGINE_MAX_VARIANTS] = {0}, *solo[AT_ENGINE_MAX_VARIANTS] = {0};
  char *names[AT_ENGINE_MAX_VARIANTS] = {0};
  /* The solo sessions come second, so with the artifact cache they load
   * what the first round built rather than build it again beside it. */
  at_status rc = load_round(specs, n, parallel, 0, sess, failed_at);
  if (rc == AT_OK && e->p.idle_intra_op_threads > 0)
    rc = load_round(specs, n, parallel, e->p.idle_intra_op_threads, solo, failed_at);
  for (int k = 0; k < n && rc == AT_OK; k++)
    if (!(names[k] = strdup(specs[k].name))) rc = at_fail(AT_ERR_NOMEM, "out of memory");
  if (rc != AT_OK) {
    for (int k = 0; k < n; k++) {
      at_session_destroy(sess[k]);
      at_session_destroy(solo[k]);
      free(names[k]);
    }
    return rc;
  }
  if (first_index) *first_index = e->n_variants;
  for (int k = 0; k < n; k++) {
    e->variants[e->n_variants].name = names[k];
    e->variants[e->n_variants].session = sess[k];
    e->variants[e->n_variants].solo = solo[k];
    e->n_variants++;
    at_log(AT_LOG_INFO, "engine", "loaded variant '%s' from %s%s", specs[k].name,
           specs[k].model_path, solo[k] ? " (and its idle-pool session)" : "");
  }
  return AT_OK;
}

at_status at_engine_add_variant(at_engine *e, const char *name, const char *model_path,
                                const at_session_params *sp, int *out_index) {
  if (!e || !name || !model_path)
    return at_fail(AT_ERR_INVALID_ARG, "engine, name and model_path are required");
  at_variant_spec one = {.name = name, .model_path = model_path, .sp = sp};
  return at_engine_add_variants(e, &one, 1, 1, out_index, NULL);
}

int at_engine_variant_count(const at_engine *e) { return e ? e->n_variants : 0; }

const char *at_engine_variant_name(const at_engine *e, int i) {
  return (e && i >= 0 && i < e->n_variants) ? e->variants[i].name : NULL;
}

const at_model_info *at_engine_variant_info(const at_engine *e, int i) {
  return (e && i >= 0 && i < e->n_variants) ? at_session_info(e->variants[i].session) : NULL;
}

at_session *at_engine_variant_session(at_engine *e, int i) {
  return (e && i >= 0 && i < e->n_variants) ? e->variants[i].session : NULL;
}

/* The calling thread's CPU time (a system call on Linux, not the vDSO:
 * 0.52 us per call on the 2-vCPU EPYC VM, so about 1 us per Run, 0.25 % of
 * an 11-token Run). */
static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void run_one(at_engine *e, request *r) {
  /* peers: the Runs already going when this one starts, plus those that
   * start before it ends (counted through the start sequence). */
  uint64_t seq = atomic_fetch_add(&e->run_starts, 1);
  int before = atomic_fetch_add(&e->running, 1);
  engine_variant *v = &e->variants[r->variant];
  at_session *s = v->session;
  if (v->solo && before == 0) { /* nothing else running: this Run may use the idle cores */
    s = v->solo;
    atomic_fetch_add(&e->solo_runs, 1);
  }
  uint64_t cpu0 = thread_cpu_ns();
  r->timing.started_ns = at_now_ns();
  at_outputs *outs = NULL;
  at_status rc = at_fault_engine_run() /* tests only: ANYTIME_FAULTS */
                     ? AT_ERR_ORT
                     : at_session_run(s, r->inputs, r->n_in, r->n_out ? r->out_names : NULL,
                                      r->n_out, &outs);
  r->timing.finished_ns = at_now_ns();
  uint64_t cpu1 = thread_cpu_ns();
  atomic_fetch_add_explicit(&e->run_cpu_ns, cpu1 - cpu0, memory_order_relaxed);
  atomic_fetch_add_explicit(&e->run_wall_ns, r->timing.finished_ns - r->timing.started_ns,
                            memory_order_relaxed);
  atomic_fetch_add_explicit(&e->runs_done, 1, memory_order_relaxed);
  uint64_t during = atomic_load(&e->run_starts) - seq - 1;
  atomic_fetch_sub(&e->running, 1);
  uint64_t peers = (uint64_t)before + during;
  int cap = e->p.n_workers - 1;
  r->timing.peers = peers > (uint64_t)cap ? cap : (int)peers;
  if (rc == AT_OK) {
    r->done(r->user, AT_OK, outs, &r->timing, "");
    at_outputs_free(outs);
  } else {
    r->done(r->user, rc, NULL, &r->timing, at_last_error());
  }
}

static void *worker_main(void *arg) {
  at_engine *e = arg;
  at_thread_name("at-worker");
  pthread_mutex_lock(&e->lock);
  for (;;) {
    while (e->ring_count == 0 && !e->stopping) pthread_cond_wait(&e->work, &e->lock);
    if (e->ring_count == 0) break; /* stopping and drained */
    size_t idx = e->ring[e->ring_head];
    e->ring_head = (e->ring_head + 1) % e->p.queue_capacity;
    e->ring_count--;
    pthread_mutex_unlock(&e->lock);

    run_one(e, &e->slots[idx]);

    pthread_mutex_lock(&e->lock);
    e->slots[idx].next_free = e->free_head;
    e->free_head = idx;
    e->pending--;
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

at_status at_engine_start(at_engine *e) {
  if (!e) return at_fail(AT_ERR_INVALID_ARG, "engine is NULL");
  if (e->started) return at_fail(AT_ERR_STATE, "engine already started");
  if (e->n_variants == 0) return at_fail(AT_ERR_STATE, "engine has no variants");
  for (int i = 0; i < e->p.n_workers; i++) {
    if (pthread_create(&e->threads[i], NULL, worker_main, e) != 0) {
      pthread_mutex_lock(&e->lock);
      e->stopping = 1;
      pthread_cond_broadcast(&e->work);
      pthread_mutex_unlock(&e->lock);
      for (int j = 0; j < i; j++) pthread_join(e->threads[j], NULL);
      e->n_threads = 0;
      return at_fail(AT_ERR_THREAD, "could not start worker thread %d", i);
    }
    e->n_threads = i + 1;
  }
  pthread_mutex_lock(&e->lock);
  e->started = 1;
  pthread_mutex_unlock(&e->lock);
  return AT_OK;
}

at_status at_engine_submit(at_engine *e, int variant, const at_tensor *inputs,
                           size_t n_inputs, const char *const *output_names,
                           size_t n_outputs, at_done_fn done, void *user) {
  if (!e || !done) return at_fail(AT_ERR_INVALID_ARG, "engine and callback are required");
  if (variant < 0 || variant >= e->n_variants)
    return at_fail(AT_ERR_INVALID_ARG, "no variant %d (engine has %d)", variant, e->n_variants);
  if (n_inputs > AT_MAX_INPUTS || (n_inputs && !inputs))
    return at_fail(AT_ERR_INVALID_ARG, "%zu inputs given; at most %d", n_inputs, AT_MAX_INPUTS);
  if (output_names && n_outputs > AT_MAX_OUTPUTS)
    return at_fail(AT_ERR_INVALID_ARG, "%zu outputs requested; at most %d", n_outputs,
                   AT_MAX_OUTPUTS);
  at_session *s = e->variants[variant].session;
  const at_model_info *info = at_session_info(s);
  /* Resolve names now, so the request does not depend on the caller's
   * name strings and unknown names fail at submit rather than in a worker. */
  const char *in_names[AT_MAX_INPUTS];
  for (size_t i = 0; i < n_inputs; i++) {
    int k = at_session_input_index(s, inputs[i].name);
    if (k < 0)
      return at_fail(AT_ERR_SHAPE, "variant '%s' has no input named '%s'",
                     e->variants[variant].name, inputs[i].name ? inputs[i].name : "(null)");
    in_names[i] = info->inputs[k].name;
  }
  size_t nout = output_names ? n_outputs : 0;
  const char *out_names[AT_MAX_OUTPUTS];
  for (size_t i = 0; i < nout; i++) {
    int k = at_session_output_index(s, output_names[i]);
    if (k < 0)
      return at_fail(AT_ERR_NOT_FOUND, "variant '%s' has no output named '%s'",
                     e->variants[variant].name, output_names[i] ? output_names[i] : "(null)");
    out_names[i] = info->outputs[k].name;
  }
  uint64_t now = at_now_ns();

  pthread_mutex_lock(&e->lock);
  if (e->stopping) {
    pthread_mutex_unlock(&e->lock);
    return at_fail(AT_ERR_SHUTDOWN, "engine is shutting down");
  }
  if (!e->started) {
    pthread_mutex_unlock(&e->lock);
    return at_fail(AT_ERR_STATE, "engine not started");
  }
  if (e->free_head == SIZE_MAX) {
    pthread_mutex_unlock(&e->lock);
    return at_fail(AT_ERR_QUEUE_FULL, "%zu requests already admitted", e->p.queue_capacity);
  }
  size_t idx = e->free_head;
  request *r = &e->slots[idx];
  e->free_head = r->next_free;
  r->variant = variant;
  r->n_in = n_inputs;
  for (size_t i = 0; i < n_inputs; i++) {
    r->inputs[i] = inputs[i];
    r->inputs[i].name = in_names[i];
  }
  r->n_out = nout;
  for (size_t i = 0; i < nout; i++) r->out_names[i] = out_names[i];
  r->done = done;
  r->user = user;
  r->timing.submitted_ns = now;
  r->timing.started_ns = r->timing.finished_ns = 0;
  r->timing.peers = 0;
  e->ring[(e->ring_head + e->ring_count) % e->p.queue_capacity] = idx;
  e->ring_count++;
  e->pending++;
  pthread_cond_signal(&e->work);
  pthread_mutex_unlock(&e->lock);
  return AT_OK;
}

int at_engine_worker_count(const at_engine *e) { return e ? e->p.n_workers : 0; }

at_engine_totals at_engine_totals_get(const at_engine *e) {
  at_engine_totals t = {0, 0, 0};
  if (!e) return t;
  at_engine *m = (at_engine *)e; /* atomics only */
  t.runs = atomic_load(&m->runs_done);
  t.run_wall_ns = atomic_load(&m->run_wall_ns);
  t.run_cpu_ns = atomic_load(&m->run_cpu_ns);
  return t;
}

uint64_t at_engine_solo_runs(const at_engine *e) {
  return e ? atomic_load(&((at_engine *)e)->solo_runs) : 0;
}

size_t at_engine_pending(const at_engine *e) {
  if (!e) return 0;
  at_engine *m = (at_engine *)e; /* the lock is the only thing mutated */
  pthread_mutex_lock(&m->lock);
  size_t n = m->pending;
  pthread_mutex_unlock(&m->lock);
  return n;
}

void at_engine_destroy(at_engine *e) {
  if (!e) return;
  pthread_mutex_lock(&e->lock);
  e->stopping = 1;
  pthread_cond_broadcast(&e->work);
  pthread_mutex_unlock(&e->lock);
  for (int i = 0; i < e->n_threads; i++) pthread_join(e->threads[i], NULL);
  for (int i = 0; i < e->n_variants; i++) {
    at_session_destroy(e->variants[i].session);
    at_session_destroy(e->variants[i].solo);
    free(e->variants[i].name);
  }
  pthread_cond_destroy(&e->work);
  pthread_mutex_destroy(&e->lock);
  free(e->slots);
  free(e->ring);
  free(e->threads);
  free(e);
}
