/* src/core/fault.c — test-only fault injection from ANYTIME_FAULTS (see
 * fault.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fault.h"
#include "core/internal.h"

static struct {
  unsigned long fail_every, stall_every, stall_ms, stall_first, alloc_every;
  bool any;
} g_f;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_bool g_on;
static atomic_ulong g_runs, g_allocs;

static void parse(void) {
  const char *env = getenv("ANYTIME_FAULTS");
  g_f.stall_ms = 50;
  if (!env || !*env) return;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", env);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    char *end = NULL;
    unsigned long v = eq ? strtoul(eq + 1, &end, 10) : 0;
    if (!eq || !end || *end || end == eq + 1) {
      at_log(AT_LOG_ERROR, "fault", "ANYTIME_FAULTS: '%s' is not key=number; ignored", tok);
      continue;
    }
    *eq = '\0';
    if (!strcmp(tok, "run_fail_every")) g_f.fail_every = v;
    else if (!strcmp(tok, "run_stall_every")) g_f.stall_every = v;
    else if (!strcmp(tok, "run_stall_ms")) g_f.stall_ms = v;
    else if (!strcmp(tok, "run_stall_first")) g_f.stall_first = v;
    else if (!strcmp(tok, "alloc_fail_every")) g_f.alloc_every = v;
    else at_log(AT_LOG_ERROR, "fault", "ANYTIME_FAULTS: unknown key '%s'; ignored", tok);
  }
  g_f.any = g_f.fail_every || g_f.stall_every || g_f.alloc_every;
  if (g_f.any)
    at_log(AT_LOG_WARN, "fault", "ANYTIME_FAULTS is set: injecting faults (%s)", env);
  atomic_store(&g_on, g_f.any);
}

static atomic_bool g_held;

void at_fault_hold(bool held) { atomic_store(&g_held, held); }

bool at_fault_engine_run(void) {
  pthread_once(&g_once, parse);
  if (!atomic_load_explicit(&g_on, memory_order_relaxed) || atomic_load(&g_held)) return false;
  unsigned long k = atomic_fetch_add(&g_runs, 1) + 1; /* this Run's number, from 1 */
  if (g_f.stall_every && k % g_f.stall_every == 0 && (!g_f.stall_first || k <= g_f.stall_first)) {
    struct timespec ts = {.tv_sec = (time_t)(g_f.stall_ms / 1000),
                          .tv_nsec = (long)(g_f.stall_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (g_f.fail_every && k % g_f.fail_every == 0) {
    at_fail(AT_ERR_ORT, "injected fault (ANYTIME_FAULTS run_fail_every=%lu): Run %lu failed",
            g_f.fail_every, k);
    return true;
  }
  return false;
}

bool at_fault_alloc(void) {
  pthread_once(&g_once, parse);
  if (!atomic_load_explicit(&g_on, memory_order_relaxed) || !g_f.alloc_every) return false;
  unsigned long k = atomic_fetch_add(&g_allocs, 1) + 1;
  return k % g_f.alloc_every == 0;
}
