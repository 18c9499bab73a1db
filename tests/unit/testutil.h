/* tests/unit/testutil.h — shared helpers for the cmocka unit tests: locate
 * test data, build paths. Tests fail (never skip) when data is missing. */
#ifndef ANYTIME_TESTUTIL_H
#define ANYTIME_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* $var/rel into buf[4096]. Fails the test if the variable is unset. */
static inline const char *test_path_under(const char *var, const char *rel, char *buf) {
  const char *root = getenv(var);
  if (!root) fail_msg("%s is not set (run the tests through ctest)", var);
  snprintf(buf, 4096, "%s/%s", root, rel);
  return buf;
}

/* Path of a file under tests/data (ANYTIME_TEST_DATA), in a static buffer
 * that the next call overwrites. */
static inline const char *test_data(const char *rel) {
  static _Thread_local char buf[4096];
  return test_path_under("ANYTIME_TEST_DATA", rel, buf);
}

/* Path of a file in the source tree (ANYTIME_SOURCE_DIR: docs, models), in
 * a static buffer that the next call overwrites. */
static inline const char *test_source(const char *rel) {
  static _Thread_local char buf[4096];
  return test_path_under("ANYTIME_SOURCE_DIR", rel, buf);
}

/* Does ONNX Runtime sum this CPU's int8 products exactly? On x86 it does
 * with a dot-product instruction (AVX-512 VNNI, AVX-VNNI, AMX); without one
 * its u8 x s8 kernels add pairs of products in 16 bits with saturation
 * (docs/quantization.md), so an int8 graph's outputs move away from exact
 * integer arithmetic, and from the references recorded with it. Elsewhere
 * (not x86): assumed exact. Reads /proc/cpuinfo's first flags line. */
static inline int host_int8_exact(void) {
#if defined(__x86_64__) || defined(__i386__)
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 1;
  char line[8192];
  int exact = 1;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5)) continue;
    exact = strstr(line, " avx512_vnni") || strstr(line, " avx_vnni") || strstr(line, " amx_int8");
    break;
  }
  fclose(f);
  return exact;
#else
  return 1;
#endif
}

#endif
