/* src/serve/text_encode.c — the token ids of an admitted request's texts,
 * the one path both fronts take (textjob.c for HTTP, grpc_server.c for
 * gRPC): the model's prompt put before each text when the request asks for
 * one, tokenise on the calling thread's workspace (texts in one batch call,
 * text pairs one at a time), then the checks that keep a bad request out of
 * a shared batch — every id and type id inside the model's tables, every
 * text within max_tokens — and what the texts teach the length model about
 * bytes per token.
 *
 * DESIGN
 *   A failure fills `e` (HTTP status, message, OpenAI error code and param)
 *   and leaves nothing allocated; success leaves the ids and the
 *   offsets/lengths (one block each) for serve_text_ids_free(). The caller owns the
 *   planner's hold on the texts and releases it on failure.
 *   Thread-safety: reads the model (immutable while serving) and updates its
 *   bytes-per-token average (atomic); the workspace is the calling thread's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "serve/serve_internal.h"

static at_status fail_with(text_ids_error *e, at_status st, int status, const char *code,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static at_status fail_with(text_ids_error *e, at_status st, int status, const char *code,
                           const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->status = status;
  e->code = code;
  e->param = code ? "input" : NULL;
  return st;
}

void serve_text_ids_free(text_ids *t) {
  free(t->ids);
  free(t->off); /* len shares its block */
  memset(t, 0, sizeof *t);
}

/* The prompt `o->prompt` before each text: one block holding the pointers,
 * the lengths and the bytes (freed as one). */
static char **join_prompt(const served_model *m, int prompt, const char *const *texts,
                          const size_t *lens, size_t n, size_t **jl_out) {
  const char *pt = m->prompt_text[prompt];
  size_t pl = strlen(pt), total = 0;
  for (size_t i = 0; i < n; i++) total += pl + lens[i];
  char **joined = malloc(n * sizeof *joined + n * sizeof(size_t) + total + 1);
  if (!joined) return NULL;
  size_t *jl = (size_t *)(joined + n);
  char *at = (char *)(jl + n);
  for (size_t i = 0; i < n; i++) {
    joined[i] = at;
    memcpy(at, pt, pl);
    memcpy(at + pl, texts[i], lens[i]);
    jl[i] = pl + lens[i];
    at += jl[i];
  }
  *jl_out = jl;
  return joined;
}

at_status serve_text_ids(at_server *s, served_model *m, const char *const *texts,
                         const size_t *lens, size_t n, const text_opts *o, text_ids *out,
                         text_ids_error *e) {
  memset(out, 0, sizeof *out);
  memset(e, 0, sizeof *e);
  uint64_t t0 = at_now_ns();
  const bool pairs = o->pairs != NULL;
  char **joined = NULL;
  size_t *jl = NULL;
  if (o->use_prompt && !pairs) {
    joined = join_prompt(m, o->prompt, texts, lens, n, &jl);
    if (!joined) return fail_with(e, AT_ERR_NOMEM, 500, NULL, "out of memory");
    texts = (const char *const *)joined, lens = jl;
    out->pool_skip = m->prompt_skip[o->prompt];
  }
  at_tok_workspace *ws = serve_workspace(s);
  at_encoding *enc = ws ? malloc(n * sizeof *enc) : NULL;
  size_t *off = enc ? malloc(2 * n * sizeof *off) : NULL, *len = off ? off + n : NULL;
  int64_t *buf = NULL; /* text i's ids at off[i] (a pair's type ids right after) */
  at_status st = off ? AT_OK : at_fail(AT_ERR_NOMEM, "out of memory");
  at_encode_params ep = at_encode_default_params();
  ep.max_length = o->truncate ? (int)m->max_tokens : 0;
  ep.pad_to = 0;
  ep.truncation_direction = o->trunc_dir;
  size_t used = 0, at_i = 0;
  if (st == AT_OK && !pairs) { /* one batch call, then one copy of every id */
    st = at_tokenizer_encode_batch(m->tok, ws, texts, lens, n, &ep, enc);
    size_t total = 0;
    for (size_t i = 0; st == AT_OK && i < n; i++) total += enc[i].n;
    if (st == AT_OK && !(buf = malloc((total ? total : 1) * sizeof *buf)))
      st = at_fail(AT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == AT_OK && i < n; i++) {
      off[i] = used, len[i] = enc[i].n;
      for (size_t k = 0; k < enc[i].n; k++) buf[used + k] = enc[i].ids[k];
      used += enc[i].n;
    }
  }
  /* Pairs are encoded one at a time; each encoding lives in the workspace
   * until the next, so its ids and type ids are copied out at once. */
  for (size_t i = 0, cap = 0; st == AT_OK && pairs && i < n; i++) {
    at_i = i;
    st = at_tokenizer_encode(m->tok, ws, texts[i], lens[i], o->pairs[i],
                             o->pairs[i] ? o->pair_lens[i] : 0, &ep, &enc[i]);
    if (st == AT_OK && used + 2 * enc[i].n > cap) {
      size_t nc = (used + 2 * enc[i].n) * 2 + 64;
      int64_t *nb = realloc(buf, nc * sizeof *nb);
      if (nb) buf = nb, cap = nc;
      else st = at_fail(AT_ERR_NOMEM, "out of memory");
    }
    if (st != AT_OK) break;
    off[i] = used, len[i] = enc[i].n;
    for (size_t k = 0; k < enc[i].n; k++) {
      buf[used + k] = enc[i].ids[k];
      buf[used + enc[i].n + k] = enc[i].type_ids[k];
    }
    used += 2 * enc[i].n;
  }
  free(enc);
  if (st != AT_OK) {
    free(off), free(buf), free(joined);
    int status = serve_tokenise_status(st);
    const char *code = st == AT_ERR_LIMIT ? "context_length_exceeded" : NULL;
    if (pairs)
      return fail_with(e, st, status, code, "cannot tokenise input %zu: %s", at_i,
                       at_last_error());
    return fail_with(e, st, status, code, "cannot tokenise the input: %s", at_last_error());
  }
  /* Every id must index the model's tables. A tokenizer.json that gives ids
   * past config.json's vocab_size (or type ids past type_vocab_size) would
   * make the Run fail for the whole batch — other requests included — or,
   * for a negative id, read the table from its end. Such a request is
   * answered alone, before it reaches a batch. */
  for (size_t i = 0; i < n; i++) {
    const int64_t *ids = buf + off[i], *types = pairs ? ids + len[i] : NULL;
    for (size_t k = 0; k < len[i]; k++) {
      int64_t id = ids[k], ty = types ? types[k] : 0;
      if (id >= 0 && id < m->id_limit && ty >= 0 && ty < m->type_limit) continue;
      free(off), free(buf), free(joined);
      return fail_with(e, AT_ERR_MODEL, 500, NULL,
                       "the tokenizer gave input %zu the token id %lld (type %lld), outside the "
                       "model's %lld ids (%lld types): its tokenizer and its config.json "
                       "disagree; nothing was run",
                       i, (long long)id, (long long)ty, (long long)m->id_limit,
                       (long long)m->type_limit);
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (len[i] > m->max_tokens) {
      size_t got = len[i];
      free(off), free(buf), free(joined);
      return fail_with(e, AT_ERR_LIMIT, 413, "context_length_exceeded",
                       "input %zu has %zu tokens; the limit is %zu (send \"truncate\": true to "
                       "cut it)",
                       i, got, m->max_tokens);
    }
    out->total += len[i];
  }
  /* what these texts teach the length model about bytes per token (a text
   * cut at the limit would teach it wrong) */
  size_t lb = 0, lt = 0, ln = 0;
  for (size_t i = 0; i < n; i++)
    if (len[i] < m->max_tokens)
      lb += lens[i] + (pairs && o->pairs[i] ? o->pair_lens[i] : 0), lt += len[i], ln++;
  serve_learn_tokens(m, lb, lt, ln);
  free(joined);
  out->ids = buf;
  out->off = off;
  out->len = len;
  out->n = n;
  out->types = pairs;
  out->ns = at_now_ns() - t0;
  return AT_OK;
}
