/* src/core/status.c — names and descriptions for at_status (generated from
 * the X-macro table in status.h) and the per-thread error detail behind
 * at_last_error(). */
#include <stdarg.h>
#include <stdio.h>

#include "core/internal.h"

static _Thread_local char g_last_error[1024];

const char *at_status_name(at_status s) {
  switch (s) {
#define AT_STATUS_NAME_(name, value, desc) \
  case name:                               \
    return #name;
    AT_STATUS_TABLE(AT_STATUS_NAME_)
#undef AT_STATUS_NAME_
  }
  return "AT_UNKNOWN_STATUS";
}

const char *at_strerror(at_status s) {
  switch (s) {
#define AT_STATUS_DESC_(name, value, desc) \
  case name:                               \
    return desc;
    AT_STATUS_TABLE(AT_STATUS_DESC_)
#undef AT_STATUS_DESC_
  }
  return "unknown status";
}

const char *at_last_error(void) { return g_last_error; }

void at_clear_error(void) { g_last_error[0] = '\0'; }

at_status at_fail(at_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
  va_end(ap);
  return s;
}

at_status at_fail_in(at_status s, const char *where) {
  char detail[sizeof g_last_error];
  snprintf(detail, sizeof detail, "%s", g_last_error);
  return at_fail(s, "%s: %s", where, detail);
}
