/* src/serve/accesslog.c — one JSON line per request, appended atomically
 * (see accesslog.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "serve/accesslog.h"

struct serve_alog {
  pthread_rwlock_t lock; /* read: a write(); write: swapping the descriptor */
  int fd;
  char path[AT_PATH_CAP];
  atomic_uint_least64_t failures;
};

static int open_fd(const char *path) {
  return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

at_status serve_alog_open(const char *path, serve_alog **out) {
  *out = NULL;
  serve_alog *l = calloc(1, sizeof *l);
  if (!l) return at_fail(AT_ERR_NOMEM, "out of memory");
  if (snprintf(l->path, sizeof l->path, "%s", path) >= (int)sizeof l->path) {
    free(l);
    return at_fail(AT_ERR_INVALID_ARG, "access log path is too long");
  }
  l->fd = open_fd(path);
  if (l->fd < 0) {
    int e = errno;
    free(l);
    return at_fail(AT_ERR_IO, "cannot open the access log '%s': %s", path, strerror(e));
  }
  pthread_rwlock_init(&l->lock, NULL);
  *out = l;
  return AT_OK;
}

void serve_alog_write(serve_alog *l, const serve_alog_entry *e) {
  if (!l) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[80];
  snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           (int)(ts.tv_nsec / 1000000) % 1000);
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I}", "time", when,
                        "request_id", e->request_id, "method", e->method, "route", e->route,
                        "model", e->model, "variant", e->variant, "status", e->status, "bytes_in",
                        (json_int_t)e->bytes_in, "bytes_out", (json_int_t)e->bytes_out);
  if (!j) {
    atomic_fetch_add(&l->failures, 1);
    return;
  }
  static const char *const k[] = {"total_ms", "queue_ms", "inference_ms", "tokenize_ms"};
  const double v[] = {e->total_ms, e->queue_ms, e->inference_ms, e->tokenize_ms};
  for (int i = 0; i < 4; i++)
    if (v[i] >= 0) json_object_set_new(j, k[i], json_real(v[i]));
  char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6) | JSON_PRESERVE_ORDER);
  json_decref(j);
  if (!s) {
    atomic_fetch_add(&l->failures, 1);
    return;
  }
  size_t n = strlen(s);
  s[n] = '\n'; /* replaces the NUL: one write() of the whole line */
  pthread_rwlock_rdlock(&l->lock);
  ssize_t w = write(l->fd, s, n + 1);
  pthread_rwlock_unlock(&l->lock);
  if (w != (ssize_t)(n + 1)) atomic_fetch_add(&l->failures, 1);
  free(s);
}

at_status serve_alog_reopen(serve_alog *l) {
  if (!l) return AT_OK;
  int fd = open_fd(l->path);
  if (fd < 0)
    return at_fail(AT_ERR_IO, "cannot reopen the access log '%s': %s (still writing the old one)",
                   l->path, strerror(errno));
  pthread_rwlock_wrlock(&l->lock);
  int old = l->fd;
  l->fd = fd;
  pthread_rwlock_unlock(&l->lock);
  close(old);
  return AT_OK;
}

uint64_t serve_alog_failures(const serve_alog *l) {
  return l ? atomic_load(&((serve_alog *)l)->failures) : 0;
}

void serve_alog_close(serve_alog *l) {
  if (!l) return;
  close(l->fd);
  pthread_rwlock_destroy(&l->lock);
  free(l);
}
