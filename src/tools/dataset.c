/* src/tools/dataset.c — the labelled dataset reader (see dataset.h) on the
 * library's CSV reader (anytime/csv.h), and the label rules shared by the
 * commands. */
#include "tools/dataset.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "anytime/csv.h"
#include "anytime/status.h"

static void data_dir_path(char *buf, size_t cap, const char *rel) {
  const char *d = getenv("ANYTIME_DATA_DIR"), *home = getenv("HOME");
  if (d && *d) snprintf(buf, cap, "%s/%s", d, rel);
  else snprintf(buf, cap, "%s/.cache/anytime/data/%s", home ? home : ".", rel);
}

void cli_default_test_csv(char *buf, size_t cap) {
  data_dir_path(buf, cap, "pang-lee/test.csv");
}

void cli_default_reviews_csv(char *buf, size_t cap) {
  data_dir_path(buf, cap, "pang-lee-reviews/heldout.csv");
}

/* ---- label rules ---------------------------------------------------------------- */

static int parse_int(const char *s, const void *ctx) {
  (void)ctx;
  char *e = NULL;
  long v = strtol(s, &e, 10);
  return *s && e != s && !*e && v >= 0 && v <= 1000000 ? (int)v : -1;
}

static int parse_binary(const char *s, const void *ctx) {
  (void)ctx;
  while (*s == ' ') s++;
  if (!strcmp(s, "1") || !strcasecmp(s, "positive") || !strcasecmp(s, "pos")) return 1;
  if (!strcmp(s, "0") || !strcmp(s, "-1") || !strcasecmp(s, "negative") || !strcasecmp(s, "neg"))
    return 0;
  return -1;
}

const cli_labels cli_labels_int = {.parse = parse_int, .what = "an integer >= 0"};
const cli_labels cli_labels_binary = {.parse = parse_binary,
                                      .what = "0/1/-1/negative/positive"};

/* ---- rows ------------------------------------------------------------------------ */

static void set_err(char *err, size_t cap, const char *fmt, ...) {
  if (!err || !cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
}

/* Column `name` in row 0, or -1. */
static long header_col(const at_csv *c, const char *name) {
  for (size_t k = 0; k < at_csv_cols(c, 0); k++) {
    const char *f = at_csv_field(c, 0, k, NULL);
    if (f && !strcmp(f, name)) return (long)k;
  }
  return -1;
}

/* Row r's text: field tc, and when tc is the header's (or the layout's)
 * last column every field after it, joined with ','. NULL when out of
 * memory; *len its length. */
static char *row_text(const at_csv *c, size_t r, size_t tc, bool join, size_t *len) {
  size_t cols = at_csv_cols(c, r), last = join ? cols : tc + 1, tl = 0;
  for (size_t k = tc; k < last; k++) {
    size_t fl = 0;
    at_csv_field(c, r, k, &fl);
    tl += fl + (k > tc);
  }
  char *t = malloc(tl + 1);
  if (!t) return NULL;
  size_t o = 0;
  for (size_t k = tc; k < last; k++) {
    size_t fl = 0;
    const char *f = at_csv_field(c, r, k, &fl);
    if (k > tc) t[o++] = ',';
    memcpy(t + o, f, fl);
    o += fl;
  }
  t[o] = '\0';
  *len = o;
  return t;
}

static int from_csv(const at_csv *c, const cli_labels *rule, cli_dataset *out, char *err,
                    size_t errcap) {
  size_t rows = at_csv_rows(c);
  long lc = header_col(c, "label"), tc = header_col(c, "text");
  bool named = lc >= 0 && tc >= 0;
  if (!named) lc = 0, tc = 1;
  bool join = !named || (size_t)tc + 1 == at_csv_cols(c, 0);
  size_t need = (size_t)(lc > tc ? lc : tc) + 1;
  out->labels = calloc(rows ? rows : 1, sizeof *out->labels);
  out->texts = calloc(rows ? rows : 1, sizeof *out->texts);
  out->lens = calloc(rows ? rows : 1, sizeof *out->lens);
  if (!out->labels || !out->texts || !out->lens) goto oom;
  for (size_t r = named ? 1 : 0; r < rows; r++) {
    size_t cols = at_csv_cols(c, r), l0 = 0;
    at_csv_field(c, r, 0, &l0);
    if (cols == 1 && l0 == 0) continue; /* blank line */
    if (cols < need) {
      set_err(err, errcap, "row %zu: expected %s fields, got %zu", r + 1,
              named ? "the header's label and text" : "label,text", cols);
      return -1;
    }
    const char *lab = at_csv_field(c, r, (size_t)lc, NULL);
    int id = rule->parse(lab, rule->ctx);
    if (id < 0 && !named && r == 0) continue; /* a header with other names */
    if (id < 0) {
      set_err(err, errcap, "row %zu: label '%.64s' is not %s", r + 1, lab, rule->what);
      return -1;
    }
    char *t = row_text(c, r, (size_t)tc, join, &out->lens[out->n]);
    if (!t) goto oom;
    out->texts[out->n] = t;
    out->labels[out->n++] = id;
  }
  if (out->n == 0) {
    set_err(err, errcap, "no rows");
    return -1;
  }
  return 0;
oom:
  set_err(err, errcap, "out of memory");
  return -1;
}

/* Turn the CSV reader's status into a message. */
static void csv_err(at_status st, char *err, size_t errcap) {
  if (st == AT_ERR_PARSE)
    set_err(err, errcap, "unterminated quote or text after a closing quote (%s)",
            at_last_error());
  else
    set_err(err, errcap, "%s (%s)", at_strerror(st), at_last_error());
}

int cli_dataset_parse(const char *buf, size_t len, const cli_labels *rule, cli_dataset *out,
                      char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  at_csv *c = NULL;
  at_status st = at_csv_parse(buf, len, &c);
  if (st != AT_OK) return csv_err(st, err, errcap), -1;
  int rc = from_csv(c, rule, out, err, errcap);
  at_csv_destroy(c);
  if (rc != 0) cli_dataset_free(out);
  return rc;
}

int cli_dataset_load(const char *path, const cli_labels *rule, cli_dataset *out, char *err,
                     size_t errcap) {
  memset(out, 0, sizeof *out);
  at_csv *c = NULL;
  char msg[400] = "";
  at_status st = at_csv_load(path, &c);
  int rc = -1;
  if (st != AT_OK) csv_err(st, msg, sizeof msg);
  else rc = from_csv(c, rule, out, msg, sizeof msg);
  at_csv_destroy(c);
  if (rc != 0) {
    set_err(err, errcap, "%s: %s", path, msg);
    cli_dataset_free(out);
  }
  return rc;
}

void cli_dataset_free(cli_dataset *d) {
  for (size_t i = 0; d->texts && i < d->n; i++) free(d->texts[i]);
  free(d->texts);
  free(d->labels);
  free(d->lens);
  memset(d, 0, sizeof *d);
}
