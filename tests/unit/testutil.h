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

#endif
