/* src/serve/conn_wait.c — suspend and resume a request's connection while
 * its work runs elsewhere (conn_wait.h): the only caller of
 * MHD_suspend_connection and MHD_resume_connection.
 *
 * DESIGN
 *   libmicrohttpd's rule: a connection is resumed only while it is
 *   suspended, once per suspend; a resume that came first would be lost (or
 *   act on a connection that is not waiting) and one too many may touch a
 *   connection already closed. Both shapes keep it by construction:
 *   countdown: the HTTP thread suspends before handing out the work, and
 *     only the atomic decrement that reaches 0 resumes — exactly once;
 *   waiter: `suspended` says whether a resume is owed, read and written
 *     only under the owner's lock, which is also held where the HTTP side
 *     decides "nothing new: suspend" and where a producer publishes news and
 *     wakes. A wake therefore either finds the connection suspended (and
 *     resumes it once) or the HTTP side will see the news before it
 *     suspends: no wake is lost and none overtakes its suspend. `closed`
 *     stops wakes once libmicrohttpd may free the connection.
 *   Threads: a suspend runs on the HTTP thread serving the connection; a
 *   resume on any thread (MHD_resume_connection only flags the connection
 *   and wakes the daemon). No lock of its own.
 */
#include "serve/conn_wait.h"

void conn_countdown_suspend(conn_countdown *cd, struct MHD_Connection *conn, int n) {
  cd->conn = conn;
  atomic_store(&cd->left, n);
  MHD_suspend_connection(conn);
}

bool conn_countdown_done(conn_countdown *cd, int k) {
  if (atomic_fetch_sub(&cd->left, k) != k) return false;
  MHD_resume_connection(cd->conn);
  return true;
}

void conn_waiter_init(conn_waiter *w, struct MHD_Connection *conn) {
  *w = (conn_waiter){.conn = conn};
}

void conn_waiter_suspend(conn_waiter *w) {
  if (w->suspended || w->closed) return; /* a caller's bug; never suspend twice */
  w->suspended = true;
  MHD_suspend_connection(w->conn);
}

void conn_waiter_wake(conn_waiter *w) {
  if (!w->suspended || w->closed) return;
  w->suspended = false;
  MHD_resume_connection(w->conn);
}

void conn_waiter_close(conn_waiter *w) { w->closed = true; }
