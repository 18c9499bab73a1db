/* src/serve/conn_wait.h — a request's connection waiting for work that
 * runs on other threads: the one owner of libmicrohttpd's suspend/resume
 * protocol (no other file calls MHD_suspend_connection or
 * MHD_resume_connection). Every user gets the same three rules from here:
 * the connection is suspended before the work can complete, a resume never
 * overtakes its suspend, and there is exactly one resume per suspend.
 * Two shapes:
 *   conn_countdown — suspended once, resumed when the last of n pieces of
 *     work is done (a text job's items, a V2 tensor Run, a held refusal);
 *   conn_waiter — suspended and woken again and again: "suspend if nothing
 *     new" on the HTTP side, "wake if suspended" on the producer's, both
 *     under one lock the owner holds around its own "anything new?" state
 *     (a stream's reader, a non-streamed completion).
 * Internal to src/serve. */
#ifndef ANYTIME_SERVE_CONN_WAIT_H
#define ANYTIME_SERVE_CONN_WAIT_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>

/* ---- countdown: resume when the last of n pieces is done ---- */
typedef struct conn_countdown {
  struct MHD_Connection *conn;
  atomic_int left; /* pieces not done yet */
} conn_countdown;

/* Suspend `conn` until conn_countdown_done() has counted n (>= 1) pieces.
 * On the HTTP thread serving conn, inside its access handler, before any of
 * the pieces is handed out. */
void conn_countdown_suspend(conn_countdown *cd, struct MHD_Connection *conn, int n);
/* k pieces are done (k >= 1; never more in all than were counted). The call
 * that takes the count to 0 resumes the connection and returns true. Any
 * thread; lock-free. */
bool conn_countdown_done(conn_countdown *cd, int k);

/* ---- waiter: suspend if nothing new, wake if suspended ---- */
typedef struct conn_waiter {
  struct MHD_Connection *conn;
  bool suspended; /* guarded by the owner's lock */
  bool closed;    /* guarded by the owner's lock: never resume it again */
} conn_waiter;

/* A waiter for `conn`, not suspended. Before anyone else sees it. */
void conn_waiter_init(conn_waiter *w, struct MHD_Connection *conn);
/* Suspend the connection. The caller holds the owner's lock and has seen,
 * under that same lock, that nothing it waits for has arrived; it is the
 * HTTP thread serving conn (in its access handler or content reader),
 * which returns without an answer or data. */
void conn_waiter_suspend(conn_waiter *w);
/* Resume the connection if it is suspended (and not closed). The caller
 * holds the owner's lock and has published what the HTTP side will look
 * at. Any thread. */
void conn_waiter_wake(conn_waiter *w);
/* The connection is going away (libmicrohttpd freed the request or the
 * response) or will never be suspended by this waiter: later wakes do
 * nothing. The caller holds the owner's lock. Any thread. */
void conn_waiter_close(conn_waiter *w);

#endif
