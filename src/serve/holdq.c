/* src/serve/holdq.c — refusals answered later: the rule (serve_hold_decide:
 * an identified client's request, from any connection, before the return
 * slot its last 429 gave, or, for a connection that is its client's own,
 * the same request again on it; client_id.h says who is identified) and the queue that carries it out
 * (suspended connections that a timer thread resumes at their due times;
 * server.hold_early_retries). A client that resends every 429 at once so
 * costs about one refusal per slot instead of as many as the cores can
 * turn round.
 *
 * DESIGN
 *   A binary min-heap of (due, connection) under one lock; one thread
 *   sleeps until the earliest due time (CLOCK_MONOTONIC, the clock of
 *   at_now_ns) and resumes every connection due by then — outside the
 *   lock, so MHD's resume (which wakes the daemon) never waits on it.
 *   Ownership: the queue owns neither connections nor requests; it only
 *   resumes, through the request's countdown (conn_wait.h: the due time is
 *   its one piece of work). The caller suspends the connection BEFORE
 *   adding it (as for inference), so a resume can never precede its
 *   suspend, and must keep the request alive until it is answered
 *   (server.c counts it in `inflight`, so shutdown waits for it).
 *   Shutdown: serve_holdq_flush() resumes everything now, and every later
 *   add resumes at once; the server flushes before it waits for its
 *   in-flight requests and destroys the queue before stopping MHD.
 *   Thread-safety: add/flush/len from any thread; destroy once, last.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "anytime/clock.h"
#include "core/internal.h"
#include "serve/holdq.h"

typedef struct hold {
  uint64_t due_ns;
  conn_countdown *wait;
} hold;

struct serve_holdq {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t thread;
  bool thread_started;
  hold *h; /* guarded by lock: the heap */
  size_t n, cap;
  bool flushed; /* guarded by lock: resume everything at once from now on */
  bool quit;    /* guarded by lock */
};

static void sift_up(hold *h, size_t i) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h[p].due_ns <= h[i].due_ns) break;
    hold t = h[p];
    h[p] = h[i], h[i] = t, i = p;
  }
}

static void sift_down(hold *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && h[l].due_ns < h[m].due_ns) m = l;
    if (l + 1 < n && h[l + 1].due_ns < h[m].due_ns) m = l + 1;
    if (m == i) return;
    hold t = h[m];
    h[m] = h[i], h[i] = t, i = m;
  }
}

static hold pop(serve_holdq *q) {
  hold top = q->h[0];
  q->h[0] = q->h[--q->n];
  sift_down(q->h, q->n, 0);
  return top;
}

uint64_t serve_body_sig(const char *b, size_t n) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
  size_t head = n < 256 ? n : 256, tail = n - head < 256 ? n - head : 256;
  for (size_t i = 0; i < head; i++) h = (h ^ (unsigned char)b[i]) * 1099511628211ull;
  for (size_t i = n - tail; i < n; i++) h = (h ^ (unsigned char)b[i]) * 1099511628211ull;
  return h | 1; /* never 0: 0 is "nothing refused yet" */
}

uint64_t serve_hold_until(uint64_t told_ns, uint64_t now, bool may_hold) {
  if (!may_hold || told_ns <= now) return 0;
  return told_ns - now < SERVE_HOLD_MAX_NS ? told_ns : now + SERVE_HOLD_MAX_NS;
}

uint64_t serve_hold_told(uint64_t now, double retry_after_s) {
  double ra = retry_after_s > 0 && retry_after_s < 3600 ? retry_after_s : 0;
  return now + (uint64_t)(ra * 1e9);
}

uint64_t serve_hold_decide(conn_state *cs, uint64_t now, double retry_after_s, uint64_t sig,
                           bool may_hold) {
  uint64_t until = cs->refused_sig == sig ? serve_hold_until(cs->told_ns, now, may_hold) : 0;
  cs->told_ns = serve_hold_told(now, retry_after_s);
  cs->refused_sig = sig;
  return until;
}

enum { BATCH = 64 }; /* connections resumed per trip out of the lock */

static void *run(void *arg) {
  serve_holdq *q = arg;
  at_thread_name("at-holdq");
  conn_countdown *due[BATCH];
  pthread_mutex_lock(&q->lock);
  while (!q->quit || q->n > 0) {
    size_t k = 0;
    uint64_t now = at_now_ns();
    while (q->n > 0 && k < BATCH && (q->flushed || q->h[0].due_ns <= now)) due[k++] = pop(q).wait;
    if (k > 0) {
      pthread_mutex_unlock(&q->lock);
      for (size_t i = 0; i < k; i++) conn_countdown_done(due[i], 1);
      pthread_mutex_lock(&q->lock);
      continue;
    }
    if (q->n == 0) {
      if (q->quit) break;
      pthread_cond_wait(&q->wake, &q->lock);
      continue;
    }
    struct timespec ts = {.tv_sec = (time_t)(q->h[0].due_ns / 1000000000u),
                          .tv_nsec = (long)(q->h[0].due_ns % 1000000000u)};
    pthread_cond_timedwait(&q->wake, &q->lock, &ts);
  }
  pthread_mutex_unlock(&q->lock);
  return NULL;
}

at_status serve_holdq_create(serve_holdq **out) {
  *out = NULL;
  serve_holdq *q = calloc(1, sizeof *q);
  if (!q) return at_fail(AT_ERR_NOMEM, "hold queue: out of memory");
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->wake, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&q->thread, NULL, run, q) != 0) {
    serve_holdq_destroy(q);
    return at_fail(AT_ERR_THREAD, "hold queue: cannot start its thread");
  }
  q->thread_started = true;
  *out = q;
  return AT_OK;
}

bool serve_holdq_add(serve_holdq *q, uint64_t due_ns, conn_countdown *wait) {
  pthread_mutex_lock(&q->lock);
  bool ok = !q->flushed && !q->quit;
  if (ok && q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 256;
    hold *nh = realloc(q->h, cap * sizeof *nh);
    if (nh) q->h = nh, q->cap = cap;
    else ok = false;
  }
  if (ok) {
    q->h[q->n] = (hold){.due_ns = due_ns, .wait = wait};
    sift_up(q->h, q->n++);
    if (q->h[0].wait == wait) pthread_cond_signal(&q->wake); /* a new earliest */
  }
  pthread_mutex_unlock(&q->lock);
  if (!ok) conn_countdown_done(wait, 1); /* stopping, or no memory: answer now */
  return ok;
}

void serve_holdq_flush(serve_holdq *q) {
  if (!q) return;
  pthread_mutex_lock(&q->lock);
  q->flushed = true;
  pthread_cond_signal(&q->wake);
  pthread_mutex_unlock(&q->lock);
}

size_t serve_holdq_len(serve_holdq *q) {
  if (!q) return 0;
  pthread_mutex_lock(&q->lock);
  size_t n = q->n;
  pthread_mutex_unlock(&q->lock);
  return n;
}

void serve_holdq_destroy(serve_holdq *q) {
  if (!q) return;
  pthread_mutex_lock(&q->lock);
  q->quit = q->flushed = true;
  pthread_cond_signal(&q->wake);
  pthread_mutex_unlock(&q->lock);
  if (q->thread_started) pthread_join(q->thread, NULL);
  pthread_mutex_destroy(&q->lock);
  pthread_cond_destroy(&q->wake);
  free(q->h);
  free(q);
}
