/* src/tools/report.c — a failed library call's one-line report and exit
 * code (see report.h). */
#include "tools/report.h"

#include <stdio.h>

int tools_report(const char *cmd, at_status s) {
  const char *detail = at_last_error();
  fprintf(stderr, "anytime %s: %s%s%s\n", cmd, at_strerror(s), *detail ? ": " : "", detail);
  return (s == AT_ERR_RUNTIME_LOAD || s == AT_ERR_RUNTIME_VERSION) ? AT_EXIT_RUNTIME : AT_EXIT_FAIL;
}
