/* src/model/resolve.c — turn a model argument into an at_model_desc: a local
 * path, a bare name in a model directory, or a Hugging Face repo id looked up
 * in the hub cache (refs/<revision> -> snapshots/<commit>/). Within the
 * directory found it collects the ONNX graphs as variants of one family,
 * reads config.json (jansson) and finds the tokenizer. See anytime/model.h.
 *
 * Safety: a repo id, bare name or revision is checked character by character
 * before it becomes part of a path ("..", absolute paths, backslashes, empty
 * parts are refused), the commit hash a ref holds must be hex, and every file
 * taken from the hub cache must resolve (symlinks followed, as the hub makes
 * snapshot files links into ../../blobs/) inside its models--org--name
 * directory. A missing model is reported with every place that was searched.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "model/model_internal.h"

#define PATH_CAP AT_PATH_CAP

typedef at_desc_impl desc_impl;

const char *at_model_keep(at_desc_impl *d, const char *s) {
  if (!s) return NULL;
  if (d->n_strs == d->cap_strs) {
    size_t cap = d->cap_strs ? d->cap_strs * 2 : 32;
    char **p = realloc(d->strs, cap * sizeof *p);
    if (!p) {
      d->oom = 1;
      return "";
    }
    d->strs = p;
    d->cap_strs = cap;
  }
  char *c = strdup(s);
  if (!c) {
    d->oom = 1;
    return "";
  }
  d->strs[d->n_strs++] = c;
  return c;
}
#define keep at_model_keep

void at_model_desc_free(at_model_desc *pub) {
  if (!pub) return;
  desc_impl *d = (desc_impl *)pub;
  for (size_t i = 0; i < d->n_strs; i++) free(d->strs[i]);
  free(d->strs);
  free(d->labels);
  free(d);
}

at_model_resolve_params at_model_resolve_default_params(void) {
  at_model_resolve_params p;
  memset(&p, 0, sizeof p);
  return p;
}

const char *at_model_task_name(at_model_task t) {
  switch (t) {
    case AT_TASK_CLASSIFIER: return "classifier";
    case AT_TASK_EMBEDDER: return "embedder";
    case AT_TASK_GENERATOR: return "generator";
    default: return "unknown";
  }
}

/* ---- a small growable string for the "searched" list --------------------- */

typedef struct {
  char buf[8192];
  size_t len;
  char reason[1024]; /* the most specific reason, when there is one */
} strlist;

static void sl_add(strlist *l, const char *fmt, ...) AT_PRINTF(2, 3);
static void sl_add(strlist *l, const char *fmt, ...) {
  if (l->len >= sizeof l->buf - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(l->buf + l->len, sizeof l->buf - l->len, fmt, ap);
  va_end(ap);
  if (n > 0) l->len += (size_t)n < sizeof l->buf - l->len ? (size_t)n : sizeof l->buf - l->len - 1;
}

int at_model_fmt(char *dst, size_t cap, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int n = vsnprintf(dst, cap, f, ap);
  va_end(ap);
  return n >= 0 && (size_t)n < cap;
}

/* ---- name checks ---------------------------------------------------------- */

static int name_char_ok(char c) {
  return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/* One path component of a repo id or bare name: 1..96 of [A-Za-z0-9._-],
 * not starting with '.' or '-', no "..", no "--" (the hub's separator). */
static int part_ok(const char *s, size_t n) {
  if (n == 0 || n > 96 || s[0] == '.' || s[0] == '-') return 0;
  for (size_t i = 0; i < n; i++) {
    if (!name_char_ok(s[i])) return 0;
    if (i + 1 < n && ((s[i] == '.' && s[i + 1] == '.') || (s[i] == '-' && s[i + 1] == '-')))
      return 0;
  }
  return 1;
}

/* A revision: 1..128 of [A-Za-z0-9._-/], parts separated by single '/', no
 * part that is "." or "..", no leading or trailing '/'. */
static int revision_ok(const char *r) {
  size_t n = strlen(r);
  if (n == 0 || n > 128 || r[0] == '/' || r[n - 1] == '/') return 0;
  const char *part = r;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || r[i] == '/') {
      size_t k = (size_t)(r + i - part);
      if (k == 0 || (k == 1 && part[0] == '.') || (k == 2 && part[0] == '.' && part[1] == '.'))
        return 0;
      part = r + i + 1;
    } else if (!name_char_ok(r[i])) {
      return 0;
    }
  }
  return 1;
}

static int is_hex(const char *s, size_t min, size_t max) {
  size_t n = strlen(s);
  if (n < min || n > max) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) return 0;
  return 1;
}

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int at_model_is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* realpath(p) lies inside realpath(root) (root itself excluded). */
int at_model_inside(const char *p, const char *root_real) {
  char rp[PATH_MAX];
  if (!realpath(p, rp)) return 0;
  size_t n = strlen(root_real);
  return strncmp(rp, root_real, n) == 0 && rp[n] == '/';
}

at_status at_model_hub_cache_dir(const at_model_resolve_params *p, char *buf, size_t cap) {
  if (!buf || cap == 0) return at_fail(AT_ERR_INVALID_ARG, "buffer required");
  const char *e;
  int n;
  if (p && p->hub_cache) n = snprintf(buf, cap, "%s", p->hub_cache);
  else if ((e = getenv("HF_HUB_CACHE")) && *e) n = snprintf(buf, cap, "%s", e);
  else if ((e = getenv("HF_HOME")) && *e) n = snprintf(buf, cap, "%s/hub", e);
  else if ((e = getenv("HOME")) && *e) n = snprintf(buf, cap, "%s/.cache/huggingface/hub", e);
  else return at_fail(AT_ERR_NOT_FOUND, "no HF_HUB_CACHE, HF_HOME or HOME to find the hub cache");
  if (n < 0 || (size_t)n >= cap) return at_fail(AT_ERR_LIMIT, "hub cache path is too long");
  return AT_OK;
}

/* ---- variants -------------------------------------------------------------- */

static int name_is_quantized(const char *stem) {
  static const char *const marks[] = {"quant", "int8", "uint8", "int4", "q4", "q8", "bnb4"};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (strstr(stem, marks[i])) return 1;
  return 0;
}

static int variant_rank(const at_model_variant *v) {
  if (strcmp(v->name, "fp32") == 0) return 0;
  if (strcmp(v->name, "fp16") == 0 || strcmp(v->name, "bf16") == 0) return 1;
  return v->is_quantized ? 3 : 2;
}

static int variant_cmp(const void *a, const void *b) {
  const at_model_variant *x = a, *y = b;
  int rx = variant_rank(x), ry = variant_rank(y);
  if (rx != ry) return rx - ry;
  return strcmp(x->name, y->name);
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .onnx file names in `dir`, sorted; *n set. Caller frees each + array. */
static char **onnx_files(const char *dir, size_t *n) {
  *n = 0;
  DIR *dp = opendir(dir);
  if (!dp) return NULL;
  char **v = NULL;
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(dp))) {
    size_t k = strlen(de->d_name);
    if (k <= 5 || strcmp(de->d_name + k - 5, ".onnx") != 0 || de->d_name[0] == '.') continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      char **nv = realloc(v, cap * sizeof *nv);
      if (!nv) break;
      v = nv;
    }
    if (!(v[*n] = strdup(de->d_name))) break;
    (*n)++;
  }
  closedir(dp);
  if (v) qsort(v, *n, sizeof *v, str_cmp);
  return v;
}

static void free_list(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* Variant name from a file stem: model -> fp32, model_X -> X, otherwise the
 * stem itself. "quantized" is renamed "int8" later when that is free. */
static void variant_name(const char *stem, char *out, size_t cap) {
  if (strcmp(stem, "model") == 0) at_model_fmt(out, cap, "fp32");
  else if (strncmp(stem, "model_", 6) == 0 && stem[6]) at_model_fmt(out, cap, "%s", stem + 6);
  else at_model_fmt(out, cap, "%s", stem);
}

/* Add the variant file dir/rel unless its name is taken. `repo_real` (may be
 * NULL) is the hub repo directory every file must resolve inside. */
static at_status add_variant(desc_impl *d, const char *dir, const char *rel,
                             const char *repo_real) {
  char path[PATH_CAP], stem[256], name[256];
  if (!at_model_fmt(path, sizeof path, "%s/%s", dir, rel))
    return at_fail(AT_ERR_LIMIT, "path too long: %s/%s", dir, rel);
  const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
  at_model_fmt(stem, sizeof stem, "%.*s", (int)(strlen(base) - 5), base);
  variant_name(stem, name, sizeof name);
  for (size_t i = 0; i < d->pub.n_variants; i++)
    if (strcmp(d->vars[i].name, name) == 0) {
      at_log(AT_LOG_DEBUG, "model", "%s: '%s' duplicates variant '%s' (%s); ignored", dir, rel,
             name, d->vars[i].rel_path);
      return AT_OK;
    }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
    at_log(AT_LOG_WARN, "model", "%s: not a readable file (dangling link?); skipped", path);
    return AT_OK;
  }
  if (repo_real && !at_model_inside(path, repo_real))
    return at_fail(AT_ERR_MODEL, "'%s' resolves outside its repository directory %s", path,
                   repo_real);
  if (d->pub.n_variants == AT_MODEL_MAX_VARIANTS)
    return at_fail(AT_ERR_LIMIT, "%s holds more than %d ONNX graphs", dir, AT_MODEL_MAX_VARIANTS);
  at_model_variant *v = &d->vars[d->pub.n_variants++];
  v->name = keep(d, name);
  v->path = keep(d, path);
  v->rel_path = keep(d, rel);
  v->is_quantized = name_is_quantized(stem);
  v->size_bytes = (uint64_t)st.st_size;
  return AT_OK;
}

/* Collect the variants in `dir`: onnx/<name>.onnx first, then <name>.onnx. */
static at_status collect_variants(desc_impl *d, const char *dir, const char *repo_real) {
  char sub[PATH_CAP];
  at_model_fmt(sub, sizeof sub, "%s/onnx", dir);
  const char *where[2] = {sub, dir};
  for (int w = 0; w < 2; w++) {
    size_t n = 0;
    char **files = onnx_files(where[w], &n);
    for (size_t i = 0; i < n; i++) {
      char rel[512];
      at_model_fmt(rel, sizeof rel, "%s%s", w == 0 ? "onnx/" : "", files[i]);
      at_status rc = add_variant(d, dir, rel, repo_real);
      if (rc != AT_OK) {
        free_list(files, n);
        return rc;
      }
    }
    free_list(files, n);
  }
  return AT_OK;
}

static void finish_variants(desc_impl *d) {
  d->pub.variants = d->vars;
  int has_int8 = 0;
  for (size_t i = 0; i < d->pub.n_variants; i++) has_int8 |= strcmp(d->vars[i].name, "int8") == 0;
  for (size_t i = 0; i < d->pub.n_variants && !has_int8; i++)
    if (strcmp(d->vars[i].name, "quantized") == 0) d->vars[i].name = keep(d, "int8");
  qsort(d->vars, d->pub.n_variants, sizeof d->vars[0], variant_cmp);
}

int at_model_desc_variant_index(const at_model_desc *d, const char *name) {
  if (!d || !name) return -1;
  for (size_t i = 0; i < d->n_variants; i++)
    if (strcmp(d->variants[i].name, name) == 0) return (int)i;
  const char *alias = strcmp(name, "int8") == 0 ? "quantized"
                      : strcmp(name, "quantized") == 0 ? "int8"
                      : strcmp(name, "model") == 0 ? "fp32" : NULL;
  if (alias)
    for (size_t i = 0; i < d->n_variants; i++)
      if (strcmp(d->variants[i].name, alias) == 0) return (int)i;
  return -1;
}

/* ---- the directory: variants, config, tokenizer, task --------------------- */

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static at_status fill_from_dir(desc_impl *d, const char *dir, const char *single_file,
                               const char *repo_real) {
  at_status rc;
  d->pub.dir = keep(d, dir);
  if (single_file) rc = add_variant(d, dir, single_file, repo_real);
  else rc = collect_variants(d, dir, repo_real);
  if (rc != AT_OK) return rc;
  if (d->pub.n_variants == 0)
    return at_fail(AT_ERR_NOT_FOUND, "%s holds no ONNX graph (looked for onnx/*.onnx and *.onnx)",
                   dir);
  finish_variants(d);

  /* config.json and the tokenizer live next to the graphs, or one level up
   * when a single file inside onnx/ was given. */
  char base[PATH_CAP], p[PATH_CAP];
  at_model_fmt(base, sizeof base, "%s", dir);
  at_model_fmt(p, sizeof p, "%s/config.json", base);
  if ((rc = at_model_read_export(d, base, p, repo_real)) != AT_OK) return rc;
  static const struct {
    const char *file;
    at_tokenizer_kind kind;
  } toks[] = {{"tokenizer.json", AT_TOKENIZER_JSON}, {"vocab.txt", AT_TOKENIZER_VOCAB_TXT}};
  for (size_t i = 0; i < 2 && !d->pub.tokenizer_path; i++) {
    at_model_fmt(p, sizeof p, "%s/%s", base, toks[i].file);
    if (!at_model_is_file(p)) continue;
    if (repo_real && !at_model_inside(p, repo_real))
      return at_fail(AT_ERR_MODEL, "'%s' resolves outside its repository directory", p);
    d->pub.tokenizer_path = keep(d, p);
    d->pub.tokenizer_kind = toks[i].kind;
  }

  /* Task: what the default variant's graph outputs, with config's labels. */
  char outs[AT_GRAPH_MAX_OUTPUTS][AT_GRAPH_NAME_MAX];
  int n = at_graph_output_names(d->vars[0].path, outs, AT_GRAPH_MAX_OUTPUTS);
  /* Embedding outputs in order of preference (pooled before per-token). */
  static const char *const emb_names[] = {"sentence_embedding", "embeddings",
                                          "last_hidden_state", "token_embeddings"};
  int logits = -1, emb = -1;
  for (int i = 0; i < n; i++)
    if (strcmp(outs[i], "logits") == 0) logits = i;
  for (size_t k = 0; k < sizeof emb_names / sizeof emb_names[0] && emb < 0; k++)
    for (int i = 0; i < n; i++)
      if (strcmp(outs[i], emb_names[k]) == 0) emb = i;
  int cls_arch = d->pub.architecture && ends_with(d->pub.architecture, "ForSequenceClassification");
  int lm_arch = d->pub.architecture && (ends_with(d->pub.architecture, "ForCausalLM") ||
                                        ends_with(d->pub.architecture, "LMHeadModel"));
  int present = 0; /* a KV-cache export: outputs present.* / present_key_values.* */
  for (int i = 0; i < n; i++)
    if (strncmp(outs[i], "present", 7) == 0) present = 1;
  if (logits >= 0 && (lm_arch || present)) {
    d->pub.task = AT_TASK_GENERATOR;
    d->pub.task_output = keep(d, "logits");
  } else if (logits >= 0 && (d->pub.n_labels > 0 || cls_arch)) {
    d->pub.task = AT_TASK_CLASSIFIER;
    d->pub.task_output = keep(d, "logits");
  } else if (emb >= 0) {
    d->pub.task = AT_TASK_EMBEDDER;
    d->pub.task_output = keep(d, outs[emb]);
    if (strcmp(outs[emb], "sentence_embedding") == 0) {
      d->pub.pooling = AT_POOL_NONE; /* pooled (and any Dense layer applied) in the graph */
    } else if (d->pub.dense_module) {
      return at_fail(AT_ERR_UNSUPPORTED,
                     "%s: the sentence-transformers pipeline has a Dense module (%s/) after "
                     "pooling, and the graph outputs only per-token vectors (%s), so anytime "
                     "cannot apply it; export the model with its Dense layer inside the graph "
                     "(an output named \"sentence_embedding\")",
                     d->pub.dir, d->pub.dense_module, outs[emb]);
    }
  }
  if (n < 0)
    at_log(AT_LOG_WARN, "model", "%s: could not read the graph's outputs; task unknown",
           d->vars[0].path);
  return d->oom ? at_fail(AT_ERR_NOMEM, "out of memory") : AT_OK;
}

/* ---- the hub ------------------------------------------------------------- */

int at_model_parse_ref(const char *text, size_t len, char *hash, size_t cap) {
  size_t n = len;
  while (n && isspace((unsigned char)text[n - 1])) n--;
  if (n < 7 || n > 64 || n >= cap) return -1;
  for (size_t i = 0; i < n; i++) /* every byte: a NUL must not end the hash early */
    if (!isxdigit((unsigned char)text[i]) || isupper((unsigned char)text[i])) return -1;
  memcpy(hash, text, n);
  hash[n] = 0;
  return 1;
}

/* Read refs/<rev> into hash[]; 1 if found, 0 if absent, -1 if malformed. */
static int read_ref(const char *repo_dir, const char *rev, char *hash, size_t cap) {
  char p[PATH_CAP];
  at_model_fmt(p, sizeof p, "%s/refs/%s", repo_dir, rev);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  char buf[160];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  if (n == sizeof buf) return -1; /* more than a hash and a little white space */
  return at_model_parse_ref(buf, n, hash, cap);
}

/* Resolve `rev` in repo_dir to a snapshot commit. */
static at_status hub_snapshot(const char *repo_dir, const char *rev, strlist *searched,
                              char *commit, size_t cap) {
  char p[PATH_CAP];
  int r = read_ref(repo_dir, rev, commit, cap);
  if (r < 0)
    return at_fail(AT_ERR_MODEL, "%s/refs/%s does not hold a commit hash", repo_dir, rev);
  if (r > 0) {
    at_model_fmt(p, sizeof p, "%s/snapshots/%s", repo_dir, commit);
    if (is_dir(p)) return AT_OK;
    sl_add(searched, "\n  %s (refs/%s names it; the snapshot is missing)", p, rev);
    return AT_ERR_NOT_FOUND;
  }
  sl_add(searched, "\n  %s/refs/%s (no such ref)", repo_dir, rev);
  if (!is_hex(rev, 7, 64)) return AT_ERR_NOT_FOUND;
  /* A commit hash or a prefix of one. */
  at_model_fmt(p, sizeof p, "%s/snapshots", repo_dir);
  DIR *dp = opendir(p);
  if (!dp) {
    sl_add(searched, "\n  %s (missing)", p);
    return AT_ERR_NOT_FOUND;
  }
  struct dirent *de;
  int matches = 0, exact = 0;
  char found[160] = "", others[512] = "";
  size_t k = strlen(rev);
  while ((de = readdir(dp))) {
    if (!is_hex(de->d_name, 7, 64) || strncmp(de->d_name, rev, k) != 0) continue;
    if (strcmp(de->d_name, rev) == 0) exact = 1;
    if (!exact || strcmp(de->d_name, rev) == 0) at_model_fmt(found, sizeof found, "%s", de->d_name);
    size_t o = strlen(others);
    at_model_fmt(others + o, sizeof others - o, " %s", de->d_name);
    matches++;
  }
  closedir(dp);
  if (matches == 0) {
    sl_add(searched, "\n  %s/%s* (no snapshot with that prefix)", p, rev);
    return AT_ERR_NOT_FOUND;
  }
  if (matches > 1 && !exact)
    return at_fail(AT_ERR_MODEL, "revision '%s' matches several snapshots in %s:%s", rev, p,
                   others);
  at_model_fmt(commit, cap, "%s", found);
  return AT_OK;
}

/* Try the hub for repo "org/name" (or a legacy bare "name"). Returns AT_OK,
 * AT_ERR_NOT_FOUND (with the searched list extended) or another failure. */
static at_status try_hub(desc_impl *d, const char *hub, const char *repo, const char *rev,
                         strlist *searched) {
  char repo_dir[PATH_CAP], flat[256];
  size_t j = 0;
  for (const char *s = repo; *s && j + 3 < sizeof flat; s++) {
    if (*s == '/') {
      flat[j++] = '-';
      flat[j++] = '-';
    } else {
      flat[j++] = *s;
    }
  }
  flat[j] = 0;
  if (!at_model_fmt(repo_dir, sizeof repo_dir, "%s/models--%s", hub, flat))
    return at_fail(AT_ERR_LIMIT, "hub path too long");
  if (!is_dir(repo_dir)) {
    sl_add(searched, "\n  %s (hub cache: not present)", repo_dir);
    return AT_ERR_NOT_FOUND;
  }
  char commit[160];
  at_status rc = hub_snapshot(repo_dir, rev, searched, commit, sizeof commit);
  if (rc != AT_OK) return rc;
  char repo_real[PATH_MAX], snap[PATH_CAP];
  if (!realpath(repo_dir, repo_real))
    return at_fail(AT_ERR_IO, "%s: %s", repo_dir, strerror(errno));
  at_model_fmt(snap, sizeof snap, "%s/snapshots/%s", repo_dir, commit);
  if (!at_model_inside(snap, repo_real))
    return at_fail(AT_ERR_MODEL, "snapshot %s resolves outside its repository directory %s", snap,
                   repo_real);
  d->pub.source = AT_MODEL_HUB;
  d->pub.repo_id = keep(d, repo);
  d->pub.family = keep(d, repo);
  d->pub.revision = keep(d, rev);
  d->pub.commit = keep(d, commit);
  rc = fill_from_dir(d, snap, NULL, repo_real);
  if (rc == AT_ERR_NOT_FOUND) {
    sl_add(searched, "\n  %s (snapshot without an ONNX graph)", snap);
    at_model_fmt(searched->reason, sizeof searched->reason,
        ": revision %s (commit %.12s) has no ONNX graph, so it cannot be served", rev, commit);
  }
  return rc;
}

/* ---- entry point ---------------------------------------------------------- */

static const char *basename_of(const char *p, char *buf, size_t cap) {
  at_model_fmt(buf, cap, "%s", p);
  size_t n = strlen(buf);
  while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
  char *s = strrchr(buf, '/');
  return s ? s + 1 : buf;
}

static at_status resolve_local(desc_impl *d, const char *path) {
  char tmp[PATH_CAP];
  d->pub.source = AT_MODEL_LOCAL;
  if (is_dir(path)) {
    d->pub.family = keep(d, basename_of(path, tmp, sizeof tmp));
    at_model_fmt(tmp, sizeof tmp, "%s", path);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/') tmp[--n] = 0;
    return fill_from_dir(d, tmp, NULL, NULL);
  }
  if (!ends_with(path, ".onnx"))
    return at_fail(AT_ERR_MODEL, "'%s' is neither a directory nor an .onnx file", path);
  /* One file: its directory holds config.json, or the directory above when
   * the file is in onnx/. The family is that directory's name, or the file's
   * stem for a file lying on its own. */
  char dir[PATH_CAP], rel[PATH_CAP], name[256];
  at_model_fmt(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) {
    *slash = 0;
    at_model_fmt(rel, sizeof rel, "%s", slash + 1);
  } else {
    at_model_fmt(dir, sizeof dir, ".");
    at_model_fmt(rel, sizeof rel, "%s", path);
  }
  char parent_name[256];
  basename_of(dir, parent_name, sizeof parent_name);
  const char *pn = strrchr(parent_name, '/') ? strrchr(parent_name, '/') + 1 : parent_name;
  if (strcmp(pn, "onnx") == 0 && strchr(dir, '/')) {
    char up[PATH_CAP];
    at_model_fmt(up, sizeof up, "%s", dir);
    *strrchr(up, '/') = 0;
    char r2[PATH_CAP];
    at_model_fmt(r2, sizeof r2, "onnx/%s", rel);
    d->pub.family = keep(d, basename_of(up, name, sizeof name));
    return fill_from_dir(d, up, r2, NULL);
  }
  at_model_fmt(name, sizeof name, "%.*s", (int)(strlen(rel) - 5), rel);
  d->pub.family = keep(d, name);
  return fill_from_dir(d, dir, rel, NULL);
}

at_status at_model_resolve(const char *spec, const at_model_resolve_params *p,
                           at_model_desc **out) {
  if (!spec || !out) return at_fail(AT_ERR_INVALID_ARG, "spec and out are required");
  *out = NULL;
  at_model_resolve_params prm = p ? *p : at_model_resolve_default_params();
  if (!*spec) return at_fail(AT_ERR_INVALID_ARG, "empty model name");
  if (strlen(spec) >= 1024) return at_fail(AT_ERR_LIMIT, "model name is too long");
  if (strchr(spec, '\\'))
    return at_fail(AT_ERR_INVALID_ARG, "model name '%s' contains a backslash", spec);

  desc_impl *d = calloc(1, sizeof *d);
  if (!d) return at_fail(AT_ERR_NOMEM, "out of memory");
  d->pub.spec = keep(d, spec);
  strlist searched = {.len = 0};
  searched.buf[0] = 0;
  searched.reason[0] = 0;
  at_status rc;
  struct stat st;

  if (stat(spec, &st) == 0) {
    rc = resolve_local(d, spec);
    goto done;
  }
  sl_add(&searched, "\n  %s (no such local path)", spec);
  int pathlike = spec[0] == '/' || spec[0] == '.' || spec[0] == '~' || ends_with(spec, ".onnx");
  if (pathlike) {
    rc = at_fail(AT_ERR_NOT_FOUND, "model '%s' not found; searched:%s", spec, searched.buf);
    goto done;
  }

  /* A repo id or bare name, with an optional @revision. */
  char repo[256], rev[160] = "main";
  const char *at = strchr(spec, '@');
  size_t rl = at ? (size_t)(at - spec) : strlen(spec);
  if (rl >= sizeof repo) {
    rc = at_fail(AT_ERR_LIMIT, "model name is too long");
    goto done;
  }
  memcpy(repo, spec, rl);
  repo[rl] = 0;
  if (at) {
    if (!revision_ok(at + 1)) {
      rc = at_fail(AT_ERR_INVALID_ARG,
                   "revision '%s' is not allowed (letters, digits, '.', '_', '-' and single '/' "
                   "between parts; no '..')",
                   at + 1);
      goto done;
    }
    at_model_fmt(rev, sizeof rev, "%s", at + 1);
  }
  const char *slash = strchr(repo, '/');
  int ok = slash ? part_ok(repo, (size_t)(slash - repo)) && !strchr(slash + 1, '/') &&
                       part_ok(slash + 1, strlen(slash + 1))
                 : part_ok(repo, strlen(repo));
  if (!ok) {
    rc = at_fail(AT_ERR_INVALID_ARG,
                 "'%s' is not a valid model name: expected a local path, NAME or ORG/NAME "
                 "made of letters, digits, '.', '_' and '-' (no '..', '--', empty parts or "
                 "leading '.'/'-')",
                 spec);
    goto done;
  }
  if (!slash && !at) {
    for (size_t i = 0; i < prm.n_model_dirs; i++) {
      char cand[PATH_CAP];
      at_model_fmt(cand, sizeof cand, "%s/%s", prm.model_dirs[i], repo);
      if (is_dir(cand)) {
        rc = resolve_local(d, cand);
        goto done;
      }
      sl_add(&searched, "\n  %s (model directory: not present)", cand);
    }
  }
  char hub[PATH_CAP];
  if ((rc = at_model_hub_cache_dir(&prm, hub, sizeof hub)) != AT_OK) {
    sl_add(&searched, "\n  (hub cache: %s)", at_last_error());
  } else {
    rc = try_hub(d, hub, repo, rev, &searched);
    if (rc != AT_ERR_NOT_FOUND) goto done;
  }
  rc = at_fail(AT_ERR_NOT_FOUND, "model '%s' not found%s; searched:%s", spec, searched.reason,
               searched.buf);
done:
  if (rc == AT_OK && d->oom) rc = at_fail(AT_ERR_NOMEM, "out of memory");
  if (rc != AT_OK) {
    at_model_desc_free(&d->pub);
    return rc;
  }
  *out = &d->pub;
  return AT_OK;
}
