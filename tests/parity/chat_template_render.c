/* tests/parity/chat_template_render.c — the anytime side of the chat-template
 * parity test (tests/parity/chat_templates.sh), a test-only executable:
 *
 *   chat_template_render TEMPLATE.jinja CONTEXTS.jsonl OUT.jsonl
 *   chat_template_render --pairs PAIRS.jsonl OUT.jsonl
 *
 * compiles the template once, renders it with each line of CONTEXTS.jsonl (one
 * JSON object per line) and writes one line per context to OUT.jsonl:
 * {"ok":true,"out":"..."} or {"ok":false,"error":"..."}. A template that does
 * not compile yields {"ok":false,...} for every line. With --pairs each input
 * line is {"template": ..., "context": {...}} (chat_template_gen.mjs) and is
 * compiled and rendered on its own. The renders go through the public API only
 * (anytime/chat.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/chat.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t k;
  while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      }
      buf = nb;
    }
  }
  fclose(f);
  if (buf) *len = n;
  return buf;
}

static void put_result(FILE *out, int ok, const char *s, size_t n) {
  json_t *o = json_object();
  json_object_set_new(o, "ok", json_boolean(ok));
  json_object_set_new(o, ok ? "out" : "error", json_stringn(s, n));
  char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
  fprintf(out, "%s\n", line);
  free(line);
  json_decref(o);
}

/* One template and one context: the result line. */
static void render_one(FILE *out, const char *tpl, size_t tlen, const char *ctx, size_t clen) {
  at_chat_template *t = NULL;
  if (at_chat_template_compile(tpl, tlen, &t) != AT_OK) {
    put_result(out, 0, at_last_error(), strlen(at_last_error()));
    return;
  }
  char *res = NULL;
  size_t rlen = 0;
  if (at_chat_template_render(t, ctx, clen, (size_t)1 << 24, &res, &rlen) == AT_OK)
    put_result(out, 1, res, rlen);
  else
    put_result(out, 0, at_last_error(), strlen(at_last_error()));
  free(res);
  at_chat_template_destroy(t);
}

static int pairs(const char *in_path, const char *out_path) {
  FILE *in = fopen(in_path, "rb"), *out = fopen(out_path, "wb");
  if (!in || !out) {
    fprintf(stderr, "chat_template_render: cannot open the files\n");
    return 2;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, in)) > 0) {
    json_error_t je;
    json_t *o = json_loadb(line, (size_t)n, 0, &je);
    json_t *tpl = json_object_get(o, "template"), *ctx = json_object_get(o, "context");
    if (!json_is_string(tpl) || !json_is_object(ctx)) {
      fprintf(stderr, "chat_template_render: bad pairs line: %s\n", je.text);
      return 2;
    }
    char *ctext = json_dumps(ctx, JSON_COMPACT);
    render_one(out, json_string_value(tpl), json_string_length(tpl), ctext, strlen(ctext));
    free(ctext);
    json_decref(o);
  }
  free(line);
  fclose(in);
  return fclose(out) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--pairs") == 0) return pairs(argv[2], argv[3]);
  if (argc != 4) {
    fprintf(stderr, "usage: %s TEMPLATE.jinja CONTEXTS.jsonl OUT.jsonl\n", argv[0]);
    return 2;
  }
  size_t tlen = 0;
  char *tpl = slurp(argv[1], &tlen);
  FILE *ctx = fopen(argv[2], "rb");
  FILE *out = fopen(argv[3], "wb");
  if (!tpl || !ctx || !out) {
    fprintf(stderr, "chat_template_render: cannot open the files\n");
    return 2;
  }
  at_chat_template *t = NULL;
  at_status cst = at_chat_template_compile(tpl, tlen, &t);
  char cerr[1024];
  snprintf(cerr, sizeof cerr, "%s", at_last_error());
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, ctx)) > 0) {
    if (cst != AT_OK) {
      put_result(out, 0, cerr, strlen(cerr));
      continue;
    }
    char *res = NULL;
    size_t rlen = 0;
    at_status st = at_chat_template_render(t, line, (size_t)n, (size_t)1 << 24, &res, &rlen);
    if (st == AT_OK)
      put_result(out, 1, res, rlen);
    else
      put_result(out, 0, at_last_error(), strlen(at_last_error()));
    free(res);
  }
  free(line);
  at_chat_template_destroy(t);
  free(tpl);
  fclose(ctx);
  return fclose(out) == 0 ? 0 : 1;
}
