/* src/core/thread_name.c — naming libanytime's own threads, so that
 * /proc/PID/task/TID/comm, top -H, perf --sort tid and gdb tell a worker
 * from a batcher or an HTTP thread. Per-thread CPU figures
 * (bench/run_cost.sh) are read by these names. Linux only; elsewhere a
 * no-op. */
#include "core/internal.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

void at_thread_name(const char *name) {
#ifdef __linux__
  /* the kernel keeps 15 bytes and a NUL; a longer name is cut, never refused */
  (void)prctl(PR_SET_NAME, name, 0, 0, 0);
#else
  (void)name;
#endif
}
