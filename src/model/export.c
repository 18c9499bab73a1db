/* src/model/export.c — what a model's export files say about serving it.
 * One reader, used by model resolution (`run`, `eval`, `profile`, `serve
 * --model`) and by the server for the models its configuration names, so
 * that they all read config.json the same way.
 *
 *   config.json                 architecture, model_type, labels (id2label,
 *                               else label2id), sizes, problem_type, the
 *                               position table and pad_token_id
 *   modules.json                the sentence-transformers pipeline: which
 *                               directory holds the Pooling module, whether a
 *                               Dense module follows it
 *   <pooling dir>/config.json   pooling_mode_* (1_Pooling/ when modules.json
 *                               is absent)
 *   sentence_bert_config.json   max_seq_length
 *   config_sentence_transformers.json   prompts, default_prompt_name
 *   tokenizer_config.json       model_max_length, add_bos_token
 *   generation_config.json      eos_token_id (else config.json's, as
 *                               bos_token_id)
 *
 * Token limit: the smallest of the position table (max_position_embeddings
 * less the offset RoBERTa-family models start their positions at,
 * pad_token_id + 1), max_seq_length and model_max_length (the tokenizers
 * library writes 1e30 for "no limit"; anything above 2^20 is ignored).
 *
 * Every file is optional; one that is present must be valid JSON of the
 * expected shape, or loading fails naming it. In a hub snapshot every file
 * must resolve inside its repository (files there are links into blobs/). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"
#include "model/model_internal.h"

#define MAX_LABELS 4096
#define MAX_JSON_BYTES (4u << 20)
#define PATH_CAP AT_PATH_CAP
#define NO_LIMIT_ABOVE (1 << 20)

/* Load dir/name (or `name` alone when dir is NULL) into *out, an object (or
 * a list with LIST in flags); *out = NULL when the file is absent. path[cap]
 * receives the file's path. */
#define LIST ((size_t)1 << 30)
static at_status load_json(const char *dir, const char *name, const char *repo_real, size_t flags,
                           json_t **out, char *path, size_t cap) {
  *out = NULL;
  if (dir) at_model_fmt(path, cap, "%s/%s", dir, name);
  else at_model_fmt(path, cap, "%s", name);
  struct stat st;
  if (stat(path, &st) != 0) return AT_OK;
  if (!S_ISREG(st.st_mode)) return at_fail(AT_ERR_MODEL, "%s is not a regular file", path);
  if (repo_real && !at_model_inside(path, repo_real))
    return at_fail(AT_ERR_MODEL, "'%s' resolves outside its repository directory", path);
  if (st.st_size > (off_t)MAX_JSON_BYTES)
    return at_fail(AT_ERR_MODEL, "%s is larger than %u bytes", path, MAX_JSON_BYTES);
  json_error_t err;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES | (flags & ~LIST), &err);
  if (!root) return at_fail(AT_ERR_MODEL, "%s: line %d: %s", path, err.line, err.text);
  if ((flags & LIST) ? !json_is_array(root) : !json_is_object(root)) {
    json_decref(root);
    return at_fail(AT_ERR_MODEL, "%s is not a JSON %s", path, (flags & LIST) ? "list" : "object");
  }
  *out = root;
  return AT_OK;
}

static int64_t int_field(json_t *root, const char *const *keys) {
  for (; *keys; keys++) {
    json_t *v = json_object_get(root, *keys);
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
  }
  return 0;
}

/* Lower the token limit to `v` when it is tighter, recording who said so. */
static void limit(at_desc_impl *d, int64_t v, const char *source) {
  if (v <= 2 || v > NO_LIMIT_ABOVE) return;
  if (d->pub.max_tokens == 0 || v < d->pub.max_tokens) {
    d->pub.max_tokens = v;
    d->pub.max_tokens_source = at_model_keep(d, source);
  }
}

/* Model types whose position ids start at padding_idx + 1 (the RoBERTa
 * convention): their table holds max_position_embeddings - pad - 1 tokens. */
static int offset_positions(const char *model_type) {
  static const char *const k[] = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert",
                                  "longformer", "data2vec-text", "ibert", "mpnet",
                                  "roberta-prelayernorm", "xmod", "luke", "markuplm"};
  for (size_t i = 0; model_type && i < sizeof k / sizeof *k; i++)
    if (strcmp(model_type, k[i]) == 0) return 1;
  return 0;
}

static at_status labels_from(at_desc_impl *d, json_t *root, const char *label) {
  json_t *id2 = json_object_get(root, "id2label"), *l2i = json_object_get(root, "label2id");
  const char **names = calloc(MAX_LABELS, sizeof *names);
  if (!names) return at_fail(AT_ERR_NOMEM, "out of memory");
  size_t n = 0;
  at_status rc = AT_OK;
  const char *key;
  json_t *val;
  if (json_is_object(id2) && json_object_size(id2) > 0) {
    json_object_foreach(id2, key, val) {
      char *end;
      errno = 0;
      long id = strtol(key, &end, 10);
      if (errno || *end || end == key || id < 0 || id >= MAX_LABELS || !json_is_string(val)) {
        rc = at_fail(AT_ERR_MODEL, "%s: id2label entry \"%s\" is not \"<id 0..%d>\": \"<label>\"",
                     label, key, MAX_LABELS - 1);
        break;
      }
      names[id] = json_string_value(val);
      if ((size_t)id + 1 > n) n = (size_t)id + 1;
    }
  } else if (json_is_object(l2i)) {
    json_object_foreach(l2i, key, val) {
      json_int_t id = json_is_integer(val) ? json_integer_value(val) : -1;
      if (id < 0 || id >= MAX_LABELS) {
        rc = at_fail(AT_ERR_MODEL, "%s: label2id entry \"%s\" has no id in 0..%d", label, key,
                     MAX_LABELS - 1);
        break;
      }
      names[id] = key;
      if ((size_t)id + 1 > n) n = (size_t)id + 1;
    }
  }
  if (rc == AT_OK && n) {
    free(d->labels);
    d->labels = calloc(n, sizeof *d->labels);
    if (!d->labels) {
      rc = at_fail(AT_ERR_NOMEM, "out of memory");
    } else {
      for (size_t i = 0; i < n; i++) {
        char dflt[32];
        at_model_fmt(dflt, sizeof dflt, "LABEL_%zu", i);
        d->labels[i] = at_model_keep(d, names[i] ? names[i] : dflt);
      }
      d->pub.labels = d->labels;
      d->pub.n_labels = n;
    }
  }
  free(names);
  return rc;
}

/* eos_token_id: a number or a list of them; ids outside [0, INT32_MAX) are
 * skipped, at most AT_MODEL_MAX_EOS kept. Absent or null: nothing set. */
static void eos_from(at_desc_impl *d, json_t *root) {
  json_t *eos = json_object_get(root, "eos_token_id");
  if (!eos || json_is_null(eos)) return;
  d->pub.n_eos = 0;
  json_t *one[1] = {eos};
  size_t n = json_is_array(eos) ? json_array_size(eos) : 1;
  for (size_t i = 0; i < n && d->pub.n_eos < AT_MODEL_MAX_EOS; i++) {
    json_t *e = json_is_array(eos) ? json_array_get(eos, i) : one[0];
    if (json_is_integer(e) && json_integer_value(e) >= 0 && json_integer_value(e) < INT32_MAX)
      d->pub.eos_token_ids[d->pub.n_eos++] = (int64_t)json_integer_value(e);
  }
}

static at_status config_from(at_desc_impl *d, json_t *root, const char *label) {
  json_t *v = json_object_get(root, "bos_token_id");
  d->pub.bos_token_id = json_is_integer(v) && json_integer_value(v) >= 0 &&
                                json_integer_value(v) < INT32_MAX
                            ? (int64_t)json_integer_value(v)
                            : -1;
  eos_from(d, root);
  v = json_object_get(root, "model_type");
  if (json_is_string(v)) d->pub.model_type = at_model_keep(d, json_string_value(v));
  v = json_object_get(root, "architectures");
  if (json_is_array(v) && json_is_string(json_array_get(v, 0)))
    d->pub.architecture = at_model_keep(d, json_string_value(json_array_get(v, 0)));
  static const char *const hidden[] = {"hidden_size", "dim", "d_model", NULL};
  static const char *const maxpos[] = {"max_position_embeddings", "n_positions", NULL};
  static const char *const vocab[] = {"vocab_size", NULL};
  static const char *const types[] = {"type_vocab_size", NULL};
  d->pub.hidden_size = int_field(root, hidden);
  d->pub.max_position_embeddings = int_field(root, maxpos);
  d->pub.vocab_size = int_field(root, vocab);
  d->pub.type_vocab_size = int_field(root, types);
  v = json_object_get(root, "problem_type");
  d->pub.multi_label = json_is_string(v) && !strcmp(json_string_value(v), "multi_label_classification");
  if (offset_positions(d->pub.model_type)) {
    json_t *pad = json_object_get(root, "pad_token_id");
    d->pub.position_offset = json_is_integer(pad) && json_integer_value(pad) >= 0 &&
                                     json_integer_value(pad) < 1024
                                 ? (int64_t)json_integer_value(pad) + 1
                                 : 2; /* RoBERTa's own pad id is 1 */
  }
  char src[PATH_CAP + 64];
  if (d->pub.position_offset)
    at_model_fmt(src, sizeof src, "%s (max_position_embeddings %lld less %lld)", label,
                 (long long)d->pub.max_position_embeddings, (long long)d->pub.position_offset);
  else
    at_model_fmt(src, sizeof src, "%s (max_position_embeddings)", label);
  if (d->pub.max_position_embeddings > d->pub.position_offset) /* else no table: no overflow */
    limit(d, d->pub.max_position_embeddings - d->pub.position_offset, src);
  return labels_from(d, root, label);
}

at_status at_model_parse_config(at_desc_impl *d, const char *text, size_t len, const char *label) {
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  if (!root) return at_fail(AT_ERR_MODEL, "%s: line %d: %s", label, err.line, err.text);
  at_status rc = json_is_object(root) ? config_from(d, root, label)
                                      : at_fail(AT_ERR_MODEL, "%s is not a JSON object", label);
  json_decref(root);
  return rc;
}

/* The pooling mode a 1_Pooling/config.json names: exactly one flag on. */
static at_status pooling_from(at_desc_impl *d, json_t *root, const char *path) {
  static const struct {
    const char *key;
    at_pooling mode;
  } k[] = {{"pooling_mode_cls_token", AT_POOL_CLS},
           {"pooling_mode_mean_tokens", AT_POOL_MEAN},
           {"pooling_mode_max_tokens", AT_POOL_MAX},
           {"pooling_mode_mean_sqrt_len_tokens", AT_POOL_MEAN_SQRT_LEN},
           {"pooling_mode_weightedmean_tokens", AT_POOL_WEIGHTED_MEAN},
           {"pooling_mode_lasttoken", AT_POOL_LAST}};
  int on = 0;
  at_pooling mode = AT_POOL_MEAN;
  char modes[256] = "";
  for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
    json_t *v = json_object_get(root, k[i].key);
    if (v && !json_is_boolean(v))
      return at_fail(AT_ERR_MODEL, "%s: \"%s\" must be true or false", path, k[i].key);
    if (json_is_true(v)) {
      on++;
      mode = k[i].mode;
      size_t o = strlen(modes);
      at_model_fmt(modes + o, sizeof modes - o, " %s", k[i].key);
    }
  }
  /* newer files also name the mode in one string */
  json_t *pm = json_object_get(root, "pooling_mode");
  if (on == 0 && json_is_string(pm)) {
    static const char *const names[] = {"mean", "cls", "max", "mean_sqrt_len_tokens",
                                        "weightedmean", "lasttoken"};
    static const at_pooling modes_of[] = {AT_POOL_MEAN, AT_POOL_CLS, AT_POOL_MAX,
                                          AT_POOL_MEAN_SQRT_LEN, AT_POOL_WEIGHTED_MEAN,
                                          AT_POOL_LAST};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
      if (!strcmp(json_string_value(pm), names[i])) mode = modes_of[i], on = 1;
    if (!on)
      return at_fail(AT_ERR_MODEL, "%s: pooling_mode \"%s\" is not supported (mean, cls, max, "
                     "mean_sqrt_len_tokens, weightedmean, lasttoken are)", path,
                     json_string_value(pm));
  }
  if (on > 1)
    return at_fail(AT_ERR_MODEL, "%s: several pooling modes are on (%s ); anytime pools one way "
                   "(their concatenation is not supported)", path, modes);
  if (on == 0)
    return at_fail(AT_ERR_MODEL, "%s names no pooling mode (one pooling_mode_* must be true)", path);
  d->pub.pool_excludes_prompt = json_is_false(json_object_get(root, "include_prompt"));
  d->pub.pooling = mode;
  d->pub.pooling_source = at_model_keep(d, path);
  return AT_OK;
}

/* config_sentence_transformers.json: "prompts" (an object of strings) and
 * "default_prompt_name" (null or one of its keys). */
static at_status prompts_from(at_desc_impl *d, json_t *root, const char *path) {
  json_t *pr = json_object_get(root, "prompts");
  if (pr && !json_is_null(pr)) {
    if (!json_is_object(pr))
      return at_fail(AT_ERR_MODEL, "%s: \"prompts\" must be an object of name: text", path);
    if (json_object_size(pr) > AT_MODEL_MAX_PROMPTS)
      return at_fail(AT_ERR_MODEL, "%s: %zu prompts; anytime reads at most %d", path,
                     json_object_size(pr), AT_MODEL_MAX_PROMPTS);
    const char *k;
    json_t *v;
    json_object_foreach(pr, k, v) {
      if (!json_is_string(v))
        return at_fail(AT_ERR_MODEL, "%s: prompt \"%s\" is not a string", path, k);
      size_t i = d->pub.n_prompts++;
      d->pub.prompt_names[i] = at_model_keep(d, k);
      d->pub.prompt_texts[i] = at_model_keep(d, json_string_value(v));
    }
  }
  json_t *dn = json_object_get(root, "default_prompt_name");
  if (dn && !json_is_null(dn)) {
    const char *name = json_string_value(dn);
    for (size_t i = 0; name && i < d->pub.n_prompts; i++)
      if (!strcmp(d->pub.prompt_names[i], name)) d->pub.default_prompt = (int)i;
    if (d->pub.default_prompt < 0)
      return at_fail(AT_ERR_MODEL, "%s: default_prompt_name is not one of its \"prompts\"", path);
  }
  return AT_OK;
}

at_status at_model_parse_prompts(at_desc_impl *d, const char *text, size_t len,
                                 const char *label) {
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  if (!root) return at_fail(AT_ERR_MODEL, "%s: line %d: %s", label, err.line, err.text);
  d->pub.default_prompt = -1;
  at_status rc = json_is_object(root) ? prompts_from(d, root, label)
                                      : at_fail(AT_ERR_MODEL, "%s is not a JSON object", label);
  json_decref(root);
  return rc;
}

/* modules.json: a list of {"path", "type"}. Finds the Pooling module's
 * directory and a Dense module, if any. */
static at_status modules_from(at_desc_impl *d, json_t *mods, const char *path, char *pool_dir,
                              size_t cap) {
  size_t i;
  json_t *m;
  json_array_foreach(mods, i, m) {
    json_t *ty = json_object_get(m, "type"), *p = json_object_get(m, "path");
    if (!json_is_string(ty) || !json_is_string(p))
      return at_fail(AT_ERR_MODEL, "%s: module %zu needs string \"type\" and \"path\"", path, i);
    const char *t = json_string_value(ty), *dir = json_string_value(p);
    if (strstr(dir, "..") || dir[0] == '/')
      return at_fail(AT_ERR_MODEL, "%s: module path \"%s\" leaves the model directory", path, dir);
    const char *last = strrchr(t, '.');
    last = last ? last + 1 : t;
    if (!strcmp(last, "Pooling")) at_model_fmt(pool_dir, cap, "%s", dir);
    else if (!strcmp(last, "Dense")) d->pub.dense_module = at_model_keep(d, dir);
  }
  return AT_OK;
}

at_status at_model_read_export(at_desc_impl *d, const char *dir, const char *config_json,
                               const char *repo_real) {
  char path[PATH_CAP];
  json_t *j = NULL;
  at_status rc = AT_OK;
  d->pub.bos_token_id = -1;
  /* config.json */
  if (config_json) {
    if ((rc = load_json(NULL, config_json, repo_real, 0, &j, path, sizeof path)) != AT_OK) return rc;
    if (j) {
      d->pub.config_path = at_model_keep(d, path);
      rc = config_from(d, j, path);
      json_decref(j);
      if (rc != AT_OK) return rc;
    }
  }
  /* sentence-transformers: modules.json names the pooling directory */
  char pool_dir[512] = "1_Pooling";
  if ((rc = load_json(dir, "modules.json", repo_real, LIST, &j, path, sizeof path)) != AT_OK)
    return rc;
  if (j) {
    pool_dir[0] = 0;
    rc = modules_from(d, j, path, pool_dir, sizeof pool_dir);
    json_decref(j);
    if (rc != AT_OK) return rc;
  }
  if (pool_dir[0]) {
    char sub[PATH_CAP];
    at_model_fmt(sub, sizeof sub, "%s/%s", dir, pool_dir);
    if ((rc = load_json(sub, "config.json", repo_real, 0, &j, path, sizeof path)) != AT_OK)
      return rc;
    if (j) {
      rc = pooling_from(d, j, path);
      json_decref(j);
      if (rc != AT_OK) return rc;
    }
  }
  /* sentence_bert_config.json: max_seq_length */
  if ((rc = load_json(dir, "sentence_bert_config.json", repo_real, 0, &j, path, sizeof path)) != AT_OK)
    return rc;
  if (j) {
    json_t *v = json_object_get(j, "max_seq_length");
    char src[PATH_CAP + 32];
    at_model_fmt(src, sizeof src, "%s (max_seq_length)", path);
    if (json_is_integer(v)) limit(d, (int64_t)json_integer_value(v), src);
    json_decref(j);
  }
  /* config_sentence_transformers.json: prompts */
  d->pub.default_prompt = -1;
  if ((rc = load_json(dir, "config_sentence_transformers.json", repo_real, 0, &j, path,
                      sizeof path)) != AT_OK)
    return rc;
  if (j) {
    rc = prompts_from(d, j, path);
    json_decref(j);
    if (rc != AT_OK) return rc;
  }
  /* tokenizer_config.json: model_max_length (1e30 = none, so as reals) */
  if ((rc = load_json(dir, "tokenizer_config.json", repo_real, JSON_DECODE_INT_AS_REAL, &j, path,
                      sizeof path)) != AT_OK)
    return rc;
  if (j) {
    json_t *v = json_object_get(j, "model_max_length");
    char src[PATH_CAP + 32];
    at_model_fmt(src, sizeof src, "%s (model_max_length)", path);
    if (json_is_number(v) && json_number_value(v) > 2 && json_number_value(v) <= NO_LIMIT_ABOVE)
      limit(d, (int64_t)json_number_value(v), src);
    d->pub.add_bos_token = json_is_true(json_object_get(j, "add_bos_token"));
    json_decref(j);
  }
  /* generation_config.json: its eos_token_id wins over config.json's */
  if ((rc = load_json(dir, "generation_config.json", repo_real, 0, &j, path, sizeof path)) != AT_OK)
    return rc;
  if (j) {
    eos_from(d, j);
    json_decref(j);
  }
  return d->oom ? at_fail(AT_ERR_NOMEM, "out of memory") : AT_OK;
}

at_status at_model_describe_files(const char *config_json, at_model_desc **out) {
  if (!config_json || !out) return at_fail(AT_ERR_INVALID_ARG, "config path and out required");
  *out = NULL;
  at_desc_impl *d = calloc(1, sizeof *d);
  if (!d) return at_fail(AT_ERR_NOMEM, "out of memory");
  char dir[PATH_CAP];
  at_model_fmt(dir, sizeof dir, "%s", config_json);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else at_model_fmt(dir, sizeof dir, ".");
  d->pub.spec = at_model_keep(d, config_json);
  d->pub.dir = at_model_keep(d, dir);
  d->pub.variants = d->vars;
  at_status rc = at_model_read_export(d, dir, config_json, NULL);
  if (rc == AT_OK && !d->pub.config_path)
    rc = at_fail(AT_ERR_MODEL, "%s: no such file", config_json);
  if (rc != AT_OK) {
    at_model_desc_free(&d->pub);
    return rc;
  }
  *out = &d->pub;
  return AT_OK;
}
