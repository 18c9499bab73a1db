/* src/serve/routes_tei.c — the Text Embeddings Inference-style routes, read
 * as TEI's router reads them: POST /embed (pooling, normalize, truncate,
 * truncation_direction, dimensions: Matryoshka truncation before
 * normalizing), POST /predict (a string, one [text] / [text, text_pair], or
 * a batch of such lists; labels from config.json's id2label, softmax scores
 * (a sigmoid per label for a multi-label model) or raw_scores), POST
 * /rerank (a cross-encoder over (query, text) pairs), POST /tokenize (slices
 * of the input and byte offsets; null offsets on special tokens), GET
 * /health, GET /info; and POST /v1/rerank, the same reranking in Cohere's
 * and Jina's shape. Shapes: docs/api.md. Bodies are read by req_parse.c
 * (pure, fuzzed), which refuses members TEI's request types do not define.
 * An optional "model" member picks a model by name; otherwise the first
 * model with the route's task answers. HTTP threads only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "serve/request_json.h"

typedef struct tei_state {
  bool single, normalize, raw_scores;
  size_t dims; /* /embed: 0 = all */
} tei_state;

size_t serve_embed_dims(float *v, size_t out_dim, size_t dims, bool normalize) {
  size_t k = dims && dims < out_dim ? dims : out_dim;
  if (normalize) at_l2_normalize(v, k);
  return k;
}

static void finish_embed(req_ctx *r) {
  job *j = r->job;
  tei_state *st = r->route_state;
  json_t *outer = json_array();
  for (size_t i = 0; i < j->n; i++) {
    float *v = j->items[i].out;
    size_t k = serve_embed_dims(v, j->m->out_dim, st->dims, st->normalize);
    json_t *row = json_array();
    for (size_t d = 0; d < k; d++) json_array_append_new(row, json_real(v[d]));
    json_array_append_new(outer, row);
  }
  serve_prepare_json(r, 200, outer);
}

static void finish_predict(req_ctx *r) {
  job *j = r->job;
  tei_state *st = r->route_state;
  served_model *m = j->m;
  json_t *outer = json_array();
  float p[256];
  for (size_t i = 0; i < j->n; i++) {
    const float *lg = j->items[i].out;
    size_t n = m->out_dim < 256 ? m->out_dim : 256;
    if (st->raw_scores)
      memcpy(p, lg, n * sizeof(float));
    else
      at_class_scores(lg, n, m->multi_label, p);
    int order[256];
    for (size_t k = 0; k < n; k++) order[k] = (int)k;
    for (size_t a = 1; a < n; a++) /* highest score first */
      for (size_t b = a; b > 0 && p[order[b]] > p[order[b - 1]]; b--) {
        int t = order[b];
        order[b] = order[b - 1];
        order[b - 1] = t;
      }
    json_t *row = json_array();
    for (size_t k = 0; k < n; k++)
      json_array_append_new(
          row, json_pack("{s:f, s:s}", "score", (double)p[order[k]], "label", m->labels[order[k]]));
    json_array_append_new(outer, row);
  }
  if (st->single) {
    json_t *only = json_incref(json_array_get(outer, 0));
    json_decref(outer);
    outer = only;
  }
  serve_prepare_json(r, 200, outer);
}

/* Does the raw body's "inputs" hold a list whose first element is a string
 * (/predict's one-input form, [text] or [text, text_pair])? Then the scan
 * before parsing would count its strings as texts; such a body is parsed
 * first instead (one input: cheap). A guess on the raw bytes: a wrong
 * guess only costs the early decision, or a decision taken again. */
static bool predict_one_input(const req_ctx *r) {
  const char *b = r->body, *end = r->body + r->body_len;
  static const char key[] = "\"inputs\"";
  for (const char *p = b; p && p + sizeof key - 1 <= end;) {
    p = memchr(p, '"', (size_t)(end - p));
    if (!p || p + sizeof key - 1 > end) return false;
    if (memcmp(p, key, sizeof key - 1)) {
      p++;
      continue;
    }
    p += sizeof key - 1;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    if (p >= end || *p++ != ':') return false;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    if (p >= end || *p++ != '[') return false;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p < end && *p == '"';
  }
  return false;
}

static enum MHD_Result text_route(req_ctx *r, serve_task task) {
  enum MHD_Result res = MHD_YES;
  if (r->body && !(task == TASK_CLASSIFY && predict_one_input(r)) &&
      rj_predecide(r, task, "inputs", &res))
    return res; /* refused unparsed */
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  served_model *m = serve_pick_model(r, body, task, &res);
  tei_req q; /* the body's texts and flags (req_parse.c: pure, fuzzed) */
  tei_state *st = calloc(1, sizeof *st);
  double dl = rj_deadline_s(r);
  char err[512];
  int hs;
  if (!m || !st) {
    if (m && !st) res = serve_error(r, 500, "out of memory");
    goto out;
  }
  if ((hs =
           tei_req_parse(body, task == TASK_EMBED ? TEI_EMBED : TEI_PREDICT, r->srv->cfg.max_inputs,
                         r->srv->cfg.auto_truncate, m->out_dim, &q, err, sizeof err)) != 0) {
    res = serve_error(r, hs, "%s", err);
    goto out;
  }
  if (dl < 0) {
    res = serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
    tei_req_free(&q);
    goto out;
  }
  if (q.t.pairs && task == TASK_EMBED) {
    res = serve_error(r, 400,
                      "text pairs are for classifiers (cross-encoders, POST /predict or "
                      "/rerank); /embed takes strings");
    tei_req_free(&q);
    goto out;
  }
  text_opts o = {.truncate = q.truncate,
                 .trunc_dir = q.trunc_dir,
                 .deadline_s = dl,
                 .pairs = (const char *const *)q.t.pairs,
                 .pair_lens = q.t.pair_lens};
  if (task == TASK_EMBED && !serve_pick_prompt(m, q.prompt_name, &o, err, sizeof err)) {
    res = serve_error(r, 400, "%s", err);
    tei_req_free(&q);
    goto out;
  }
  /* Left would cut the prompt before the text, and pooling that leaves the
   * prompt's tokens out (include_prompt: false) would then skip text
   * tokens instead: refused rather than answered wrong. */
  if (task == TASK_EMBED && o.use_prompt && o.truncate && o.trunc_dir == AT_TRUNC_LEFT &&
      m->prompt_skip[o.prompt] > 0) {
    res = serve_error(r, 400,
                      "\"truncation_direction\": \"Left\" is not supported with model '%s''s "
                      "prompt '%s': its pooling leaves the prompt out (include_prompt: false), "
                      "and cutting on the left would cut the prompt first",
                      m->name, m->prompt_name[o.prompt]);
    tei_req_free(&q);
    goto out;
  }
  st->single = q.t.single;
  st->normalize = q.normalize;
  st->raw_scores = q.raw_scores;
  st->dims = q.dims;
  r->route_state = st;
  r->free_state = free;
  st = NULL;
  res = serve_run_text_job(r, m, q.t.texts, q.t.lens, q.t.n, &o,
                           task == TASK_EMBED ? finish_embed : finish_predict);
  tei_req_free(&q);
out:
  free(st);
  json_decref(body);
  return res;
}

/* POST /rerank (TEI's): {"query", "texts", "raw_scores", "return_text",
 * "truncate", "truncation_direction"} -> [{"index", "score", "text"?}],
 * highest score first; and POST /v1/rerank (Cohere's and Jina's shape):
 * {"query", "documents", "top_n", "return_documents"} -> {"id", "model",
 * "results": [{"index", "relevance_score", "document"?: {"text"}}],
 * "usage"}. The model is a cross-encoder: a classifier with one output,
 * run on the pairs (query, text); the score is the sigmoid of its logit, or
 * the logit with raw_scores (TEI's route only). */
typedef struct rerank_state {
  bool cohere; /* /v1/rerank's answer */
  bool raw_scores, return_text;
  size_t top_n; /* /v1/rerank: how many results (1..n) */
  json_t *body; /* holds the texts for return_text */
} rerank_state;

static void rerank_free(void *p) {
  rerank_state *st = p;
  if (st) json_decref(st->body);
  free(st);
}

/* Element i of the texts the request gave: TEI's "texts"[i], or the text
 * of Cohere's "documents"[i] (a string or {"text"}). */
static json_t *rerank_text(const rerank_state *st, size_t i) {
  if (!st->cohere) return json_array_get(json_object_get(st->body, "texts"), i);
  json_t *d = json_array_get(json_object_get(st->body, "documents"), i);
  return json_is_object(d) ? json_object_get(d, "text") : d;
}

static void finish_rerank(req_ctx *r) {
  job *j = r->job;
  rerank_state *st = r->route_state;
  size_t n = j->n;
  float *score = malloc(n * sizeof *score);
  size_t *order = malloc(n * sizeof *order);
  if (!score || !order) {
    free(score);
    free(order);
    serve_prepare_error(r, 500, "out of memory");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const float *lg = j->items[i].out;
    if (st->raw_scores)
      score[i] = lg[0];
    else
      at_class_scores(lg, 1, true, &score[i]); /* one logit: its sigmoid */
    order[i] = i;
  }
  for (size_t a = 1; a < n; a++) /* highest first; equal scores keep their order */
    for (size_t b = a; b > 0 && score[order[b]] > score[order[b - 1]]; b--) {
      size_t x = order[b];
      order[b] = order[b - 1];
      order[b - 1] = x;
    }
  json_t *out = json_array();
  size_t shown = st->cohere && st->top_n < n ? st->top_n : n;
  for (size_t k = 0; k < shown; k++) {
    json_t *row = json_pack("{s:I, s:f}", "index", (json_int_t)order[k],
                            st->cohere ? "relevance_score" : "score", (double)score[order[k]]);
    if (st->cohere && st->return_text)
      json_object_set_new(row, "document", json_pack("{s:O}", "text", rerank_text(st, order[k])));
    else if (st->return_text)
      json_object_set(row, "text", rerank_text(st, order[k]));
    json_array_append_new(out, row);
  }
  free(score);
  free(order);
  if (st->cohere)
    out = json_pack("{s:s, s:s, s:o, s:{s:I}}", "id", r->request_id, "model", j->m->name, "results",
                    out, "usage", "total_tokens", (json_int_t)j->prompt_tokens);
  serve_prepare_json(r, 200, out);
}

/* The cross-encoder a rerank body names ("model"), or the first served
 * classifier with one output. NULL: the error is sent, *res says how. */
static served_model *pick_cross_encoder(req_ctx *r, json_t *body, const char *route,
                                        enum MHD_Result *res) {
  served_model *m = NULL;
  json_t *mv = json_object_get(body, "model");
  if (!mv || json_is_null(mv)) {
    for (int i = 0; i < r->srv->n_models && !m; i++)
      if (r->srv->models[i].task == TASK_CLASSIFY && r->srv->models[i].out_dim == 1)
        m = &r->srv->models[i];
    if (!m)
      *res = serve_error(r, 404, "no cross-encoder (a classifier with one output) is served here");
    return m;
  }
  m = serve_pick_model(r, body, TASK_CLASSIFY, res);
  if (m && m->out_dim != 1) {
    *res = serve_error(r, 400,
                       "model '%s' has %zu outputs; %s needs a cross-encoder with one "
                       "score (use /predict with [text, text_pair] inputs)",
                       m->name, m->out_dim, route);
    m = NULL;
  }
  return m;
}

/* Run the pairs (query, texts[i]) through m; st (owned from here) says how
 * finish_rerank answers. */
static enum MHD_Result rerank_run(req_ctx *r, json_t *body, served_model *m, const char *q,
                                  size_t qn, const rj_texts_t *t, bool truncate,
                                  at_trunc_direction dir, rerank_state *st) {
  double dl = rj_deadline_s(r);
  if (dl < 0) {
    rerank_free(st);
    return serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
  }
  /* the pairs (query, text_i): the query is the first sequence, as TEI
   * and sentence-transformers' CrossEncoder order them */
  const char **query = malloc(t->n * sizeof *query);
  size_t *qlen = malloc(t->n * sizeof *qlen);
  if (!query || !qlen) {
    free(query);
    free(qlen);
    rerank_free(st);
    return serve_error(r, 500, "out of memory");
  }
  for (size_t i = 0; i < t->n; i++) query[i] = q, qlen[i] = qn;
  st->body = json_incref(body);
  r->route_state = st;
  r->free_state = rerank_free;
  text_opts o = {.truncate = truncate,
                 .trunc_dir = dir,
                 .deadline_s = dl,
                 .pairs = (const char *const *)t->texts,
                 .pair_lens = t->lens};
  enum MHD_Result res = serve_run_text_job(r, m, query, qlen, t->n, &o, finish_rerank);
  free(query);
  free(qlen);
  return res;
}

static enum MHD_Result rerank_route(req_ctx *r) {
  enum MHD_Result res = MHD_YES;
  if (rj_predecide(r, TASK_CLASSIFY, "texts", &res)) return res; /* refused unparsed */
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  served_model *m = pick_cross_encoder(r, body, "/rerank", &res);
  tei_rerank_req q;
  char err[512];
  int hs;
  rerank_state *st;
  if (!m) goto out;
  if ((hs = tei_rerank_parse(body, r->srv->cfg.max_inputs, r->srv->cfg.auto_truncate, &q, err,
                             sizeof err))) {
    res = serve_error(r, hs, "%s", err);
    goto out;
  }
  if (!(st = calloc(1, sizeof *st))) {
    res = serve_error(r, 500, "out of memory");
  } else {
    st->raw_scores = q.raw_scores;
    st->return_text = q.return_text;
    res = rerank_run(r, body, m, q.query, q.query_len, &q.t, q.truncate, q.trunc_dir, st);
  }
  tei_rerank_free(&q);
out:
  json_decref(body);
  return res;
}

static enum MHD_Result cohere_rerank_route(req_ctx *r) {
  enum MHD_Result res = MHD_YES;
  if (rj_predecide(r, TASK_CLASSIFY, "documents", &res)) return res; /* refused unparsed */
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  served_model *m = pick_cross_encoder(r, body, "/v1/rerank", &res);
  cohere_rerank_req q;
  char err[512];
  int hs;
  rerank_state *st;
  if (!m) goto out;
  if ((hs = cohere_rerank_parse(body, r->srv->cfg.max_inputs, &q, err, sizeof err))) {
    res = serve_error(r, hs, "%s", err);
    goto out;
  }
  if (!(st = calloc(1, sizeof *st))) {
    res = serve_error(r, 500, "out of memory");
  } else {
    st->cohere = true;
    st->return_text = q.return_documents;
    st->top_n = q.top_n;
    res = rerank_run(r, body, m, q.query, q.query_len, &q.t, r->srv->cfg.auto_truncate,
                     AT_TRUNC_AS_TOKENIZER, st);
  }
  cohere_rerank_free(&q);
out:
  json_decref(body);
  return res;
}

/* s[0..n) as a JSON string, each invalid UTF-8 sequence replaced by U+FFFD
 * (what TEI's String::from_utf8_lossy gives for a slice that splits a
 * character). */
static json_t *lossy_string(const char *s, size_t n) {
  json_t *j = json_stringn(s, n);
  if (j) return j;
  char *buf = malloc(3 * n + 1);
  size_t o = 0;
  if (!buf) return json_string("");
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
    if (ok && (j = json_stringn(s + i, len))) { /* jansson judges overlongs and surrogates */
      json_decref(j);
      memcpy(buf + o, s + i, len);
      o += len;
      i += len;
    } else {
      memcpy(buf + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i++;
    }
  }
  j = json_stringn(buf, o);
  free(buf);
  return j ? j : json_string("");
}

/* One text's tokens as TEI's /tokenize writes them: a special token's
 * "text" is its vocabulary string and its "start"/"stop" are null; every
 * other token's "text" is the slice [start, stop) of the input it covers,
 * start and stop in bytes. */
static json_t *token_row(const at_encoding *e, const char *text, size_t len) {
  json_t *row = json_array();
  for (size_t k = 0; k < e->n; k++) {
    json_t *t;
    if (e->special_tokens_mask[k]) {
      t = json_pack("{s:i, s:s%, s:b, s:n, s:n}", "id", (int)e->ids[k], "text",
                    e->tokens[k] ? e->tokens[k] : "", e->tokens[k] ? (size_t)e->token_lens[k] : 0,
                    "special", 1, "start", "stop");
    } else {
      size_t a = e->offsets[k][0], b = e->offsets[k][1];
      if (b > len) b = len;
      if (a > b) a = b;
      t = json_pack("{s:i, s:o, s:b, s:I, s:I}", "id", (int)e->ids[k], "text",
                    lossy_string(text + a, b - a), "special", 0, "start", (json_int_t)a, "stop",
                    (json_int_t)b);
    }
    json_array_append_new(row, t);
  }
  return row;
}

static enum MHD_Result tokenize_route(req_ctx *r) {
  enum MHD_Result res = MHD_YES;
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  at_server *s = r->srv;
  served_model *m = NULL;
  const at_tokenizer *tok = NULL;
  json_t *mv = json_object_get(body, "model");
  tei_tokenize_req q;
  char err[512];
  int hs;
  char *joined = NULL;
  if (mv && !json_is_null(mv)) {
    if (!json_is_string(mv)) {
      res = serve_error(r, 400, "\"model\" must be a string");
      goto out;
    }
    const char *name = json_string_value(mv);
    if ((m = serve_find_model(s, name)))
      tok = m->tok;
    else if (s->lm && !strcmp(name, s->cfg.generator.name))
      tok = s->lm->tok;
    if (!tok) {
      res = serve_error(r, 404, "model '%s' is not served here", name);
      goto out;
    }
  } else if (s->n_models > 0) {
    m = &s->models[0];
    tok = m->tok;
  } else if (s->lm) {
    tok = s->lm->tok; /* a generation-only server: its generator's tokenizer */
  } else {
    res = serve_error(r, 400, "no model with a tokenizer is served here");
    goto out;
  }
  if ((hs = tei_tokenize_parse(body, s->cfg.max_inputs, &q, err, sizeof err))) {
    res = serve_error(r, hs, "%s", err);
    goto out;
  }
  const char *prompt = NULL; /* TEI puts the prompt before the text and reports offsets into both */
  if (q.prompt_name) {
    text_opts o = {0};
    if (!m || m->task != TASK_EMBED) {
      res = serve_error(r, 400, "\"prompt_name\" is for embedders; model '%s' has no prompts",
                        m ? m->name : s->cfg.generator.name);
      tei_tokenize_free(&q);
      goto out;
    }
    if (!serve_pick_prompt(m, q.prompt_name, &o, err, sizeof err)) {
      res = serve_error(r, 400, "%s", err);
      tei_tokenize_free(&q);
      goto out;
    }
    prompt = m->prompt_text[o.prompt];
  }
  at_tok_workspace *ws = serve_workspace(s);
  at_encode_params ep = at_encode_default_params();
  ep.add_special_tokens = q.add_special_tokens;
  ep.max_length = 0;
  ep.pad_to = 0;
  ep.offsets = AT_OFFSETS_BYTES;
  json_t *outer = json_array();
  at_status st = ws ? AT_OK : at_fail(AT_ERR_NOMEM, "out of memory");
  size_t pl = prompt ? strlen(prompt) : 0;
  for (size_t i = 0; i < q.t.n && st == AT_OK; i++) {
    const char *text = q.t.texts[i];
    size_t len = q.t.lens[i];
    if (prompt) {
      char *nj = realloc(joined, pl + len + 1);
      if (!nj) {
        st = at_fail(AT_ERR_NOMEM, "out of memory");
        break;
      }
      joined = nj;
      memcpy(joined, prompt, pl);
      memcpy(joined + pl, text, len);
      text = joined;
      len += pl;
    }
    at_encoding e;
    st = at_tokenizer_encode(tok, ws, text, len, NULL, 0, &ep, &e);
    if (st == AT_OK) json_array_append_new(outer, token_row(&e, text, len));
  }
  tei_tokenize_free(&q);
  if (st != AT_OK) {
    json_decref(outer);
    res =
        serve_error(r, serve_tokenise_status(st), "cannot tokenise the input: %s", at_last_error());
  } else {
    res = serve_reply_json(r, 200, outer);
  }
out:
  free(joined);
  json_decref(body);
  return res;
}

static enum MHD_Result info_route(req_ctx *r) {
  at_server *s = r->srv;
  json_t *models = json_array();
  for (int i = 0; i < s->n_models; i++) {
    served_model *m = &s->models[i];
    json_t *vs = json_array();
    for (int v = 0; v < m->n_variants; v++)
      json_array_append_new(vs, json_pack("{s:s, s:f}", "name", m->variants[v].name, "accuracy",
                                          m->variants[v].accuracy));
    json_array_append_new(
        models,
        json_pack("{s:s, s:s, s:o, s:I, s:s}", "name", m->name, "task",
                  m->task == TASK_EMBED ? "embed" : "classify", "variants", vs, "max_input_length",
                  (json_int_t)m->max_tokens, "tokenizer", at_tokenizer_describe(m->tok)));
  }
  json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:s, s:f}", "model_id",
                        s->models[0].name, "version", AT_VERSION_STRING, "router", "anytime",
                        "models", models, "max_client_batch_size", (json_int_t)s->cfg.max_inputs,
                        "max_batch_requests", (json_int_t)s->cfg.max_batch_size, "max_input_length",
                        (json_int_t)s->models[0].max_tokens, "policy", s->cfg.policy, "deadline_ms",
                        s->cfg.deadline_ms);
  return serve_reply_json(r, 200, j);
}

/* Handlers for the route table (routes.c); the method is already checked. */
enum MHD_Result serve_route_health(req_ctx *r, served_model *m) {
  (void)m;
  return serve_reply(r, 200, NULL, NULL, 0);
}
enum MHD_Result serve_route_info(req_ctx *r, served_model *m) {
  (void)m;
  return info_route(r);
}
enum MHD_Result serve_route_embed(req_ctx *r, served_model *m) {
  (void)m;
  return text_route(r, TASK_EMBED);
}
enum MHD_Result serve_route_predict(req_ctx *r, served_model *m) {
  (void)m;
  return text_route(r, TASK_CLASSIFY);
}
enum MHD_Result serve_route_rerank(req_ctx *r, served_model *m) {
  (void)m;
  return rerank_route(r);
}
enum MHD_Result serve_route_tokenize(req_ctx *r, served_model *m) {
  (void)m;
  return tokenize_route(r);
}
enum MHD_Result serve_route_v1_rerank(req_ctx *r, served_model *m) {
  (void)m;
  return cohere_rerank_route(r);
}
