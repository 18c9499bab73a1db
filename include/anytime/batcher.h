/* anytime/batcher.h — dynamic batching of token sequences in front of the
 * engine.
 *
 * Text requests become items: one token sequence each (input_ids, optional
 * token_type_ids). Items wait in a per-variant FIFO; a batch closes for a
 * variant when it holds max_batch_size items or its oldest item has waited
 * max_queue_delay_us — and, either way, only when an engine worker is free,
 * so under load batches grow instead of queueing inside the engine. The
 * thread that makes a batch ready closes it (the submitter, or the worker
 * that freed a slot); a batcher thread only keeps the delay's time. A
 * closed batch is padded to its longest sequence (attention_mask 0, pad id),
 * run as one engine request, and its outputs are scattered back: every
 * item's callback receives views of its own rows.
 *
 * Length bucketing (off unless a variant's max_pad_factor is set): which
 * queued items a closing batch takes is then at_batch_pick()'s rule instead
 * of arrival order — the oldest item and every overdue item always go;
 * others join only while the batch's padded tokens stay within
 * max_pad_factor x its real tokens. Items left out stay queued, in arrival
 * order, for the next batch. An item is overdue when max_wait_us has passed
 * since a batch first left it behind while it was among the first
 * max_batch_size queued (where arrival order would have taken it): so
 * bucketing delays an item at most max_wait_us, plus the batches that
 * carry the overdue items ahead of it, beyond its arrival-order turn.
 *
 * Ownership: the item's token arrays are NOT copied at submit and must stay
 * valid until the item's callback has run. Output views passed to the
 * callback are valid only during the callback.
 *
 * Thread-safety: at_batcher_submit() and at_batcher_queued() may be called
 * from any thread. Callbacks run on engine worker threads — except when the
 * engine refuses a batch (it is shutting down): then the items' callbacks
 * run, with the error, on the thread that closed the batch, which may be a
 * submitter inside at_batcher_submit(). Callers must not hold a lock their
 * callback takes while submitting. create/destroy from one thread;
 * destroy() completes every admitted item (drains) before returning, then
 * the engine may be destroyed.
 */
#ifndef ANYTIME_BATCHER_H
#define ANYTIME_BATCHER_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/engine.h"
#include "anytime/status.h"
#include "anytime/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct at_batcher at_batcher;

/* Length bucketing of one variant's batches (see at_batch_pick()). */
typedef struct at_bucketing {
  double max_pad_factor; /* 0 (default): off, arrival order; else >= 1: a batch's padded
                            tokens (items x longest) stay within this x its real tokens,
                            except for the items that always go */
  int max_wait_us;       /* an item passed over this long (see above) goes in its
                            variant's next batch, whatever its length; default 100000 */
} at_bucketing;

typedef struct at_batcher_params {
  int max_batch_size;          /* default 16 */
  int max_queue_delay_us;      /* default 0: close as soon as a worker is free */
  size_t max_queued_items;     /* across all variants; default 4096 */
  size_t max_seq_len;          /* longest sequence accepted; default 512 */
  int64_t pad_id;              /* default 0 */
  at_bucketing bucketing;      /* every variant's, unless per_variant; default off */
  /* NULL (default), or one entry per engine variant, in engine order, which
   * replaces `bucketing` for that variant; copied at create. */
  const at_bucketing *per_variant;
} at_batcher_params;

/* One output row of one item: data points at the item's row inside the
 * batch output (shape[0] == 1). For outputs with a sequence axis the
 * sequence dimension is the batch's padded length; `len` says how many of
 * those positions are the item's real tokens. */
typedef struct at_item_result {
  size_t n_outputs;
  const at_tensor *outputs;    /* rows, in the variant's output order */
  size_t len;                  /* the item's own sequence length */
  int batch_size;              /* items in the batch it ran in */
  int index_in_batch;          /* 0..batch_size-1 */
  size_t padded_len;
  uint64_t enqueued_ns, dispatched_ns, started_ns, finished_ns;
  int peers;                   /* other Runs during its batch's (at_timing.peers) */
} at_item_result;

/* Called exactly once per admitted item. On failure `r` is NULL and `error`
 * holds the detail. */
typedef void (*at_item_done_fn)(void *user, at_status status, const at_item_result *r,
                                const char *error);

typedef struct at_batch_item {
  const int64_t *input_ids;     /* len tokens */
  const int64_t *token_type_ids;/* NULL = zeros (only used if the model takes them) */
  size_t len;                   /* 1..max_seq_len */
  at_item_done_fn done;
  void *user;
} at_batch_item;

AT_API at_batcher_params at_batcher_default_params(void);

/* Create a batcher over a started engine. Every variant must take int64
 * input_ids and attention_mask [batch, seq] (token_type_ids optional).
 * Returns AT_OK, AT_ERR_INVALID_ARG (a limit out of range, or a bucketing
 * with max_pad_factor < 0 or in (0, 1), or max_wait_us < 0), AT_ERR_UNSUPPORTED (a variant has
 * another signature; at_last_error() names it), AT_ERR_NOMEM, AT_ERR_THREAD. */
AT_API at_status at_batcher_create(at_engine *engine, const at_batcher_params *params,
                                   at_batcher **out);

/* Queue one item for `variant`. On AT_OK the callback runs exactly once.
 * Returns AT_OK, AT_ERR_INVALID_ARG (bad variant, empty or too long
 * sequence, NULL callback), AT_ERR_QUEUE_FULL, AT_ERR_SHUTDOWN. */
AT_API at_status at_batcher_submit(at_batcher *b, int variant, const at_batch_item *item);

/* Queue n items for `variant` at once, all or none: they are appended
 * together, so with max_batch_size > 1 they can share batches from the
 * first. Same returns as at_batcher_submit(); on AT_ERR_QUEUE_FULL none was
 * queued. */
AT_API at_status at_batcher_submit_n(at_batcher *b, int variant, const at_batch_item *items,
                                     size_t n);

/* Items queued (not yet dispatched) for `variant`, or for all if -1. */
AT_API size_t at_batcher_queued(at_batcher *b, int variant);

/* Items at_batch_pick() considers: the first AT_BATCH_PICK_WINDOW queued
 * items of a variant (later ones wait until they move up). */
#define AT_BATCH_PICK_WINDOW 128

/* The bucketing rule, exposed for tests (pure; any thread). Given the
 * lengths len[0..n) of a variant's queued items in arrival order (oldest
 * first) and which of them are overdue (the caller's rule, above; NULL =
 * none), choose the items of the next batch of at most max_batch: their
 * indices, ascending, into pick[] (room for max_batch), and return how
 * many (0 only when n or max_batch is 0). Only the first
 * AT_BATCH_PICK_WINDOW items are considered.
 *   - max_pad_factor <= 0: the first max_batch items (arrival order).
 *   - otherwise, first the items that always go, in arrival order: item 0
 *     (the oldest) and every overdue item, up to max_batch; then the
 *     others, nearest in length to item 0 first (ties: older first), each
 *     taken if the batch then holds k items of longest L with
 *     k x L <= max_pad_factor x (sum of their lengths).
 * So an overdue item waits only for the overdue items ahead of it
 * (max_batch per batch), and the oldest item is never passed over. */
AT_API int at_batch_pick(const size_t *len, const bool *overdue, size_t n, int max_batch,
                         double max_pad_factor, int *pick);

/* Drain, stop the batcher thread and free. NULL is a no-op. */
AT_API void at_batcher_destroy(at_batcher *b);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_BATCHER_H */
