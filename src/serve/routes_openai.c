/* src/serve/routes_openai.c — OpenAI-compatible routes: POST /v1/embeddings
 * (a string, a list of strings, or token arrays — token_input.h; encoding_format
 * "float" or "base64", optional "dimensions", usage token counts) and GET
 * /v1/models. Embeddings are pooled as the model's export says and
 * L2-normalised, as OpenAI's are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "serve/b64.h"
#include "serve/client_id.h"
#include "serve/request_json.h"
#include "serve/token_input.h"

typedef struct oai_state {
  bool base64;
  size_t dims; /* 0 = full */
} oai_state;

static void finish_embeddings(req_ctx *r) {
  job *j = r->job;
  oai_state *st = r->route_state;
  size_t dim = st->dims ? st->dims : j->m->out_dim;
  json_t *data = json_array();
  for (size_t i = 0; i < j->n; i++) {
    float *v = j->items[i].out;
    at_l2_normalize(v, dim); /* over the kept dimensions, as OpenAI does */
    json_t *emb;
    if (st->base64) {
      char *s = serve_b64_encode((const unsigned char *)v, dim * sizeof(float)); /* little-endian f32 */
      emb = json_string(s ? s : "");
      free(s);
    } else {
      emb = json_array();
      for (size_t k = 0; k < dim; k++) json_array_append_new(emb, json_real(v[k]));
    }
    json_array_append_new(data, json_pack("{s:s, s:o, s:I}", "object", "embedding", "embedding",
                                          emb, "index", (json_int_t)i));
  }
  json_t *out = json_pack("{s:s, s:o, s:s, s:{s:I, s:I}}", "object", "list", "data", data,
                          "model", j->m->name, "usage", "prompt_tokens",
                          (json_int_t)j->prompt_tokens, "total_tokens",
                          (json_int_t)j->prompt_tokens);
  serve_prepare_json(r, 200, out);
}

/* Token-array input: each input's ids go to the graph as given (cut to the
 * model's max_tokens with "truncate"), no prompt put before them. */
static enum MHD_Result run_ids(req_ctx *r, served_model *m, const tok_input *ti, bool truncate,
                               double dl) {
  enum MHD_Result res;
  size_t total = 0;
  for (size_t i = 0; i < ti->n; i++) {
    if (ti->lens[i] > m->max_tokens && !truncate)
      return serve_error(serve_error_hint(r, "context_length_exceeded", "input"), 413,
                         "input %zu has %zu tokens; the limit is %zu (send \"truncate\": true "
                         "to cut it)", i, ti->lens[i], m->max_tokens);
    total += ti->lens[i] < m->max_tokens ? ti->lens[i] : m->max_tokens;
  }
  if (!serve_admit_parsed(r, m, dl, ti->n, (double)total / (double)ti->n, &res)) return res;
  job *j = serve_job_alloc(r, m, ti->n, total * sizeof(int64_t) + ti->n * m->out_dim * sizeof(float));
  if (!j) {
    serve_release(r, ti->n);
    return serve_error(r, 500, "out of memory");
  }
  int64_t *idp = (int64_t *)(j->items + ti->n);
  float *outp = (float *)(idp + total);
  const int64_t *from = ti->ids;
  for (size_t i = 0; i < ti->n; i++) {
    job_item *it = &j->items[i];
    it->len = ti->lens[i] < m->max_tokens ? ti->lens[i] : m->max_tokens;
    memcpy(idp, from, it->len * sizeof *idp);
    it->ids = idp;
    it->out = outp + i * m->out_dim;
    idp += it->len;
    from += ti->lens[i];
  }
  j->prompt_tokens = total;
  return serve_submit_job(r, j, finish_embeddings);
}

static enum MHD_Result embeddings(req_ctx *r) {
  enum MHD_Result res = MHD_YES;
  if (rj_predecide(r, TASK_EMBED, "input", &res)) return res; /* refused unparsed */
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  oai_state *st = calloc(1, sizeof *st);
  rj_texts_t t = {0};
  served_model *m = NULL;
  json_t *mv = json_object_get(body, "model");
  if (!st) {
    res = serve_error(r, 500, "out of memory");
    goto out;
  }
  if (mv && !json_is_string(mv)) {
    res = serve_error(r, 400, "\"model\" must be a string");
    goto out;
  }
  if (!(m = serve_pick_model(r, body, TASK_EMBED, &res))) goto out;
  oai_opts oo; /* encoding_format, dimensions (req_parse.c: pure, fuzzed) */
  char err[256];
  int hs = oai_opts_parse(body, m->out_dim, &oo, err, sizeof err);
  if (hs) {
    res = serve_error(r, hs, "%s", err);
    goto out;
  }
  st->base64 = oo.base64;
  st->dims = oo.dims;
  double dl = rj_deadline_s(r);
  if (dl < 0) {
    res = serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
    goto out;
  }
  if (!serve_priority_json(json_object_get(body, "priority"), &r->body_priority,
                           &r->has_body_priority)) {
    res = serve_error(r, 400, "\"priority\" must be \"high\", \"normal\" or \"low\" (numbers "
                      "are not taken: vLLM's lower numbers go first)");
    goto out;
  }
  bool truncate = r->srv->cfg.auto_truncate; /* not OpenAI's; TEI's, for the same clients */
  if (rj_bool(r, body, "truncate", truncate, &truncate, &res)) goto out;
  tok_input ti;
  hs = tok_input_parse(json_object_get(body, "input"), m->id_limit, r->srv->cfg.max_inputs, &ti,
                       err, sizeof err);
  if (hs > 0) {
    res = serve_error(r, hs, "%s", err);
    goto out;
  }
  if (hs == 0) {
    r->route_state = st;
    r->free_state = free;
    st = NULL;
    res = run_ids(r, m, &ti, truncate, dl);
    tok_input_free(&ti);
    goto out;
  }
  if (rj_texts(r, body, "input", &t, &res) != 0) goto out;
  if (t.pairs) {
    res = serve_error(r, 400, "\"input\" must be a string, a list of strings, a list of token "
                      "ids or a list of such lists");
    goto out;
  }
  r->route_state = st;
  r->free_state = free;
  st = NULL;
  text_opts o = {.truncate = truncate, .deadline_s = dl};
  serve_pick_prompt(m, NULL, &o, NULL, 0); /* the model's default prompt, if it names one */
  res = serve_run_text_job(r, m, t.texts, t.lens, t.n, &o, finish_embeddings);
out:
  rj_texts_free(&t);
  free(st);
  json_decref(body);
  return res;
}

static enum MHD_Result list_models(req_ctx *r) {
  at_server *s = r->srv;
  json_t *data = json_array();
  json_int_t created = (json_int_t)time(NULL) - (json_int_t)((at_now_ns() - s->started_ns) / 1000000000ull);
  for (int i = 0; i < s->n_models; i++)
    json_array_append_new(data, json_pack("{s:s, s:s, s:I, s:s}", "id", s->models[i].name,
                                          "object", "model", "created", created, "owned_by",
                                          "anytime"));
  if (s->n_lanes > 0)
    json_array_append_new(data, json_pack("{s:s, s:s, s:I, s:s}", "id", s->cfg.generator.name,
                                          "object", "model", "created", created, "owned_by",
                                          "anytime"));
  return serve_reply_json(r, 200, json_pack("{s:s, s:o}", "object", "list", "data", data));
}

/* Handlers for the route table (routes.c). */
enum MHD_Result serve_route_embeddings(req_ctx *r, served_model *m) {
  (void)m;
  return embeddings(r);
}
enum MHD_Result serve_route_models(req_ctx *r, served_model *m) {
  (void)m;
  return list_models(r);
}
