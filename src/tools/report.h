/* src/tools/report.h — how a command ends: the exit codes every `anytime`
 * subcommand shares and the one report of a failed library call, for the
 * CLI (src/cli) and the tools library behind it. Any thread (it writes one
 * line to stderr and reads the calling thread's error detail). */
#ifndef ANYTIME_TOOLS_REPORT_H
#define ANYTIME_TOOLS_REPORT_H

#include "anytime/status.h"

/* Exit codes shared by every subcommand. */
enum { AT_EXIT_OK = 0, AT_EXIT_FAIL = 1, AT_EXIT_USAGE = 2, AT_EXIT_RUNTIME = 3 };

/* Print "anytime <cmd>: <status text>: <detail>" for a failed library call
 * and return the matching exit code (AT_EXIT_RUNTIME for runtime load and
 * version errors, AT_EXIT_FAIL otherwise). */
int tools_report(const char *cmd, at_status s);

#endif
