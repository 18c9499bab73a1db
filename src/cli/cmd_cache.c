/* src/cli/cmd_cache.c — `anytime cache path|ls|clear`: show where compiled
 * artifacts are kept, list them (model, variant, key, size, age) and remove
 * them. Only the artifacts directory is touched; other data under the same
 * cache root (e.g. ~/.cache/anytime/ort, ~/.cache/anytime/data) is not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime cache path|ls|clear [--cache-dir DIR]\n\n"
          "The compiled-artifact cache keeps ONNX Runtime's optimised graph of each model\n"
          "variant (ORT format), keyed by the model's SHA-256, the ORT release, the\n"
          "optimisation level, the execution provider and the CPU features, so that the\n"
          "second start of a model skips graph optimisation.\n\n"
          "  path    print the artifacts directory\n"
          "  ls      list artifacts: model, variant, key, size, age\n"
          "  clear   remove every artifact (nothing else in the cache root)\n\n"
          "The directory is DIR/artifacts for --cache-dir DIR, else\n"
          "$ANYTIME_CACHE_DIR/artifacts, else $XDG_CACHE_HOME/anytime/artifacts, else\n"
          "~/.cache/anytime/artifacts.\n");
}

static void human_size(uint64_t b, char *buf, size_t cap) {
  if (b >= 10u << 20) snprintf(buf, cap, "%.1f MB", (double)b / (1 << 20));
  else if (b >= 10u << 10) snprintf(buf, cap, "%.1f kB", (double)b / 1024);
  else snprintf(buf, cap, "%llu B", (unsigned long long)b);
}

static void human_age(int64_t created, char *buf, size_t cap) {
  int64_t s = (int64_t)time(NULL) - created;
  if (created <= 0) snprintf(buf, cap, "?");
  else if (s < 120) snprintf(buf, cap, "%llds", (long long)(s < 0 ? 0 : s));
  else if (s < 7200) snprintf(buf, cap, "%lldm", (long long)(s / 60));
  else if (s < 172800) snprintf(buf, cap, "%lldh", (long long)(s / 3600));
  else snprintf(buf, cap, "%lldd", (long long)(s / 86400));
}

int at_cli_cache(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *action = NULL, *root = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cache-dir") == 0 && i + 1 < argc) root = argv[++i];
    else if (!action && argv[i][0] != '-') action = argv[i];
    else {
      fprintf(stderr, "anytime cache: unexpected argument '%s'\n\n", argv[i]);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
  }
  if (!action) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }
  char dir[4096];
  at_status st = at_artifact_cache_dir(root, dir, sizeof dir);
  if (st != AT_OK) return tools_report("cache", st);
  if (strcmp(action, "path") == 0) {
    printf("%s\n", dir);
    return AT_EXIT_OK;
  }
  if (strcmp(action, "ls") == 0) {
    at_artifact_entry *v = NULL;
    size_t n = 0;
    if ((st = at_artifact_cache_list(dir, &v, &n)) != AT_OK) return tools_report("cache", st);
    printf("%s\n", dir);
    if (n == 0) printf("(no artifacts)\n");
    else printf("%-32s %-10s %-12s %10s %5s  %-8s %s\n", "MODEL", "VARIANT", "KEY", "SIZE", "AGE",
                "ORT", "OPT");
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
      char size[32], age[32];
      human_size(v[i].size_bytes, size, sizeof size);
      human_age(v[i].created_unix, age, sizeof age);
      const char *model = v[i].model[0] ? v[i].model : v[i].model_path;
      printf("%-32s %-10s %.12s %10s %5s  %-8s %s%s\n", model[0] ? model : "?",
             v[i].variant[0] ? v[i].variant : "-", v[i].key, size, age, v[i].ort_release,
             v[i].opt_level, v[i].valid ? "" : "  (damaged: rebuilt on next load)");
      total += v[i].size_bytes;
    }
    if (n) {
      char size[32];
      human_size(total, size, sizeof size);
      printf("%zu artifact%s, %s\n", n, n == 1 ? "" : "s", size);
    }
    free(v);
    return AT_EXIT_OK;
  }
  if (strcmp(action, "clear") == 0) {
    size_t removed = 0;
    st = at_artifact_cache_clear(dir, &removed);
    printf("removed %zu artifact%s from %s\n", removed, removed == 1 ? "" : "s", dir);
    return st == AT_OK ? AT_EXIT_OK : tools_report("cache", st);
  }
  fprintf(stderr, "anytime cache: unknown action '%s' (path, ls or clear)\n", action);
  return AT_EXIT_USAGE;
}
