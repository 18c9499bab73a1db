/* src/cli/dataset.c — a labelled dataset (header `label,text`, integer
 * labels) read with the library's CSV reader (anytime/csv.h). Used by
 * `anytime profile` and the benchmarks for the held-out split. */
#include "cli/dataset.h"

#include "anytime/csv.h"
#include "anytime/status.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_default_test_csv(char *buf, size_t cap) {
  const char *d = getenv("ANYTIME_DATA_DIR");
  if (d && *d) snprintf(buf, cap, "%s/pang-lee/test.csv", d);
  else snprintf(buf, cap, "%s/.cache/anytime/data/pang-lee/test.csv", getenv("HOME") ? getenv("HOME") : ".");
}

void cli_default_reviews_csv(char *buf, size_t cap) {
  const char *d = getenv("ANYTIME_DATA_DIR");
  if (d && *d) snprintf(buf, cap, "%s/pang-lee-reviews/heldout.csv", d);
  else snprintf(buf, cap, "%s/.cache/anytime/data/pang-lee-reviews/heldout.csv", getenv("HOME") ? getenv("HOME") : ".");
}

int cli_dataset_load(const char *path, cli_dataset *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  at_csv *c = NULL;
  at_status st = at_csv_load(path, &c);
  if (st != AT_OK) {
    snprintf(err, errcap, "%s: %s (tools/train/fetch_data.sh writes the held-out split)",
             at_strerror(st), at_last_error());
    return -1;
  }
  long lc = at_csv_column(c, "label"), tc = at_csv_column(c, "text");
  size_t rows = at_csv_rows(c);
  if (lc < 0 || tc < 0 || rows < 2) {
    snprintf(err, errcap, "%s: need a header with 'label' and 'text' and at least one record", path);
    at_csv_destroy(c);
    return -1;
  }
  out->labels = calloc(rows, sizeof *out->labels);
  out->texts = calloc(rows, sizeof *out->texts);
  out->lens = calloc(rows, sizeof *out->lens);
  if (!out->labels || !out->texts || !out->lens) {
    snprintf(err, errcap, "out of memory");
    at_csv_destroy(c);
    cli_dataset_free(out);
    return -1;
  }
  for (size_t r = 1; r < rows; r++) {
    size_t tl = 0;
    const char *lab = at_csv_field(c, r, (size_t)lc, NULL);
    const char *txt = at_csv_field(c, r, (size_t)tc, &tl);
    char *e = NULL;
    long v = lab ? strtol(lab, &e, 10) : 0;
    if (!lab || !txt || e == lab || *e) {
      snprintf(err, errcap, "%s: record %zu: label '%s' is not an integer", path, r + 1,
               lab ? lab : "(missing)");
      at_csv_destroy(c);
      cli_dataset_free(out);
      return -1;
    }
    out->texts[out->n] = malloc(tl + 1);
    if (!out->texts[out->n]) break;
    memcpy(out->texts[out->n], txt, tl + 1);
    out->labels[out->n] = (int)v;
    out->lens[out->n] = tl;
    out->n++;
  }
  at_csv_destroy(c);
  return 0;
}

void cli_dataset_free(cli_dataset *d) {
  for (size_t i = 0; i < d->n; i++) free(d->texts[i]);
  free(d->texts);
  free(d->labels);
  free(d->lens);
  memset(d, 0, sizeof *d);
}
