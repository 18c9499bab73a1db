/* src/model/list.c — enumerate the models anytime can find: every repo in
 * the Hugging Face hub cache and every subdirectory of the model directories,
 * each resolved with at_model_resolve() (see anytime/model.h). Used by
 * `anytime ls`. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"
#include "model/model_internal.h"

#define MAX_ENTRIES 4096

typedef struct {
  at_model_entry *v;
  size_t n, cap;
} entries;

static int push(entries *e, const char *spec, at_model_source src,
                const at_model_resolve_params *p) {
  if (e->n == MAX_ENTRIES) return -2;
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 16;
    at_model_entry *nv = realloc(e->v, cap * sizeof *nv);
    if (!nv) return -1;
    e->v = nv;
    e->cap = cap;
  }
  at_model_entry *x = &e->v[e->n];
  memset(x, 0, sizeof *x);
  x->source = src;
  x->spec = strdup(spec);
  if (!x->spec) return -1;
  at_status rc = at_model_resolve(spec, p, &x->desc);
  if (rc != AT_OK) {
    x->error = strdup(*at_last_error() ? at_last_error() : at_strerror(rc));
    if (!x->error) {
      free((void *)x->spec);
      return -1;
    }
  }
  e->n++;
  return 0;
}

static int entry_cmp(const void *a, const void *b) {
  const at_model_entry *x = a, *y = b;
  if (x->source != y->source) return x->source == AT_MODEL_LOCAL ? -1 : 1;
  return strcmp(x->spec, y->spec);
}

/* The snapshot to list for a hub repo: "main" if it has that ref, else its
 * only snapshot; returns the spec in buf. */
static void hub_spec(const char *repo_dir, const char *repo, char *buf, size_t cap) {
  char p[4096];
  snprintf(buf, cap, "%s", repo);
  if (snprintf(p, sizeof p, "%s/refs/main", repo_dir) < (int)sizeof p) {
    struct stat st;
    if (stat(p, &st) == 0) return;
  }
  if (snprintf(p, sizeof p, "%s/snapshots", repo_dir) >= (int)sizeof p) return;
  DIR *dp = opendir(p);
  if (!dp) return;
  struct dirent *de;
  char only[256] = ""; /* d_name is at most 255 bytes + NUL */
  int n = 0;
  while ((de = readdir(dp)))
    if (de->d_name[0] != '.' && strlen(de->d_name) < sizeof only) {
      snprintf(only, sizeof only, "%s", de->d_name);
      n++;
    }
  closedir(dp);
  if (n == 1 && strlen(repo) + strlen(only) + 2 < cap) snprintf(buf, cap, "%s@%s", repo, only);
}

at_status at_model_list(const at_model_resolve_params *p, at_model_entry **out, size_t *n) {
  if (!out || !n) return at_fail(AT_ERR_INVALID_ARG, "out and n are required");
  *out = NULL;
  *n = 0;
  at_model_resolve_params prm = p ? *p : at_model_resolve_default_params();
  entries e = {0};
  int r = 0;

  for (size_t i = 0; i < prm.n_model_dirs && r == 0; i++) {
    DIR *dp = opendir(prm.model_dirs[i]);
    if (!dp) continue;
    struct dirent *de;
    while (r == 0 && (de = readdir(dp))) {
      if (de->d_name[0] == '.') continue;
      char path[4096];
      if (snprintf(path, sizeof path, "%s/%s", prm.model_dirs[i], de->d_name) >= (int)sizeof path)
        continue;
      struct stat st;
      if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      r = push(&e, path, AT_MODEL_LOCAL, &prm);
    }
    closedir(dp);
  }

  char hub[4096];
  DIR *dp = r == 0 && at_model_hub_cache_dir(&prm, hub, sizeof hub) == AT_OK ? opendir(hub) : NULL;
  struct dirent *de;
  while (dp && r == 0 && (de = readdir(dp))) {
    if (strncmp(de->d_name, "models--", 8) != 0) continue;
    /* models--ORG--NAME -> ORG/NAME (the hub's separator is "--"). */
    char repo[256];
    const char *name = de->d_name + 8;
    const char *sep = strstr(name, "--");
    if (sep) snprintf(repo, sizeof repo, "%.*s/%s", (int)(sep - name), name, sep + 2);
    else snprintf(repo, sizeof repo, "%s", name);
    char repo_dir[4096], spec[512];
    if (snprintf(repo_dir, sizeof repo_dir, "%s/%s", hub, de->d_name) >= (int)sizeof repo_dir)
      continue;
    hub_spec(repo_dir, repo, spec, sizeof spec);
    r = push(&e, spec, AT_MODEL_HUB, &prm);
  }
  if (dp) closedir(dp);

  if (r != 0) {
    at_model_list_free(e.v, e.n);
    return r == -2 ? at_fail(AT_ERR_LIMIT, "more than %d models found", MAX_ENTRIES)
                   : at_fail(AT_ERR_NOMEM, "out of memory");
  }
  if (e.n) qsort(e.v, e.n, sizeof *e.v, entry_cmp);
  at_clear_error();
  *out = e.v;
  *n = e.n;
  return AT_OK;
}

void at_model_list_free(at_model_entry *v, size_t n) {
  if (!v) return;
  for (size_t i = 0; i < n; i++) {
    free((void *)v[i].spec);
    free((void *)v[i].error);
    at_model_desc_free(v[i].desc);
  }
  free(v);
}
