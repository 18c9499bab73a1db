/* tests/fuzz/fuzz_artifact_sidecar.c — libFuzzer driver for the artifact
 * cache's sidecar reader (<key>/meta.json; at_artifact_sidecar_check and
 * at_artifact_sidecar_entry, src/model/artifact_cache.c), fed the way the
 * cache feeds them: jansson with JSON_REJECT_DUPLICATES for the load path,
 * plain for `anytime cache ls`. The key asked for is the sidecar's own
 * "key" when it has one (the hit path), else a fixed one. Checked:
 *   - check: accepted exactly when format is the integer 1, key is that
 *     key, artifact_size an integer and artifact_sha256 a string; then the
 *     size and digest are the sidecar's;
 *   - listing: each string field is the sidecar's string cut to its array
 *     (NUL-terminated, "" when absent or not a string); size_bytes is the
 *     artifact_size when that is a non-negative integer and 0 otherwise
 *     (a size the listing shows must be one a file can have), and the
 *     function says whether there was a usable size.
 * Seeds: tests/fuzz/corpus/artifact_sidecar/ (sidecars the cache wrote). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static const char k_key[] = "5983fc15f13b05e35bbd45df211a11b16b2d4a13dc60ce4a81de42fd8093336f";

static void same_str(const char *got, size_t cap, json_t *m, const char *field) {
  if (strnlen(got, cap) >= cap) abort();
  json_t *v = json_object_get(m, field);
  const char *want = json_is_string(v) ? json_string_value(v) : "";
  size_t wl = strlen(want) < cap - 1 ? strlen(want) : cap - 1;
  if (strlen(got) != wl || memcmp(got, want, wl)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t jerr;
  json_t *m = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
  if (m) {
    json_t *k = json_object_get(m, "key");
    const char *key = json_is_string(k) ? json_string_value(k) : k_key;
    json_t *f = json_object_get(m, "format"), *sz = json_object_get(m, "artifact_size");
    json_t *sum = json_object_get(m, "artifact_sha256");
    int want = json_is_integer(f) && json_integer_value(f) == 1 && json_is_string(k) &&
               json_is_integer(sz) && json_is_string(sum);
    int64_t size_out = -7;
    const char *sha = NULL;
    int r = at_artifact_sidecar_check(m, key, &size_out, &sha);
    if ((r == 0) != want) abort();
    if (r == 0 && (size_out != json_integer_value(sz) || sha != json_string_value(sum))) abort();
    if (r == 0 &&
        at_artifact_sidecar_check(m, k_key[0] == key[0] ? "x" : k_key, &size_out, &sha) == 0)
      abort(); /* another key is never described */
    json_decref(m);
  }
  m = json_loadb((const char *)data, size, 0, &jerr);
  if (m) {
    at_artifact_entry e;
    memset(&e, 0x5a, sizeof e);
    bool has = at_artifact_sidecar_entry(m, &e);
    same_str(e.model, sizeof e.model, m, "model");
    same_str(e.variant, sizeof e.variant, m, "variant");
    same_str(e.model_path, sizeof e.model_path, m, "model_path");
    same_str(e.ort_release, sizeof e.ort_release, m, "ort_release");
    same_str(e.opt_level, sizeof e.opt_level, m, "opt_level");
    same_str(e.provider, sizeof e.provider, m, "provider");
    json_t *sz = json_object_get(m, "artifact_size"), *c = json_object_get(m, "created_unix");
    int usable = json_is_integer(sz) && json_integer_value(sz) >= 0;
    if (has != usable) abort();
    if (e.size_bytes != (usable ? (uint64_t)json_integer_value(sz) : 0)) abort();
    if (e.created_unix != (json_is_integer(c) ? json_integer_value(c) : 0)) abort();
    json_decref(m);
  }
  return 0;
}
