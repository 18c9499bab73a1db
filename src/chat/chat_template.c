/* src/chat/chat_template.c — the public chat-template API (anytime/chat.h):
 * compile (lex + parse into the template's arena), load from a model
 * directory (tokenizer_config.json / chat_template.jinja, BOS and EOS), and
 * render (JSON context to values, evaluate, hand back a malloc'd string).
 *
 * A compiled template is read-only after compile; every render allocates its
 * own arena and output buffer, so renders on many threads need no lock.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/chat.h"
#include "chat/jinja.h"
#include "core/internal.h"

/* Memory one render may use beyond its output bound. */
#define RENDER_ARENA_BASE ((size_t)64 << 20)

struct at_chat_template {
  jarena arena; /* tokens, AST, strings, the source */
  jlist program;
  const char *src; /* for line:column of render errors */
  size_t srclen;
  char *bos, *eos;
};

at_status at_chat_template_compile(const char *src, size_t len, at_chat_template **out) {
  if (out) *out = NULL;
  if (!src || !out) return at_fail(AT_ERR_INVALID_ARG, "at_chat_template_compile: NULL argument");
  if (len > AT_CHAT_TEMPLATE_MAX_SOURCE)
    return at_fail(AT_ERR_LIMIT, "chat template of %zu bytes is over the %zu-byte limit", len,
                   AT_CHAT_TEMPLATE_MAX_SOURCE);
  at_chat_template *t = calloc(1, sizeof *t);
  if (!t) return at_fail(AT_ERR_NOMEM, "out of memory");
  jarena_init(&t->arena, 0);
  jerror err = {AT_OK, ""};
  jtoken *toks = NULL;
  size_t ntoks = 0;
  bool ok = jinja_lex(&t->arena, src, len, &toks, &ntoks, &err) &&
            jinja_parse(&t->arena, toks, ntoks, src, len, &t->program, &err);
  if (ok) {
    t->src = jarena_strdup(&t->arena, src, len);
    t->srclen = len;
    if (!t->src) {
      err.st = AT_ERR_NOMEM;
      snprintf(err.msg, sizeof err.msg, "out of memory");
      ok = false;
    }
  }
  if (!ok) {
    at_chat_template_destroy(t);
    at_status st = err.st == AT_OK ? AT_ERR_PARSE : err.st;
    if (strstr(err.msg, "nested too deeply")) st = AT_ERR_LIMIT;
    return at_fail(st, "chat template: %s", err.msg);
  }
  *out = t;
  return AT_OK;
}

void at_chat_template_destroy(at_chat_template *t) {
  if (!t) return;
  jarena_free(&t->arena);
  free(t->bos);
  free(t->eos);
  free(t);
}

const char *at_chat_template_bos(const at_chat_template *t) {
  return t && t->bos ? t->bos : "";
}
const char *at_chat_template_eos(const at_chat_template *t) {
  return t && t->eos ? t->eos : "";
}

/* ---- loading ------------------------------------------------------------------- */

/* A special token: a string, or an AddedToken object {"content": ...}. */
static char *token_text(json_t *cfg, const char *key) {
  json_t *v = json_object_get(cfg, key);
  if (json_is_object(v)) v = json_object_get(v, "content");
  return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* The template text in tokenizer_config.json, or NULL (and *st) if none. */
static const char *config_template(json_t *cfg, const char *path, at_status *st) {
  json_t *ct = json_object_get(cfg, "chat_template");
  *st = AT_OK;
  if (!ct || json_is_null(ct)) return NULL;
  if (json_is_string(ct)) return json_string_value(ct);
  if (!json_is_array(ct)) {
    *st = at_fail(AT_ERR_PARSE, "%s: chat_template is neither a string nor a list", path);
    return NULL;
  }
  const char *first = NULL;
  size_t i;
  json_t *e;
  json_array_foreach(ct, i, e) {
    json_t *name = json_object_get(e, "name"), *tpl = json_object_get(e, "template");
    if (!json_is_string(tpl)) continue;
    if (!first) first = json_string_value(tpl);
    if (json_is_string(name) && strcmp(json_string_value(name), "default") == 0)
      return json_string_value(tpl);
  }
  if (!first)
    *st = at_fail(AT_ERR_PARSE, "%s: chat_template is a list without a {\"template\": ...} entry",
                  path);
  return first;
}

at_status at_chat_template_load(const char *model_dir, at_chat_template **out) {
  if (out) *out = NULL;
  if (!model_dir || !out)
    return at_fail(AT_ERR_INVALID_ARG, "at_chat_template_load: NULL argument");
  size_t dl = strlen(model_dir);
  char *path = malloc(dl + 64);
  if (!path) return at_fail(AT_ERR_NOMEM, "out of memory");
  snprintf(path, dl + 64, "%s/tokenizer_config.json", model_dir);
  char *data = NULL;
  size_t len = 0;
  json_t *cfg = NULL;
  at_status st = at_read_file(path, (size_t)64 << 20, "chat template", &data, &len);
  if (st == AT_OK) {
    json_error_t je;
    cfg = json_loadb(data, len, 0, &je);
    free(data);
    data = NULL;
    if (!json_is_object(cfg)) {
      json_decref(cfg);
      st = at_fail(AT_ERR_PARSE, "%s: not a JSON object (line %d: %s)", path, je.line, je.text);
      free(path);
      return st;
    }
  } else if (st != AT_ERR_NOT_FOUND) {
    free(path);
    return st;
  }
  st = AT_OK;
  const char *src = cfg ? config_template(cfg, path, &st) : NULL;
  if (st != AT_OK) {
    json_decref(cfg);
    free(path);
    return st;
  }
  size_t srclen = src ? strlen(src) : 0;
  if (!src) {
    snprintf(path, dl + 64, "%s/chat_template.jinja", model_dir);
    st = at_read_file(path, (size_t)64 << 20, "chat template", &data, &len);
    if (st == AT_ERR_NOT_FOUND)
      st = at_fail(AT_ERR_NOT_FOUND,
                   "%s has no chat template (no \"chat_template\" in tokenizer_config.json, no "
                   "chat_template.jinja)",
                   model_dir);
    if (st != AT_OK) {
      json_decref(cfg);
      free(path);
      return st;
    }
    src = data;
    srclen = len;
  }
  at_chat_template *t = NULL;
  st = at_chat_template_compile(src, srclen, &t);
  if (st == AT_OK && cfg) {
    t->bos = token_text(cfg, "bos_token");
    t->eos = token_text(cfg, "eos_token");
  }
  free(data);
  json_decref(cfg);
  free(path);
  if (st == AT_OK) *out = t;
  return st;
}

/* ---- rendering ------------------------------------------------------------------ */
at_status at_chat_template_render(const at_chat_template *t, const char *context_json, size_t len,
                                  size_t max_output, char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!t || !context_json || !out)
    return at_fail(AT_ERR_INVALID_ARG, "at_chat_template_render: NULL argument");
  json_error_t je;
  json_t *ctx = json_loadb(context_json, len, JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &je);
  if (!json_is_object(ctx)) {
    json_decref(ctx);
    return at_fail(AT_ERR_INVALID_ARG, "chat template context is not a JSON object (%d:%d: %s)",
                   je.line, je.column, je.text);
  }
  jrender r;
  memset(&r, 0, sizeof r);
  size_t cap =
      RENDER_ARENA_BASE + (max_output < ((size_t)1 << 30) ? max_output * 4 : (size_t)1 << 32);
  jarena_init(&r.arena, cap);
  r.max_output = max_output;
  r.at_off = SIZE_MAX; /* no template position while reading the context */
  jbuf buf = {NULL, 0, 0, max_output};
  jv *vars = jv_from_json(&r, ctx, 0);
  json_decref(ctx);
  bool ok = vars && jinja_render(&r, &t->program, vars, &buf);
  jarena_free(&r.arena);
  if (!ok) {
    free(buf.p);
    if (r.err.st == AT_OK) return at_fail(AT_ERR_NOMEM, "out of memory while rendering");
    if (r.raised || r.err_off == SIZE_MAX) return at_fail(r.err.st, "chat template: %s", r.err.msg);
    int line, col;
    jinja_linecol(t->src, t->srclen, r.err_off, &line, &col);
    return at_fail(r.err.st, "chat template: line %d:%d: %s", line, col, r.err.msg);
  }
  if (!buf.p) {
    buf.p = malloc(1);
    if (!buf.p) return at_fail(AT_ERR_NOMEM, "out of memory");
    buf.p[0] = '\0';
  }
  *out = buf.p;
  if (out_len) *out_len = buf.n;
  return AT_OK;
}
