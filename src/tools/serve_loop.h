/* src/tools/serve_loop.h — the life of `anytime serve` once its
 * configuration is built: block the signals it waits for before any thread
 * starts, announce the started server on stderr (and write the bound port
 * to a file for scripts), then wait on the main thread — SIGHUP reopens the
 * access log, SIGINT or SIGTERM stops accepting, answers everything
 * admitted and returns. Signals are taken with sigwait(), so no handler
 * ever runs inside library code.
 *
 * Ownership: serve_loop_wait() takes the server: at_server_stop() frees it
 * before it returns. Thread-safety: call these from
 * the main thread only, serve_loop_block_signals() before the first thread
 * is created (threads inherit the blocked mask). */
#ifndef ANYTIME_TOOLS_SERVE_LOOP_H
#define ANYTIME_TOOLS_SERVE_LOOP_H

#include <signal.h>

#include "anytime/server.h"

/* Block SIGINT, SIGTERM and SIGHUP on the calling thread, the set of them in
 * *set, and ignore SIGPIPE (a client that hangs up must not end the
 * process). */
void serve_loop_block_signals(sigset_t *set);

/* Say on stderr what srv serves — its models from `label` (the config file
 * or the model), address, policy, workers, whether a key is needed, and
 * the generation lane when cfg has one — and, when port_file is not NULL,
 * write the bound port to it (a file that cannot be opened is skipped). */
void serve_loop_announce(const at_server_config *cfg, const char *label, const at_server *srv,
                         const char *port_file);

/* Wait for the signals in set (serve_loop_block_signals): SIGHUP reopens
 * srv's logs (a failure is said on stderr and serving goes on); SIGINT or
 * SIGTERM is said on stderr, then at_server_stop(srv) finishes every
 * admitted request and frees srv, and "stopped" is said before it
 * returns. */
void serve_loop_wait(at_server *srv, const sigset_t *set);

#endif /* ANYTIME_TOOLS_SERVE_LOOP_H */
