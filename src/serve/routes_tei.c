/* src/serve/routes_tei.c — the Text Embeddings Inference-style routes:
 * POST /embed (pooling, normalize, truncate), POST /rerank (a cross-encoder
 * over (query, text) pairs), POST /predict (texts or [text, text_pair]; labels
 * from config.json's id2label, softmax scores (a sigmoid per label for a
 * multi-label model) or raw_scores), POST
 * /tokenize, GET /health, GET /info. Shapes: docs/api.md. An optional
 * "model" member picks a model by name; otherwise the first model with the
 * route's task answers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "serve/request_json.h"

typedef struct tei_state {
  bool single, normalize, raw_scores;
} tei_state;

static void finish_embed(req_ctx *r) {
  job *j = r->job;
  tei_state *st = r->route_state;
  json_t *outer = json_array();
  for (size_t i = 0; i < j->n; i++) {
    float *v = j->items[i].out;
    if (st->normalize) at_l2_normalize(v, j->m->out_dim);
    json_t *row = json_array();
    for (size_t k = 0; k < j->m->out_dim; k++) json_array_append_new(row, json_real(v[k]));
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
    if (st->raw_scores) memcpy(p, lg, n * sizeof(float));
    else at_class_scores(lg, n, m->multi_label, p);
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
      json_array_append_new(row, json_pack("{s:f, s:s}", "score", (double)p[order[k]], "label",
                                           m->labels[order[k]]));
    json_array_append_new(outer, row);
  }
  if (st->single) {
    json_t *only = json_incref(json_array_get(outer, 0));
    json_decref(outer);
    outer = only;
  }
  serve_prepare_json(r, 200, outer);
}

static enum MHD_Result text_route(req_ctx *r, serve_task task) {
  enum MHD_Result res = MHD_YES;
  if (rj_predecide(r, task, "inputs", &res)) return res; /* refused unparsed */
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  served_model *m = serve_pick_model(r, body, task, &res);
  tei_req q; /* the body's texts and flags (req_parse.c: pure, fuzzed) */
  tei_state *st = calloc(1, sizeof *st);
  double dl = rj_deadline_s(r);
  char err[256];
  int hs;
  if (!m || !st) goto out;
  if ((hs = tei_req_parse(body, r->srv->cfg.max_inputs, r->srv->cfg.auto_truncate, &q, err,
                          sizeof err)) != 0) {
    res = serve_error(r, hs, "%s", err);
    goto out;
  }
  if (dl < 0) {
    res = serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
    tei_req_free(&q);
    goto out;
  }
  if (q.t.pairs && task == TASK_EMBED) {
    res = serve_error(r, 400, "text pairs are for classifiers (cross-encoders, POST /predict or "
                      "/rerank); /embed takes strings");
    tei_req_free(&q);
    goto out;
  }
  text_opts o = {.truncate = q.truncate, .deadline_s = dl,
                 .pairs = (const char *const *)q.t.pairs, .pair_lens = q.t.pair_lens};
  if (task == TASK_EMBED && !serve_pick_prompt(m, q.prompt_name, &o, err, sizeof err)) {
    res = serve_error(r, 400, "%s", err);
    tei_req_free(&q);
    goto out;
  }
  if (task != TASK_EMBED && q.prompt_name) {
    res = serve_error(r, 400, "\"prompt_name\" is for embedders (POST /embed)");
    tei_req_free(&q);
    goto out;
  }
  st->single = q.t.single;
  st->normalize = q.normalize;
  st->raw_scores = q.raw_scores;
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
 * "truncate"} -> [{"index", "score", "text"?}], highest score first. The
 * model is a cross-encoder: a classifier with one output, run on the pairs
 * (query, text); the score is the sigmoid of its logit, or the logit with
 * raw_scores. */
typedef struct rerank_state {
  bool raw_scores, return_text;
  json_t *body; /* holds the texts for return_text */
} rerank_state;

static void rerank_free(void *p) {
  rerank_state *st = p;
  if (st) json_decref(st->body);
  free(st);
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
    if (st->raw_scores) score[i] = lg[0];
    else at_class_scores(lg, 1, true, &score[i]); /* one logit: its sigmoid */
    order[i] = i;
  }
  for (size_t a = 1; a < n; a++) /* highest first; equal scores keep their order */
    for (size_t b = a; b > 0 && score[order[b]] > score[order[b - 1]]; b--) {
      size_t x = order[b];
      order[b] = order[b - 1];
      order[b - 1] = x;
    }
  json_t *texts = json_object_get(st->body, "texts"), *out = json_array();
  for (size_t k = 0; k < n; k++) {
    json_t *row = json_pack("{s:I, s:f}", "index", (json_int_t)order[k], "score",
                            (double)score[order[k]]);
    if (st->return_text)
      json_object_set(row, "text", json_array_get(texts, order[k]));
    json_array_append_new(out, row);
  }
  free(score);
  free(order);
  serve_prepare_json(r, 200, out);
}

static enum MHD_Result rerank_route(req_ctx *r) {
  enum MHD_Result res = MHD_YES;
  if (rj_predecide(r, TASK_CLASSIFY, "texts", &res)) return res; /* refused unparsed */
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  served_model *m = NULL;
  json_t *mv = json_object_get(body, "model");
  if (!mv || json_is_null(mv)) { /* no name: the first cross-encoder (one output) */
    for (int i = 0; i < r->srv->n_models && !m; i++)
      if (r->srv->models[i].task == TASK_CLASSIFY && r->srv->models[i].out_dim == 1)
        m = &r->srv->models[i];
    if (!m) res = serve_error(r, 404, "no cross-encoder (a classifier with one output) is served here");
  } else {
    m = serve_pick_model(r, body, TASK_CLASSIFY, &res);
  }
  rj_texts_t t = {0};
  rerank_state *st = calloc(1, sizeof *st);
  const char **query = NULL;
  size_t *qlen = NULL;
  bool truncate = r->srv->cfg.auto_truncate;
  double dl = rj_deadline_s(r);
  json_t *q = json_object_get(body, "query");
  if (!m || !st) {
    if (!st) res = serve_error(r, 500, "out of memory");
    goto out;
  }
  if (m->out_dim != 1) {
    res = serve_error(r, 400, "model '%s' has %zu outputs; /rerank needs a cross-encoder with "
                      "one score (use /predict with [text, text_pair] inputs)", m->name, m->out_dim);
    goto out;
  }
  if (!json_is_string(q) || json_string_length(q) == 0) {
    res = serve_error(r, 400, "\"query\" must be a non-empty string");
    goto out;
  }
  if (json_is_string(json_object_get(body, "texts"))) {
    res = serve_error(r, 400, "\"texts\" must be a list of strings");
    goto out;
  }
  if (rj_texts(r, body, "texts", &t, &res) != 0) goto out;
  if (t.pairs) {
    res = serve_error(r, 400, "\"texts\" must be a list of strings");
    goto out;
  }
  if (rj_bool(r, body, "truncate", truncate, &truncate, &res) ||
      rj_bool(r, body, "raw_scores", false, &st->raw_scores, &res) ||
      rj_bool(r, body, "return_text", false, &st->return_text, &res))
    goto out;
  if (dl < 0) {
    res = serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
    goto out;
  }
  /* the pairs (query, text_i): the query is the first sequence, as TEI
   * and sentence-transformers' CrossEncoder order them */
  query = malloc(t.n * sizeof *query);
  qlen = malloc(t.n * sizeof *qlen);
  if (!query || !qlen) {
    res = serve_error(r, 500, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < t.n; i++) query[i] = json_string_value(q), qlen[i] = json_string_length(q);
  st->body = json_incref(body);
  r->route_state = st;
  r->free_state = rerank_free;
  st = NULL;
  text_opts o = {.truncate = truncate, .deadline_s = dl, .pairs = (const char *const *)t.texts,
                 .pair_lens = t.lens};
  res = serve_run_text_job(r, m, query, qlen, t.n, &o, finish_rerank);
out:
  free(query);
  free(qlen);
  rj_texts_free(&t);
  rerank_free(st);
  json_decref(body);
  return res;
}

static enum MHD_Result tokenize_route(req_ctx *r) {
  enum MHD_Result res = MHD_YES;
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  at_server *s = r->srv;
  served_model *m = NULL;
  json_t *mv = json_object_get(body, "model");
  if (mv && json_is_string(mv)) m = serve_find_model(s, json_string_value(mv));
  else if (!mv) m = &s->models[0];
  rj_texts_t t;
  bool special = true;
  if (!m) {
    res = serve_error(r, 404, "unknown model");
  } else if (rj_texts(r, body, "inputs", &t, &res) == 0) {
    if (rj_bool(r, body, "add_special_tokens", true, &special, &res) == 0) {
      at_tok_workspace *ws = serve_workspace(s);
      at_encode_params ep = at_encode_default_params();
      ep.add_special_tokens = special;
      ep.max_length = 0;
      ep.pad_to = 0;
      ep.offsets = AT_OFFSETS_CHARS;
      json_t *outer = json_array();
      at_status st = AT_OK;
      for (size_t i = 0; i < t.n && st == AT_OK; i++) {
        at_encoding e;
        st = at_tokenizer_encode(m->tok, ws, t.texts[i], t.lens[i], t.pairs ? t.pairs[i] : NULL,
                                 t.pairs && t.pairs[i] ? t.pair_lens[i] : 0, &ep, &e);
        if (st != AT_OK) break;
        json_t *row = json_array();
        for (size_t k = 0; k < e.n; k++)
          json_array_append_new(row, json_pack("{s:i, s:s%, s:b, s:i, s:i}", "id", (int)e.ids[k],
                                               "text", e.tokens[k] ? e.tokens[k] : "",
                                               e.tokens[k] ? (size_t)e.token_lens[k] : (size_t)0,
                                               "special", e.special_tokens_mask[k] != 0, "start",
                                               (int)e.offsets[k][0], "stop",
                                               (int)e.offsets[k][1]));
        json_array_append_new(outer, row);
      }
      if (st != AT_OK) {
        json_decref(outer);
        res = serve_error(r, serve_tokenise_status(st), "cannot tokenise the input: %s",
                          at_last_error());
      } else {
        res = serve_reply_json(r, 200, outer);
      }
    }
    rj_texts_free(&t);
  }
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
    json_array_append_new(models, json_pack("{s:s, s:s, s:o, s:I, s:s}", "name", m->name, "task",
                                            m->task == TASK_EMBED ? "embed" : "classify",
                                            "variants", vs, "max_input_length",
                                            (json_int_t)m->max_tokens, "tokenizer",
                                            at_tokenizer_describe(m->tok)));
  }
  json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:s, s:f}", "model_id",
                        s->models[0].name, "version", AT_VERSION_STRING, "router", "anytime",
                        "models", models, "max_client_batch_size", (json_int_t)s->cfg.max_inputs,
                        "max_batch_requests", (json_int_t)s->cfg.max_batch_size,
                        "max_input_length", (json_int_t)s->models[0].max_tokens, "policy",
                        s->cfg.policy, "deadline_ms", s->cfg.deadline_ms);
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
