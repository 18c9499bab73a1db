/* src/serve/routes_tei.c — the Text Embeddings Inference-style routes:
 * POST /embed (mean pooling, normalize, truncate), POST /predict (labels
 * from config.json's id2label, softmax scores or raw_scores), POST
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

/* Pick the model: "model" member if present, else the first with `task`. */
served_model *serve_pick_model(req_ctx *r, json_t *body, serve_task task, enum MHD_Result *res) {
  at_server *s = r->srv;
  json_t *mv = body ? json_object_get(body, "model") : NULL;
  if (mv && !json_is_null(mv)) {
    if (!json_is_string(mv)) {
      *res = serve_error(r, 400, "\"model\" must be a string");
      return NULL;
    }
    served_model *m = serve_find_model(s, json_string_value(mv));
    if (!m) {
      *res = serve_error(r, 404, "model '%s' is not served here (GET /info lists the models)",
                         json_string_value(mv));
      return NULL;
    }
    if (m->task != task) {
      *res = serve_error(r, 400, "model '%s' is %s model; this route needs %s model", m->name,
                         m->task == TASK_EMBED ? "an embedding" : "a classification",
                         task == TASK_EMBED ? "an embedding" : "a classification");
      return NULL;
    }
    return m;
  }
  for (int i = 0; i < s->n_models; i++)
    if (s->models[i].task == task) return &s->models[i];
  *res = serve_error(r, 404, "no %s model is served here",
                     task == TASK_EMBED ? "embedding" : "classification");
  return NULL;
}

void serve_l2_normalize(float *v, size_t n) {
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (double)v[i] * v[i];
  if (ss > 0) {
    float inv = (float)(1.0 / sqrt(ss));
    for (size_t i = 0; i < n; i++) v[i] *= inv;
  }
}

void serve_softmax(const float *logits, float *p, size_t n) {
  float mx = logits[0];
  for (size_t i = 1; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += exp((double)(logits[i] - mx));
  for (size_t i = 0; i < n; i++) p[i] = (float)(exp((double)(logits[i] - mx)) / sum);
}

static void finish_embed(req_ctx *r) {
  job *j = r->job;
  tei_state *st = r->route_state;
  json_t *outer = json_array();
  for (size_t i = 0; i < j->n; i++) {
    float *v = j->items[i].out;
    if (st->normalize) serve_l2_normalize(v, j->m->out_dim);
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
    else serve_softmax(lg, p, n);
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
  rj_texts_t t;
  tei_state *st = calloc(1, sizeof *st);
  bool truncate = false;
  double dl = rj_deadline_s(r);
  if (!m || !st || rj_texts(r, body, "inputs", &t, &res) != 0) goto out;
  if (rj_bool(r, body, "truncate", false, &truncate, &res) ||
      rj_bool(r, body, "normalize", true, &st->normalize, &res) ||
      rj_bool(r, body, "raw_scores", false, &st->raw_scores, &res)) {
    rj_texts_free(&t);
    goto out;
  }
  if (dl < 0) {
    res = serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
    rj_texts_free(&t);
    goto out;
  }
  st->single = t.single;
  r->route_state = st;
  r->free_state = free;
  st = NULL;
  text_opts o = {.truncate = truncate, .deadline_s = dl};
  res = serve_run_text_job(r, m, t.texts, t.lens, t.n, &o,
                           task == TASK_EMBED ? finish_embed : finish_predict);
  rj_texts_free(&t);
out:
  free(st);
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
        st = at_tokenizer_encode(m->tok, ws, t.texts[i], t.lens[i], NULL, 0, &ep, &e);
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
        res = serve_error(r, 400, "cannot tokenise the input: %s", at_last_error());
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

enum MHD_Result route_tei(req_ctx *r, const char *url, const char *method) {
  snprintf(r->route, sizeof r->route, "%s", url);
  bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
  if (!strcmp(url, "/health")) return get ? serve_reply(r, 200, NULL, NULL, 0)
                                          : serve_error(r, 405, "use GET for /health");
  if (!strcmp(url, "/info")) return get ? info_route(r) : serve_error(r, 405, "use GET for /info");
  if (!strcmp(url, "/embed"))
    return post ? text_route(r, TASK_EMBED) : serve_error(r, 405, "use POST for /embed");
  if (!strcmp(url, "/predict"))
    return post ? text_route(r, TASK_CLASSIFY) : serve_error(r, 405, "use POST for /predict");
  if (!strcmp(url, "/tokenize"))
    return post ? tokenize_route(r) : serve_error(r, 405, "use POST for /tokenize");
  snprintf(r->route, sizeof r->route, "other");
  return serve_error(r, 404, "no route %s %s (see docs/api.md)", method, url);
}
