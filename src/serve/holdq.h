/* src/serve/holdq.h — suspended connections resumed at a due time (the
 * held refusals of clients that came back early; see holdq.c). Internal to
 * src/serve. */
#ifndef ANYTIME_SERVE_HOLDQ_H
#define ANYTIME_SERVE_HOLDQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/plan.h"
#include "anytime/status.h"
#include "serve/conn_wait.h"

typedef struct serve_holdq serve_holdq;

/* A keep-alive connection's memory of its last refusal (MHD's socket
 * context; only the HTTP thread serving the connection touches it). */
typedef struct conn_state {
  uint64_t told_ns;     /* the return slot its last 429 gave (at_now_ns) */
  uint64_t refused_sig; /* serve_body_sig() of the request it refused (0: none) */
} conn_state;

/* The longest a refusal is held: a slot further out is answered then. */
#define SERVE_HOLD_MAX_NS ((uint64_t)(AT_PLAN_HOLD_MAX_S * 1e9))

/* What makes a request "the same request again": its length and up to 256
 * bytes at each end (FNV-1a), so a 77 KB body costs no more to sign than a
 * short one. Never 0. */
uint64_t serve_body_sig(const char *body, size_t len);

/* The hold rule, for a 429 decided at `now` whose return slot is
 * `retry_after_s` away, of a request with signature `sig` on connection
 * `cs`: when `may_hold` (holds on, a deadline refusal) and the request is
 * the one this connection was last refused for, arriving before the slot
 * it was told, returns when to answer (that slot, at most
 * SERVE_HOLD_MAX_NS from now); else 0 (answer now). Either way the
 * connection now remembers this refusal's slot and signature. A pool or a
 * proxy that shares the connection between unrelated requests sends other
 * bodies: those are never held for another's refusal. Pure but for *cs. */
uint64_t serve_hold_decide(conn_state *cs, uint64_t now, double retry_after_s, uint64_t sig,
                           bool may_hold);

/* The same rule for a slot kept elsewhere (an identified client's, in
 * client_id.h's table): a request refused at `now` whose client was told
 * `told_ns` is held to that slot (at most SERVE_HOLD_MAX_NS) when
 * `may_hold` and the slot is still ahead; returns when to answer, or 0.
 * serve_hold_told: the slot a refusal with retry_after_s tells. Pure. */
uint64_t serve_hold_until(uint64_t told_ns, uint64_t now, bool may_hold);
uint64_t serve_hold_told(uint64_t now, double retry_after_s);

/* Start the queue and its timer thread. AT_OK, AT_ERR_NOMEM, AT_ERR_INTERNAL. */
at_status serve_holdq_create(serve_holdq **out);
/* Count the one piece of `wait` (a countdown of 1, already suspended by
 * the caller) done at `due_ns` (at_now_ns clock), which resumes its
 * connection. After a flush, or without memory for it, that happens at once
 * and false is returned; the caller answers as it would on a timely resume
 * either way. Any thread. */
bool serve_holdq_add(serve_holdq *q, uint64_t due_ns, conn_countdown *wait);
/* Resume every held connection now, and every later one on arrival. */
void serve_holdq_flush(serve_holdq *q);
/* Connections held now. */
size_t serve_holdq_len(serve_holdq *q);
/* Flush, join the thread, free. NULL is a no-op. */
void serve_holdq_destroy(serve_holdq *q);

#endif
