/* src/cli/allocator.c — which malloc the `anytime` executable runs on, and
 * the glibc tuning that applies when it is glibc's.
 *
 * The CLI is linked against mimalloc unless the build says otherwise
 * (cmake -DAT_MIMALLOC=OFF; sanitizer and fuzz builds never link it, their
 * runtimes own malloc). Linked ahead of libc, mimalloc's malloc/free are the
 * process's: ONNX Runtime's allocations inside every Run (the workers run
 * without ORT's CPU arena) come from it. Measured against glibc on the
 * run-cost configuration (results/mimalloc_ab_2026-12-07.txt, medians): 2-9 %
 * less CPU per answer and 2-8 % more answers/s at 3-100 tokens. The library
 * (libanytime) does not impose an allocator on programs that link it; only
 * this executable chooses. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#ifdef AT_WITH_MIMALLOC
#include <mimalloc.h>
#endif

const char *cli_allocator(void) {
#ifdef AT_WITH_MIMALLOC
  static char name[32];
  int v = mi_version(); /* e.g. 209 for 2.0.9; the call also keeps the link */
  snprintf(name, sizeof name, "mimalloc %d.%d.%d", v / 100, v / 10 % 10, v % 10);
  return name;
#else
  return "glibc malloc";
#endif
}

const char *cli_allocator_env_help(void) {
#ifdef AT_WITH_MIMALLOC
  return "  MIMALLOC_*                  options of mimalloc, the malloc this build runs\n"
         "                              on (`anytime version` names it)\n";
#else
  return "  GLIBC_TUNABLES              anytime fixes malloc's mmap threshold (32 MiB) and\n"
         "                              trim threshold (64 MiB) unless this names a\n"
         "                              glibc.malloc setting\n";
#endif
}

/* With glibc's malloc the workers' Run tensors come straight from it, and
 * its defaults trim the heap after each Run and fault the pages back in on
 * the next (measured: 222 page faults per 100-token answer). Fixed
 * thresholds keep freed blocks under 32 MiB in the thread's heap and trim
 * only past 64 MiB of free top. Set before any thread starts; a
 * GLIBC_TUNABLES that names a malloc setting is the user's choice and wins.
 * With mimalloc there is nothing to tune here. */
void cli_tune_malloc(void) {
#ifndef AT_WITH_MIMALLOC
  const char *t = getenv("GLIBC_TUNABLES");
  if (t && strstr(t, "glibc.malloc.")) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}
