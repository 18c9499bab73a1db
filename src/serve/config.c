/* src/serve/config.c — the server's configuration: defaults, the YAML file
 * (libyaml's document API; format in docs/configuration.md), the writers
 * (libyaml's emitter) and where the built-in default configuration lives.
 * Every setting is a row of one table (config_keys.c) that the defaults,
 * the parser and the writers read, the keys of a models: entry and of its
 * variants: entries included (only the two lists themselves are walked
 * here). Unknown keys are errors, so a typo never silently falls back to a
 * default. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "anytime/server.h"
#include "serve/config_keys.h"
#include "serve/serve_internal.h"
#include "core/internal.h"

/* Every key of `section` set to its default in base (an at_server_config
 * or one models/variants entry, as the section says). */
static void set_defaults(void *base, const char *section) {
  size_t n;
  const cfg_key *k = serve_cfg_keys(&n);
  for (size_t i = 0; i < n; i++, k++) {
    if (section ? strcmp(k->section, section) != 0
                : !strcmp(k->section, "models") || !strcmp(k->section, "variants"))
      continue;
    void *f = serve_cfg_field(base, k);
    switch (k->type) {
    case CFG_INT: *(int *)f = (int)k->def; break;
    case CFG_SIZE: *(size_t *)f = (size_t)k->def; break;
    case CFG_DOUBLE: *(double *)f = k->def; break;
    case CFG_BOOL: *(bool *)f = k->def != 0; break;
    case CFG_STRING:
    case CFG_PATH:
    case CFG_CHOICE:
    case CFG_MODEL: snprintf(f, k->size, "%s", k->sdef ? k->sdef : ""); break;
    case CFG_SERVICE: *(int *)f = 0; break;
    }
  }
}

at_server_config at_server_config_default(void) {
  at_server_config c;
  memset(&c, 0, sizeof c);
  set_defaults(&c, NULL);
  return c;
}

/* ---- writing: libyaml's emitter into a growing buffer -------------------- */

typedef struct ywriter {
  yaml_emitter_t em;
  FILE *f;
  bool ok;
  bool seq; /* the root is a sequence */
} ywriter;

static int yw_out(void *data, unsigned char *buf, size_t size) {
  return fwrite(buf, 1, size, (FILE *)data) == size;
}

static void yw_emit(ywriter *w, yaml_event_t *ev, int made) {
  if (!made) w->ok = false;
  else if (!w->ok) yaml_event_delete(ev);
  else if (!yaml_emitter_emit(&w->em, ev)) w->ok = false; /* takes the event either way */
}

static void yw_scalar(ywriter *w, const char *v) {
  yaml_event_t ev;
  yw_emit(w, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v, (int)strlen(v),
                                               1, 1, YAML_ANY_SCALAR_STYLE));
}

static void yw_map(ywriter *w, bool start) {
  yaml_event_t ev;
  if (start)
    yw_emit(w, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE));
  else
    yw_emit(w, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void yw_seq(ywriter *w, bool start) {
  yaml_event_t ev;
  if (start)
    yw_emit(w, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE));
  else
    yw_emit(w, &ev, yaml_sequence_end_event_initialize(&ev));
}

/* A document whose root is a block mapping (seq: a block sequence). */
static bool yw_begin(ywriter *w, char **buf, size_t *len, bool seq) {
  memset(w, 0, sizeof *w);
  if (!(w->f = open_memstream(buf, len))) return false;
  if (!yaml_emitter_initialize(&w->em)) {
    fclose(w->f);
    free(*buf);
    return false;
  }
  w->ok = true;
  w->seq = seq;
  yaml_emitter_set_output(&w->em, yw_out, w->f);
  yaml_emitter_set_unicode(&w->em, 1);
  yaml_emitter_set_width(&w->em, -1); /* never fold a long path */
  yaml_event_t ev;
  yw_emit(w, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
  yw_emit(w, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
  if (seq) yw_seq(w, true);
  else yw_map(w, true);
  return true;
}

static char *yw_end(ywriter *w, char **buf) {
  yaml_event_t ev;
  if (w->seq) yw_seq(w, false);
  else yw_map(w, false);
  yw_emit(w, &ev, yaml_document_end_event_initialize(&ev, 1));
  yw_emit(w, &ev, yaml_stream_end_event_initialize(&ev));
  if (w->ok && !yaml_emitter_flush(&w->em)) w->ok = false;
  yaml_emitter_delete(&w->em);
  if (fclose(w->f) != 0) w->ok = false;
  if (!w->ok) {
    free(*buf);
    return NULL;
  }
  return *buf;
}

/* The shortest decimal form that reads back as the same double. */
static void fmt_double(char *out, size_t cap, double v) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(out, cap, "%.*g", prec, v);
    if (strtod(out, NULL) == v) return;
  }
}

/* Whether a key is written: a tuning key left to the planner, an empty
 * optional string, a false optional bool, an empty table or an optional
 * number at its default is not. */
static bool key_is_set(const void *base, const cfg_key *k) {
  const void *f = serve_cfg_value(base, k);
  if (k->flags & CFG_IF_SET) {
    if (k->type == CFG_BOOL) return *(const bool *)f;
    if (k->type == CFG_SERVICE) return *(const int *)f > 0;
    if (k->type == CFG_DOUBLE) return *(const double *)f != k->def;
    if (k->type == CFG_INT) return *(const int *)f != (int)k->def;
    if (!((const char *)f)[0]) return false;
  }
  if (k->flags & CFG_UNSET_NEG) {
    double v = *(const double *)f;
    return (k->flags & CFG_UNSET_ZERO) ? v > 0 : v >= 0;
  }
  return true;
}

/* How keys are written: `batch` > 0 replaces batching.max_batch_size
 * (profile writes the one it chose); with `rel_dir`, a models/variants path
 * under that directory is written relative to it (the file is written
 * there), any other one absolute. */
typedef struct wopts {
  int batch;
  const char *rel_dir;
} wopts;

/* A batch size -> milliseconds table, as a flow mapping. Milliseconds are
 * written to the nanosecond. */
static void write_service(ywriter *w, const void *base, const cfg_key *k) {
  int n = *(const int *)serve_cfg_value(base, k);
  const int *b = (const int *)((const char *)base + k->off_b);
  const double *sec = (const double *)((const char *)base + k->off_s);
  yaml_event_t ev;
  yw_emit(w, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_MAPPING_STYLE));
  for (int i = 0; i < n && i < AT_SERVER_MAX_POINTS; i++) {
    char kb[16], v[64];
    snprintf(kb, sizeof kb, "%d", b[i]);
    fmt_double(v, sizeof v, round(sec[i] * 1e9) / 1e6);
    yw_scalar(w, kb);
    yw_scalar(w, v);
  }
  yw_map(w, false);
}

static void write_key(ywriter *w, const void *base, const cfg_key *k, const wopts *o) {
  const void *f = serve_cfg_value(base, k);
  const at_server_config *c = base; /* only for the top-level-only types below */
  char v[64], path[AT_PATH_CAP];
  const char *text = v;
  yw_scalar(w, k->key);
  switch (k->type) {
  case CFG_INT:
    snprintf(v, sizeof v, "%d", o->batch > 0 && f == &c->max_batch_size ? o->batch : *(const int *)f);
    break;
  case CFG_SIZE: snprintf(v, sizeof v, "%zu", *(const size_t *)f); break;
  case CFG_DOUBLE: fmt_double(v, sizeof v, *(const double *)f); break;
  case CFG_BOOL: text = *(const bool *)f ? "true" : "false"; break;
  case CFG_MODEL: /* as written in the file when it came from one */
    text = c->generator.model_raw[0] ? c->generator.model_raw : c->generator.model;
    break;
  case CFG_SERVICE: write_service(w, base, k); return;
  case CFG_PATH:
    text = f;
    if (o->rel_dir && (!strcmp(k->section, "models") || !strcmp(k->section, "variants"))) {
      size_t dl = strlen(o->rel_dir);
      char rp[PATH_MAX];
      if (!strncmp(f, o->rel_dir, dl) && ((const char *)f)[dl] == '/') text = (const char *)f + dl + 1;
      else if (realpath(f, rp) && strlen(rp) < sizeof path) text = strcpy(path, rp);
    }
    break;
  default: text = f; break;
  }
  yw_scalar(w, text);
}

/* Every set key of `section` in base, in the table's order. */
static void write_keys(ywriter *w, const void *base, const char *section, const wopts *o) {
  size_t n;
  const cfg_key *keys = serve_cfg_keys(&n);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(keys[i].section, section) && key_is_set(base, &keys[i]))
      write_key(w, base, &keys[i], o);
}

/* Every key of the listed sections. */
static char *write_sections(const at_server_config *c, const char *const *sections, int n_sec,
                            int batch) {
  char *buf = NULL;
  size_t len = 0;
  ywriter w;
  wopts o = {.batch = batch};
  if (!yw_begin(&w, &buf, &len, false)) return NULL;
  for (int s = 0; s < n_sec; s++) {
    yw_scalar(&w, sections[s]);
    yw_map(&w, true);
    write_keys(&w, c, sections[s], &o);
    yw_map(&w, false);
  }
  return yw_end(&w, &buf);
}

char *at_server_config_generator_yaml(const at_server_config *cfg) {
  if (!cfg) return NULL;
  if (!cfg->generator.enabled) return strdup("");
  static const char *const sec[] = {"generator"};
  return write_sections(cfg, sec, 1, 0);
}

char *at_server_config_settings_yaml(const at_server_config *c, int max_batch_size) {
  if (!c) return NULL;
  static const char *const sec[] = {"server", "engine", "batching", "planner"};
  return write_sections(c, sec, 4, max_batch_size);
}

/* Append text to a growing string; false when memory runs out. */
static bool append(char **s, size_t *len, const char *t) {
  size_t tl = strlen(t);
  char *p = realloc(*s, *len + tl + 1);
  if (!p) return false;
  memcpy(p + *len, t, tl + 1);
  *s = p;
  *len += tl;
  return true;
}

/* One model (its offered variants) or one variant alone, as a one-item
 * block sequence: "- name: ...". */
static char *write_entry(const at_server_model_config *m, const bool *offered, int only,
                         const wopts *o) {
  char *buf = NULL;
  size_t len = 0;
  ywriter w;
  if (!yw_begin(&w, &buf, &len, true)) return NULL;
  yw_map(&w, true);
  if (only >= 0) {
    write_keys(&w, &m->variants[only], "variants", o);
  } else {
    write_keys(&w, m, "models", o);
    yw_scalar(&w, "variants");
    yw_seq(&w, true);
    for (int v = 0; v < m->n_variants; v++) {
      if (offered && !offered[v]) continue;
      yw_map(&w, true);
      write_keys(&w, &m->variants[v], "variants", o);
      yw_map(&w, false);
    }
    yw_seq(&w, false);
  }
  yw_map(&w, false);
  return yw_end(&w, &buf);
}

char *at_server_config_models_yaml(const at_server_config *cfg, const char *rel_dir,
                                   const bool *offered) {
  if (!cfg) return NULL;
  wopts o = {.rel_dir = rel_dir};
  char *out = NULL;
  size_t len = 0;
  bool ok = append(&out, &len, "models:\n");
  for (int i = 0; ok && i < cfg->n_models; i++) {
    const at_server_model_config *m = &cfg->models[i];
    const bool *on = offered ? offered + (size_t)i * AT_SERVER_MAX_VARIANTS : NULL;
    char *e = write_entry(m, on, -1, &o);
    ok = e && append(&out, &len, e);
    free(e);
    /* variants off the frontier: kept, commented out, under the list
     * (deleting the leading '#' of each line offers one) */
    for (int v = 0; ok && on && v < m->n_variants; v++) {
      if (on[v]) continue;
      ok = append(&out, &len, "  # dominated (not on the accuracy/cost frontier), not offered:\n");
      char *d = ok ? write_entry(m, NULL, v, &o) : NULL;
      ok = d != NULL;
      for (char *line = d, *nl; ok && line && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl) break;
        *nl = '\0';
        ok = append(&out, &len, "#  ") && append(&out, &len, line) && append(&out, &len, "\n");
      }
      free(d);
    }
  }
  if (!ok) {
    free(out);
    return NULL;
  }
  return out;
}

typedef struct ctx {
  yaml_document_t *doc;
  const char *file;
  char dir[PATH_MAX];
} ctx;

static yaml_node_t *node(ctx *c, int id) { return yaml_document_get_node(c->doc, id); }

static at_status bad(ctx *c, yaml_node_t *n, const char *what) {
  return at_fail(AT_ERR_PARSE, "%s:%zu: %s", c->file, n ? n->start_mark.line + 1 : 0, what);
}

static const char *scalar(yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static at_status get_num(ctx *c, yaml_node_t *n, const char *key, double lo, double hi,
                         double *out) {
  const char *s = scalar(n);
  char *end = NULL;
  errno = 0;
  double v = s ? strtod(s, &end) : NAN;
  if (!s || !*s || *end || errno || !isfinite(v)) {
    char m[160];
    snprintf(m, sizeof m, "'%s' must be a number", key);
    return bad(c, n, m);
  }
  if (v < lo || v > hi) {
    char m[200];
    snprintf(m, sizeof m, "'%s' = %g is out of range [%g, %g]", key, v, lo, hi);
    return at_fail(AT_ERR_INVALID_ARG, "%s:%zu: %s", c->file, n->start_mark.line + 1, m);
  }
  *out = v;
  return AT_OK;
}

static at_status get_str(ctx *c, yaml_node_t *n, const char *key, char *dst, size_t cap) {
  const char *s = scalar(n);
  if (!s) {
    char m[160];
    snprintf(m, sizeof m, "'%s' must be a string", key);
    return bad(c, n, m);
  }
  if (strlen(s) >= cap) {
    char m[160];
    snprintf(m, sizeof m, "'%s' is longer than %zu bytes", key, cap - 1);
    return bad(c, n, m);
  }
  snprintf(dst, cap, "%s", s);
  return AT_OK;
}

/* A path relative to the config file's directory. */
static at_status get_path(ctx *c, yaml_node_t *n, const char *key, char *dst, size_t cap) {
  char tmp[AT_PATH_CAP];
  at_status s = get_str(c, n, key, tmp, sizeof tmp);
  if (s != AT_OK) return s;
  int w = tmp[0] == '/' ? snprintf(dst, cap, "%s", tmp) : snprintf(dst, cap, "%s/%s", c->dir, tmp);
  if (w < 0 || (size_t)w >= cap) return bad(c, n, "path too long");
  return AT_OK;
}

/* Iterate a mapping's pairs; `it` names the cursor so loops can nest. */
#define FOR_PAIRS(c, map, it, k, v)                                                   \
  for (yaml_node_pair_t *it = (map)->data.mapping.pairs.start;                        \
       it < (map)->data.mapping.pairs.top && ((k) = scalar(node(c, it->key)), (v) = node(c, it->value), 1); \
       it++)

static at_status need_map(ctx *c, yaml_node_t *n, const char *what) {
  if (!n || n->type != YAML_MAPPING_NODE) {
    char m[160];
    snprintf(m, sizeof m, "'%s' must be a mapping", what);
    return bad(c, n, m);
  }
  return AT_OK;
}

static at_status unknown(ctx *c, yaml_node_t *v, const char *section, const char *k) {
  char m[200];
  snprintf(m, sizeof m, "unknown key '%s' in '%s'", k ? k : "(non-scalar)", section);
  return bad(c, v, m);
}

/* A service-time table: a map of ascending batch sizes to milliseconds,
 * stored in seconds. */
static at_status get_table(ctx *c, yaml_node_t *val, const char *key, int *batch, double *secs,
                           int *n_points) {
  at_status s = need_map(c, val, key);
  if (s) return s;
  const char *bk;
  yaml_node_t *bv;
  char msg[96];
  *n_points = 0;
  FOR_PAIRS(c, val, pb, bk, bv) {
    if (*n_points >= AT_SERVER_MAX_POINTS)
      return snprintf(msg, sizeof msg, "too many %s points", key), bad(c, bv, msg);
    char *end;
    long b = bk ? strtol(bk, &end, 10) : 0;
    if (!bk || *end || b < 1 || b > 4096)
      return snprintf(msg, sizeof msg, "%s keys are batch sizes 1..4096", key), bad(c, bv, msg);
    if (*n_points && b <= batch[*n_points - 1])
      return snprintf(msg, sizeof msg, "%s batch sizes must be ascending", key), bad(c, bv, msg);
    double d;
    if ((s = get_num(c, bv, key, 1e-6, 1e6, &d))) return s;
    batch[*n_points] = (int)b;
    secs[*n_points] = d / 1000.0;
    (*n_points)++;
  }
  return AT_OK;
}

/* Whether base (an entry of `section`) has every key the table marks
 * required. */
static bool has_required(const void *base, const char *section) {
  size_t n;
  const cfg_key *k = serve_cfg_keys(&n);
  for (size_t i = 0; i < n; i++)
    if ((k[i].flags & CFG_REQUIRED) && !strcmp(k[i].section, section) &&
        !((const char *)serve_cfg_value(base, &k[i]))[0])
      return false;
  return true;
}

static at_status get_key(ctx *c, yaml_node_t *v, const cfg_key *k, void *base);

/* One mapping of the list `section` ("models" or "variants") into base:
 * defaults first, then every key from the table; `what` names it in
 * messages. A model's `variants` list is left to its caller. */
static at_status parse_entry(ctx *c, yaml_node_t *n, void *base, const char *section,
                             const char *what, yaml_node_t **variants) {
  at_status s = need_map(c, n, what);
  if (s) return s;
  set_defaults(base, section);
  const char *k;
  yaml_node_t *val;
  FOR_PAIRS(c, n, pe, k, val) {
    if (variants && k && !strcmp(k, "variants")) {
      *variants = val;
      continue;
    }
    const cfg_key *key = k ? serve_cfg_key(section, k) : NULL;
    if (!key) return unknown(c, val, what, k);
    if ((s = get_key(c, val, key, base))) return s;
  }
  return AT_OK;
}

static at_status parse_model(ctx *c, yaml_node_t *n, at_server_model_config *m) {
  yaml_node_t *vl = NULL;
  at_status s = parse_entry(c, n, m, "models", "model", &vl);
  if (s) return s;
  if (vl && vl->type != YAML_SEQUENCE_NODE) return bad(c, vl, "'variants' must be a list");
  for (yaml_node_item_t *it = vl ? vl->data.sequence.items.start : NULL;
       vl && it < vl->data.sequence.items.top; it++) {
    if (m->n_variants >= AT_SERVER_MAX_VARIANTS)
      return at_fail(AT_ERR_LIMIT, "%s: model '%s' has more than %d variants", c->file, m->name,
                     AT_SERVER_MAX_VARIANTS);
    at_server_variant_config *v = &m->variants[m->n_variants];
    memset(v, 0, sizeof *v);
    yaml_node_t *vn = node(c, *it);
    if ((s = parse_entry(c, vn, v, "variants", "variant", NULL))) return s;
    if (!has_required(v, "variants")) return bad(c, vn, "a variant needs 'name' and 'path'");
    /* the length model prices an empty text at 1 - cost x ref times the
     * table: that must not be negative */
    if (v->len_cost_per_token * v->len_ref_tokens > 1) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "'len_cost_per_token' x 'len_ref_tokens' = %g x %g is more than 1 (an empty "
               "text would cost less than nothing)",
               v->len_cost_per_token, v->len_ref_tokens);
      return bad(c, vn, msg);
    }
    m->n_variants++;
  }
  if (!has_required(m, "models") || m->n_variants == 0)
    return bad(c, n, "a model needs 'name', 'task', 'tokenizer' and at least one variant");
  if (m->max_pad_factor > 0 && m->max_pad_factor < 1)
    return bad(c, n, "'max_pad_factor' is 0 (bucketing off) or at least 1");
  return AT_OK;
}

static at_status get_bool(ctx *c, yaml_node_t *n, const char *key, bool *out) {
  const char *s = scalar(n);
  if (s && (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on"))) *out = true;
  else if (s && (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off"))) *out = false;
  else {
    char m[160];
    snprintf(m, sizeof m, "'%s' must be true or false", key);
    return bad(c, n, m);
  }
  return AT_OK;
}

/* Is s one of "a|b|c"? When not, `list` gets them as "a, b or c". One
 * pass for the parser and the range check. */
static bool in_choices(const char *choices, const char *s, char *list, size_t cap) {
  size_t len = strlen(s), o = 0;
  list[0] = '\0';
  for (const char *p = choices; *p;) {
    const char *e = strchr(p, '|');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == len && !strncmp(p, s, n)) return true;
    const char *sep = !e ? "" : strchr(e + 1, '|') ? ", " : " or ";
    if (o < cap) o += (size_t)snprintf(list + o, cap - o, "%.*s%s", (int)n, p, sep);
    p += n + (e ? 1 : 0);
  }
  return false;
}

/* A value of table key k from node v into base (the at_server_config, or
 * the models/variants entry its section names). */
static at_status get_key(ctx *c, yaml_node_t *v, const cfg_key *k, void *base) {
  void *f = serve_cfg_field(base, k);
  double d = 0;
  at_status s;
  switch (k->type) {
  case CFG_INT:
  case CFG_SIZE:
    if ((s = get_num(c, v, k->key, k->lo, k->hi, &d))) return s;
    if (d != floor(d)) {
      char m[160];
      snprintf(m, sizeof m, "'%s' must be a whole number", k->key);
      return bad(c, v, m);
    }
    if (k->type == CFG_INT) *(int *)f = (int)d;
    else *(size_t *)f = (size_t)d;
    return AT_OK;
  case CFG_DOUBLE:
    if ((s = get_num(c, v, k->key, k->lo, k->hi, &d))) return s;
    *(double *)f = d;
    return AT_OK;
  case CFG_BOOL: return get_bool(c, v, k->key, f);
  case CFG_STRING: return get_str(c, v, k->key, f, k->size);
  case CFG_PATH: return get_path(c, v, k->key, f, k->size);
  case CFG_CHOICE: {
    if ((s = get_str(c, v, k->key, f, k->size))) return s;
    char m[200], list[120];
    if (in_choices(k->choices, f, list, sizeof list)) return AT_OK;
    snprintf(m, sizeof m, "'%s' must be %s", k->key, list);
    return bad(c, v, m);
  }
  case CFG_SERVICE:
    return get_table(c, v, k->key, (int *)((char *)base + k->off_b),
                     (double *)((char *)base + k->off_s), f);
  case CFG_MODEL: { /* a directory relative to this file when one is there, else a spec */
    at_server_generator_config *g = &((at_server_config *)base)->generator;
    if ((s = get_str(c, v, k->key, g->model_raw, sizeof g->model_raw))) return s;
    char rel[2 * AT_PATH_CAP];
    struct stat st;
    int w = g->model_raw[0] == '/' ? snprintf(rel, sizeof rel, "%s", g->model_raw)
                                   : snprintf(rel, sizeof rel, "%s/%s", c->dir, g->model_raw);
    bool is_dir = w > 0 && (size_t)w < sizeof g->model && stat(rel, &st) == 0 && S_ISDIR(st.st_mode);
    const char *pick = is_dir ? rel : g->model_raw;
    size_t pl = strlen(pick);
    if (pl >= sizeof g->model) return bad(c, v, "'model' path too long");
    memcpy(g->model, pick, pl + 1);
    return AT_OK;
  }
  }
  return bad(c, v, "internal: a configuration key of unknown type");
}

/* One settings section: every key must be in the table. */
static at_status parse_section(ctx *c, yaml_node_t *sec, const char *name, at_server_config *cfg) {
  at_status s = need_map(c, sec, name);
  if (s) return s;
  const char *k;
  yaml_node_t *v;
  FOR_PAIRS(c, sec, ps, k, v) {
    const cfg_key *key = k ? serve_cfg_key(name, k) : NULL;
    if (!key) return unknown(c, v, name, k);
    if ((s = get_key(c, v, key, cfg))) return s;
  }
  return AT_OK;
}

/* generator: the decoder lane; `model` is required. */
static at_status parse_generator(ctx *c, yaml_node_t *n, at_server_config *cfg) {
  at_status s = parse_section(c, n, "generator", cfg);
  if (s) return s;
  at_server_generator_config *g = &cfg->generator;
  if (!g->model[0]) return bad(c, n, "'generator' needs 'model'");
  g->enabled = true;
  return AT_OK;
}

static at_status parse_root(ctx *c, yaml_node_t *root, at_server_config *cfg) {
  at_status s = need_map(c, root, "the document");
  if (s) return s;
  const char *k;
  yaml_node_t *sec;
  FOR_PAIRS(c, root, pr, k, sec) {
    if (!k) return unknown(c, sec, "top level", k);
    if (!strcmp(k, "models")) {
      if (sec->type != YAML_SEQUENCE_NODE) return bad(c, sec, "'models' must be a list");
      cfg->n_models = 0;
      for (yaml_node_item_t *it = sec->data.sequence.items.start; it < sec->data.sequence.items.top; it++) {
        if (cfg->n_models >= AT_SERVER_MAX_MODELS)
          return at_fail(AT_ERR_LIMIT, "%s: more than %d models", c->file, AT_SERVER_MAX_MODELS);
        at_server_model_config *m = &cfg->models[cfg->n_models];
        memset(m, 0, sizeof *m);
        if ((s = parse_model(c, node(c, *it), m))) return s;
        cfg->n_models++;
      }
    } else if (!strcmp(k, "generator")) {
      if ((s = parse_generator(c, sec, cfg))) return s;
    } else if (!strcmp(k, "server") || !strcmp(k, "engine") || !strcmp(k, "batching") ||
               !strcmp(k, "planner")) {
      if ((s = parse_section(c, sec, k, cfg))) return s;
    } else {
      return unknown(c, sec, "top level", k);
    }
  }
  return AT_OK;
}

/* A key written twice in one mapping is an error, not "the last one wins"
 * (YAML 1.2 forbids it; libyaml keeps both, and a copied line that changes
 * a setting would silently be the one that counts). */
static at_status no_duplicate_keys(ctx *c) {
  for (yaml_node_t *n = c->doc->nodes.start; n < c->doc->nodes.top; n++) {
    if (n->type != YAML_MAPPING_NODE) continue;
    for (yaml_node_pair_t *a = n->data.mapping.pairs.start; a < n->data.mapping.pairs.top; a++) {
      const char *ka = scalar(node(c, a->key));
      if (!ka) continue;
      for (yaml_node_pair_t *b = a + 1; b < n->data.mapping.pairs.top; b++) {
        const char *kb = scalar(node(c, b->key));
        if (kb && !strcmp(ka, kb)) {
          char m[200];
          snprintf(m, sizeof m, "key '%s' appears twice in one mapping (first on line %zu)", ka,
                   node(c, a->key)->start_mark.line + 1);
          return bad(c, node(c, b->key), m);
        }
      }
    }
  }
  return AT_OK;
}

/* ---- one range check, whatever set the values ---------------------------- */

/* Table key k's value in base against its range or choices; a key its
 * flags call unset passes. `sec` names the section in the message. */
static at_status check_key(const void *base, const cfg_key *k, const char *sec, const char *who) {
  const void *f = serve_cfg_value(base, k);
  double v;
  switch (k->type) {
  case CFG_INT: v = *(const int *)f; break;
  case CFG_SIZE: v = (double)*(const size_t *)f; break;
  case CFG_DOUBLE: v = *(const double *)f; break;
  case CFG_CHOICE: {
    char list[120];
    const char *s = f;
    if (!s[0] && (k->flags & CFG_REQUIRED)) return AT_OK; /* the entry's own check names it */
    if (in_choices(k->choices, s, list, sizeof list)) return AT_OK;
    return at_fail(AT_ERR_INVALID_ARG, "%s: %s.%s = '%s' must be %s", who, sec, k->key, s, list);
  }
  default: return AT_OK;
  }
  if ((k->flags & CFG_UNSET_NEG) && (v < 0 || ((k->flags & CFG_UNSET_ZERO) && v == 0)))
    return AT_OK;
  if (!(v >= k->lo && v <= k->hi)) /* a NaN fails too */
    return at_fail(AT_ERR_INVALID_ARG, "%s: %s.%s = %g is out of range [%g, %g]", who, sec, k->key,
                   v, k->lo, k->hi);
  return AT_OK;
}

/* Every key of the table in cfg, its models and their variants, and the
 * rules between keys. */
static at_status check_config(const at_server_config *cfg, const char *who) {
  size_t n;
  const cfg_key *keys = serve_cfg_keys(&n);
  at_status s;
  for (size_t i = 0; i < n; i++) {
    const cfg_key *k = &keys[i];
    if (!strcmp(k->section, "models")) {
      for (int m = 0; m < cfg->n_models; m++)
        if ((s = check_key(&cfg->models[m], k, cfg->models[m].name, who))) return s;
    } else if (!strcmp(k->section, "variants")) {
      for (int m = 0; m < cfg->n_models; m++)
        for (int j = 0; j < cfg->models[m].n_variants; j++)
          if ((s = check_key(&cfg->models[m].variants[j], k, cfg->models[m].variants[j].name, who)))
            return s;
    } else if ((s = check_key(cfg, k, k->section, who))) {
      return s;
    }
  }
  if (cfg->max_deadline_ms < cfg->deadline_ms)
    return at_fail(AT_ERR_INVALID_ARG, "%s: planner.max_deadline_ms (%g) is below deadline_ms (%g)",
                   who, cfg->max_deadline_ms, cfg->deadline_ms);
  if (cfg->generator.enabled && cfg->generator.default_max_tokens > cfg->generator.max_tokens)
    return at_fail(AT_ERR_INVALID_ARG,
                   "%s: generator.default_max_tokens (%d) is above generator.max_tokens (%d)", who,
                   cfg->generator.default_max_tokens, cfg->generator.max_tokens);
  return AT_OK;
}

at_status at_server_config_check(const at_server_config *cfg) {
  if (!cfg) return at_fail(AT_ERR_INVALID_ARG, "config check: NULL config");
  return check_config(cfg, "config");
}

/* Parse a YAML document already attached to `parser`; `name` is used in
 * messages and `dir` resolves relative paths. */
static at_status load_from_parser(yaml_parser_t *parser, const char *name, const char *dir,
                                  at_server_config *cfg) {
  yaml_document_t doc;
  if (!yaml_parser_load(parser, &doc))
    return at_fail(AT_ERR_PARSE, "%s:%zu: YAML error: %s", name, parser->problem_mark.line + 1,
                   parser->problem ? parser->problem : "unknown");
  ctx c = {.doc = &doc, .file = name};
  snprintf(c.dir, sizeof c.dir, "%s", dir);
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  at_status s = root ? no_duplicate_keys(&c) : at_fail(AT_ERR_PARSE, "%s: empty document", name);
  if (s == AT_OK) s = parse_root(&c, root, cfg);
  if (s == AT_OK) s = check_config(cfg, name);
  yaml_document_delete(&doc);
  return s;
}

at_status at_server_config_planner_params(const at_server_config *cfg, at_planner_params *out) {
  if (!cfg || !out) return at_fail(AT_ERR_INVALID_ARG, "planner params: NULL config or out");
  at_planner_params pp = at_planner_default_params();
  pp.workers = cfg->workers;
  pp.default_deadline_s = cfg->deadline_ms / 1000.0;
  pp.max_deadline_s = cfg->max_deadline_ms / 1000.0;
  pp.max_batch = cfg->max_batch_size;
  pp.rate_basis = strcmp(cfg->rate_basis, "offered") == 0 ? AT_PLAN_RATE_OFFERED
                                                          : AT_PLAN_RATE_ADMITTED;
  if (cfg->scale_half_life_s >= 0) pp.scale_half_life_s = cfg->scale_half_life_s;
  if (cfg->service_alpha >= 0) pp.service_alpha = cfg->service_alpha;
  if (cfg->service_tau_s >= 0) pp.service_tau_s = cfg->service_tau_s;
  if (cfg->wait_quantile >= 0) pp.wait_quantile = cfg->wait_quantile;
  if (cfg->overrun_quantile >= 0) pp.overrun_quantile = cfg->overrun_quantile;
  if (cfg->overrun_window_s > 0) pp.overrun_window_s = cfg->overrun_window_s;
  if (cfg->adaptive_fill > 0) pp.adaptive_fill = cfg->adaptive_fill;
  if (cfg->window_s > 0) pp.window_s = cfg->window_s;
  if (cfg->retry_horizon_ms >= 0) pp.retry_horizon_s = cfg->retry_horizon_ms / 1000.0;
  if (cfg->priority_fill > 0) pp.priority_fill = cfg->priority_fill;
  if (cfg->fair_fill >= 0) pp.fair_fill = cfg->fair_fill;
  if (cfg->queue_horizon_ms > 0) pp.queue_horizon_s = cfg->queue_horizon_ms / 1000.0;
  pp.inflight_limit = cfg->inflight_limit;
  /* every policy, "none" and "limit" included, lives in the planner */
  at_status st = at_plan_policy_parse(cfg->policy, &pp.policy);
  if (st != AT_OK) return st;
  *out = pp;
  return AT_OK;
}

bool at_server_variant_plan(const at_server_variant_config *vc, at_plan_variant *out) {
  *out = (at_plan_variant){.name = vc->name,
                           .accuracy = vc->accuracy,
                           .cost = vc->cost,
                           .len_ref_tokens = vc->len_ref_tokens,
                           .len_cost_per_token = vc->len_cost_per_token};
  if (vc->n_points < 1) return false;
  out->n_points = (size_t)vc->n_points;
  for (int k = 0; k < vc->n_points; k++)
    out->batch[k] = vc->batch[k], out->service_s[k] = vc->service_s[k];
  /* the pool's slowdown at the smallest batch measured both ways */
  if (vc->n_busy_points > 0 && vc->busy_batch[0] == vc->batch[0])
    out->busy_factor = vc->busy_s[0] / vc->service_s[0];
  return true;
}

at_status at_server_config_load(const char *path, at_server_config *cfg) {
  if (!path || !cfg) return at_fail(AT_ERR_INVALID_ARG, "path and cfg are required");
  FILE *f = fopen(path, "rb");
  if (!f) return at_fail(errno == ENOENT ? AT_ERR_NOT_FOUND : AT_ERR_IO, "config '%s': %s", path,
                         strerror(errno));
  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_file(&parser, f);
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  at_status s = load_from_parser(&parser, path, dirname(tmp), cfg);
  yaml_parser_delete(&parser);
  fclose(f);
  return s;
}

at_status at_server_config_parse(const char *yaml, size_t len, const char *base_dir,
                                 at_server_config *cfg) {
  if (!yaml || !cfg) return at_fail(AT_ERR_INVALID_ARG, "yaml and cfg are required");
  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
  at_status s = load_from_parser(&parser, "(config)", base_dir ? base_dir : ".", cfg);
  yaml_parser_delete(&parser);
  return s;
}

at_status at_server_config_set(at_server_config *cfg, const char *assignment) {
  if (!cfg || !assignment) return at_fail(AT_ERR_INVALID_ARG, "config set: NULL argument");
  const char *eq = strchr(assignment, '=');
  const char *dot = eq ? memchr(assignment, '.', (size_t)(eq - assignment)) : NULL;
  char section[32], key[64];
  if (!dot || dot == assignment || dot + 1 == eq || (size_t)(dot - assignment) >= sizeof section ||
      (size_t)(eq - dot - 1) >= sizeof key)
    return at_fail(AT_ERR_INVALID_ARG, "'%.80s': a setting is SECTION.KEY=VALUE, e.g. planner.deadline_ms=20",
                   assignment);
  snprintf(section, sizeof section, "%.*s", (int)(dot - assignment), assignment);
  snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
  if (!strcmp(section, "models") || !strcmp(section, "variants") || !serve_cfg_key(section, key))
    return at_fail(AT_ERR_INVALID_ARG,
                   "'%s.%s' is not a setting (docs/configuration.md lists server, engine, "
                   "batching, planner and generator keys)", section, key);
  /* the value as a one-line YAML document, so that it meets exactly the
   * parser's checks; a double-quoted scalar takes any printable text */
  const char *v = eq + 1;
  size_t vl = strlen(v);
  if (vl > AT_PATH_CAP) return at_fail(AT_ERR_INVALID_ARG, "%s.%s: the value is too long", section, key);
  char *doc = malloc(2 * vl + 128);
  if (!doc) return at_fail(AT_ERR_NOMEM, "out of memory");
  size_t o = (size_t)sprintf(doc, "{%s: {%s: \"", section, key);
  for (const char *p = v; *p; p++) {
    if ((unsigned char)*p < 0x20 || *p == 0x7f) {
      free(doc);
      return at_fail(AT_ERR_INVALID_ARG, "%s.%s: the value has a control character", section, key);
    }
    if (*p == '"' || *p == '\\') doc[o++] = '\\';
    doc[o++] = *p;
  }
  o += (size_t)sprintf(doc + o, "\"}}");
  char who[128];
  snprintf(who, sizeof who, "--set %s.%s", section, key);
  /* onto a copy: the parser writes a value before its later checks, and a
   * refused setting must leave cfg as it was */
  at_server_config *tmp = malloc(sizeof *tmp);
  if (!tmp) {
    free(doc);
    return at_fail(AT_ERR_NOMEM, "out of memory");
  }
  *tmp = *cfg;
  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_string(&parser, (const unsigned char *)doc, o);
  at_status s = load_from_parser(&parser, who, ".", tmp);
  yaml_parser_delete(&parser);
  if (s == AT_OK) *cfg = *tmp;
  free(tmp);
  free(doc);
  return s;
}

bool serve_token_ok(const char *s, size_t max_len) {
  size_t n = s ? strlen(s) : 0;
  if (n < 1 || n > max_len) return false;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          ch == '.' || ch == '_' || ch == ':' || ch == '-'))
      return false;
  }
  return true;
}

bool at_server_name_valid(const char *name) {
  return serve_token_ok(name, 63) && name[0] != '.' && name[0] != '-';
}

at_status at_server_default_config_path(char *buf, size_t cap) {
  const char *cands[2] = {"configs/serving.yaml", AT_SOURCE_DIR "/configs/serving.yaml"};
  struct stat st;
  for (int i = 0; i < 2; i++)
    if (stat(cands[i], &st) == 0 && S_ISREG(st.st_mode)) {
      snprintf(buf, cap, "%s", cands[i]);
      return AT_OK;
    }
  return at_fail(AT_ERR_NOT_FOUND, "no default configuration: tried ./%s and %s", cands[0],
                 cands[1]);
}
