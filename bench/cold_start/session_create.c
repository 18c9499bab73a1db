/* bench/cold_start/session_create.c — how long at_session_create() takes
 * for one model, one way, and what memory the session then holds: the
 * session-creation phase of a cold start without the rest of `anytime run`
 * (tokenizer, engine, Run). One creation per process, so every run starts
 * from the same state (files in the page cache, nothing else loaded).
 *
 *   bench_session_create MODEL plain              plain load, no artifact
 *   bench_session_create MODEL save-ort OUT       + ORT saves the optimised graph (.ort)
 *   bench_session_create MODEL save-onnx OUT      + ORT saves it as .onnx
 *   bench_session_create MODEL cache DIR          through the artifact cache in DIR
 *                                                 (builds when empty, else a hit)
 *
 * Prints "MODE MS ms anon KB file KB": wall milliseconds of the call, then
 * RssAnon and RssFile from /proc/self/status with the session alive (anon:
 * copies ORT made; file: pages of mapped files, such as a mapped artifact).
 * A saved OUT file is deleted afterwards. See docs/benchmarks.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "anytime/anytime.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The value in kB of one "Name:   N kB" line of /proc/self/status, or -1. */
static long status_kb(const char *name) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(name);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, name, n) == 0 && line[n] == ':') v = strtol(line + n + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[2], "plain") != 0 && argc < 4)) {
    fprintf(stderr, "usage: %s MODEL plain | save-ort OUT | save-onnx OUT | cache DIR\n", argv[0]);
    return 2;
  }
  const char *mode = argv[2];
  at_session_params p = at_session_default_params();
  if (strcmp(mode, "cache") == 0) {
    p.artifact_cache_dir = argv[3];
  } else if (strcmp(mode, "save-ort") == 0 || strcmp(mode, "save-onnx") == 0) {
    p.optimized_model_path = argv[3];
    p.optimized_as_ort = strcmp(mode, "save-ort") == 0;
  } else if (strcmp(mode, "plain") != 0) {
    fprintf(stderr, "unknown mode '%s'\n", mode);
    return 2;
  }
  if (at_runtime_init() != AT_OK) { /* library load and ORT env: not timed */
    fprintf(stderr, "%s\n", at_last_error());
    return 1;
  }
  double t0 = now_ms();
  at_session *s = NULL;
  if (at_session_create(argv[1], &p, &s) != AT_OK) {
    fprintf(stderr, "%s\n", at_last_error());
    return 1;
  }
  double ms = now_ms() - t0;
  printf("%s %.0f ms anon %ld KB file %ld KB\n", mode, ms, status_kb("RssAnon"),
         status_kb("RssFile"));
  at_session_destroy(s);
  if (p.optimized_model_path) unlink(p.optimized_model_path);
  return 0;
}
