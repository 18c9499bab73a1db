/* tests/fuzz/fuzz_model_config.c — libFuzzer driver for what model
 * resolution reads from a model directory besides the graphs
 * (src/model/resolve.c): config.json (at_model_config_parse) and a Hugging
 * Face hub refs/<revision> file (at_model_parse_ref). The same bytes go to
 * both. Checked against references written here:
 *   - config: accepted exactly when it is a JSON object (duplicate keys
 *     refused) whose id2label keys are decimal ids 0..4095 with string
 *     values (or, without id2label, whose label2id values are integer ids
 *     0..4095); then n_labels is one past the largest id, every label is a
 *     string, labels[id] is the config's own text (LABEL_<i> for an id it
 *     skips), hidden_size / max_position_embeddings are the first integer
 *     of their key lists, model_type and the first architecture as given;
 *   - ref: accepted exactly when the text, trailing white space dropped,
 *     is 7..64 lower-case hex digits and nothing else; the hash returned is
 *     that text (a full commit hash is 40 of them).
 * Seeds: tests/fuzz/corpus/model_config/ (config.json of each model in models/, refs). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static int64_t first_int(json_t *root, const char *const *keys) {
  for (; *keys; keys++) {
    json_t *v = json_object_get(root, *keys);
    if (json_is_integer(v)) return json_integer_value(v);
  }
  return 0;
}

/* Decimal id 0..4095 the way strtol reads a key (sign and leading white
 * space allowed): -1 if not. */
static long key_id(const char *k) {
  char *end;
  long id = strtol(k, &end, 10);
  if (end == k || *end || id < 0 || id >= 4096) return -1;
  return id;
}

static void check_config(const uint8_t *data, size_t size) {
  json_error_t jerr;
  json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
  int want = root && json_is_object(root);
  size_t want_n = 0;
  json_t *id2 = want ? json_object_get(root, "id2label") : NULL;
  json_t *l2i = want ? json_object_get(root, "label2id") : NULL;
  const char *k;
  json_t *v;
  if (json_is_object(id2)) {
    json_object_foreach(id2, k, v) {
      long id = key_id(k);
      if (id < 0 || !json_is_string(v))
        want = 0;
      else if ((size_t)id + 1 > want_n)
        want_n = (size_t)id + 1;
    }
  } else if (json_is_object(l2i)) {
    json_object_foreach(l2i, k, v) {
      json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
      if (id < 0 || id >= 4096)
        want = 0;
      else if ((size_t)id + 1 > want_n)
        want_n = (size_t)id + 1;
    }
  }
  at_model_desc *d = NULL;
  at_status st = at_model_config_parse((const char *)data, size, &d);
  if ((st == AT_OK) != want) abort();
  if (st == AT_OK) {
    if (d->n_labels != want_n || (want_n && !d->labels)) abort();
    for (size_t i = 0; i < d->n_labels; i++)
      if (!d->labels[i]) abort();
    if (json_is_object(id2)) {
      for (size_t i = 0; i < want_n; i++) { /* the last key naming id i wins, as in Python */
        const char *lab = NULL;
        json_object_foreach(id2, k, v) if (key_id(k) == (long)i) lab = json_string_value(v);
        char dflt[32];
        snprintf(dflt, sizeof dflt, "LABEL_%zu", i);
        if (strcmp(d->labels[i], lab ? lab : dflt)) abort();
      }
    }
    static const char *const hidden[] = {"hidden_size", "dim", "d_model", NULL};
    static const char *const maxpos[] = {"max_position_embeddings", "n_positions", NULL};
    if (d->hidden_size != first_int(root, hidden)) abort();
    if (d->max_position_embeddings != first_int(root, maxpos)) abort();
    json_t *mt = json_object_get(root, "model_type");
    if (json_is_string(mt) != (d->model_type != NULL)) abort();
    if (d->model_type && strcmp(d->model_type, json_string_value(mt))) abort();
    json_t *a0 = json_array_get(json_object_get(root, "architectures"), 0);
    if (json_is_string(a0) != (d->architecture != NULL)) abort();
    if (d->architecture && strcmp(d->architecture, json_string_value(a0))) abort();
    at_model_desc_free(d);
  }
  json_decref(root);
}

static void check_ref(const uint8_t *data, size_t size) {
  size_t n = size;
  while (n && (data[n - 1] == ' ' || (data[n - 1] >= '\t' && data[n - 1] <= '\r'))) n--;
  int want = n >= 7 && n <= 64;
  for (size_t i = 0; i < n && want; i++)
    want = (data[i] >= '0' && data[i] <= '9') || (data[i] >= 'a' && data[i] <= 'f');
  char hash[160];
  int r = at_model_parse_ref((const char *)data, size, hash, sizeof hash);
  if (r != (want ? 1 : -1)) abort();
  if (r == 1 && (strlen(hash) != n || memcmp(hash, data, n))) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_config(data, size);
  check_ref(data, size);
  return 0;
}
