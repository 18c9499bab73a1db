/* src/serve/config.c — the server's configuration: defaults, the YAML file
 * (libyaml's document API; format in docs/configuration.md) and where the
 * built-in default configuration lives. Unknown keys are errors, so a typo
 * never silently falls back to a default. */
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
#include "serve/serve_internal.h"
#include "core/internal.h"

at_server_config at_server_config_default(void) {
  at_server_config c;
  memset(&c, 0, sizeof c);
  snprintf(c.host, sizeof c.host, "127.0.0.1");
  c.port = 8000;
  c.http_threads = 2;
  c.workers = 2;
  c.intra_op_threads = 1;
  c.max_body_bytes = 1u << 20;
  c.idle_timeout_s = 60;
  c.max_connections = 4096;
  c.max_connections_per_client = 0;
  c.max_header_bytes = 32768;
  c.max_inputs = 64;
  c.max_tokens = 512;
  c.max_queued = 4096;
  c.max_batch_size = 16;
  c.max_queue_delay_us = 0;
  snprintf(c.policy, sizeof c.policy, "adaptive");
  snprintf(c.rate_basis, sizeof c.rate_basis, "offered");
  c.deadline_ms = 50;
  c.max_deadline_ms = 10000;
  c.scale_half_life_s = -1;
  c.service_alpha = -1;
  c.service_tau_s = -1;
  c.wait_quantile = -1;
  c.inflight_limit = 512;
  c.overrun_quantile = -1;
  c.overrun_window_s = -1;
  c.adaptive_fill = -1;
  c.window_s = -1;
  c.retry_horizon_ms = -1;
  c.hold_early_retries = true;
  at_server_generator_config *g = &c.generator;
  snprintf(g->name, sizeof g->name, "decoder");
  g->threads = 1;
  g->block_tokens = 16;
  g->blocks = 512;
  g->safety = 1.0;
  g->chunk_tokens = 64;
  g->max_batch = 8;
  g->preempt = true;
  g->max_waiting = 256;
  g->ttft_slo_ms = 2000;
  g->tpot_slo_ms = 200;
  snprintf(g->admission, sizeof g->admission, "slo");
  g->default_max_tokens = 16;
  g->max_tokens = 256;
  return c;
}

int at_server_config_generator_yaml(const at_server_config *cfg, char *buf, size_t cap) {
  const at_server_generator_config *g = &cfg->generator;
  if (!g->enabled) {
    if (cap) buf[0] = '\0';
    return 0;
  }
  int n = snprintf(buf, cap,
                   "generator:\n  name: %s\n  model: %s\n%s%s%s  threads: %d\n"
                   "  block_tokens: %d\n  blocks: %d\n  safety: %g\n  chunk_tokens: %d\n"
                   "  max_batch: %d\n  bucketing: %s\n  preempt: %s\n  max_waiting: %d\n"
                   "  ttft_slo_ms: %g\n  tpot_slo_ms: %g\n  admission: %s\n"
                   "  default_max_tokens: %d\n  max_tokens: %d\n",
                   g->name, g->model_raw[0] ? g->model_raw : g->model,
                   g->variant[0] ? "  variant: " : "", g->variant, g->variant[0] ? "\n" : "",
                   g->threads, g->block_tokens, g->blocks, g->safety, g->chunk_tokens,
                   g->max_batch, g->bucketing ? "true" : "false", g->preempt ? "true" : "false",
                   g->max_waiting, g->ttft_slo_ms, g->tpot_slo_ms, g->admission,
                   g->default_max_tokens,
                   g->max_tokens);
  return n < 0 || (size_t)n >= cap ? -1 : n;
}

char *at_server_config_settings_yaml(const at_server_config *c, int max_batch_size) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  fprintf(f,
          "server:\n  host: %s\n  port: %d\n  http_threads: %d\n  max_body_bytes: %zu\n"
          "  max_inputs: %zu\n  max_tokens: %zu\n  max_queued: %zu\n  hold_early_retries: %s\n"
          "  auto_truncate: %s\n  idle_timeout_s: %d\n  max_connections: %d\n"
          "  max_connections_per_client: %d\n  max_header_bytes: %d\n",
          c->host, c->port, c->http_threads, c->max_body_bytes, c->max_inputs, c->max_tokens,
          c->max_queued, c->hold_early_retries ? "true" : "false",
          c->auto_truncate ? "true" : "false", c->idle_timeout_s, c->max_connections,
          c->max_connections_per_client, c->max_header_bytes);
  /* paths (absolute once parsed), written only when set; keys given on the
   * command line are never written */
  if (c->api_key_file[0]) fprintf(f, "  api_key_file: %s\n", c->api_key_file);
  if (c->tls_cert[0]) fprintf(f, "  tls_cert: %s\n", c->tls_cert);
  if (c->tls_key[0]) fprintf(f, "  tls_key: %s\n", c->tls_key);
  if (c->access_log[0]) fprintf(f, "  access_log: %s\n", c->access_log);
  fprintf(f,
          "engine:\n  workers: %d\n  intra_op_threads: %d\n"
          "batching:\n  max_batch_size: %d\n  max_queue_delay_us: %d\n"
          "planner:\n  policy: %s\n  rate_basis: %s\n  deadline_ms: %.17g\n"
          "  max_deadline_ms: %.17g\n  inflight_limit: %d\n",
          c->workers, c->intra_op_threads, max_batch_size > 0 ? max_batch_size : c->max_batch_size,
          c->max_queue_delay_us, c->policy, c->rate_basis, c->deadline_ms, c->max_deadline_ms,
          c->inflight_limit);
  /* the tuning keys a configuration may leave to the planner's defaults
   * (< 0, or <= 0 where 0 is not a value): written only when set */
  const struct {
    const char *key;
    double v;
    bool zero_is_default; /* else only < 0 is */
  } opt[] = {
      {"scale_half_life_s", c->scale_half_life_s, false},
      {"service_alpha", c->service_alpha, false},
      {"service_tau_s", c->service_tau_s, false},
      {"wait_quantile", c->wait_quantile, false},
      {"overrun_quantile", c->overrun_quantile, false},
      {"overrun_window_s", c->overrun_window_s, true},
      {"adaptive_fill", c->adaptive_fill, true},
      {"window_s", c->window_s, true},
      {"retry_horizon_ms", c->retry_horizon_ms, false},
  };
  for (size_t i = 0; i < sizeof opt / sizeof *opt; i++)
    if (opt[i].zero_is_default ? opt[i].v > 0 : opt[i].v >= 0)
      fprintf(f, "  %s: %.17g\n", opt[i].key, opt[i].v);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
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
  char tmp[1024];
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

static at_status parse_variant(ctx *c, yaml_node_t *n, at_server_variant_config *v) {
  at_status s = need_map(c, n, "variant");
  if (s) return s;
  const char *k;
  yaml_node_t *val;
  v->cost = 0;
  FOR_PAIRS(c, n, pv, k, val) {
    if (!k) return unknown(c, val, "variant", k);
    if (!strcmp(k, "name")) s = get_str(c, val, k, v->name, sizeof v->name);
    else if (!strcmp(k, "path")) s = get_path(c, val, k, v->path, sizeof v->path);
    else if (!strcmp(k, "accuracy")) s = get_num(c, val, k, 0, 1, &v->accuracy);
    else if (!strcmp(k, "cost")) s = get_num(c, val, k, 0, 1e9, &v->cost);
    else if (!strcmp(k, "service_ms"))
      s = get_table(c, val, k, v->batch, v->service_s, &v->n_points);
    else if (!strcmp(k, "service_busy_ms"))
      s = get_table(c, val, k, v->busy_batch, v->busy_s, &v->n_busy_points);
    else return unknown(c, val, "variant", k);
    if (s) return s;
  }
  if (!v->name[0] || !v->path[0]) return bad(c, n, "a variant needs 'name' and 'path'");
  return AT_OK;
}

static at_status parse_model(ctx *c, yaml_node_t *n, at_server_model_config *m) {
  at_status s = need_map(c, n, "model");
  if (s) return s;
  const char *k;
  yaml_node_t *val;
  FOR_PAIRS(c, n, pv, k, val) {
    if (!k) return unknown(c, val, "model", k);
    if (!strcmp(k, "name")) s = get_str(c, val, k, m->name, sizeof m->name);
    else if (!strcmp(k, "task")) {
      s = get_str(c, val, k, m->task, sizeof m->task);
      if (!s && strcmp(m->task, "classify") && strcmp(m->task, "embed"))
        return bad(c, val, "'task' must be 'classify' or 'embed'");
    } else if (!strcmp(k, "tokenizer")) s = get_path(c, val, k, m->tokenizer, sizeof m->tokenizer);
    else if (!strcmp(k, "config")) s = get_path(c, val, k, m->config_json, sizeof m->config_json);
    else if (!strcmp(k, "variants")) {
      if (val->type != YAML_SEQUENCE_NODE) return bad(c, val, "'variants' must be a list");
      for (yaml_node_item_t *it = val->data.sequence.items.start; it < val->data.sequence.items.top; it++) {
        if (m->n_variants >= AT_SERVER_MAX_VARIANTS)
          return at_fail(AT_ERR_LIMIT, "%s: model '%s' has more than %d variants", c->file, m->name,
                         AT_SERVER_MAX_VARIANTS);
        at_server_variant_config *v = &m->variants[m->n_variants];
        memset(v, 0, sizeof *v);
        if ((s = parse_variant(c, node(c, *it), v))) return s;
        m->n_variants++;
      }
    } else return unknown(c, val, "model", k);
    if (s) return s;
  }
  if (!m->name[0] || !m->task[0] || !m->tokenizer[0] || m->n_variants == 0)
    return bad(c, n, "a model needs 'name', 'task', 'tokenizer' and at least one variant");
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

/* generator: the decoder lane. `model` is a path (relative to this file)
 * when it names an existing directory that way, otherwise a model spec. */
static at_status parse_generator(ctx *c, yaml_node_t *n, at_server_generator_config *g) {
  at_status s = need_map(c, n, "generator");
  if (s) return s;
  const char *k;
  yaml_node_t *v;
  FOR_PAIRS(c, n, pg, k, v) {
    double d = 0;
    if (!k) return unknown(c, v, "generator", k);
#define GNUM(key, lo, hi, field)                          \
  if (!strcmp(k, key)) {                                  \
    if ((s = get_num(c, v, key, lo, hi, &d))) return s;   \
    field = d;                                            \
    continue;                                             \
  }
    if (!strcmp(k, "name")) {
      if ((s = get_str(c, v, k, g->name, sizeof g->name))) return s;
      continue;
    }
    if (!strcmp(k, "model")) {
      if ((s = get_str(c, v, k, g->model_raw, sizeof g->model_raw))) return s;
      char rel[2048];
      struct stat st;
      int w = g->model_raw[0] == '/' ? snprintf(rel, sizeof rel, "%s", g->model_raw)
                                     : snprintf(rel, sizeof rel, "%s/%s", c->dir, g->model_raw);
      bool is_dir = w > 0 && (size_t)w < sizeof g->model && stat(rel, &st) == 0 && S_ISDIR(st.st_mode);
      const char *pick = is_dir ? rel : g->model_raw;
      size_t pl = strlen(pick);
      if (pl >= sizeof g->model) return bad(c, v, "'model' path too long");
      memcpy(g->model, pick, pl + 1);
      continue;
    }
    if (!strcmp(k, "variant")) {
      if ((s = get_str(c, v, k, g->variant, sizeof g->variant))) return s;
      continue;
    }
    if (!strcmp(k, "admission")) {
      if ((s = get_str(c, v, k, g->admission, sizeof g->admission))) return s;
      if (strcmp(g->admission, "slo") && strcmp(g->admission, "queue"))
        return bad(c, v, "'admission' must be slo or queue");
      continue;
    }
    if (!strcmp(k, "bucketing")) {
      if ((s = get_bool(c, v, k, &g->bucketing))) return s;
      continue;
    }
    if (!strcmp(k, "preempt")) {
      if ((s = get_bool(c, v, k, &g->preempt))) return s;
      continue;
    }
    GNUM("threads", 1, 256, g->threads)
    GNUM("block_tokens", 1, 4096, g->block_tokens)
    GNUM("blocks", 1, 1 << 20, g->blocks)
    GNUM("safety", 0.01, 100, g->safety)
    GNUM("chunk_tokens", 1, 65536, g->chunk_tokens)
    GNUM("max_batch", 1, 256, g->max_batch)
    GNUM("max_waiting", 1, 1 << 20, g->max_waiting)
    GNUM("ttft_slo_ms", 0.001, 3600000, g->ttft_slo_ms)
    GNUM("tpot_slo_ms", 0.001, 3600000, g->tpot_slo_ms)
    GNUM("default_max_tokens", 1, 1 << 20, g->default_max_tokens)
    GNUM("max_tokens", 1, 1 << 20, g->max_tokens)
#undef GNUM
    return unknown(c, v, "generator", k);
  }
  if (!g->model[0]) return bad(c, n, "'generator' needs 'model'");
  if (g->default_max_tokens > g->max_tokens)
    return bad(c, n, "'default_max_tokens' is above 'max_tokens'");
  g->enabled = true;
  return AT_OK;
}

static at_status parse_root(ctx *c, yaml_node_t *root, at_server_config *cfg) {
  at_status s = need_map(c, root, "the document");
  if (s) return s;
  const char *k, *k2;
  yaml_node_t *sec, *v;
  FOR_PAIRS(c, root, pr, k, sec) {
    double d = 0;
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
      continue;
    }
    if (!strcmp(k, "generator")) {
      if ((s = parse_generator(c, sec, &cfg->generator))) return s;
      continue;
    }
    if ((s = need_map(c, sec, k))) return s;
    int known = !strcmp(k, "server") || !strcmp(k, "engine") || !strcmp(k, "batching") ||
                !strcmp(k, "planner");
    if (!known) return unknown(c, sec, "top level", k);
    FOR_PAIRS(c, sec, ps, k2, v) {
      if (!k2) return unknown(c, v, k, k2);
#define NUM(sect, key, lo, hi, field)                                   \
  if (!strcmp(k, sect) && !strcmp(k2, key)) {                           \
    if ((s = get_num(c, v, key, lo, hi, &d))) return s;                 \
    field = d;                                                          \
    continue;                                                           \
  }
      if (!strcmp(k, "server") && !strcmp(k2, "host")) {
        if ((s = get_str(c, v, k2, cfg->host, sizeof cfg->host))) return s;
        continue;
      }
      if (!strcmp(k, "planner") && !strcmp(k2, "rate_basis")) {
        if ((s = get_str(c, v, k2, cfg->rate_basis, sizeof cfg->rate_basis))) return s;
        if (strcmp(cfg->rate_basis, "admitted") && strcmp(cfg->rate_basis, "offered"))
          return bad(c, v, "'rate_basis' must be 'admitted' or 'offered'");
        continue;
      }
      if (!strcmp(k, "planner") && !strcmp(k2, "policy")) {
        if ((s = get_str(c, v, k2, cfg->policy, sizeof cfg->policy))) return s;
        if (strcmp(cfg->policy, "adaptive") && strcmp(cfg->policy, "accurate-only") &&
            strcmp(cfg->policy, "none") && strcmp(cfg->policy, "limit"))
          return bad(c, v, "'policy' must be 'adaptive', 'accurate-only', 'none' or 'limit'");
        continue;
      }
      if (!strcmp(k, "server") && !strcmp(k2, "hold_early_retries")) {
        if ((s = get_bool(c, v, k2, &cfg->hold_early_retries))) return s;
        continue;
      }
      if (!strcmp(k, "server") &&
          (!strcmp(k2, "api_key_file") || !strcmp(k2, "tls_cert") || !strcmp(k2, "tls_key") ||
           !strcmp(k2, "access_log"))) {
        char *dst = !strcmp(k2, "api_key_file") ? cfg->api_key_file
                    : !strcmp(k2, "tls_cert")   ? cfg->tls_cert
                    : !strcmp(k2, "tls_key")    ? cfg->tls_key
                                                : cfg->access_log;
        if ((s = get_path(c, v, k2, dst, sizeof cfg->tls_cert))) return s;
        continue;
      }
      if (!strcmp(k, "server") && !strcmp(k2, "auto_truncate")) {
        if ((s = get_bool(c, v, k2, &cfg->auto_truncate))) return s;
        continue;
      }
      if (!strcmp(k, "planner") && !strcmp(k2, "inflight_limit")) {
        if ((s = get_num(c, v, k2, 1, 1000000, &d))) return s;
        if (d != floor(d)) return bad(c, v, "'inflight_limit' must be a whole number");
        cfg->inflight_limit = (int)d;
        continue;
      }
      if (!strcmp(k, "planner") && !strcmp(k2, "overrun_quantile")) {
        if ((s = get_num(c, v, k2, 0, 0.999999, &d))) return s;
        cfg->overrun_quantile = d; /* 0 turns the feedback off; else a quantile in (0, 1) */
        continue;
      }
      NUM("server", "port", 0, 65535, cfg->port)
      NUM("server", "http_threads", 1, 256, cfg->http_threads)
      NUM("server", "max_body_bytes", 1024, 1 << 30, cfg->max_body_bytes)
      NUM("server", "max_inputs", 1, 100000, cfg->max_inputs)
      NUM("server", "max_tokens", 3, 65536, cfg->max_tokens)
      NUM("server", "max_queued", 1, 1 << 24, cfg->max_queued)
      NUM("server", "idle_timeout_s", 1, 86400, cfg->idle_timeout_s)
      NUM("server", "max_connections", 16, 1000000, cfg->max_connections)
      NUM("server", "max_connections_per_client", 0, 1000000, cfg->max_connections_per_client)
      NUM("server", "max_header_bytes", 4096, 1 << 24, cfg->max_header_bytes)
      NUM("engine", "workers", 1, 1024, cfg->workers)
      NUM("engine", "intra_op_threads", 1, 1024, cfg->intra_op_threads)
      NUM("batching", "max_batch_size", 1, 1024, cfg->max_batch_size)
      NUM("batching", "max_queue_delay_us", 0, 10000000, cfg->max_queue_delay_us)
      NUM("planner", "deadline_ms", 0.01, 3600000, cfg->deadline_ms)
      NUM("planner", "max_deadline_ms", 0.01, 3600000, cfg->max_deadline_ms)
      NUM("planner", "scale_half_life_s", 0, 3600, cfg->scale_half_life_s)
      NUM("planner", "service_alpha", 0, 1, cfg->service_alpha)
      NUM("planner", "service_tau_s", 0, 3600, cfg->service_tau_s)
      NUM("planner", "wait_quantile", 0, 0.999999, cfg->wait_quantile)
      NUM("planner", "overrun_window_s", 0.01, 60, cfg->overrun_window_s)
      NUM("planner", "adaptive_fill", 0.1, 1, cfg->adaptive_fill)
      NUM("planner", "window_s", 0.01, 60, cfg->window_s)
      NUM("planner", "retry_horizon_ms", 0, 60000, cfg->retry_horizon_ms)
#undef NUM
      return unknown(c, v, k, k2);
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
  if (s == AT_OK && cfg->max_deadline_ms < cfg->deadline_ms)
    s = at_fail(AT_ERR_INVALID_ARG, "%s: planner.max_deadline_ms (%g) is below deadline_ms (%g)",
                name, cfg->max_deadline_ms, cfg->deadline_ms);
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
  pp.inflight_limit = cfg->inflight_limit;
  /* every policy, "none" and "limit" included, lives in the planner */
  at_status st = at_plan_policy_parse(cfg->policy, &pp.policy);
  if (st != AT_OK) return st;
  *out = pp;
  return AT_OK;
}

bool at_server_variant_plan(const at_server_variant_config *vc, at_plan_variant *out) {
  *out = (at_plan_variant){.name = vc->name, .accuracy = vc->accuracy, .cost = vc->cost};
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
