/* tests/unit/test_engine.c — the engine against an independent reference.
 *
 * The cross-check: a separately created plain session, run serially on this
 * thread, computes the reference outputs for N_REQ mixed requests (batch
 * 1..4, sequence 1..24, random ids and padding). The same inputs then go
 * through the serving path — SUBMITTERS threads submitting concurrently into
 * an engine whose WORKERS threads share one session — and every output must
 * be bitwise identical to the reference. Also: errors reach the callback,
 * queue-full is reported, and destroy drains every admitted request. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "anytime/anytime.h"
#include "testutil.h"

#define N_REQ 1200
#define SUBMITTERS 4
#define WORKERS 4
#define MAX_B 4
#define MAX_S 24

typedef struct {
  int64_t ids[MAX_B * MAX_S], mask[MAX_B * MAX_S];
  int64_t b, s;
  float ref_logits[MAX_B * 3], ref_pooled[MAX_B * 16];
  float got_logits[MAX_B * 3], got_pooled[MAX_B * 16];
  at_tensor in[2];
  atomic_int done_count;
  at_status status;
} req;

static req g_reqs[N_REQ];
static atomic_int g_completed;
static at_engine *g_engine;

static void make_inputs(void) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < N_REQ; i++) {
    req *r = &g_reqs[i];
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    r->b = 1 + (int64_t)(x % MAX_B);
    r->s = 1 + (int64_t)((x >> 8) % MAX_S);
    for (int64_t k = 0; k < r->b * r->s; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      r->ids[k] = (int64_t)(x % 100);
    }
    for (int64_t bi = 0; bi < r->b; bi++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      int64_t len = 1 + (int64_t)(x % (uint64_t)r->s); /* real tokens, then padding */
      for (int64_t k = 0; k < r->s; k++) r->mask[bi * r->s + k] = k < len;
    }
    r->in[0] = (at_tensor){.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2,
                           .shape = {r->b, r->s}, .data = r->ids};
    r->in[1] = (at_tensor){.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2,
                           .shape = {r->b, r->s}, .data = r->mask};
    atomic_store(&r->done_count, 0);
    r->status = AT_OK;
  }
  atomic_store(&g_completed, 0);
}

static void copy_outputs(const at_outputs *o, float *logits, float *pooled, int64_t b) {
  at_tensor t;
  assert_int_equal(at_outputs_count(o), 2);
  assert_int_equal(at_outputs_get(o, 0, &t), AT_OK);
  assert_int_equal(t.shape[0], b);
  memcpy(logits, t.data, (size_t)b * 3 * sizeof(float));
  assert_int_equal(at_outputs_get(o, 1, &t), AT_OK);
  memcpy(pooled, t.data, (size_t)b * 16 * sizeof(float));
}

static void on_done(void *user, at_status st, const at_outputs *o, const at_timing *t,
                    const char *err) {
  req *r = user;
  r->status = st;
  if (st == AT_OK) copy_outputs(o, r->got_logits, r->got_pooled, r->b);
  if (!(t->submitted_ns <= t->started_ns && t->started_ns <= t->finished_ns)) r->status = -1;
  if (t->peers < 0 || t->peers > WORKERS - 1) r->status = -1; /* at most the other workers */
  atomic_fetch_add(&r->done_count, 1);
  atomic_fetch_add(&g_completed, 1);
}

static void *submitter(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int i = id; i < N_REQ; i += SUBMITTERS) {
    for (;;) {
      at_status s = at_engine_submit(g_engine, 0, g_reqs[i].in, 2, NULL, 0, on_done, &g_reqs[i]);
      if (s == AT_OK) break;
      if (s != AT_ERR_QUEUE_FULL) return (void *)1;
      sched_yield(); /* back-pressure: the small queue fills on purpose */
    }
  }
  return NULL;
}

/* The cross-check; idle > 0 gives the engine idle-pool sessions of that many
 * threads (idle_intra_op_threads), which must answer bitwise alike too. */
static void cross_check(int idle) {
  make_inputs();
  /* Reference path: its own session, one thread, serial. */
  at_session *ref = NULL;
  assert_int_equal(at_session_create(test_data("models/tiny_encoder.onnx"), NULL, &ref), AT_OK);
  for (int i = 0; i < N_REQ; i++) {
    at_outputs *o = NULL;
    assert_int_equal(at_session_run(ref, g_reqs[i].in, 2, NULL, 0, &o), AT_OK);
    copy_outputs(o, g_reqs[i].ref_logits, g_reqs[i].ref_pooled, g_reqs[i].b);
    at_outputs_free(o);
  }
  at_session_destroy(ref);

  /* Serving path. */
  at_engine_params p = at_engine_default_params();
  p.n_workers = WORKERS;
  p.queue_capacity = 64;
  p.idle_intra_op_threads = idle;
  assert_int_equal(at_engine_create(&p, &g_engine), AT_OK);
  assert_int_equal(at_engine_add_variant(g_engine, "tiny", test_data("models/tiny_encoder.onnx"),
                                         NULL, NULL),
                   AT_OK);
  assert_int_equal(at_engine_start(g_engine), AT_OK);
  pthread_t th[SUBMITTERS];
  for (int i = 0; i < SUBMITTERS; i++)
    pthread_create(&th[i], NULL, submitter, (void *)(intptr_t)i);
  for (int i = 0; i < SUBMITTERS; i++) {
    void *rv;
    pthread_join(th[i], &rv);
    assert_null(rv);
  }
  if (idle) {
    /* Then one request at a time: each finds the pool idle and takes the
     * solo session. (The concurrent phase above, whatever share of its
     * Runs overlapped, answers through both kinds.) */
    while (atomic_load(&g_completed) < N_REQ) sched_yield();
    uint64_t solo0 = at_engine_solo_runs(g_engine);
    for (int i = 0; i < 50; i++) {
      req *r = &g_reqs[i];
      int before = atomic_load(&r->done_count);
      assert_int_equal(at_engine_submit(g_engine, 0, r->in, 2, NULL, 0, on_done, r), AT_OK);
      while (atomic_load(&r->done_count) == before) sched_yield();
      atomic_fetch_sub(&r->done_count, 1); /* counted once below */
      atomic_fetch_sub(&g_completed, 1);
    }
    assert_int_equal(at_engine_solo_runs(g_engine) - solo0, 50);
  } else {
    assert_int_equal(at_engine_solo_runs(g_engine), 0);
  }
  /* The totals count every Run the callbacks saw; a Run's thread CPU is
   * read around its wall interval, so it exceeds the wall time by at most
   * the two clock reads (allowed: 1 ms per Run). With idle-pool sessions
   * a solo Run's other threads are not in it, so the bound holds too. */
  while (atomic_load(&g_completed) < N_REQ) sched_yield();
  at_engine_totals tot = at_engine_totals_get(g_engine);
  assert_int_equal(tot.runs, N_REQ + (idle ? 50 : 0));
  assert_true(tot.run_wall_ns > 0);
  assert_true(tot.run_cpu_ns > 0);
  assert_true(tot.run_cpu_ns <= tot.run_wall_ns + tot.runs * 1000000ull);
  at_engine_destroy(g_engine); /* drains */
  g_engine = NULL;
  assert_int_equal(atomic_load(&g_completed), N_REQ);
  int mismatches = 0;
  for (int i = 0; i < N_REQ; i++) {
    req *r = &g_reqs[i];
    assert_int_equal(atomic_load(&r->done_count), 1);
    assert_int_equal(r->status, AT_OK);
    if (memcmp(r->ref_logits, r->got_logits, (size_t)r->b * 3 * sizeof(float)) != 0 ||
        memcmp(r->ref_pooled, r->got_pooled, (size_t)r->b * 16 * sizeof(float)) != 0)
      mismatches++;
  }
  print_message("cross-check: %d requests, %d submitters, %d workers, idle-pool threads %d, "
                "%d bitwise mismatches\n", N_REQ, SUBMITTERS, WORKERS, idle, mismatches);
  assert_int_equal(mismatches, 0);
}

static void test_concurrent_matches_serial_reference(void **state) {
  (void)state;
  cross_check(0);
}

static void test_idle_pool_sessions_match(void **state) {
  (void)state;
  cross_check(2);
  at_engine_params p = at_engine_default_params();
  at_engine *e = NULL;
  p.idle_intra_op_threads = 1; /* 1 would be the plain session again: refused */
  assert_int_equal(at_engine_create(&p, &e), AT_ERR_INVALID_ARG);
}

static atomic_int g_err_calls;
static atomic_int g_lone_peers;
static void on_lone(void *user, at_status st, const at_outputs *o, const at_timing *t,
                    const char *err) {
  (void)user, (void)o, (void)err;
  atomic_store(&g_lone_peers, st == AT_OK ? t->peers : -100);
}

/* A Run with nothing else going has no peers (at_timing.peers feeds the
 * planner's part-pool correction factor). */
static void test_lone_run_has_no_peers(void **state) {
  (void)state;
  make_inputs();
  at_engine_params p = at_engine_default_params();
  p.n_workers = WORKERS;
  at_engine *e = NULL;
  assert_int_equal(at_engine_create(&p, &e), AT_OK);
  assert_int_equal(at_engine_add_variant(e, "tiny", test_data("models/tiny_encoder.onnx"), NULL, NULL),
                   AT_OK);
  assert_int_equal(at_engine_start(e), AT_OK);
  atomic_store(&g_lone_peers, -1);
  assert_int_equal(at_engine_submit(e, 0, g_reqs[0].in, 2, NULL, 0, on_lone, NULL), AT_OK);
  at_engine_destroy(e); /* drains */
  assert_int_equal(atomic_load(&g_lone_peers), 0);
}

static void on_err(void *user, at_status st, const at_outputs *o, const at_timing *t,
                   const char *err) {
  (void)t;
  assert_int_equal(st, AT_ERR_SHAPE);
  assert_null(o);
  assert_non_null(strstr(err, "float") ? err : strstr(err, "FP32") ? err : strstr(err, "INT64"));
  (void)user;
  atomic_fetch_add(&g_err_calls, 1);
}

static atomic_int g_drained;
static void on_drain(void *user, at_status st, const at_outputs *o, const at_timing *t,
                     const char *err) {
  (void)user, (void)o, (void)t, (void)err;
  if (st == AT_OK) atomic_fetch_add(&g_drained, 1);
}

static void test_errors_limits_and_drain(void **state) {
  (void)state;
  at_engine *e = NULL;
  at_engine_params p = at_engine_default_params();
  p.n_workers = 0;
  assert_int_equal(at_engine_create(&p, &e), AT_ERR_INVALID_ARG);
  p.n_workers = 1;
  p.queue_capacity = 8;
  assert_int_equal(at_engine_create(&p, &e), AT_OK);
  int64_t ids[2] = {1, 2}, mask[2] = {1, 1};
  at_tensor in[2] = {
      {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, 2}, .data = ids},
      {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, 2}, .data = mask},
  };
  assert_int_equal(at_engine_start(e), AT_ERR_STATE); /* no variants */
  assert_int_equal(at_engine_add_variant(e, "x", "/nonexistent.onnx", NULL, NULL), AT_ERR_NOT_FOUND);
  int idx = -1;
  assert_int_equal(at_engine_add_variant(e, "tiny", test_data("models/tiny_encoder.onnx"), NULL, &idx),
                   AT_OK);
  assert_int_equal(idx, 0);
  assert_string_equal(at_engine_variant_name(e, 0), "tiny");
  assert_int_equal(at_engine_submit(e, 0, in, 2, NULL, 0, on_drain, NULL), AT_ERR_STATE);
  assert_int_equal(at_engine_start(e), AT_OK);
  assert_int_equal(at_engine_add_variant(e, "late", test_data("models/tiny_encoder.onnx"), NULL, NULL),
                   AT_ERR_STATE);
  assert_int_equal(at_engine_submit(e, 1, in, 2, NULL, 0, on_drain, NULL), AT_ERR_INVALID_ARG);
  assert_int_equal(at_engine_submit(e, 0, in, 2, NULL, 0, NULL, NULL), AT_ERR_INVALID_ARG);
  const char *bad[] = {"nope"};
  assert_int_equal(at_engine_submit(e, 0, in, 2, bad, 1, on_drain, NULL), AT_ERR_NOT_FOUND);
  at_tensor wrong = in[0];
  wrong.name = "not_an_input";
  assert_int_equal(at_engine_submit(e, 0, &wrong, 1, NULL, 0, on_drain, NULL), AT_ERR_SHAPE);
  /* A shape error is only found by the session: it reaches the callback. */
  at_tensor badtype[2] = {in[0], in[1]};
  badtype[1].dtype = AT_DTYPE_FLOAT32;
  assert_int_equal(at_engine_submit(e, 0, badtype, 2, NULL, 0, on_err, NULL), AT_OK);
  /* Fill the queue: some submissions must be refused with QUEUE_FULL, and
   * every admitted one must complete before destroy returns. */
  int admitted = 0, full = 0;
  for (int i = 0; i < 200; i++) {
    at_status s = at_engine_submit(e, 0, in, 2, NULL, 0, on_drain, NULL);
    if (s == AT_OK) admitted++;
    else if (s == AT_ERR_QUEUE_FULL) full++;
    else fail_msg("unexpected status %s", at_status_name(s));
  }
  assert_true(full > 0);
  at_engine_destroy(e);
  assert_int_equal(atomic_load(&g_drained), admitted);
  assert_int_equal(atomic_load(&g_err_calls), 1);
  at_engine_destroy(NULL);
}


/* Loading several variants as one step: each is created on its own thread
 * (parallel 4), indices follow the list, and each answers exactly as a
 * session created alone on this thread does (the serial reference). A bad
 * file in the middle adds nothing, names its position and its path, and
 * leaves the engine as it was. */
static void test_add_variants_parallel(void **state) {
  (void)state;
  const char *paths[4] = {test_data("models/tiny_encoder.onnx"),
                          test_data("models/tiny_embedder.onnx"),
                          test_data("models/tiny_encoder.onnx"),
                          test_data("models/tiny_embedder.onnx")};
  char pcopy[4][4096];
  for (int k = 0; k < 4; k++) snprintf(pcopy[k], sizeof pcopy[k], "%s", paths[k]);
  const char *names[4] = {"a", "b", "c", "d"};
  at_engine_params p = at_engine_default_params();
  p.n_workers = 1;
  at_engine *e = NULL;
  assert_int_equal(at_engine_create(&p, &e), AT_OK);
  at_variant_spec spec[4];
  for (int k = 0; k < 4; k++) spec[k] = (at_variant_spec){names[k], pcopy[k], NULL};
  /* the third is missing: nothing is added, its position and path come back */
  spec[2].model_path = "/nonexistent/model.onnx";
  int first = -1, bad = -1;
  assert_int_equal(at_engine_add_variants(e, spec, 4, 4, &first, &bad), AT_ERR_NOT_FOUND);
  assert_int_equal(bad, 2);
  assert_non_null(strstr(at_last_error(), "/nonexistent/model.onnx"));
  assert_int_equal(at_engine_variant_count(e), 0);
  spec[2].model_path = pcopy[2];
  assert_int_equal(at_engine_add_variant(e, "first", pcopy[0], NULL, NULL), AT_OK);
  assert_int_equal(at_engine_add_variants(e, spec, 4, 4, &first, &bad), AT_OK);
  assert_int_equal(first, 1);
  assert_int_equal(bad, -1);
  assert_int_equal(at_engine_variant_count(e), 5);
  int64_t ids[6] = {5, 17, 3, 42, 8, 1}, mask[6] = {1, 1, 1, 1, 1, 0};
  at_tensor in[2] = {
      {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, 6}, .data = ids},
      {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, 6}, .data = mask},
  };
  for (int k = 0; k < 4; k++) {
    assert_string_equal(at_engine_variant_name(e, first + k), names[k]);
    at_session *ref = NULL;
    assert_int_equal(at_session_create(pcopy[k], NULL, &ref), AT_OK);
    at_outputs *want = NULL, *got = NULL;
    assert_int_equal(at_session_run(ref, in, 2, NULL, 0, &want), AT_OK);
    assert_int_equal(at_session_run(at_engine_variant_session(e, first + k), in, 2, NULL, 0, &got),
                     AT_OK);
    assert_int_equal(at_outputs_count(got), at_outputs_count(want));
    for (size_t o = 0; o < at_outputs_count(want); o++) {
      at_tensor a, b;
      at_outputs_get(want, o, &a);
      at_outputs_get(got, o, &b);
      size_t n = at_tensor_numel(&a, NULL);
      assert_int_equal(at_tensor_numel(&b, NULL), n);
      assert_memory_equal(a.data, b.data, n * at_dtype_size(a.dtype));
    }
    at_outputs_free(want);
    at_outputs_free(got);
    at_session_destroy(ref);
  }
  assert_int_equal(at_engine_add_variants(e, spec, 0, 2, NULL, NULL), AT_ERR_INVALID_ARG);
  assert_int_equal(at_engine_start(e), AT_OK);
  assert_int_equal(at_engine_add_variants(e, spec, 1, 2, NULL, NULL), AT_ERR_STATE);
  at_engine_destroy(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_matches_serial_reference),
      cmocka_unit_test(test_idle_pool_sessions_match),
      cmocka_unit_test(test_errors_limits_and_drain),
      cmocka_unit_test(test_lone_run_has_no_peers),
      cmocka_unit_test(test_add_variants_parallel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
