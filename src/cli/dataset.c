/* src/cli/dataset.c — reading a labelled CSV (header `label,text`; fields
 * may be quoted with "" escapes and embedded newlines). Labels are
 * integers. Used by `anytime profile` for the held-out split. */
#include "cli/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_default_test_csv(char *buf, size_t cap) {
  const char *d = getenv("ANYTIME_DATA_DIR");
  if (d && *d) snprintf(buf, cap, "%s/pang-lee/test.csv", d);
  else snprintf(buf, cap, "%s/.cache/anytime/data/pang-lee/test.csv", getenv("HOME") ? getenv("HOME") : ".");
}

/* Parse one field starting at *p; returns a malloc'ed string, advances *p
 * past the field and its separator; *eol set when the record ended. */
static char *field(const char **p, const char *end, int *eol, int *bad) {
  const char *s = *p;
  size_t cap = 64, n = 0;
  char *o = malloc(cap);
  if (!o) return NULL;
  int quoted = s < end && *s == '"';
  if (quoted) s++;
  for (;;) {
    if (s >= end) {
      if (quoted) *bad = 1;
      *eol = 1;
      break;
    }
    char c = *s;
    if (quoted) {
      if (c == '"') {
        if (s + 1 < end && s[1] == '"') {
          c = '"';
          s++;
        } else {
          quoted = 0;
          s++;
          continue;
        }
      }
    } else if (c == ',') {
      s++;
      break;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && s + 1 < end && s[1] == '\n') s++;
      s++;
      *eol = 1;
      break;
    }
    if (n + 2 > cap) o = realloc(o, cap *= 2);
    o[n++] = c;
    s++;
  }
  o[n] = '\0';
  *p = s;
  return o;
}

int cli_dataset_load(const char *path, cli_dataset *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errcap, "cannot open '%s' (run tools/train/fetch_data.sh to create the split)", path);
    return -1;
  }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)sz + 1);
  if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
    fclose(f);
    free(buf);
    snprintf(err, errcap, "cannot read '%s'", path);
    return -1;
  }
  fclose(f);
  const char *p = buf, *end = buf + sz;
  if (sz >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3;
  size_t cap = 1024, line = 1;
  out->labels = malloc(cap * sizeof *out->labels);
  out->texts = malloc(cap * sizeof *out->texts);
  out->lens = malloc(cap * sizeof *out->lens);
  int header = 1;
  while (p < end) {
    int eol = 0, bad = 0;
    char *a = field(&p, end, &eol, &bad);
    char *b = eol ? NULL : field(&p, end, &eol, &bad);
    if (!eol) { /* extra columns: skip the rest of the record */
      while (!eol && p < end) free(field(&p, end, &eol, &bad));
    }
    if (bad || !a || (!b && !(a[0] == '\0' && p >= end))) {
      if (a && !b && a[0] == '\0') { free(a); break; } /* trailing blank line */
      snprintf(err, errcap, "%s: record %zu is not label,text", path, line);
      free(a), free(b), free(buf);
      cli_dataset_free(out);
      return -1;
    }
    if (header) {
      header = 0;
      free(a), free(b);
      line++;
      continue;
    }
    char *e;
    long lab = strtol(a, &e, 10);
    if (*e || e == a) {
      snprintf(err, errcap, "%s: record %zu: label '%s' is not an integer", path, line, a);
      free(a), free(b), free(buf);
      cli_dataset_free(out);
      return -1;
    }
    free(a);
    if (out->n == cap) {
      cap *= 2;
      out->labels = realloc(out->labels, cap * sizeof *out->labels);
      out->texts = realloc(out->texts, cap * sizeof *out->texts);
      out->lens = realloc(out->lens, cap * sizeof *out->lens);
    }
    out->labels[out->n] = (int)lab;
    out->texts[out->n] = b;
    out->lens[out->n] = strlen(b);
    out->n++;
    line++;
  }
  free(buf);
  if (out->n == 0) {
    snprintf(err, errcap, "%s has no records", path);
    return -1;
  }
  return 0;
}

void cli_dataset_free(cli_dataset *d) {
  for (size_t i = 0; i < d->n; i++) free(d->texts[i]);
  free(d->texts);
  free(d->labels);
  free(d->lens);
  memset(d, 0, sizeof *d);
}
