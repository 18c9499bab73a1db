/* src/tools/serve_loop.c — `anytime serve`'s main thread after start-up
 * (tools/serve_loop.h): the signal mask, the start-up announcement and
 * port file, and the sigwait() loop that reopens the access log on SIGHUP
 * and drains the server on SIGINT/SIGTERM. */
#include "tools/serve_loop.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "anytime/status.h"

void serve_loop_block_signals(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, set, NULL);
  signal(SIGPIPE, SIG_IGN);
}

void serve_loop_announce(const at_server_config *cfg, const char *label, const at_server *srv,
                         const char *port_file) {
  fprintf(stderr, "anytime: serving %d model(s) from %s on %s://%s:%d (policy %s, %d workers%s)\n",
          cfg->n_models, label, cfg->tls_cert[0] ? "https" : "http", cfg->host, at_server_port(srv),
          cfg->policy, cfg->workers,
          cfg->n_api_keys || cfg->api_key_file[0] ? ", API key required" : "");
  if (cfg->generator.enabled) {
    const at_server_generator_config *gc = &cfg->generator;
    fprintf(stderr,
            "anytime: generation lane '%s' on POST /v1/completions and /v1/chat/completions "
            "(variant %s%s%s, %d thread(s), %d KV blocks of %d tokens%s)\n",
            gc->name, gc->variant[0] ? gc->variant : "(the family's first)",
            gc->fallback_variant[0] ? ", fallback " : "", gc->fallback_variant, gc->threads,
            gc->blocks, gc->block_tokens, gc->fallback_variant[0] ? " per variant" : "");
  }
  if (port_file) {
    FILE *f = fopen(port_file, "w");
    if (f) {
      fprintf(f, "%d\n", at_server_port(srv));
      fclose(f);
    }
  }
}

void serve_loop_wait(at_server *srv, const sigset_t *set) {
  int sig = 0;
  for (;;) {
    sigwait(set, &sig);
    if (sig != SIGHUP) break;
    if (at_server_reopen_logs(srv) != AT_OK) /* keep serving either way */
      fprintf(stderr, "anytime: SIGHUP: %s\n", at_last_error());
  }
  fprintf(stderr, "anytime: %s received: finishing admitted requests\n",
          sig == SIGINT ? "SIGINT" : "SIGTERM");
  at_server_stop(srv);
  fprintf(stderr, "anytime: stopped\n");
}
