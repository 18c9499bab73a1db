/* src/serve/accesslog.h — the access log: one JSON line per answered
 * request (server.access_log / --access-log; off by default), appended with
 * one write() each so lines from many HTTP threads never interleave, and
 * reopened on request (SIGHUP in `anytime serve`) so logrotate can move the
 * file away. Internal to src/serve. Thread-safe: writers share a read lock,
 * a reopen takes the write lock. */
#ifndef ANYTIME_SERVE_ACCESSLOG_H
#define ANYTIME_SERVE_ACCESSLOG_H

#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

typedef struct serve_alog serve_alog;

/* One answered request. Strings may be empty, never NULL. Times in ms;
 * a negative time is left out of the line. */
typedef struct serve_alog_entry {
  const char *request_id, *method, *route, *model, *variant;
  int status;
  double total_ms, queue_ms, inference_ms, tokenize_ms;
  uint64_t bytes_in, bytes_out;
} serve_alog_entry;

/* Open (create, append) `path`. Returns AT_OK or AT_ERR_IO naming it. */
at_status serve_alog_open(const char *path, serve_alog **out);
/* Append one line: {"time","request_id","method","route","model",
 * "variant","status","total_ms",...,"bytes_in","bytes_out"}. A failed write
 * is counted, never fatal. NULL log: nothing. */
void serve_alog_write(serve_alog *l, const serve_alog_entry *e);
/* Close and open the path again (after a rotation moved it). */
at_status serve_alog_reopen(serve_alog *l);
/* Lines that could not be written (disk full, ...). */
uint64_t serve_alog_failures(const serve_alog *l);
void serve_alog_close(serve_alog *l);

#endif
