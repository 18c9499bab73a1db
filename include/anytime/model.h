/* anytime/model.h — finding models by name, and the compiled-artifact cache.
 *
 * Resolution. A model argument ("spec") is one of
 *   - a local path: a directory holding ONNX graphs (model.onnx, onnx/<name>.onnx,
 *     config.json, tokenizer.json or vocab.txt) or one .onnx file;
 *   - a bare name ("sentiment-small") looked up in the model directories the
 *     caller names (e.g. ./models);
 *   - a Hugging Face repo id "org/name" or "org/name@revision", looked up in
 *     the hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else
 *     ~/.cache/huggingface/hub; then models--org--name/refs/<revision> (a file
 *     holding a commit hash) -> snapshots/<hash>/. A revision that is a commit
 *     hash, or a unique prefix of one (>= 7 hex digits), selects the snapshot
 *     directly. The default revision is "main".
 * The result is an at_model_desc: one model *family* with its variants (one
 * per ONNX file: "fp32" for model.onnx, "int8" for model_quantized.onnx or
 * model_int8.onnx, "fp16", ...; the most accurate first), what config.json
 * says (labels, sizes, task) and where the tokenizer is. Names never escape
 * the hub cache: repo ids and revisions are checked character by character,
 * and every file the hub cache hands back must resolve (after symlinks) inside
 * its models--org--name directory.
 *
 * Artifact cache. A session created with at_session_params.artifact_cache_dir
 * set (session.h) looks for the model's optimised graph, saved earlier in ORT
 * format, under a key derived from: the SHA-256 of the model bytes, the ONNX
 * Runtime release, the optimisation level, the execution provider and the CPU
 * features the optimised graph may depend on. A hit loads the saved artifact
 * (skipping graph optimisation); a miss loads the model normally and saves the
 * artifact atomically (a temporary directory, fsync, rename), so concurrent
 * first loads never see a half-written artifact. Each artifact carries a
 * sidecar (meta.json) with its SHA-256, checked on every hit (re-read in full
 * only when the file's stat facts differ from those remembered with the hash
 * in <artifacts dir>/.hashes/); a corrupt or truncated artifact is logged,
 * discarded and rebuilt. A hit maps the artifact read-only and ONNX Runtime
 * uses the mapping for the weights, for the session's lifetime: files under
 * the cache must not be modified in place while sessions use them. An
 * unusable cache directory degrades to no caching with one warning. Layout:
 * <artifacts dir>/<key>/{model.ort,meta.json}.
 *
 * Thread-safety: every function here is safe to call from any thread; the
 * returned objects are immutable and may be read from many threads. Several
 * threads or processes may use one cache directory at once.
 */
#ifndef ANYTIME_MODEL_H
#define ANYTIME_MODEL_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"
#include "anytime/tensor.h" /* at_pooling */

#ifdef __cplusplus
extern "C" {
#endif

#define AT_MODEL_MAX_VARIANTS 32
#define AT_MODEL_MAX_PROMPTS 16
#define AT_MODEL_MAX_EOS 8 /* end-of-sequence ids kept (generation) */

typedef enum at_model_task {
  AT_TASK_UNKNOWN = 0,
  AT_TASK_CLASSIFIER,  /* config has labels and the graph has a "logits" output */
  AT_TASK_EMBEDDER,    /* the graph has "last_hidden_state" / "sentence_embedding" */
  AT_TASK_GENERATOR,   /* a causal LM: "logits" plus present.* (KV cache) outputs, or a
                          *ForCausalLM / *LMHeadModel architecture */
} at_model_task;

typedef enum at_tokenizer_kind {
  AT_TOKENIZER_NONE = 0,
  AT_TOKENIZER_JSON,       /* tokenizer.json (Hugging Face tokenizers) */
  AT_TOKENIZER_VOCAB_TXT,  /* vocab.txt (BERT WordPiece) */
} at_tokenizer_kind;

typedef enum at_model_source {
  AT_MODEL_LOCAL = 0,  /* a path or a name in a model directory */
  AT_MODEL_HUB,        /* the Hugging Face hub cache */
} at_model_source;

/* One variant: one ONNX graph of the family. */
typedef struct at_model_variant {
  const char *name;      /* "fp32", "int8", "fp16", ...; unique in the family */
  const char *path;      /* the .onnx file (as found; may be a hub symlink) */
  const char *rel_path;  /* relative to at_model_desc.dir, e.g. "onnx/model.onnx" */
  bool is_quantized;     /* int8/uint8/4-bit weights, judged from the file name */
  uint64_t size_bytes;   /* size of the (resolved) file */
} at_model_variant;

/* A resolved model family. Every string and array is owned by the
 * descriptor and freed by at_model_desc_free(). */
typedef struct at_model_desc {
  const char *spec;            /* the argument as given */
  const char *family;          /* "org/name" for the hub, the directory name locally */
  at_model_source source;
  const char *repo_id;         /* "org/name" (hub) or NULL */
  const char *revision;        /* the revision asked for, "main" by default (hub) or NULL */
  const char *commit;          /* the snapshot's commit hash (hub) or NULL */
  const char *dir;             /* the snapshot or model directory */

  size_t n_variants;           /* >= 1 */
  const at_model_variant *variants;  /* most accurate first: fp32, fp16, others, quantized */

  /* From config.json (zero/NULL when there is none or a field is absent). */
  const char *config_path;     /* NULL if there is no config.json */
  const char *model_type;      /* "bert", ... */
  const char *architecture;    /* first of "architectures" */
  size_t n_labels;             /* from id2label (ids 0..n-1) */
  const char *const *labels;   /* labels[id]; "LABEL_<id>" for ids the config skips */
  int64_t hidden_size;         /* hidden_size, else dim / d_model */
  int64_t max_position_embeddings;  /* else n_positions */
  int64_t vocab_size;          /* config.json's vocab_size (0: absent) */
  int64_t type_vocab_size;     /* config.json's type_vocab_size (0: absent) */
  bool multi_label;            /* problem_type "multi_label_classification": scores are
                                  independent sigmoids, not one softmax */

  /* Tokens per input, special tokens included: the smallest of the position
   * table (max_position_embeddings less the position offset), the
   * sentence-transformers max_seq_length and tokenizer_config.json's
   * model_max_length. 0 when no file says. max_tokens_source names the file
   * and key that set it (for messages), or NULL. */
  int64_t max_tokens;
  const char *max_tokens_source;
  int64_t position_offset;     /* positions start here: pad_token_id + 1 for the
                                  RoBERTa family (roberta, xlm-roberta, camembert,
                                  mpnet, ...), else 0 */

  /* Embedders: pooling from the sentence-transformers files (modules.json,
   * 1_Pooling/config.json); AT_POOL_NONE when the graph's embedding output is
   * already pooled. pooling_source names the file that said so, or NULL. */
  at_pooling pooling;
  const char *pooling_source;
  const char *dense_module;    /* a sentence-transformers Dense module after pooling
                                  ("2_Dense") or NULL: served only when the graph
                                  includes it (a "sentence_embedding" output) */
  /* Prompts (config_sentence_transformers.json "prompts": name -> text put
   * before the input, e.g. "query: "), the one used when a request names
   * none (default_prompt_name; -1: none), and whether pooling leaves the
   * prompt's tokens out (1_Pooling's include_prompt: false). */
  size_t n_prompts;
  const char *prompt_names[AT_MODEL_MAX_PROMPTS];
  const char *prompt_texts[AT_MODEL_MAX_PROMPTS];
  int default_prompt;
  bool pool_excludes_prompt;

  /* Generation: bos_token_id from config.json (-1: absent); the
   * end-of-sequence ids from generation_config.json (what the model's own
   * generate() uses), else config.json: a number or a list, ids in
   * [0, INT32_MAX), at most AT_MODEL_MAX_EOS; add_bos_token from
   * tokenizer_config.json. */
  int64_t bos_token_id;
  size_t n_eos;
  int64_t eos_token_ids[AT_MODEL_MAX_EOS];
  bool add_bos_token;

  at_model_task task;          /* from config and the default variant's outputs */
  const char *task_output;     /* the graph output the task reads ("logits", ...) or NULL */

  const char *tokenizer_path;  /* tokenizer.json, else vocab.txt, else NULL */
  at_tokenizer_kind tokenizer_kind;
} at_model_desc;

typedef struct at_model_resolve_params {
  /* Hub cache to search; NULL = $HF_HUB_CACHE / $HF_HOME/hub /
   * ~/.cache/huggingface/hub. */
  const char *hub_cache;
  /* Directories where a bare name ("sentiment-small") is looked up, in order.
   * Default: none. */
  const char *const *model_dirs;
  size_t n_model_dirs;
} at_model_resolve_params;

/* Defaults as documented on each field. */
AT_API at_model_resolve_params at_model_resolve_default_params(void);

/* The hub cache directory `p` selects (p may be NULL), written to buf.
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL buf), AT_ERR_LIMIT (too long) or
 * AT_ERR_NOT_FOUND (no HF variable and no $HOME). */
AT_API at_status at_model_hub_cache_dir(const at_model_resolve_params *p, char *buf, size_t cap);

/* Resolve `spec` (see the top of this header). On success *out owns the
 * descriptor; free it with at_model_desc_free().
 * Returns AT_OK; AT_ERR_INVALID_ARG (NULL arguments; a repo id, name or
 * revision with characters or parts that are not allowed: "..", absolute
 * paths, backslashes, empty parts); AT_ERR_NOT_FOUND (nothing matches:
 * at_last_error() lists EVERY place searched; or a snapshot without any ONNX
 * graph); AT_ERR_MODEL (a ref or file that points outside its repo directory,
 * an ambiguous commit prefix, or an unreadable config.json); AT_ERR_LIMIT
 * (more than AT_MODEL_MAX_VARIANTS graphs or an over-long path);
 * AT_ERR_NOMEM. */
AT_API at_status at_model_resolve(const char *spec, const at_model_resolve_params *p,
                                  at_model_desc **out);

/* What a model's export files say, without looking for graphs: for callers
 * (the server) whose configuration names the graphs itself. `config_json` is
 * the config.json to read; the sentence-transformers files (modules.json,
 * 1_Pooling/config.json, sentence_bert_config.json) and tokenizer_config.json
 * are read beside it. Fills the config.json, limit and pooling fields of a
 * descriptor with no variants (n_variants 0, task unknown); pooling is the
 * one the files name (never AT_POOL_NONE: the graph decides that). Returns
 * AT_OK; AT_ERR_INVALID_ARG; AT_ERR_MODEL (a file that is not valid JSON, a
 * label table or pooling config that cannot be read, a sentence-transformers
 * Dense module: see docs/models.md); AT_ERR_NOMEM. */
AT_API at_status at_model_describe_files(const char *config_json, at_model_desc **out);

/* Free a descriptor. NULL is a no-op. */
AT_API void at_model_desc_free(at_model_desc *d);

/* Index of the variant called `name` ("int8" also finds "quantized" and vice
 * versa), or -1. */
AT_API int at_model_desc_variant_index(const at_model_desc *d, const char *name);

/* "classifier", "embedder", "unknown". Static. */
AT_API const char *at_model_task_name(at_model_task t);

/* One entry of a listing: a model that resolved (desc) or one that did not
 * (error says why; e.g. a hub repo without ONNX files). */
typedef struct at_model_entry {
  const char *spec;      /* what to pass to at_model_resolve() */
  at_model_source source;
  at_model_desc *desc;   /* NULL when resolution failed */
  const char *error;     /* NULL when desc is set */
} at_model_entry;

/* List every model in the hub cache (its "main" revision, or its only
 * snapshot) and in each model directory of `p` (each subdirectory that holds
 * an ONNX graph). On success *out is an array of *n entries, sorted by
 * source then name; free with at_model_list_free(). A hub cache or model
 * directory that does not exist contributes nothing.
 * Returns AT_OK, AT_ERR_INVALID_ARG, AT_ERR_LIMIT (over 4096 entries),
 * AT_ERR_NOMEM. */
AT_API at_status at_model_list(const at_model_resolve_params *p, at_model_entry **out, size_t *n);
/* Free a listing. NULL is a no-op. */
AT_API void at_model_list_free(at_model_entry *entries, size_t n);

/* ---- compiled-artifact cache -------------------------------------------- */

/* The artifacts directory: <root>/artifacts where root is `override` if not
 * NULL, else $ANYTIME_CACHE_DIR, else $XDG_CACHE_HOME/anytime, else
 * ~/.cache/anytime. This is the value for at_session_params.artifact_cache_dir.
 * Nothing is created. Returns AT_OK, AT_ERR_INVALID_ARG, AT_ERR_LIMIT,
 * AT_ERR_NOT_FOUND (no variable and no $HOME). */
AT_API at_status at_artifact_cache_dir(const char *override, char *buf, size_t cap);

/* One cached artifact, as read from its sidecar. */
typedef struct at_artifact_entry {
  char key[65];            /* hex SHA-256 cache key (the directory name) */
  char model[256];         /* model label recorded at build ("org/name") */
  char variant[64];        /* variant label recorded at build */
  char model_path[AT_PATH_CAP]; /* the ONNX file it was built from */
  char ort_release[32];
  char opt_level[16];
  char provider[64];
  uint64_t size_bytes;     /* artifact size */
  int64_t created_unix;    /* seconds since the epoch */
  bool valid;              /* sidecar readable and artifact size matches */
} at_artifact_entry;

/* List the artifacts in `dir` (an artifacts directory). *out (free with
 * free()) holds *n entries, newest first; a directory that does not exist
 * gives 0 entries. Returns AT_OK, AT_ERR_INVALID_ARG, AT_ERR_IO, AT_ERR_NOMEM. */
AT_API at_status at_artifact_cache_list(const char *dir, at_artifact_entry **out, size_t *n);

/* Remove every artifact (and leftover temporary directory) in `dir`; only
 * entries anytime made (64-hex-digit keys, .tmp-*, .trash-*, the model hash
 * memo .hashes) are touched.
 * *removed (may be NULL) counts removed artifacts. Returns AT_OK,
 * AT_ERR_INVALID_ARG, AT_ERR_IO (something could not be removed). */
AT_API at_status at_artifact_cache_clear(const char *dir, size_t *removed);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_MODEL_H */
