/* tests/unit/test_batcher.c — dynamic batching must not change answers.
 *
 * 400 items of mixed length (1..40 tokens) go through the batcher (max batch
 * 8, 3 ms queue delay, 2 workers) so they share padded batches; each item's
 * outputs must equal the same sequence run alone through a separate plain
 * session (batch 1, no padding) within 1e-5, with the same argmax. Also:
 * batches really formed, limits are enforced, and destroy drains; an item
 * left waiting for its delay while every worker is busy is still
 * dispatched once one frees (the timekeeper must hear of it); items given
 * together (at_batcher_submit_n) share a batch, and all or none of them is
 * queued; a batcher destroyed the moment its last callback has run is not
 * touched afterwards by the worker that ran it. That last check is a
 * stress loop, not a proof: against the version that had this
 * use-after-free, 2 of 60 runs of this file crashed (one in this test, one
 * in the first); the fixed version passed 250 of 250. */
#include <pthread.h>
#include <time.h>
#include <math.h>
#include <stdatomic.h>

#include "anytime/anytime.h"
#include "anytime/batcher.h"
#include "testutil.h"

#define N 400
#define MAXL 40

typedef struct {
  int64_t ids[MAXL];
  size_t len;
  float ref[3 + 16], got[3 + 16];
  int batch_size;
  atomic_int calls;
} item_t;

static item_t g_items[N];

static void on_item(void *user, at_status st, const at_item_result *r, const char *err) {
  item_t *it = user;
  if (st != AT_OK) fail_msg("item failed: %s", err);
  assert_int_equal(r->n_outputs, 2);
  assert_int_equal(r->outputs[0].shape[0], 1);
  memcpy(it->got, r->outputs[0].data, 3 * sizeof(float));
  memcpy(it->got + 3, r->outputs[1].data, 16 * sizeof(float));
  it->batch_size = r->batch_size;
  assert_true(r->enqueued_ns <= r->dispatched_ns && r->dispatched_ns <= r->started_ns);
  atomic_fetch_add(&it->calls, 1);
}

static int argmax3(const float *v) { return v[0] >= v[1] ? (v[0] >= v[2] ? 0 : 2) : (v[1] >= v[2] ? 1 : 2); }

static void test_batched_equals_unbatched(void **state) {
  (void)state;
  const char *model = test_data("models/tiny_encoder.onnx");
  uint64_t x = 12345;
  at_session *ref = NULL;
  assert_int_equal(at_session_create(model, NULL, &ref), AT_OK);
  for (int i = 0; i < N; i++) {
    item_t *it = &g_items[i];
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    it->len = 1 + (size_t)((x >> 33) % MAXL);
    int64_t mask[MAXL];
    for (size_t k = 0; k < it->len; k++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      it->ids[k] = 1 + (int64_t)((x >> 33) % 99);
      mask[k] = 1;
    }
    at_tensor in[2] = {
        {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, (int64_t)it->len}, .data = it->ids},
        {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, (int64_t)it->len}, .data = mask},
    };
    at_outputs *o;
    assert_int_equal(at_session_run(ref, in, 2, NULL, 0, &o), AT_OK);
    at_tensor t;
    at_outputs_get(o, 0, &t);
    memcpy(it->ref, t.data, 3 * sizeof(float));
    at_outputs_get(o, 1, &t);
    memcpy(it->ref + 3, t.data, 16 * sizeof(float));
    at_outputs_free(o);
  }
  at_session_destroy(ref);

  at_engine_params ep = at_engine_default_params();
  ep.n_workers = 2;
  at_engine *e;
  assert_int_equal(at_engine_create(&ep, &e), AT_OK);
  assert_int_equal(at_engine_add_variant(e, "tiny", model, NULL, NULL), AT_OK);
  assert_int_equal(at_engine_start(e), AT_OK);
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = 8;
  bp.max_queue_delay_us = 3000;
  bp.max_seq_len = MAXL;
  at_batcher *b;
  assert_int_equal(at_batcher_create(e, &bp, &b), AT_OK);

  at_batch_item bad = {.input_ids = g_items[0].ids, .len = MAXL + 1, .done = on_item};
  assert_int_equal(at_batcher_submit(b, 0, &bad), AT_ERR_INVALID_ARG);
  bad.len = 0;
  assert_int_equal(at_batcher_submit(b, 0, &bad), AT_ERR_INVALID_ARG);
  bad.len = 1;
  assert_int_equal(at_batcher_submit(b, 1, &bad), AT_ERR_INVALID_ARG);

  for (int i = 0; i < N; i++) {
    at_batch_item it = {.input_ids = g_items[i].ids, .len = g_items[i].len,
                        .done = on_item, .user = &g_items[i]};
    assert_int_equal(at_batcher_submit(b, 0, &it), AT_OK);
  }
  at_batcher_destroy(b); /* drains */
  at_engine_destroy(e);

  int batched = 0, argmax_diff = 0;
  double maxdiff = 0;
  for (int i = 0; i < N; i++) {
    item_t *it = &g_items[i];
    assert_int_equal(atomic_load(&it->calls), 1);
    if (it->batch_size > 1) batched++;
    for (int k = 0; k < 19; k++) {
      double d = fabs((double)it->ref[k] - (double)it->got[k]);
      if (d > maxdiff) maxdiff = d;
    }
    if (argmax3(it->ref) != argmax3(it->got)) argmax_diff++;
  }
  print_message("batcher: %d items, %d ran in batches > 1, max |diff| %.3g, argmax diffs %d\n",
                N, batched, maxdiff, argmax_diff);
  assert_true(batched > N / 2);
  assert_true(maxdiff <= 1e-5);
  assert_int_equal(argmax_diff, 0);
}

static void test_rejects_unbatchable_model(void **state) {
  (void)state;
  at_engine *e;
  assert_int_equal(at_engine_create(NULL, &e), AT_OK);
  assert_int_equal(at_engine_add_variant(e, "fixed", test_data("models/fixed_scale.onnx"), NULL, NULL), AT_OK);
  assert_int_equal(at_engine_start(e), AT_OK);
  at_batcher *b = NULL;
  assert_int_equal(at_batcher_create(e, NULL, &b), AT_ERR_UNSUPPORTED);
  assert_non_null(strstr(at_last_error(), "fixed"));
  assert_null(b);
  at_engine_destroy(e);
}

/* A countdown of callbacks with a bounded wait. */
typedef struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  int left, failed, max_batch;
} latch_t;

static void on_latch(void *user, at_status st, const at_item_result *r, const char *err) {
  (void)err;
  latch_t *l = user;
  pthread_mutex_lock(&l->m);
  if (st != AT_OK) l->failed++;
  else if (r->batch_size > l->max_batch) l->max_batch = r->batch_size;
  l->left--;
  pthread_cond_broadcast(&l->c);
  pthread_mutex_unlock(&l->m);
}

/* Wait up to `s` seconds for every callback; returns how many are missing. */
static int latch_wait(latch_t *l, int s) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += s;
  pthread_mutex_lock(&l->m);
  while (l->left > 0 && pthread_cond_timedwait(&l->c, &l->m, &ts) == 0) {}
  int left = l->left;
  pthread_mutex_unlock(&l->m);
  return left;
}

/* A started engine with `workers` workers over the tiny encoder. */
static at_engine *tiny_engine(int workers) {
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = workers;
  at_engine *e;
  assert_int_equal(at_engine_create(&ep, &e), AT_OK);
  assert_int_equal(at_engine_add_variant(e, "tiny", test_data("models/tiny_encoder.onnx"), NULL,
                                         NULL), AT_OK);
  assert_int_equal(at_engine_start(e), AT_OK);
  return e;
}

static void test_delay_items_dispatch_after_busy(void **state) {
  (void)state;
  at_engine *e = tiny_engine(1);
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = 4;
  bp.max_queue_delay_us = 2000;
  bp.max_seq_len = MAXL;
  bp.max_queued_items = 8;
  at_batcher *b;
  assert_int_equal(at_batcher_create(e, &bp, &b), AT_OK);
  static int64_t ids[MAXL];
  for (int i = 0; i < MAXL; i++) ids[i] = 1 + i % 50;
  for (int round = 0; round < 20; round++) {
    latch_t l = {.left = 5};
    pthread_mutex_init(&l.m, NULL);
    pthread_cond_init(&l.c, NULL);
    at_batch_item it[4];
    for (int i = 0; i < 4; i++)
      it[i] = (at_batch_item){.input_ids = ids, .len = MAXL, .done = on_latch, .user = &l};
    /* a full batch occupies the only worker; the fifth item arrives while
     * it runs and is not ready until its delay has passed */
    assert_int_equal(at_batcher_submit_n(b, 0, it, 4), AT_OK);
    at_batch_item one = {.input_ids = ids, .len = 3, .done = on_latch, .user = &l};
    assert_int_equal(at_batcher_submit(b, 0, &one), AT_OK);
    int missing = latch_wait(&l, 10);
    if (missing) fail_msg("round %d: %d item(s) never dispatched within 10 s", round, missing);
    assert_int_equal(l.failed, 0);
    assert_int_equal(l.max_batch, 4); /* the four given together ran as one batch */
    pthread_mutex_destroy(&l.m);
    pthread_cond_destroy(&l.c);
  }
  /* all or none: 9 items never fit a queue of 8, and none is queued */
  latch_t l = {.left = 0};
  pthread_mutex_init(&l.m, NULL);
  pthread_cond_init(&l.c, NULL);
  at_batch_item many[9];
  for (int i = 0; i < 9; i++)
    many[i] = (at_batch_item){.input_ids = ids, .len = 2, .done = on_latch, .user = &l};
  assert_int_equal(at_batcher_submit_n(b, 0, many, 9), AT_ERR_QUEUE_FULL);
  assert_int_equal(at_batcher_queued(b, -1), 0);
  many[3].len = MAXL + 1;
  assert_int_equal(at_batcher_submit_n(b, 0, many, 4), AT_ERR_INVALID_ARG);
  assert_int_equal(at_batcher_queued(b, -1), 0);
  at_batcher_destroy(b);
  at_engine_destroy(e);
  assert_int_equal(l.left, 0); /* no callback for anything refused */
  pthread_mutex_destroy(&l.m);
  pthread_cond_destroy(&l.c);
}

static atomic_int g_done;
static void on_flag(void *user, at_status st, const at_item_result *r, const char *err) {
  (void)user, (void)st, (void)r, (void)err;
  atomic_store(&g_done, 1);
}

/* Destroy a batcher as soon as its only item's callback has run, 300 times
 * over one engine: the worker that ran the callback must be done with the
 * batcher by the time destroy can free it. */
static void test_destroy_right_after_last_callback(void **state) {
  (void)state;
  at_engine *e = tiny_engine(2);
  at_batcher_params bp = at_batcher_default_params();
  bp.max_seq_len = MAXL;
  static int64_t ids[4] = {5, 6, 7, 8};
  for (int round = 0; round < 300; round++) {
    at_batcher *b;
    assert_int_equal(at_batcher_create(e, &bp, &b), AT_OK);
    atomic_store(&g_done, 0);
    at_batch_item it = {.input_ids = ids, .len = 4, .done = on_flag};
    assert_int_equal(at_batcher_submit(b, 0, &it), AT_OK);
    while (!atomic_load(&g_done)) {}
    at_batcher_destroy(b);
  }
  at_engine_destroy(e);
}

static atomic_int g_left;
static void on_count(void *user, at_status st, const at_item_result *r, const char *err) {
  (void)user, (void)st, (void)r, (void)err;
  atomic_fetch_sub(&g_left, 1);
}

/* The same with more batches than workers (batch size 1, 2 workers, 6
 * items): a worker that returns a batch dispatches the next one itself, and
 * that batch can finish on the other worker — and the test destroy the
 * batcher — before the dispatching worker takes again. It must not touch
 * the batcher after that. Under ASan the version that counted only batches
 * in flight freed the batcher under such a worker (heap-use-after-free in
 * take_ready_locked, seen in the profile test's 64-variant run, 1 run in 3,
 * 2026-12-02). The window is a few instructions wide: this stress did NOT
 * reproduce it in 3 x 2,000 rounds on the old code; it is kept as a check of
 * the path, not as the witness of the bug (the profile test is). */
static void test_destroy_while_a_worker_dispatches(void **state) {
  (void)state;
  at_engine *e = tiny_engine(2);
  at_batcher_params bp = at_batcher_default_params();
  bp.max_seq_len = MAXL;
  bp.max_batch_size = 1;
  static int64_t ids[4] = {5, 6, 7, 8};
  for (int round = 0; round < 500; round++) {
    at_batcher *b;
    assert_int_equal(at_batcher_create(e, &bp, &b), AT_OK);
    at_batch_item it[6];
    for (int i = 0; i < 6; i++) it[i] = (at_batch_item){.input_ids = ids, .len = 4, .done = on_count};
    atomic_store(&g_left, 6);
    assert_int_equal(at_batcher_submit_n(b, 0, it, 6), AT_OK);
    while (atomic_load(&g_left) > 0) {}
    at_batcher_destroy(b);
  }
  at_engine_destroy(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batched_equals_unbatched),
      cmocka_unit_test(test_destroy_right_after_last_callback),
      cmocka_unit_test(test_destroy_while_a_worker_dispatches),
      cmocka_unit_test(test_delay_items_dispatch_after_busy),
      cmocka_unit_test(test_rejects_unbatchable_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
