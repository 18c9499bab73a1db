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

/* Path of a file under tests/data (ANYTIME_TEST_DATA), in a static buffer
 * that the next call overwrites. Fails the test if the variable is unset. */
static inline const char *test_data(const char *rel) {
  static _Thread_local char buf[4096];
  const char *root = getenv("ANYTIME_TEST_DATA");
  if (!root) fail_msg("ANYTIME_TEST_DATA is not set (run the tests through ctest)");
  snprintf(buf, sizeof buf, "%s/%s", root, rel);
  return buf;
}

/* Path of a file in the source tree (ANYTIME_SOURCE_DIR: docs, models),
 * in a static buffer that the next call overwrites. Fails the test if the
 * variable is unset. */
static inline const char *test_source(const char *rel) {
  static _Thread_local char buf[4096];
  const char *root = getenv("ANYTIME_SOURCE_DIR");
  if (!root) fail_msg("ANYTIME_SOURCE_DIR is not set (run the tests through ctest)");
  snprintf(buf, sizeof buf, "%s/%s", root, rel);
  return buf;
}

#endif
