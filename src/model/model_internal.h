/* src/model/model_internal.h — what the files of src/model/ share beyond
 * the public model.h: the ONNX graph-output scanner that guesses a model's
 * task, and the artifact-cache hook that src/ort/session.c calls. Not part
 * of the public API. */
#ifndef ANYTIME_MODEL_INTERNAL_H
#define ANYTIME_MODEL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/model.h"
#include "anytime/session.h"

#define AT_GRAPH_MAX_OUTPUTS 16
#define AT_GRAPH_NAME_MAX 128

/* Names of the graph outputs of the ONNX file at `path` (ModelProto.graph.
 * output[].name), without parsing anything else: large fields are skipped by
 * length. Names longer than AT_GRAPH_NAME_MAX-1 are truncated; outputs beyond
 * `max` are ignored. Returns the number found (>= 0), or -1 if the file cannot
 * be read or is not a well-formed ModelProto. */
int at_graph_output_names(const char *path, char names[][AT_GRAPH_NAME_MAX], int max);

/* Same over a buffer (used by the above and by tests). */
int at_graph_output_names_buf(const unsigned char *buf, size_t len,
                              char names[][AT_GRAPH_NAME_MAX], int max);

/* The artifact-cache path of at_session_create() (defined beside it in
 * artifact_cache.c), taken when params->artifact_cache_dir is set and
 * params->optimized_model_path is not. Creates the session from a cached
 * artifact or builds one (see model.h) with src/ort's plain
 * at_ort_session_open(). On success *outcome says which happened. Returns
 * what at_session_create() returns; a cache that cannot be used costs
 * nothing but the warning. */
at_status at_artifact_session_create(const char *model_path, const at_session_params *params,
                                     at_session **out, at_artifact_outcome *outcome);

/* Test hooks: replace the ONNX Runtime release and the CPU feature list that
 * go into cache keys (NULL restores the real ones). Not thread-safe; for
 * tests that show each key ingredient is honoured. */
void at_artifact_test_override(const char *ort_release, const char *cpu_features);

/* The CPU feature flags an optimised graph may depend on, space-separated and
 * sorted (e.g. "x86_64 avx avx2 avx512f fma ..."); static storage. */
const char *at_artifact_cpu_features(void);

/* The key ingredients, and the key they give. */
typedef struct at_artifact_ingredients {
  char model_sha256[65];
  const char *ort_release;
  const char *opt_level;    /* "disable", "basic", "extended", "all" */
  const char *provider;     /* "CPUExecutionProvider" */
  const char *cpu_features;
} at_artifact_ingredients;
void at_artifact_key(const at_artifact_ingredients *ing, char key_hex[65]);

/* A descriptor and everything it points to: strings are kept in a list and
 * freed together by at_model_desc_free(). Filled by resolve.c (variants,
 * task, tokenizer) and export.c (what the export files say). */
typedef struct at_desc_impl {
  at_model_desc pub; /* first: at_model_desc_free casts back */
  at_model_variant vars[AT_MODEL_MAX_VARIANTS];
  const char **labels;
  char **strs;
  size_t n_strs, cap_strs;
  int oom;
} at_desc_impl;

/* A copy of s owned by d (NULL for NULL; "" and d->oom set when memory runs
 * out). */
const char *at_model_keep(at_desc_impl *d, const char *s);

/* realpath(p) lies inside root_real (root itself excluded). */
int at_model_inside(const char *p, const char *root_real);
/* p names a regular file (after symlinks). */
int at_model_is_file(const char *p);

/* Read the export files of the model directory `dir` into d: `config_json`
 * (a path, or NULL for none), then beside it the sentence-transformers files
 * and tokenizer_config.json. With repo_real set (a hub repo's real path),
 * every file read must resolve inside it. Sets the config.json, limit and
 * pooling fields (see at_model_desc). Returns AT_OK or AT_ERR_MODEL /
 * AT_ERR_NOMEM with at_last_error() naming the file. */
at_status at_model_read_export(at_desc_impl *d, const char *dir, const char *config_json,
                               const char *repo_real);

/* The same over one config.json's text (no other files): for the fuzz
 * driver and tests. `label` names it in messages. */
at_status at_model_parse_config(at_desc_impl *d, const char *text, size_t len, const char *label);
/* The same for config_sentence_transformers.json's prompts (prompts,
 * default_prompt_name) into d's n_prompts, prompt_names/texts and
 * default_prompt. */
at_status at_model_parse_prompts(at_desc_impl *d, const char *text, size_t len,
                                 const char *label);

/* The commit hash a hub refs/<revision> file holds (text[0..len), as read
 * from the file): 7..64 lower-case hex digits, trailing white space
 * ignored, nothing else (a NUL byte included). Returns 1 with the hash in
 * hash[cap], or -1 if the text is anything else or the hash does not fit.
 * Defined in resolve.c. */
int at_model_parse_ref(const char *text, size_t len, char *hash, size_t cap);

/* The artifact cache's sidecar (<key>/meta.json, already parsed by
 * jansson), read two ways (artifact_cache.c; fuzzed by
 * tests/fuzz/fuzz_artifact_sidecar.c):
 * - at_artifact_sidecar_check(): does it describe the entry `key` (format
 *   1, that key, an integer artifact_size, a string artifact_sha256)? 0
 *   with *size and *sha256 (borrowed from m), or -1;
 * - at_artifact_sidecar_entry(): the listing's fields into e (strings
 *   truncated to their arrays, "" when absent; key and valid untouched);
 *   returns whether artifact_size was a non-negative integer (else
 *   size_bytes is 0). */
int at_artifact_sidecar_check(json_t *m, const char *key, int64_t *size, const char **sha256);
bool at_artifact_sidecar_entry(json_t *m, at_artifact_entry *e);

/* snprintf into dst[cap] where truncation is acceptable (messages) or ruled
 * out by the caller (paths built from checked parts); returns whether the
 * text fitted. Defined in resolve.c; shared by the files of src/model. */
int at_model_fmt(char *dst, size_t cap, const char *f, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* ANYTIME_MODEL_INTERNAL_H */
