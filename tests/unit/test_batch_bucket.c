/* tests/unit/test_batch_bucket.c — length-bucketed batching
 * (at_batch_pick() and the batcher with at_bucketing on).
 *
 * Three checks:
 *   - the rule as a pure function: worked cases, then 20 000 random queues
 *     against its stated properties (the oldest item and every overdue item
 *     go; without overdue items every batch keeps k x longest <= factor x
 *     real tokens; picks are distinct, ascending and in the window; a
 *     factor of 0 is arrival order);
 *   - a concurrency cross-check: 8 threads submit 1 200 texts of mixed
 *     length (single items and groups through at_batcher_submit_n) to a
 *     bucketed batcher over 2 workers; every item completes exactly once
 *     with the outputs of the same text run alone through a plain session
 *     (within 1e-5), every batch keeps the padding bound, nothing stays
 *     queued, and bucketing really padded less than arrival order did on
 *     the same submissions;
 *   - the starvation bound: with the only worker held inside a callback, a
 *     long text that a batch passed over goes, once overdue, in the next
 *     batch although the padding bound would keep it out; with a longer
 *     max_wait_us it does not.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "anytime/batcher.h"
#include "testutil.h"

/* ------------------------------------------------------------ the rule */

static void test_pick_worked_cases(void **state) {
  (void)state;
  int pick[8];
  /* 10, 11, 12 share a batch within 1.25x; 40 and 39 would pad it 3x */
  size_t lens[5] = {10, 40, 11, 39, 12};
  assert_int_equal(at_batch_pick(lens, NULL, 5, 4, 1.25, pick), 3);
  assert_int_equal(pick[0], 0), assert_int_equal(pick[1], 2), assert_int_equal(pick[2], 4);
  /* off: arrival order, whatever the lengths */
  assert_int_equal(at_batch_pick(lens, NULL, 5, 4, 0, pick), 4);
  for (int i = 0; i < 4; i++) assert_int_equal(pick[i], i);
  /* the oldest goes even when it pads everything else out */
  size_t lens2[4] = {100, 5, 5, 5};
  assert_int_equal(at_batch_pick(lens2, NULL, 4, 4, 1.5, pick), 1);
  assert_int_equal(pick[0], 0);
  /* an overdue item goes regardless of the bound */
  bool od[4] = {false, false, false, true};
  size_t lens3[4] = {5, 5, 5, 100};
  assert_int_equal(at_batch_pick(lens3, od, 4, 4, 1.1, pick), 2);
  assert_int_equal(pick[0], 0), assert_int_equal(pick[1], 3);
  /* equal lengths: the first max_batch, as arrival order would */
  size_t lens4[6] = {7, 7, 7, 7, 7, 7};
  assert_int_equal(at_batch_pick(lens4, NULL, 6, 4, 1.0, pick), 4);
  for (int i = 0; i < 4; i++) assert_int_equal(pick[i], i);
  assert_int_equal(at_batch_pick(lens4, NULL, 0, 4, 1.0, pick), 0);
}

static uint64_t lcg(uint64_t *x) {
  *x = *x * 6364136223846793005ull + 1442695040888963407ull;
  return *x >> 33;
}

/* One random queue against the rule's properties. */
static void check_random_pick(uint64_t *x) {
  size_t n = 1 + lcg(x) % 160, len[160];
  bool od[160];
  int B = 1 + (int)(lcg(x) % 16), pick[16];
  double f = lcg(x) % 4 == 0 ? 0 : 1.0 + (double)(lcg(x) % 100) / 50.0;
  bool any_od = lcg(x) % 2;
  for (size_t i = 0; i < n; i++) {
    len[i] = 1 + lcg(x) % 64;
    od[i] = any_od && lcg(x) % 8 == 0;
  }
  size_t w = n < AT_BATCH_PICK_WINDOW ? n : AT_BATCH_PICK_WINDOW;
  int k = at_batch_pick(len, od, n, B, f, pick);
  assert_true(k >= 1 && k <= B && (size_t)k <= w);
  assert_int_equal(pick[0], 0);
  size_t L = 0, real = 0;
  for (int j = 0; j < k; j++) {
    assert_true(pick[j] >= 0 && (size_t)pick[j] < w);
    if (j) assert_true(pick[j] > pick[j - 1]);
    real += len[pick[j]];
    if (len[pick[j]] > L) L = len[pick[j]];
  }
  if (f <= 0) {
    assert_int_equal(k, (size_t)B < w ? B : (int)w);
    return;
  }
  int must = 0; /* the oldest and the overdue ones, arrival order, up to B */
  for (size_t i = 0; i < w && must < B; i++) {
    if (i && !od[i]) continue;
    bool in = false;
    for (int j = 0; j < k; j++) in |= (size_t)pick[j] == i;
    if (!in) fail_msg("item %zu (oldest or overdue) left out", i);
    must++;
  }
  if (must == 1 && (double)k * (double)L > f * (double)real)
    fail_msg("batch of %d, longest %zu, %zu real tokens breaks factor %.2f", k, L, real, f);
}

static void test_pick_random_properties(void **state) {
  (void)state;
  uint64_t x = 42;
  for (int r = 0; r < 20000; r++) check_random_pick(&x);
}

/* ---------------------------------------------- the concurrency cross-check */

#define N 1200
#define MAXL 40
#define THREADS 8

typedef struct {
  int64_t ids[MAXL];
  size_t len;
  float ref[3], got[3];
  size_t padded_len;
  int batch_size;
  uint64_t dispatched_ns, started_ns;
  atomic_int calls;
} item_t;

static item_t g_items[N];

static void on_item(void *user, at_status st, const at_item_result *r, const char *err) {
  item_t *it = user;
  if (st != AT_OK) fail_msg("item failed: %s", err);
  memcpy(it->got, r->outputs[0].data, 3 * sizeof(float));
  it->padded_len = r->padded_len;
  it->batch_size = r->batch_size;
  it->dispatched_ns = r->dispatched_ns;
  it->started_ns = r->started_ns;
  atomic_fetch_add(&it->calls, 1);
}

/* Random texts and their outputs run alone through a plain session. */
static void make_items(void) {
  uint64_t x = 777;
  at_session *ref = NULL;
  assert_int_equal(at_session_create(test_data("models/tiny_encoder.onnx"), NULL, &ref), AT_OK);
  for (int i = 0; i < N; i++) {
    item_t *it = &g_items[i];
    it->len = 1 + lcg(&x) % MAXL;
    int64_t mask[MAXL];
    for (size_t k = 0; k < it->len; k++) it->ids[k] = 1 + (int64_t)(lcg(&x) % 99), mask[k] = 1;
    at_tensor in[2] = {
        {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, (int64_t)it->len},
         .data = it->ids},
        {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2,
         .shape = {1, (int64_t)it->len}, .data = mask},
    };
    at_outputs *o;
    assert_int_equal(at_session_run(ref, in, 2, NULL, 0, &o), AT_OK);
    at_tensor t;
    at_outputs_get(o, 0, &t);
    memcpy(it->ref, t.data, 3 * sizeof(float));
    at_outputs_free(o);
  }
  at_session_destroy(ref);
}

typedef struct {
  at_batcher *b;
  int id;
} submitter;

/* Thread `id` submits items id, id + THREADS, ... : singles, and groups of
 * up to 4 of its own through at_batcher_submit_n. */
static void *submit_main(void *arg) {
  submitter *s = arg;
  int mine[N / THREADS + 1], n = 0;
  for (int i = s->id; i < N; i += THREADS) mine[n++] = i;
  for (int j = 0; j < n;) {
    int g = 1 + (j % 5 == 0 ? 3 : 0);
    if (j + g > n) g = n - j;
    at_batch_item bi[4];
    for (int q = 0; q < g; q++) {
      item_t *it = &g_items[mine[j + q]];
      bi[q] = (at_batch_item){.input_ids = it->ids, .len = it->len, .done = on_item, .user = it};
    }
    at_status st;
    while ((st = at_batcher_submit_n(s->b, 0, bi, (size_t)g)) == AT_ERR_QUEUE_FULL) usleep(50);
    assert_int_equal(st, AT_OK);
    j += g;
  }
  return NULL;
}

static at_engine *tiny_engine(int workers) {
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = workers;
  at_engine *e;
  assert_int_equal(at_engine_create(&ep, &e), AT_OK);
  assert_int_equal(
      at_engine_add_variant(e, "tiny", test_data("models/tiny_encoder.onnx"), NULL, NULL), AT_OK);
  assert_int_equal(at_engine_start(e), AT_OK);
  return e;
}

/* Run every item through a batcher with this bucketing from THREADS
 * threads; returns the padded tokens summed over items. */
static size_t run_all(at_engine *e, at_bucketing bk) {
  for (int i = 0; i < N; i++) {
    atomic_store(&g_items[i].calls, 0);
    memset(g_items[i].got, 0, sizeof g_items[i].got);
  }
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = 8;
  bp.max_queue_delay_us = 2000;
  bp.max_seq_len = MAXL;
  bp.max_queued_items = 256;
  bp.bucketing = bk;
  at_batcher *b;
  assert_int_equal(at_batcher_create(e, &bp, &b), AT_OK);
  pthread_t th[THREADS];
  submitter sub[THREADS];
  for (int t = 0; t < THREADS; t++) {
    sub[t] = (submitter){b, t};
    assert_int_equal(pthread_create(&th[t], NULL, submit_main, &sub[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  at_batcher_destroy(b); /* drains */
  size_t padded = 0;
  for (int i = 0; i < N; i++) {
    item_t *it = &g_items[i];
    assert_int_equal(atomic_load(&it->calls), 1);
    for (int k = 0; k < 3; k++)
      if (fabs((double)it->ref[k] - (double)it->got[k]) > 1e-5)
        fail_msg("item %d (len %zu, batch %d): output %d differs from the plain session", i,
                 it->len, it->batch_size, k);
    padded += it->padded_len;
  }
  return padded;
}

/* Every batch (items with the same dispatch and start times) keeps
 * size x longest <= factor x real tokens. */
static void check_batches_bound(double f) {
  static bool seen[N];
  memset(seen, 0, sizeof seen);
  for (int i = 0; i < N; i++) {
    if (seen[i]) continue;
    size_t real = 0, L = 0;
    int k = 0;
    for (int j = i; j < N; j++) {
      if (g_items[j].dispatched_ns != g_items[i].dispatched_ns ||
          g_items[j].started_ns != g_items[i].started_ns)
        continue;
      seen[j] = true, k++, real += g_items[j].len;
      if (g_items[j].len > L) L = g_items[j].len;
    }
    assert_int_equal(k, g_items[i].batch_size);
    assert_int_equal(L, g_items[i].padded_len);
    if ((double)k * (double)L > f * (double)real)
      fail_msg("a batch of %d texts padded to %zu holds only %zu real tokens (factor %.2f)", k, L,
               real, f);
  }
}

static void test_concurrent_cross_check(void **state) {
  (void)state;
  make_items();
  at_engine *e = tiny_engine(2);
  /* no item becomes overdue here, so every batch must keep the bound */
  at_bucketing on = {.max_pad_factor = 1.25, .max_wait_us = 60 * 1000 * 1000};
  at_bucketing off = {.max_pad_factor = 0, .max_wait_us = 0};
  size_t pad_on = run_all(e, on);
  check_batches_bound(on.max_pad_factor);
  int batched = 0;
  for (int i = 0; i < N; i++) batched += g_items[i].batch_size > 1;
  size_t pad_off = run_all(e, off);
  size_t real = 0;
  for (int i = 0; i < N; i++) real += g_items[i].len;
  print_message("bucketed: %d of %d texts in batches > 1; padded/real tokens %.3f bucketed, "
                "%.3f arrival order\n",
                batched, N, (double)pad_on / (double)real, (double)pad_off / (double)real);
  assert_true(batched > 0);
  assert_true((double)pad_on <= 1.25 * (double)real);
  at_engine_destroy(e);
}

/* ------------------------------------------------------- the starvation bound */

typedef struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  int entered, release;
} gate_t;

static gate_t g_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

/* The blocker's callback: holds the only worker until the test releases it. */
static void on_block(void *user, at_status st, const at_item_result *r, const char *err) {
  (void)user, (void)st, (void)r, (void)err;
  pthread_mutex_lock(&g_gate.m);
  g_gate.entered = 1;
  pthread_cond_broadcast(&g_gate.c);
  while (!g_gate.release) pthread_cond_wait(&g_gate.c, &g_gate.m);
  pthread_mutex_unlock(&g_gate.m);
}

static atomic_int g_left;
static uint64_t g_disp[32];
static void on_rec(void *user, at_status st, const at_item_result *r, const char *err) {
  (void)err;
  assert_int_equal(st, AT_OK);
  g_disp[(intptr_t)user] = r->dispatched_ns;
  atomic_fetch_sub(&g_left, 1);
}

/* Queue, behind a held worker: the oldest A (3 tokens), Y (20), X (40),
 * then 20 short texts (3). The first batch is A and seven short ones (Y
 * and X pad too much); Y and X were among its first max_batch_size, so
 * they are passed over from then. The next batch is anchored on Y, which
 * X (40 beside 20) and the shorts (3 beside 20) would pad past 1.1x: X
 * joins it only as overdue. Returns whether X ran in Y's batch. */
static bool passed_over_goes_next(int max_wait_us) {
  at_engine *e = tiny_engine(1);
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = 8;
  bp.max_seq_len = MAXL;
  bp.bucketing = (at_bucketing){.max_pad_factor = 1.1, .max_wait_us = max_wait_us};
  at_batcher *b;
  assert_int_equal(at_batcher_create(e, &bp, &b), AT_OK);
  static int64_t ids[MAXL];
  for (int i = 0; i < MAXL; i++) ids[i] = 1 + i;
  g_gate.entered = g_gate.release = 0;
  at_batch_item blk = {.input_ids = ids, .len = 2, .done = on_block};
  assert_int_equal(at_batcher_submit(b, 0, &blk), AT_OK);
  pthread_mutex_lock(&g_gate.m);
  while (!g_gate.entered) pthread_cond_wait(&g_gate.c, &g_gate.m);
  pthread_mutex_unlock(&g_gate.m);
  enum { NQ = 23 };
  atomic_store(&g_left, NQ);
  at_batch_item q[NQ];
  for (int i = 0; i < NQ; i++)
    q[i] = (at_batch_item){.input_ids = ids, .len = i == 1 ? 20 : i == 2 ? MAXL : 3,
                           .done = on_rec, .user = (void *)(intptr_t)i};
  assert_int_equal(at_batcher_submit_n(b, 0, q, NQ), AT_OK);
  assert_int_equal(at_batcher_queued(b, 0), NQ);
  pthread_mutex_lock(&g_gate.m);
  g_gate.release = 1;
  pthread_cond_broadcast(&g_gate.c);
  pthread_mutex_unlock(&g_gate.m);
  at_batcher_destroy(b);
  at_engine_destroy(e);
  assert_int_equal(atomic_load(&g_left), 0);
  assert_true(g_disp[1] != g_disp[0]); /* Y was passed over by A's batch */
  assert_true(g_disp[2] != g_disp[0]);
  return g_disp[2] == g_disp[1];
}

static void test_overdue_goes_next(void **state) {
  (void)state;
  /* max_wait_us 0: passed over once is overdue: X goes beside Y */
  assert_true(passed_over_goes_next(0));
  /* 10 s: not yet overdue, so the bound keeps X out of Y's batch */
  assert_false(passed_over_goes_next(10 * 1000 * 1000));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pick_worked_cases),
      cmocka_unit_test(test_pick_random_properties),
      cmocka_unit_test(test_concurrent_cross_check),
      cmocka_unit_test(test_overdue_goes_next),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
