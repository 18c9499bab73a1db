/* src/cli/common.c — helpers every subcommand uses: the stderr log sink and
 * uniform error reporting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void stderr_sink(void *user, at_log_level level, const char *component,
                        const char *message) {
  (void)user;
  fprintf(stderr, "anytime: %s: [%s] %s\n", at_log_level_name(level), component, message);
}

void cli_install_log_sink(void) {
  at_log_level lvl = AT_LOG_WARN;
  const char *e = getenv("ANYTIME_LOG_LEVEL");
  if (e) {
    if (strcmp(e, "debug") == 0) lvl = AT_LOG_DEBUG;
    else if (strcmp(e, "info") == 0) lvl = AT_LOG_INFO;
    else if (strcmp(e, "warn") == 0) lvl = AT_LOG_WARN;
    else if (strcmp(e, "error") == 0) lvl = AT_LOG_ERROR;
  }
  at_log_set_sink(stderr_sink, NULL, lvl);
}

int cli_report(const char *cmd, at_status s) {
  const char *detail = at_last_error();
  fprintf(stderr, "anytime %s: %s%s%s\n", cmd, at_strerror(s), *detail ? ": " : "", detail);
  return (s == AT_ERR_RUNTIME_LOAD || s == AT_ERR_RUNTIME_VERSION) ? AT_EXIT_RUNTIME
                                                                   : AT_EXIT_FAIL;
}

bool cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return true;
  return false;
}
