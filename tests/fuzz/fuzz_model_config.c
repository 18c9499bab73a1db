/* tests/fuzz/fuzz_model_config.c — libFuzzer driver for what model
 * resolution reads from a model directory besides the graphs: config.json
 * (at_model_parse_config, src/model/export.c, the one reader the library
 * and the server share) and a Hugging Face hub refs/<revision> file
 * (at_model_parse_ref, src/model/resolve.c). The same bytes go to both.
 * Checked against references written here:
 *   - config: accepted exactly when it is a JSON object (duplicate keys
 *     refused) whose id2label (when a non-empty object) has decimal ids
 *     0..4095 as keys and strings as values, or else whose label2id values
 *     are integer ids 0..4095; then n_labels is one past the largest id,
 *     every label is a string, labels[id] is the config's own text
 *     (LABEL_<i> for an id it skips); hidden_size, max_position_embeddings,
 *     vocab_size and type_vocab_size are the first integer of their key
 *     lists; model_type, the first architecture and multi_label as given;
 *     the token limit is max_position_embeddings less the position offset
 *     when that is in 3..2^20, else none;
 *   - prompts (config_sentence_transformers.json, at_model_parse_prompts):
 *     accepted exactly when it is a JSON object (duplicate keys refused)
 *     whose "prompts" is absent, null, or an object of at most 16 strings,
 *     and whose "default_prompt_name" is absent, null or one of those
 *     names; then the names and texts are the object's, in order, and the
 *     default is that name's index (else -1);
 *   - ref: accepted exactly when the text, trailing white space dropped,
 *     is 7..64 lower-case hex digits and nothing else; the hash returned is
 *     that text (a full commit hash is 40 of them; the hub also allows
 *     abbreviated and 64-digit ones).
 * Seeds: tests/fuzz/corpus/model_config/ (config.json of each model in
 * models/, refs). */
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
  int by_id = json_is_object(id2) && json_object_size(id2) > 0;
  if (by_id) {
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
  at_desc_impl *di = calloc(1, sizeof *di);
  if (!di) abort();
  di->pub.variants = di->vars;
  at_model_desc *d = &di->pub;
  at_status st = at_model_parse_config(di, (const char *)data, size, "config.json");
  if ((st == AT_OK) != want) abort();
  if (st == AT_OK) {
    if (d->n_labels != want_n || (want_n && !d->labels)) abort();
    for (size_t i = 0; i < d->n_labels; i++)
      if (!d->labels[i]) abort();
    if (by_id) {
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
    static const char *const vocab[] = {"vocab_size", NULL}, *const types[] = {"type_vocab_size", NULL};
    if (d->vocab_size != first_int(root, vocab) || d->type_vocab_size != first_int(root, types))
      abort();
    json_t *pt = json_object_get(root, "problem_type");
    if (d->multi_label != (json_is_string(pt) && !strcmp(json_string_value(pt), "multi_label_classification")))
      abort();
    if (d->position_offset < 0 || d->position_offset > 1024) abort();
    if (d->model_type && !strcmp(d->model_type, "roberta")) { /* positions start at pad + 1 */
      json_t *pad = json_object_get(root, "pad_token_id");
      int64_t p = json_is_integer(pad) ? json_integer_value(pad) : -1;
      if (d->position_offset != (p >= 0 && p < 1024 ? p + 1 : 2)) abort();
    }
    /* the limit, computed without overflow */
    int64_t mpe = d->max_position_embeddings, off = d->position_offset;
    int64_t want_lim = mpe > off + 2 && mpe - off <= (1 << 20) ? mpe - off : 0;
    if (d->max_tokens != want_lim) abort();
  }
  at_model_desc_free(d);
  json_decref(root);
}

static void check_prompts(const uint8_t *data, size_t size) {
  json_error_t err;
  json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
  int want = root && json_is_object(root);
  json_t *pr = want ? json_object_get(root, "prompts") : NULL;
  if (pr && !json_is_null(pr)) {
    want = json_is_object(pr) && json_object_size(pr) <= AT_MODEL_MAX_PROMPTS;
    const char *k;
    json_t *v;
    if (want) json_object_foreach(pr, k, v) want &= json_is_string(v);
  } else {
    pr = NULL;
  }
  json_t *dn = want ? json_object_get(root, "default_prompt_name") : NULL;
  if (dn && !json_is_null(dn))
    want = json_is_string(dn) && pr && json_object_get(pr, json_string_value(dn)) != NULL;
  at_desc_impl *di = calloc(1, sizeof *di);
  if (!di) abort();
  at_status st = at_model_parse_prompts(di, (const char *)data, size, "prompts");
  if ((st == AT_OK) != want) abort();
  if (st == AT_OK) {
    const at_model_desc *d = &di->pub;
    if (d->n_prompts != (pr ? json_object_size(pr) : 0)) abort();
    size_t i = 0;
    const char *k;
    json_t *v;
    if (pr) json_object_foreach(pr, k, v) {
        if (strcmp(d->prompt_names[i], k) || strcmp(d->prompt_texts[i], json_string_value(v)))
          abort();
        i++;
      }
    if (dn && !json_is_null(dn)) {
      if (d->default_prompt < 0 || strcmp(d->prompt_names[d->default_prompt], json_string_value(dn)))
        abort();
    } else if (d->default_prompt != -1) {
      abort();
    }
  }
  at_model_desc_free(&di->pub);
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
  check_prompts(data, size);
  check_ref(data, size);
  return 0;
}
