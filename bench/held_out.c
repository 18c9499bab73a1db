/* bench/held_out.c — see held_out.h. */
#include "bench/held_out.h"

#include <stdio.h>
#include <stdlib.h>

#include "anytime/anytime.h"
#include "anytime/tokenizer.h"
#include "tools/dataset.h"

void bench_load_held_out(const char *dir, const char *csv, int64_t ***ids, size_t **lens,
                         size_t *n) {
  char tok_path[4096], err[512];
  snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", dir);
  cli_dataset ds;
  if (cli_dataset_load(csv, &cli_labels_int, &ds, err, sizeof err))
    fprintf(stderr, "%s\n", err), exit(1);
  at_tokenizer *tok;
  at_tok_workspace *ws;
  if (at_tokenizer_load(tok_path, &tok) || at_tok_workspace_create(&ws))
    fprintf(stderr, "tokenizer: %s\n", at_last_error()), exit(1);
  int64_t **id = calloc(ds.n, sizeof *id);
  size_t *len = calloc(ds.n, sizeof *len);
  if (!id || !len) fprintf(stderr, "out of memory\n"), exit(1);
  at_encode_params ep = at_encode_default_params();
  ep.max_length = 128;
  for (size_t i = 0; i < ds.n; i++) {
    at_encoding e;
    if (at_tokenizer_encode(tok, ws, ds.texts[i], ds.lens[i], NULL, 0, &ep, &e))
      fprintf(stderr, "text %zu: %s\n", i + 1, at_last_error()), exit(1);
    if (!(id[i] = malloc((e.n ? e.n : 1) * sizeof(int64_t)))) fprintf(stderr, "out of memory\n"), exit(1);
    for (size_t k = 0; k < e.n; k++) id[i][k] = e.ids[k];
    len[i] = e.n;
  }
  *ids = id, *lens = len, *n = ds.n;
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(tok);
  cli_dataset_free(&ds);
}
