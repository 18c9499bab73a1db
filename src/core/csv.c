/* src/core/csv.c — RFC 4180 CSV reader (anytime/csv.h): one pass over the
 * input, field text copied into one buffer, records as index ranges into a
 * field table. Used by `anytime eval` for labelled datasets; fuzzed by
 * tests/fuzz/fuzz_text_csv.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/csv.h"
#include "core/internal.h"

struct at_csv {
  char *text;          /* all fields, each followed by NUL */
  size_t *foff, *flen; /* per field: offset into text, length */
  size_t *rstart;      /* per record: first field index; rstart[n_rows] = n_fields */
  size_t n_rows, n_fields;
};

static at_status grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return AT_OK;
  size_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return at_fail(AT_ERR_NOMEM, "csv: out of memory");
  *p = q;
  *cap = c;
  return AT_OK;
}

at_status at_csv_parse(const char *data, size_t len, at_csv **out) {
  if (!data || !out) return at_fail(AT_ERR_INVALID_ARG, "at_csv_parse: NULL argument");
  *out = NULL;
  if (len > AT_CSV_MAX_BYTES) return at_fail(AT_ERR_LIMIT, "csv: input over %zu bytes", AT_CSV_MAX_BYTES);
  at_csv *c = calloc(1, sizeof *c);
  if (!c) return at_fail(AT_ERR_NOMEM, "csv: out of memory");
  c->text = malloc(2 * len + 16); /* every byte plus one NUL per field at most */
  size_t fcap = 0, rcap = 0;
  at_status st = c->text ? AT_OK : at_fail(AT_ERR_NOMEM, "csv: out of memory");
  size_t i = 0, w = 0, line = 1;
  if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) i = 3;
  bool row_open = false;
  while (st == AT_OK && i < len) {
    if (!row_open) {
      if ((st = grow((void **)&c->rstart, &rcap, c->n_rows + 2, sizeof *c->rstart)) != AT_OK) break;
      c->rstart[c->n_rows] = c->n_fields;
      row_open = true;
    }
    /* one field */
    if (c->n_fields >= AT_CSV_MAX_FIELDS) { st = at_fail(AT_ERR_LIMIT, "csv: more than %zu fields", AT_CSV_MAX_FIELDS); break; }
    if ((st = grow((void **)&c->foff, &fcap, c->n_fields + 1, sizeof *c->foff)) != AT_OK) break;
    c->flen = realloc(c->flen, fcap * sizeof *c->flen);
    if (!c->flen) { st = at_fail(AT_ERR_NOMEM, "csv: out of memory"); break; }
    size_t start = w;
    if (data[i] == '"') {
      size_t qline = line;
      i++;
      for (;;) {
        if (i >= len) { st = at_fail(AT_ERR_PARSE, "csv: line %zu: unterminated quoted field", qline); break; }
        char ch = data[i];
        if (ch == '"') {
          if (i + 1 < len && data[i + 1] == '"') { c->text[w++] = '"'; i += 2; continue; }
          i++;
          break;
        }
        if (ch == '\n') line++;
        c->text[w++] = ch;
        i++;
      }
      if (st != AT_OK) break;
      if (i < len && data[i] != ',' && data[i] != '\n' && !(data[i] == '\r' && (i + 1 >= len || data[i + 1] == '\n'))) {
        st = at_fail(AT_ERR_PARSE, "csv: line %zu: text after a closing quote", line);
        break;
      }
    } else {
      while (i < len && data[i] != ',' && data[i] != '\n' && !(data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') &&
             !(data[i] == '\r' && i + 1 == len))
        c->text[w++] = data[i++];
    }
    c->foff[c->n_fields] = start;
    c->flen[c->n_fields] = w - start;
    c->text[w++] = '\0';
    c->n_fields++;
    if (i >= len) break;
    if (data[i] == ',') {
      i++;
      if (i == len) { /* trailing comma: one more empty field */
        if ((st = grow((void **)&c->foff, &fcap, c->n_fields + 1, sizeof *c->foff)) != AT_OK) break;
        c->flen = realloc(c->flen, fcap * sizeof *c->flen);
        if (!c->flen) { st = at_fail(AT_ERR_NOMEM, "csv: out of memory"); break; }
        c->foff[c->n_fields] = w;
        c->flen[c->n_fields] = 0;
        c->text[w++] = '\0';
        c->n_fields++;
      }
      continue;
    }
    if (data[i] == '\r') i++;
    if (i < len && data[i] == '\n') i++;
    line++;
    c->n_rows++;
    row_open = false;
  }
  if (st == AT_OK && row_open) c->n_rows++;
  if (st == AT_OK) {
    if ((st = grow((void **)&c->rstart, &rcap, c->n_rows + 1, sizeof *c->rstart)) == AT_OK)
      c->rstart[c->n_rows] = c->n_fields;
  }
  if (st != AT_OK) {
    at_csv_destroy(c);
    return st;
  }
  *out = c;
  return AT_OK;
}

at_status at_csv_load(const char *path, at_csv **out) {
  if (!path || !out) return at_fail(AT_ERR_INVALID_ARG, "at_csv_load: NULL argument");
  char *buf = NULL;
  size_t n = 0;
  at_status rs = at_read_file(path, AT_CSV_MAX_BYTES, "csv", &buf, &n);
  if (rs != AT_OK) return rs;
  at_status st = at_csv_parse(buf, n, out);
  free(buf);
  return st == AT_OK ? st : at_fail_in(st, path);
}

size_t at_csv_rows(const at_csv *c) { return c ? c->n_rows : 0; }

size_t at_csv_cols(const at_csv *c, size_t row) {
  if (!c || row >= c->n_rows) return 0;
  return c->rstart[row + 1] - c->rstart[row];
}

const char *at_csv_field(const at_csv *c, size_t row, size_t col, size_t *len) {
  if (!c || row >= c->n_rows || col >= at_csv_cols(c, row)) return NULL;
  size_t f = c->rstart[row] + col;
  if (len) *len = c->flen[f];
  return c->text + c->foff[f];
}

long at_csv_column(const at_csv *c, const char *name) {
  if (!c || !name || !c->n_rows) return -1;
  for (size_t j = 0; j < at_csv_cols(c, 0); j++)
    if (strcmp(at_csv_field(c, 0, j, NULL), name) == 0) return (long)j;
  return -1;
}

void at_csv_destroy(at_csv *c) {
  if (!c) return;
  free(c->text);
  free(c->foff);
  free(c->flen);
  free(c->rstart);
  free(c);
}
