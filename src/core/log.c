/* src/core/log.c — the process-wide log sink (see anytime/log.h) and the
 * monotonic clock. The sink pointer, its user data and the level are read
 * by every logging thread and written by at_log_set_sink(); they are kept
 * in one struct behind a mutex so a reader never sees a sink with another
 * sink's user pointer. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "core/internal.h"

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static at_log_fn g_sink;            /* guarded by g_log_lock */
static void *g_sink_user;           /* guarded by g_log_lock */
static at_log_level g_min_level = AT_LOG_INFO; /* guarded by g_log_lock */

void at_log_set_sink(at_log_fn fn, void *user, at_log_level min_level) {
  pthread_mutex_lock(&g_log_lock);
  g_sink = fn;
  g_sink_user = user;
  g_min_level = min_level;
  pthread_mutex_unlock(&g_log_lock);
}

const char *at_log_level_name(at_log_level level) {
  switch (level) {
    case AT_LOG_DEBUG: return "debug";
    case AT_LOG_INFO: return "info";
    case AT_LOG_WARN: return "warn";
    case AT_LOG_ERROR: return "error";
  }
  return "unknown";
}

int at_log_enabled(at_log_level level) {
  pthread_mutex_lock(&g_log_lock);
  int on = g_sink != NULL && level >= g_min_level;
  pthread_mutex_unlock(&g_log_lock);
  return on;
}

void at_log(at_log_level level, const char *component, const char *fmt, ...) {
  pthread_mutex_lock(&g_log_lock);
  at_log_fn fn = g_sink;
  void *user = g_sink_user;
  int on = fn != NULL && level >= g_min_level;
  pthread_mutex_unlock(&g_log_lock);
  if (!on) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fn(user, level, component, line);
}

uint64_t at_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
