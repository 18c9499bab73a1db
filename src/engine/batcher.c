/* src/engine/batcher.c — dynamic batching in front of the engine (contract
 * in anytime/batcher.h).
 *
 * DESIGN
 *   Threads: submitters (HTTP threads) append items to per-variant rings;
 *     engine workers run batches and call batch_done(), which scatters rows
 *     to the items' callbacks and returns the batch to the pool. Whoever
 *     changes what can be dispatched closes and dispatches the ready batches
 *     itself (drive()): the submitter after appending, the worker after
 *     returning a batch. The batcher thread only keeps time: it closes
 *     batches whose oldest item reached max_queue_delay_us, and drains on
 *     stop. So with the default delay of 0 a request costs one hand-off
 *     (submitter -> worker) instead of three (submitter -> batcher thread ->
 *     worker -> batcher thread), and a busy worker takes its next batch
 *     without sleeping; each hand-off is a futex wake and two context
 *     switches, which on this VM cost tens of microseconds
 *     (results/benchmarks_history.md, "Hand-offs").
 *   When a batch closes: a variant is ready when it has max_batch_size items
 *     or its oldest item is max_queue_delay_us old; a ready variant is
 *     dispatched only while fewer than n_workers batches are in flight, so a
 *     busy engine makes batches grow rather than queue. Among ready variants
 *     the one with the oldest head item goes first (no starvation).
 *   Which items a batch takes: arrival order, unless the variant has length
 *     bucketing (at_bucketing.max_pad_factor > 0; off by default). Then
 *     at_batch_pick() (src/engine/batch_pick.c, where the choice of a padding
 *     bound over fixed buckets is argued) chooses among the first
 *     AT_BATCH_PICK_WINDOW queued items: the oldest and every overdue item
 *     always go; the others join, nearest length to the oldest first, while
 *     items x longest <= max_pad_factor x real tokens. The rest stay queued
 *     in arrival order (the ring is compacted in place, so the head is still
 *     the oldest and `count`/total_queued — what at_batcher_queued() gives
 *     the planner — count exactly what waits).
 *     Starvation bound, stated against arrival order: an item a batch leaves
 *     behind while it was among the first max_batch_size queued (where
 *     arrival order would have taken it) is "passed over" from then; once
 *     passed over for max_wait_us it is overdue and goes in its variant's
 *     next batch (behind at most the overdue items ahead of it,
 *     max_batch_size per batch); the oldest item always goes. So bucketing
 *     delays an item by at most max_wait_us, plus the batches that carry the
 *     overdue items ahead of it, beyond its arrival-order turn.
 *     (Not from enqueue: under a backlog older than max_wait_us every item
 *     would be overdue and bucketing would fall back to arrival order
 *     exactly when batches form.)
 *     Readiness (max_batch_size items or the head's max_queue_delay_us) is
 *     unchanged: a batch that bucketing leaves short still closes, and what
 *     it left behind is ready for the next free worker. Items of one
 *     at_batcher_submit_n() may so run in different batches; each still
 *     completes once.
 *   Memory: n_workers batch buffers, each sized for max_batch_size x
 *     max_seq_len, are allocated at create time; nothing is allocated per
 *     item or per batch afterwards.
 *   Invariants: inflight == batches taken from the pool; every item leaves
 *     through exactly one callback (from batch_done, or with an error when
 *     the engine refuses the batch).
 *   Lock: `lock` guards the rings, counts, pool, inflight and stopping; it is
 *     never held while padding, submitting or running callbacks.
 *   Lifetime: a worker scatters a batch's callbacks while the batch still
 *     counts as in flight, then returns it and takes the next in one hold of
 *     the lock (release_and_take); a thread holding a batch it took counts
 *     in `driving` until its next take; once that finds nothing, the worker never
 *     touches the batcher again, because destroy may free it as soon as
 *     nothing is in flight and no one is driving. (A first version returned the batch, unlocked,
 *     then locked again to look for more: destroy freed the batcher in that
 *     gap about once in 50 runs of test_batcher.)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anytime/batcher.h"
#include "core/internal.h"

typedef struct qitem {
  at_batch_item item;
  uint64_t enqueued_ns;
  uint64_t passed_ns; /* bucketing: when a batch first left it behind while it was
                         among the first max_batch_size queued; 0 = never */
} qitem;

typedef struct vqueue {
  qitem *ring;
  size_t head, count;
  int in_ids, in_mask, in_types; /* input positions in the model; -1 if absent */
  size_t n_inputs;
  at_bucketing bk; /* this variant's length bucketing (off: max_pad_factor 0) */
} vqueue;

typedef struct batch {
  struct at_batcher *owner;
  int variant, n;
  size_t padded;
  int64_t *ids, *mask, *types;
  qitem *items;
  uint64_t dispatched_ns;
  struct batch *next_free;
} batch;

struct at_batcher {
  at_engine *engine;
  at_batcher_params p;
  int n_variants, n_workers;
  vqueue *q;
  batch *batches;
  pthread_t thread;
  int thread_started;

  pthread_mutex_t lock;
  pthread_cond_t wake;   /* new item, finished batch, or stop */
  size_t total_queued;   /* guarded by lock */
  int inflight;          /* guarded by lock */
  int driving;           /* guarded by lock: threads between a release_and_take()
                            that handed them a batch and their next call (they
                            still use the batcher: dispatch, then take again) */
  batch *free_batches;   /* guarded by lock */
  int stopping;          /* guarded by lock */
};

at_batcher_params at_batcher_default_params(void) {
  at_batcher_params p;
  p.max_batch_size = 16;
  p.max_queue_delay_us = 0;
  p.max_queued_items = 4096;
  p.max_seq_len = 512;
  p.pad_id = 0;
  p.bucketing = (at_bucketing){.max_pad_factor = 0, .max_wait_us = 100000};
  p.per_variant = NULL;
  return p;
}

static void drive(at_batcher *b, batch *bt, batch *done);

/* Scatter a finished (or refused) batch to its items' callbacks. The batch
 * still counts as in flight (so the batcher cannot be destroyed meanwhile);
 * drive() returns it to the pool. */
static void scatter(batch *bt, at_status st, const at_outputs *outs, const at_timing *t,
                    const char *err) {
  at_tensor rows[AT_MAX_OUTPUTS];
  size_t nout = outs ? at_outputs_count(outs) : 0;
  size_t rowbytes[AT_MAX_OUTPUTS];
  at_tensor full[AT_MAX_OUTPUTS];
  if (st == AT_OK) {
    for (size_t k = 0; k < nout && k < AT_MAX_OUTPUTS; k++) {
      at_outputs_get(outs, k, &full[k]);
      size_t n = at_tensor_numel(&full[k], NULL);
      if (full[k].ndim == 0 || full[k].shape[0] != bt->n) {
        st = AT_ERR_SHAPE;
        err = "model output has no leading batch dimension; it cannot be batched";
        break;
      }
      rowbytes[k] = n / (size_t)bt->n * at_dtype_size(full[k].dtype);
    }
  }
  for (int i = 0; i < bt->n; i++) {
    qitem *qi = &bt->items[i];
    if (st != AT_OK) {
      qi->item.done(qi->item.user, st, NULL, err);
      continue;
    }
    for (size_t k = 0; k < nout; k++) {
      rows[k] = full[k];
      rows[k].shape[0] = 1;
      rows[k].data = (char *)full[k].data + (size_t)i * rowbytes[k];
    }
    at_item_result r = {.n_outputs = nout, .outputs = rows, .len = qi->item.len,
                        .batch_size = bt->n, .index_in_batch = i, .padded_len = bt->padded,
                        .enqueued_ns = qi->enqueued_ns, .dispatched_ns = bt->dispatched_ns,
                        .started_ns = t->started_ns, .finished_ns = t->finished_ns,
                        .peers = t->peers};
    qi->item.done(qi->item.user, AT_OK, &r, "");
  }
}

/* The engine's callback: scatter the batch, then this worker returns it and
 * closes the next ready batches itself (a freed slot is what they were
 * waiting for). */
static void batch_done(void *user, at_status st, const at_outputs *outs, const at_timing *t,
                       const char *err) {
  batch *bt = user;
  scatter(bt, st, outs, t, err);
  drive(bt->owner, NULL, bt);
}

/* Pad the batch's items into its tensors and hand it to the engine.
 * Returns AT_OK, or the engine's refusal (the batch is then still the
 * caller's: drive() fails its items and returns it). */
static at_status dispatch(at_batcher *b, batch *bt) {
  vqueue *q = &b->q[bt->variant];
  size_t L = 0;
  for (int i = 0; i < bt->n; i++)
    if (bt->items[i].item.len > L) L = bt->items[i].item.len;
  bt->padded = L;
  for (int i = 0; i < bt->n; i++) {
    const at_batch_item *it = &bt->items[i].item;
    int64_t *ids = bt->ids + (size_t)i * L, *mask = bt->mask + (size_t)i * L;
    int64_t *types = bt->types + (size_t)i * L;
    memcpy(ids, it->input_ids, it->len * sizeof *ids);
    for (size_t k = 0; k < it->len; k++) mask[k] = 1;
    for (size_t k = it->len; k < L; k++) ids[k] = b->p.pad_id, mask[k] = 0;
    if (q->in_types >= 0) {
      if (it->token_type_ids) memcpy(types, it->token_type_ids, it->len * sizeof *types);
      else memset(types, 0, it->len * sizeof *types);
      memset(types + it->len, 0, (L - it->len) * sizeof *types);
    }
  }
  const at_model_info *mi = at_engine_variant_info(b->engine, bt->variant);
  at_tensor in[3];
  size_t n = 0;
  int64_t *bufs[3] = {bt->ids, bt->mask, bt->types};
  int pos[3] = {q->in_ids, q->in_mask, q->in_types};
  for (int k = 0; k < 3; k++) {
    if (pos[k] < 0) continue;
    in[n] = (at_tensor){.name = mi->inputs[pos[k]].name, .dtype = AT_DTYPE_INT64, .ndim = 2,
                        .shape = {bt->n, (int64_t)L}, .data = bufs[k]};
    n++;
  }
  bt->dispatched_ns = at_now_ns();
  return at_engine_submit(b->engine, bt->variant, in, n, NULL, 0, batch_done, bt);
}

/* With `lock` held: move the first max_batch_size items of q (arrival
 * order) into out; returns how many. */
static int take_fifo_locked(at_batcher *b, vqueue *q, qitem *out) {
  int n = q->count < (size_t)b->p.max_batch_size ? (int)q->count : b->p.max_batch_size;
  for (int i = 0; i < n; i++) {
    out[i] = q->ring[q->head];
    q->head = (q->head + 1) % b->p.max_queued_items;
  }
  return n;
}

/* With `lock` held: move the items at_batch_pick() chooses among the first
 * AT_BATCH_PICK_WINDOW of q into out, in arrival order, and close the gaps
 * they leave (the kept items slide towards the tail, keeping their order,
 * so the head is still the oldest); returns how many. O(window) per batch,
 * no allocation. */
static int take_bucketed_locked(at_batcher *b, vqueue *q, qitem *out, uint64_t now) {
  size_t cap = b->p.max_queued_items;
  size_t w = q->count < AT_BATCH_PICK_WINDOW ? q->count : AT_BATCH_PICK_WINDOW;
  size_t len[AT_BATCH_PICK_WINDOW];
  bool overdue[AT_BATCH_PICK_WINDOW], taken[AT_BATCH_PICK_WINDOW] = {false};
  int pick[AT_BATCH_PICK_WINDOW];
  uint64_t wait_ns = (uint64_t)q->bk.max_wait_us * 1000u;
  for (size_t i = 0; i < w; i++) {
    const qitem *qi = &q->ring[(q->head + i) % cap];
    len[i] = qi->item.len;
    overdue[i] = qi->passed_ns && now >= qi->passed_ns + wait_ns;
  }
  int n = at_batch_pick(len, overdue, w, b->p.max_batch_size, q->bk.max_pad_factor, pick);
  for (int j = 0; j < n; j++) {
    out[j] = q->ring[(q->head + (size_t)pick[j]) % cap];
    taken[pick[j]] = true;
  }
  for (size_t i = 0; i < w && i < (size_t)b->p.max_batch_size; i++) { /* passed over */
    qitem *qi = &q->ring[(q->head + i) % cap];
    if (!taken[i] && !qi->passed_ns) qi->passed_ns = now;
  }
  size_t dst = w; /* slide the kept items of the window towards its end */
  for (size_t i = w; i-- > 0;)
    if (!taken[i]) q->ring[(q->head + --dst) % cap] = q->ring[(q->head + i) % cap];
  q->head = (q->head + (size_t)n) % cap;
  return n;
}

/* With `lock` held: close the ready variant whose head is oldest into a
 * batch from the pool and return it, or NULL when nothing may be dispatched
 * now (no free worker, or nothing ready). *next_ns (if not NULL) receives
 * the earliest time a not-yet-ready head becomes ready, or UINT64_MAX. */
static batch *take_ready_locked(at_batcher *b, uint64_t *next_ns) {
  uint64_t delay_ns = (uint64_t)b->p.max_queue_delay_us * 1000u;
  uint64_t now = at_now_ns(), next = UINT64_MAX;
  int pick = -1;
  uint64_t pick_age = 0;
  if (b->inflight < b->n_workers) {
    for (int v = 0; v < b->n_variants; v++) {
      vqueue *q = &b->q[v];
      if (!q->count) continue;
      uint64_t enq = q->ring[q->head].enqueued_ns;
      int ready =
          q->count >= (size_t)b->p.max_batch_size || now >= enq + delay_ns || b->stopping;
      if (ready && (pick < 0 || enq < pick_age)) pick = v, pick_age = enq;
      if (!ready && enq + delay_ns < next) next = enq + delay_ns;
    }
  }
  if (next_ns) *next_ns = next;
  if (pick < 0) return NULL;
  batch *bt = b->free_batches;
  b->free_batches = bt->next_free;
  vqueue *q = &b->q[pick];
  int n = q->bk.max_pad_factor > 0 ? take_bucketed_locked(b, q, bt->items, now)
                                   : take_fifo_locked(b, q, bt->items);
  q->count -= (size_t)n;
  b->total_queued -= (size_t)n;
  bt->variant = pick;
  bt->n = n;
  b->inflight++;
  return bt;
}

/* Under one hold of the lock: return `done` (a batch whose callbacks have
 * run) to the pool, then close the next ready batch and return it, or NULL.
 * Items left waiting for their delay are the timekeeper's: it is woken to
 * set its timer for them; on stop it is woken for every returned batch (the
 * drain waits for inflight == 0 and driving == 0). `held`: the caller is
 * done with the batch a previous call handed it (dispatched or failed), so
 * it stops counting in `driving`. After a call returns NULL the caller must
 * not touch `b` again: with nothing in flight and no one driving, destroy
 * may already be freeing it. (A batch dispatched by this thread can finish
 * on another worker before this thread takes again: counting only batches
 * in flight would let destroy free the batcher under it.) */
static batch *release_and_take(at_batcher *b, batch *done, bool held) {
  uint64_t next;
  pthread_mutex_lock(&b->lock);
  if (done) {
    done->next_free = b->free_batches;
    b->free_batches = done;
    b->inflight--;
  }
  if (held) b->driving--; /* the batch this thread took last time is handled */
  batch *bt = take_ready_locked(b, &next);
  if (bt) b->driving++;   /* the caller keeps using the batcher for it */
  if (!bt && (next != UINT64_MAX || (b->stopping && (done || held))))
    pthread_cond_signal(&b->wake);
  pthread_mutex_unlock(&b->lock);
  return bt;
}

/* Dispatch `bt` (if any) and every batch that may go after it, on the
 * calling thread, having first returned `done` (if any). A batch the
 * engine refuses fails its items here and goes back to the pool in the same
 * step as the next is taken, so nothing recurses and `b` stays in use only
 * while something is in flight. */
static void drive(at_batcher *b, batch *bt, batch *done) {
  if (done) bt = release_and_take(b, done, false);
  while (bt) {
    at_status st = dispatch(b, bt);
    if (st == AT_OK) {
      bt = release_and_take(b, NULL, true);
    } else {
      at_timing t = {bt->dispatched_ns, bt->dispatched_ns, bt->dispatched_ns, 0};
      scatter(bt, st, NULL, &t, at_last_error());
      bt = release_and_take(b, bt, true);
    }
  }
}

/* The timekeeper: closes batches whose oldest item has waited
 * max_queue_delay_us (release_and_take() wakes it whenever it leaves items
 * waiting for their delay) and drains the queues on stop. */
static void *batcher_main(void *arg) {
  at_batcher *b = arg;
  at_thread_name("at-batcher");
  pthread_mutex_lock(&b->lock);
  for (;;) {
    if (b->stopping && b->total_queued == 0 && b->inflight == 0 && b->driving == 0) break;
    uint64_t next;
    batch *bt = take_ready_locked(b, &next);
    if (bt) {
      b->driving++; /* drive()'s next release_and_take() gives it back */
      pthread_mutex_unlock(&b->lock);
      drive(b, bt, NULL);
      pthread_mutex_lock(&b->lock);
      continue;
    }
    if (next == UINT64_MAX) {
      pthread_cond_wait(&b->wake, &b->lock);
    } else {
      struct timespec ts;
      uint64_t abs_ns = next; /* at_now_ns() is CLOCK_MONOTONIC, like the condvar */
      ts.tv_sec = (time_t)(abs_ns / 1000000000ull);
      ts.tv_nsec = (long)(abs_ns % 1000000000ull);
      pthread_cond_timedwait(&b->wake, &b->lock, &ts);
    }
  }
  pthread_mutex_unlock(&b->lock);
  return NULL;
}

static void free_batcher(at_batcher *b) {
  if (b->q)
    for (int v = 0; v < b->n_variants; v++) free(b->q[v].ring);
  if (b->batches)
    for (int i = 0; i < b->n_workers; i++) {
      free(b->batches[i].ids);
      free(b->batches[i].mask);
      free(b->batches[i].types);
      free(b->batches[i].items);
    }
  free(b->batches);
  free(b->q);
  free(b);
}

at_status at_batcher_create(at_engine *engine, const at_batcher_params *params,
                            at_batcher **out) {
  if (!engine || !out) return at_fail(AT_ERR_INVALID_ARG, "engine and out are required");
  *out = NULL;
  at_batcher_params p = params ? *params : at_batcher_default_params();
  if (p.max_batch_size < 1 || p.max_batch_size > 1024 || p.max_queue_delay_us < 0 ||
      p.max_queued_items < 1 || p.max_seq_len < 1 || p.max_seq_len > 65536)
    return at_fail(AT_ERR_INVALID_ARG,
                   "batcher limits out of range (max_batch_size 1..1024, max_queue_delay_us "
                   ">= 0, max_queued_items >= 1, max_seq_len 1..65536)");
  at_batcher *b = calloc(1, sizeof *b);
  if (!b) return at_fail(AT_ERR_NOMEM, "out of memory");
  b->engine = engine;
  b->p = p;
  b->n_variants = at_engine_variant_count(engine);
  b->n_workers = at_engine_worker_count(engine);
  b->q = calloc((size_t)b->n_variants, sizeof *b->q);
  b->batches = calloc((size_t)b->n_workers, sizeof *b->batches);
  if (!b->q || !b->batches) {
    free_batcher(b);
    return at_fail(AT_ERR_NOMEM, "out of memory");
  }
  for (int v = 0; v < b->n_variants; v++) {
    const at_model_info *mi = at_engine_variant_info(engine, v);
    vqueue *q = &b->q[v];
    q->in_ids = q->in_mask = q->in_types = -1;
    q->n_inputs = mi->n_inputs;
    q->bk = p.per_variant ? p.per_variant[v] : p.bucketing;
    if (q->bk.max_pad_factor < 0 || (q->bk.max_pad_factor > 0 && q->bk.max_pad_factor < 1) ||
        q->bk.max_wait_us < 0) {
      free_batcher(b);
      return at_fail(AT_ERR_INVALID_ARG,
                     "variant '%s': bucketing max_pad_factor must be 0 (off) or >= 1 and "
                     "max_wait_us >= 0",
                     at_engine_variant_name(engine, v));
    }
    for (size_t k = 0; k < mi->n_inputs; k++) {
      const at_value_info *vi = &mi->inputs[k];
      int ok = vi->dtype == AT_DTYPE_INT64 && vi->ndim == 2;
      if (ok && strcmp(vi->name, "input_ids") == 0) q->in_ids = (int)k;
      else if (ok && strcmp(vi->name, "attention_mask") == 0) q->in_mask = (int)k;
      else if (ok && strcmp(vi->name, "token_type_ids") == 0) q->in_types = (int)k;
      else {
        at_status r = at_fail(AT_ERR_UNSUPPORTED,
                              "variant '%s' has input '%s' (%s, rank %zu); batching needs int64 "
                              "[batch, seq] input_ids, attention_mask and optional token_type_ids",
                              at_engine_variant_name(engine, v), vi->name,
                              at_dtype_name(vi->dtype), vi->ndim);
        free_batcher(b);
        return r;
      }
    }
    if (q->in_ids < 0 || q->in_mask < 0) {
      at_status r = at_fail(AT_ERR_UNSUPPORTED, "variant '%s' lacks input_ids or attention_mask",
                            at_engine_variant_name(engine, v));
      free_batcher(b);
      return r;
    }
    q->ring = calloc(p.max_queued_items, sizeof *q->ring);
    if (!q->ring) {
      free_batcher(b);
      return at_fail(AT_ERR_NOMEM, "out of memory");
    }
  }
  size_t cells = (size_t)p.max_batch_size * p.max_seq_len;
  for (int i = 0; i < b->n_workers; i++) {
    batch *bt = &b->batches[i];
    bt->owner = b;
    bt->ids = malloc(cells * sizeof(int64_t));
    bt->mask = malloc(cells * sizeof(int64_t));
    bt->types = malloc(cells * sizeof(int64_t));
    bt->items = malloc((size_t)p.max_batch_size * sizeof *bt->items);
    if (!bt->ids || !bt->mask || !bt->types || !bt->items) {
      free_batcher(b);
      return at_fail(AT_ERR_NOMEM, "out of memory");
    }
    bt->next_free = b->free_batches;
    b->free_batches = bt;
  }
  pthread_mutex_init(&b->lock, NULL);
  pthread_condattr_t ca; /* timed waits are against CLOCK_MONOTONIC deadlines */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&b->wake, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&b->thread, NULL, batcher_main, b) != 0) {
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->wake);
    free_batcher(b);
    return at_fail(AT_ERR_THREAD, "could not start the batcher thread");
  }
  b->thread_started = 1;
  *out = b;
  return AT_OK;
}

at_status at_batcher_submit_n(at_batcher *b, int variant, const at_batch_item *items,
                              size_t n) {
  if (!b || (n && !items))
    return at_fail(AT_ERR_INVALID_ARG, "batcher, items, input_ids and callback are required");
  if (variant < 0 || variant >= b->n_variants)
    return at_fail(AT_ERR_INVALID_ARG, "no variant %d", variant);
  for (size_t i = 0; i < n; i++) {
    if (!items[i].done || !items[i].input_ids)
      return at_fail(AT_ERR_INVALID_ARG, "item %zu: input_ids and callback are required", i);
    if (items[i].len < 1 || items[i].len > b->p.max_seq_len)
      return at_fail(AT_ERR_INVALID_ARG, "item %zu: sequence of %zu tokens; must be 1..%zu", i,
                     items[i].len, b->p.max_seq_len);
  }
  if (n == 0) return AT_OK;
  uint64_t now = at_now_ns();
  pthread_mutex_lock(&b->lock);
  if (b->stopping) {
    pthread_mutex_unlock(&b->lock);
    return at_fail(AT_ERR_SHUTDOWN, "batcher is shutting down");
  }
  vqueue *q = &b->q[variant];
  if (n > b->p.max_queued_items - b->total_queued) { /* total_queued <= max, no wrap */
    size_t queued = b->total_queued;
    pthread_mutex_unlock(&b->lock);
    return at_fail(AT_ERR_QUEUE_FULL, "%zu items already queued; %zu more do not fit", queued,
                   n);
  }
  for (size_t i = 0; i < n; i++) {
    qitem *qi = &q->ring[(q->head + q->count) % b->p.max_queued_items];
    qi->item = items[i];
    qi->enqueued_ns = now;
    qi->passed_ns = 0;
    q->count++;
  }
  b->total_queued += n;
  pthread_mutex_unlock(&b->lock);
  drive(b, release_and_take(b, NULL, false), NULL);
  return AT_OK;
}

at_status at_batcher_submit(at_batcher *b, int variant, const at_batch_item *item) {
  return at_batcher_submit_n(b, variant, item, 1); /* checks item too */
}

size_t at_batcher_queued(at_batcher *b, int variant) {
  if (!b) return 0;
  pthread_mutex_lock(&b->lock);
  size_t n = variant < 0 ? b->total_queued
             : variant < b->n_variants ? b->q[variant].count : 0;
  pthread_mutex_unlock(&b->lock);
  return n;
}

void at_batcher_destroy(at_batcher *b) {
  if (!b) return;
  pthread_mutex_lock(&b->lock);
  b->stopping = 1;
  pthread_cond_broadcast(&b->wake);
  pthread_mutex_unlock(&b->lock);
  if (b->thread_started) pthread_join(b->thread, NULL);
  pthread_mutex_destroy(&b->lock);
  pthread_cond_destroy(&b->wake);
  free_batcher(b);
}
