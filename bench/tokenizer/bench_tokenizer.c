/* bench/tokenizer/bench_tokenizer.c — single-threaded tokenization throughput
 * of anytime's tokenizer: encodes every text of a JSON Lines file (one JSON
 * string per line) in batches of 256 through at_tokenizer_encode_batch (no
 * padding, special tokens added), for several passes, and prints one JSON
 * object: MB/s and tokens/s per pass, median and range. Run through
 * bench/tokenizer/run.sh, which also runs HF tokenizers on the same input.
 *
 *   bench_tokenizer TOKENIZER TEXTS.jsonl [PASSES]
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anytime/tokenizer.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_tokenizer TOKENIZER TEXTS.jsonl [PASSES]\n");
    return 2;
  }
  int passes = argc > 3 ? atoi(argv[3]) : 7;
  if (passes < 1 || passes > 1000) passes = 7;
  FILE *f = fopen(argv[2], "rb");
  if (!f) { perror(argv[2]); return 1; }
  size_t n = 0, cap = 0, bytes = 0;
  char **texts = NULL;
  size_t *lens = NULL;
  char *line = NULL;
  size_t lcap = 0;
  ssize_t r;
  while ((r = getline(&line, &lcap, f)) > 0) {
    json_error_t err;
    json_t *v = json_loadb(line, (size_t)r, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (!json_is_string(v)) { json_decref(v); continue; }
    if (n == cap) {
      cap = cap ? cap * 2 : 1024;
      texts = realloc(texts, cap * sizeof *texts);
      lens = realloc(lens, cap * sizeof *lens);
      if (!texts || !lens) return 1;
    }
    lens[n] = json_string_length(v);
    texts[n] = malloc(lens[n] + 1);
    if (!texts[n]) return 1;
    memcpy(texts[n], json_string_value(v), lens[n] + 1);
    bytes += lens[n];
    n++;
    json_decref(v);
  }
  free(line);
  fclose(f);
  at_tokenizer *t;
  at_tok_workspace *ws;
  if (at_tokenizer_load(argv[1], &t) != AT_OK || at_tok_workspace_create(&ws) != AT_OK) {
    fprintf(stderr, "bench_tokenizer: %s\n", at_last_error());
    return 1;
  }
  at_encode_params p = at_encode_default_params();
  p.pad_to = 0;
  enum { B = 256 };
  at_encoding enc[B];
  double *mbs = malloc((size_t)passes * sizeof *mbs), *tps = malloc((size_t)passes * sizeof *tps);
  size_t tokens = 0;
  for (int pass = -1; pass < passes; pass++) { /* pass -1 warms the workspace up */
    tokens = 0;
    double t0 = now();
    for (size_t i = 0; i < n; i += B) {
      size_t m = n - i < B ? n - i : B;
      if (at_tokenizer_encode_batch(t, ws, (const char *const *)texts + i, lens + i, m, &p, enc) != AT_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", at_last_error());
        return 1;
      }
      for (size_t k = 0; k < m; k++) tokens += enc[k].n;
    }
    double dt = now() - t0;
    if (pass >= 0) {
      mbs[pass] = (double)bytes / dt / 1e6;
      tps[pass] = (double)tokens / dt;
    }
  }
  printf("{\"impl\":\"anytime\",\"tokenizer\":\"%s\",\"texts\":%zu,\"bytes\":%zu,\"tokens\":%zu,\"passes\":%d,\"mb_s\":[",
         argv[1], n, bytes, tokens, passes);
  for (int i = 0; i < passes; i++) printf("%s%.3f", i ? "," : "", mbs[i]);
  printf("],\"tok_s\":[");
  for (int i = 0; i < passes; i++) printf("%s%.0f", i ? "," : "", tps[i]);
  qsort(mbs, (size_t)passes, sizeof *mbs, cmp);
  qsort(tps, (size_t)passes, sizeof *tps, cmp);
  printf("],\"mb_s_median\":%.3f,\"mb_s_min\":%.3f,\"mb_s_max\":%.3f,\"tok_s_median\":%.0f,\"tok_s_min\":%.0f,\"tok_s_max\":%.0f}\n",
         mbs[passes / 2], mbs[0], mbs[passes - 1], tps[passes / 2], tps[0], tps[passes - 1]);
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
  for (size_t i = 0; i < n; i++) free(texts[i]);
  free(texts);
  free(lens);
  free(mbs);
  free(tps);
  return 0;
}
