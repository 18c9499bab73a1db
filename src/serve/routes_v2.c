/* src/serve/routes_v2.c — KServe V2 / Open Inference Protocol routes:
 * health, server and model metadata, readiness, and POST
 * /v2/models/{m}/infer. An infer request either carries one BYTES input of
 * texts (a text job: admitted, tokenised and batched like every text
 * request; outputs "logits" and "probabilities" for classifiers,
 * "embedding" for embedders) or the model's own tensors (INT64/INT32/FP32,
 * flat or nested "data"). "outputs" selects what comes back.
 *
 * Tensors go through the same admission as texts (n_texts = the batch
 * dimension) and, row by row, through the same batcher: each row of
 * input_ids [B, S] becomes one batcher item whose length is its attention
 * mask's run of leading ones, so V2 rows share batches with text requests.
 * Each output row is copied back into a [B, ...] tensor; along an output
 * axis that is the input's sequence axis (same symbolic dimension name)
 * positions past a row's real length are 0. A request the batcher cannot
 * carry exactly — a missing input, a mask that is not ones-then-zeros,
 * ids or type ids outside the model's tables (they would fail every row of
 * a shared batch), an output with another dynamic axis, ranks other than
 * [B, S] — runs alone as one engine request, as before, under the same
 * admission. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "serve/client_id.h"
#include "serve/request_json.h"
#include "serve/v2_req.h"

/* One selected output of a batched tensor request: where rows go. */
typedef struct v2_out {
  int index;                 /* position in the model's outputs */
  int seq_axis;              /* output axis that is the input's sequence axis; -1 none */
  size_t row_elems;          /* elements of one row at the client's sequence length */
} v2_out;

typedef struct v2_state {
  char *id;                  /* the request's "id", whole (malloc'ed) */
  bool has_id;
  bool want[3];              /* text path: logits, probabilities, embedding */
  /* tensor path */
  size_t n_in;
  at_tensor in[AT_MAX_INPUTS];
  void *bufs[AT_MAX_INPUTS];
  size_t n_out_names;
  const char *out_names[AT_MAX_OUTPUTS];
  char out_name_store[AT_MAX_OUTPUTS][128];
  size_t n_results;
  at_tensor results[AT_MAX_OUTPUTS];  /* data malloc'ed */
  v2_out outs[AT_MAX_OUTPUTS];        /* batched path: results[k] <- outs[k] */
  int64_t seq_len;                    /* batched path: the client's S */
  at_status run_status;
  char run_error[512];
  served_model *m;
  int slot;
  size_t rows;                        /* B: texts admitted */
  uint64_t queue_ns, compute_ns;
  /* which outputs go back as binary (v2_req's choice, kept past the body) */
  bool bin_default;
  signed char out_bin[AT_MAX_OUTPUTS]; /* per out_names[k]: 1, 0, -1 not said */
} v2_state;

static void v2_free(void *p) {
  v2_state *st = p;
  if (!st) return;
  for (size_t i = 0; i < st->n_in; i++) free(st->bufs[i]);
  for (size_t i = 0; i < st->n_results; i++) free(st->results[i].data);
  free(st->id);
  free(st);
}

static bool want_binary(const v2_state *st, const char *name) {
  for (size_t k = 0; k < st->n_out_names; k++)
    if (!strcmp(st->out_names[k], name) && st->out_bin[k] >= 0) return st->out_bin[k] == 1;
  return st->bin_default;
}

/* An answer being built: its JSON outputs and the binary data that follows
 * the JSON header (outputs asked for as binary, in the order listed). */
typedef struct v2_answer {
  json_t *outs;
  unsigned char *bin;
  size_t len, cap;
  bool any_bin, oom;
} v2_answer;

static void put_le(unsigned char *p, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Output `name` of n elements (FP32, INT64 or INT32) into the answer. */
static void answer_add(v2_answer *a, const v2_state *st, const char *name, at_dtype dt,
                       const int64_t *shape, size_t ndim, const void *data, size_t n) {
  json_t *sh = json_array();
  for (size_t i = 0; i < ndim; i++) json_array_append_new(sh, json_integer(shape[i]));
  json_t *o = json_pack("{s:s, s:s, s:o}", "name", name, "datatype", at_dtype_name(dt), "shape", sh);
  if (want_binary(st, name)) {
    size_t esz = at_dtype_size(dt), bytes = n * esz;
    if (a->len + bytes > a->cap) {
      size_t cap = (a->len + bytes) * 2;
      unsigned char *nb = realloc(a->bin, cap ? cap : 1);
      if (!nb) {
        a->oom = true;
        json_decref(o);
        return;
      }
      a->bin = nb, a->cap = cap;
    }
    unsigned char *p = a->bin + a->len;
    for (size_t i = 0; i < n && data; i++) {
      uint64_t v = 0;
      if (dt == AT_DTYPE_FLOAT32) {
        uint32_t bits;
        memcpy(&bits, (const float *)data + i, sizeof bits);
        v = bits;
      } else if (dt == AT_DTYPE_INT64) {
        v = (uint64_t)((const int64_t *)data)[i];
      } else {
        v = (uint32_t)((const int32_t *)data)[i];
      }
      put_le(p + i * esz, v, esz);
    }
    a->len += bytes;
    a->any_bin = true;
    json_object_set_new(o, "parameters", json_pack("{s:I}", "binary_data_size", (json_int_t)bytes));
  } else {
    json_t *d = json_array();
    for (size_t k = 0; k < n && data; k++) {
      switch (dt) {
        case AT_DTYPE_FLOAT32: json_array_append_new(d, json_real(((const float *)data)[k])); break;
        case AT_DTYPE_INT64: json_array_append_new(d, json_integer(((const int64_t *)data)[k])); break;
        case AT_DTYPE_INT32: json_array_append_new(d, json_integer(((const int32_t *)data)[k])); break;
        default: break;
      }
    }
    json_object_set_new(o, "data", d);
  }
  json_array_append_new(a->outs, o);
}

/* The envelope around the outputs, prepared as the request's answer: JSON,
 * or with binary outputs the JSON header followed by their bytes. Frees
 * the answer's parts. */
static void answer_prepare(req_ctx *r, v2_state *st, const char *model, v2_answer *a) {
  json_t *o = json_pack("{s:s, s:s, s:o}", "model_name", model, "model_version", "1", "outputs",
                        a->outs);
  if (st->has_id) json_object_set_new(o, "id", json_string(st->id));
  if (a->oom) {
    json_decref(o);
    free(a->bin);
    serve_prepare_error(r, 500, "out of memory");
    return;
  }
  if (!a->any_bin) {
    free(a->bin);
    serve_prepare_json(r, 200, o);
    return;
  }
  char *hdr = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
  json_decref(o);
  size_t hl = hdr ? strlen(hdr) : 0;
  char *body = hdr ? malloc(hl + a->len + 1) : NULL;
  if (!body) {
    free(hdr);
    free(a->bin);
    serve_prepare_error(r, 500, "out of memory");
    return;
  }
  memcpy(body, hdr, hl);
  if (a->len) memcpy(body + hl, a->bin, a->len);
  free(hdr);
  free(a->bin);
  free(r->resp);
  r->status = 200;
  r->resp = body;
  r->resp_len = hl + a->len;
  r->content_type = "application/octet-stream";
  snprintf(r->infer_hdr_len, sizeof r->infer_hdr_len, "%zu", hl);
}

/* ----------------------------------------------------------- text path */

static void finish_text(req_ctx *r) {
  job *j = r->job;
  v2_state *st = r->route_state;
  served_model *m = j->m;
  size_t n = j->n, d = m->out_dim;
  float *buf = malloc(n * d * sizeof(float));
  v2_answer a = {.outs = json_array()};
  int64_t shape[2] = {(int64_t)n, (int64_t)d};
  if (!buf) {
    serve_prepare_error(r, 500, "out of memory");
    json_decref(a.outs);
    return;
  }
  for (size_t i = 0; i < n; i++) memcpy(buf + i * d, j->items[i].out, d * sizeof(float));
  if (m->task == TASK_CLASSIFY) {
    if (st->want[0]) answer_add(&a, st, "logits", AT_DTYPE_FLOAT32, shape, 2, buf, n * d);
    if (st->want[1]) {
      for (size_t i = 0; i < n; i++) at_class_scores(j->items[i].out, d, m->multi_label, buf + i * d);
      answer_add(&a, st, "probabilities", AT_DTYPE_FLOAT32, shape, 2, buf, n * d);
    }
  } else if (st->want[2]) {
    for (size_t i = 0; i < n; i++) at_l2_normalize(buf + i * d, d);
    answer_add(&a, st, "embedding", AT_DTYPE_FLOAT32, shape, 2, buf, n * d);
  }
  free(buf);
  answer_prepare(r, st, m->name, &a);
}

/* ---------------------------------------------------------- tensor path */

static void on_tensor_done(void *user, at_status status, const at_outputs *outs,
                           const at_timing *t, const char *err) {
  req_ctx *r = user;
  v2_state *st = r->route_state;
  st->run_status = status;
  st->queue_ns = t->started_ns - t->submitted_ns;
  st->compute_ns = t->finished_ns - t->started_ns;
  if (status != AT_OK) {
    if (err != st->run_error) snprintf(st->run_error, sizeof st->run_error, "%s", err ? err : "");
  } else {
    size_t n = at_outputs_count(outs);
    for (size_t i = 0; i < n && i < AT_MAX_OUTPUTS; i++) {
      at_tensor v;
      at_outputs_get(outs, i, &v);
      size_t bytes = at_tensor_numel(&v, NULL) * at_dtype_size(v.dtype);
      st->results[i] = v;
      st->results[i].data = malloc(bytes ? bytes : 1);
      if (st->results[i].data) memcpy(st->results[i].data, v.data, bytes);
      st->n_results = i + 1;
    }
  }
  /* the request's B rows leave the planner together, as one Run of B */
  int b = st->rows > 0 ? (int)st->rows : 1;
  serve_planner_release(r->srv, st->m, st->slot, b, r->adm.d.weight, b,
                        status == AT_OK ? (double)st->compute_ns / 1e9 : 0, t->peers,
                        at_now_ns());
  conn_countdown_done(&r->wait, 1);
}

static void finish_tensor(req_ctx *r) {
  v2_state *st = r->route_state;
  if (st->run_status != AT_OK) {
    serve_prepare_error(r, st->run_status == AT_ERR_SHAPE ? 400 : 500, "%s", st->run_error);
    return;
  }
  v2_answer a = {.outs = json_array()};
  for (size_t i = 0; i < st->n_results; i++) {
    at_tensor *v = &st->results[i];
    bool known = v->dtype == AT_DTYPE_FLOAT32 || v->dtype == AT_DTYPE_INT64 ||
                 v->dtype == AT_DTYPE_INT32;
    answer_add(&a, st, v->name, v->dtype, v->shape, v->ndim, known ? v->data : NULL,
               known ? at_tensor_numel(v, NULL) : 0);
  }
  answer_prepare(r, st, st->m->name, &a);
}

/* ------------------------------------------------ tensor rows as items */

static const at_tensor *find_input(const v2_state *st, const char *name) {
  for (size_t k = 0; k < st->n_in; k++)
    if (!strcmp(st->in[k].name, name)) return &st->in[k];
  return NULL;
}

/* Token ids the model's tables do not hold are the client's error: 400
 * naming the first, never a failed Run (500) — and never a Run at all, as
 * ONNX Gather reads a negative index from the end of the table and would
 * answer 200 for id -1. Every element is checked, padding included (a
 * request that runs alone feeds them all to the graph). Limits:
 * config.json's vocab_size (else the tokenizer's size) and, when
 * config.json states it, type_vocab_size. */
static bool ids_in_range(req_ctx *r, const v2_state *st, enum MHD_Result *res) {
  const served_model *m = st->m;
  for (size_t k = 0; k < st->n_in; k++) {
    const at_tensor *t = &st->in[k];
    bool is_ids = !strcmp(t->name, "input_ids");
    int64_t lim = is_ids                               ? m->vocab_size
                  : !strcmp(t->name, "token_type_ids") ? m->type_vocab_size
                                                       : 0;
    if (t->dtype != AT_DTYPE_INT64 || lim <= 0) continue;
    size_t n = 1;
    for (size_t a = 0; a < t->ndim; a++) n *= (size_t)t->shape[a];
    const int64_t *v = t->data;
    for (size_t i = 0; i < n; i++)
      if (v[i] < 0 || v[i] >= lim) {
        *res = serve_error(
            r, 400, "input '%s': value %lld at element %zu is outside the model's %s (0..%lld)",
            t->name, (long long)v[i], i, is_ids ? "vocabulary" : "token types",
            (long long)(lim - 1));
        return false;
      }
  }
  return true;
}

/* Can the batcher carry this request exactly? If so, lay out where its
 * output rows go (st->outs, st->results with zeroed buffers). */
static bool batchable(req_ctx *r, v2_state *st) {
  served_model *m = st->m;
  const at_model_info *mi = at_engine_variant_info(r->srv->engine, m->variants[0].engine_index);
  const at_tensor *ids = find_input(st, "input_ids"), *mask = find_input(st, "attention_mask");
  const at_tensor *types = find_input(st, "token_type_ids");
  if (!ids || ids->ndim != 2 || ids->dtype != AT_DTYPE_INT64) return false;
  int64_t B = ids->shape[0], S = ids->shape[1];
  if (B < 1 || S < 1) return false;
  for (size_t k = 0; k < st->n_in; k++) /* every input is int64 [B, S] */
    if (st->in[k].ndim != 2 || st->in[k].dtype != AT_DTYPE_INT64 || st->in[k].shape[0] != B ||
        st->in[k].shape[1] != S)
      return false;
  /* every input of the model given (a missing one stays the engine's 400) */
  if (!mask || st->n_in != mi->n_inputs) return false;
  if (st->n_in != (size_t)(1 + (mask != NULL) + (types != NULL))) return false;
  const int64_t *idv = ids->data, *mv = mask ? mask->data : NULL, *tv = types ? types->data : NULL;
  for (int64_t i = 0; i < B; i++) {
    size_t len = mv ? v2_mask_len(mv + i * S, (size_t)S) : (size_t)S;
    if (len == 0 || len > m->max_tokens) return false;
    for (size_t k = 0; k < len; k++) {
      int64_t id = idv[i * S + (int64_t)k];
      if (id < 0 || id >= m->id_limit) return false;
      if (tv && (tv[i * S + (int64_t)k] < 0 || tv[i * S + (int64_t)k] >= m->type_limit)) return false;
    }
  }
  /* outputs: [batch, fixed...] with at most one axis that is the input's
   * sequence axis (the same symbolic name) */
  const char *seq_name = NULL;
  for (size_t k = 0; k < mi->n_inputs; k++)
    if (!strcmp(mi->inputs[k].name, "input_ids") && mi->inputs[k].ndim == 2)
      seq_name = mi->inputs[k].dim_names[1];
  size_t n_sel = st->n_out_names ? st->n_out_names : mi->n_outputs;
  if (n_sel > AT_MAX_OUTPUTS) return false;
  for (size_t k = 0; k < n_sel; k++) {
    int q = -1;
    if (!st->n_out_names) q = (int)k;
    else
      for (size_t x = 0; x < mi->n_outputs; x++)
        if (mi->outputs[x].name == st->out_names[k]) q = (int)x;
    if (q < 0) return false;
    const at_value_info *o = &mi->outputs[q];
    if (o->ndim < 1 || o->dims[0] >= 0) return false;
    bool okt = o->dtype == AT_DTYPE_FLOAT32 || o->dtype == AT_DTYPE_INT64 ||
               o->dtype == AT_DTYPE_INT32;
    if (!okt) return false;
    v2_out *vo = &st->outs[k];
    vo->index = q;
    vo->seq_axis = -1;
    vo->row_elems = 1;
    for (size_t a = 1; a < o->ndim; a++) {
      int64_t d = o->dims[a];
      if (d < 0) {
        bool is_seq = seq_name && seq_name[0] && o->dim_names[a] &&
                      !strcmp(o->dim_names[a], seq_name);
        if (!is_seq || vo->seq_axis >= 0) return false;
        vo->seq_axis = (int)a;
        d = S;
      }
      vo->row_elems *= (size_t)d;
      if (vo->row_elems * (size_t)B > V2_MAX_ELEMS) return false;
    }
  }
  /* lay out the results: [B, ...] zeroed */
  st->seq_len = S;
  for (size_t k = 0; k < n_sel; k++) {
    const at_value_info *o = &mi->outputs[st->outs[k].index];
    at_tensor *t = &st->results[k];
    t->name = o->name;
    t->dtype = o->dtype;
    t->ndim = o->ndim;
    t->shape[0] = B;
    for (size_t a = 1; a < o->ndim; a++)
      t->shape[a] = (int)a == st->outs[k].seq_axis ? S : o->dims[a];
    t->data = calloc((size_t)B * st->outs[k].row_elems, at_dtype_size(o->dtype));
    st->n_results = k + 1;
    if (!t->data) return false; /* v2_free frees what was laid out; run alone */
  }
  return true;
}

/* On an engine worker: copy this row's outputs into the request's tensors. */
static at_status v2_row(job *j, job_item *it, const at_item_result *res, char *err, size_t cap) {
  v2_state *st = j->row_user;
  for (size_t k = 0; k < st->n_results; k++) {
    const v2_out *vo = &st->outs[k];
    at_tensor *dst = &st->results[k];
    if ((size_t)vo->index >= res->n_outputs) {
      snprintf(err, cap, "output '%s' is missing from the batch's outputs", dst->name);
      return AT_ERR_SHAPE;
    }
    const at_tensor *row = &res->outputs[vo->index];
    size_t esz = at_dtype_size(dst->dtype);
    if (row->dtype != dst->dtype || row->ndim != dst->ndim) {
      snprintf(err, cap, "output '%s' changed type or rank in a batch", dst->name);
      return AT_ERR_SHAPE;
    }
    size_t outer = 1, inner = 1, P = 1;
    for (size_t a = 1; a < row->ndim; a++) {
      if ((int)a == vo->seq_axis) {
        P = (size_t)row->shape[a];
        continue;
      }
      if (row->shape[a] != dst->shape[a]) {
        snprintf(err, cap, "output '%s' axis %zu is %lld in a batch, %lld expected", dst->name,
                 a, (long long)row->shape[a], (long long)dst->shape[a]);
        return AT_ERR_SHAPE;
      }
      if (vo->seq_axis >= 0 && (int)a < vo->seq_axis) outer *= (size_t)row->shape[a];
      else inner *= (size_t)row->shape[a];
    }
    char *out = (char *)dst->data + it->index * vo->row_elems * esz;
    const char *in = row->data;
    if (vo->seq_axis < 0) {
      memcpy(out, in, vo->row_elems * esz);
      continue;
    }
    size_t S = (size_t)st->seq_len, len = it->len;
    if (len > P || len > S) {
      snprintf(err, cap, "output '%s': the row's %zu positions do not fit", dst->name, len);
      return AT_ERR_SHAPE;
    }
    for (size_t q = 0; q < outer; q++) /* positions past len stay 0 */
      memcpy(out + q * S * inner * esz, in + q * P * inner * esz, len * inner * esz);
  }
  return AT_OK;
}

/* Every row one batcher item, sharing batches with text requests. */
static enum MHD_Result run_batched(req_ctx *r, v2_state *st) {
  const at_tensor *ids = find_input(st, "input_ids"), *mask = find_input(st, "attention_mask");
  const at_tensor *types = find_input(st, "token_type_ids");
  size_t B = (size_t)ids->shape[0], S = (size_t)ids->shape[1];
  job *j = serve_job_alloc(r, st->m, B, 0);
  if (!j) {
    serve_release(r, r->adm.held);
    return serve_error(r, 500, "out of memory");
  }
  const int64_t *idv = ids->data, *mv = mask ? mask->data : NULL, *tv = types ? types->data : NULL;
  for (size_t i = 0; i < B; i++) {
    job_item *it = &j->items[i];
    it->ids = idv + i * S;
    it->types = tv ? tv + i * S : NULL;
    it->len = mv ? v2_mask_len(mv + i * S, S) : S;
    j->prompt_tokens += it->len;
  }
  j->on_row = v2_row;
  j->row_user = st;
  return serve_submit_job(r, j, finish_tensor);
}

/* The request as one engine Run of its own (a request the batcher cannot
 * carry exactly): admitted like the rest, its B rows released together. */
static enum MHD_Result run_alone(req_ctx *r, v2_state *st) {
  at_server *s = r->srv;
  served_model *m = st->m;
  for (size_t k = 0; k < st->n_results; k++) free(st->results[k].data);
  memset(st->results, 0, sizeof st->results);
  st->n_results = 0;
  enum MHD_Result res;
  if (!serve_go_async(r, finish_tensor, 1, NULL, &res)) return res; /* one piece: the Run */
  r->adm.held = 0; /* on_tensor_done releases the B rows, exactly once */
  at_status ss = at_engine_submit(s->engine, m->variants[st->slot].engine_index, st->in, st->n_in,
                                  st->n_out_names ? st->out_names : NULL, st->n_out_names,
                                  on_tensor_done, r);
  if (ss != AT_OK) { /* never admitted by the engine: complete it ourselves */
    at_timing t = {0, 0, 0, 0};
    snprintf(st->run_error, sizeof st->run_error, "%s", at_last_error());
    on_tensor_done(r, ss, NULL, &t, st->run_error);
  }
  return MHD_YES;
}

static enum MHD_Result infer(req_ctx *r, served_model *m) {
  enum MHD_Result res = MHD_YES;
  char err[512];
  int hs;
  /* The binary data extension: the JSON header is the body's first
   * Inference-Header-Content-Length bytes, parsed alone (rj_parse reads
   * r->body[0..body_len)); the bytes after it are the inputs' binary data. */
  const char *ihcl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, V2_BIN_HEADER);
  size_t full = r->body_len, jlen;
  if ((hs = v2_bin_split(ihcl, full, &jlen, err, sizeof err)) != 0)
    return serve_error(r, hs, "%s", err);
  r->body_len = jlen;
  json_t *body = rj_parse(r, &res);
  r->body_len = full;
  if (!body) return res;
  const unsigned char *bin = ihcl ? (const unsigned char *)r->body + jlen : NULL;
  v2_state *st = calloc(1, sizeof *st);
  v2_req q; /* the body against the model's signature (v2_req.c: pure, fuzzed) */
  memset(&q, 0, sizeof q);
  if (!st) {
    res = serve_error(r, 500, "out of memory");
    goto out;
  }
  st->m = m;
  json_t *inputs = json_object_get(body, "inputs");
  if (!json_is_array(inputs) || json_array_size(inputs) == 0) {
    res = serve_error(r, 400, "\"inputs\" must be a non-empty list of tensors");
    goto out;
  }
  double dl = rj_deadline_s(r);
  if (dl < 0) {
    res = serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
    goto out;
  }
  json_t *params = json_object_get(body, "parameters");
  if (!serve_priority_json(json_is_object(params) ? json_object_get(params, "priority") : NULL,
                           &r->body_priority, &r->has_body_priority)) {
    res = serve_error(r, 400, "\"parameters\".\"priority\" must be \"high\", \"normal\" or "
                      "\"low\" (numbers are not taken: Triton's 1 is the highest)");
    goto out;
  }
  /* Every tensor is for the planner's chosen variant; all variants of a
   * model share one signature. First the cheap checks on names, types and
   * shapes (no data read), then admission with n_texts = the batch
   * dimension, then the data. */
  const at_model_info *mi = at_engine_variant_info(r->srv->engine, m->variants[0].engine_index);
  v2_sig sig = {.mi = mi, .embed = m->task == TASK_EMBED, .model = m->name,
                .max_inputs = r->srv->cfg.max_inputs, .truncate_dflt = r->srv->cfg.auto_truncate};
  if ((hs = v2_req_parse_bin(body, bin, full - jlen, &sig, &q, err, sizeof err)) != 0) {
    res = serve_error(r, hs, "%s", err);
    goto out;
  }
  if (q.has_id && !(st->id = strdup(q.id))) {
    res = serve_error(r, 500, "out of memory");
    goto out;
  }
  st->has_id = q.has_id;
  memcpy(st->want, q.want, sizeof st->want);
  memcpy(st->out_name_store, q.out_name_store, sizeof st->out_name_store);
  st->n_out_names = q.n_out_names;
  st->bin_default = q.bin_out_default;
  memcpy(st->out_bin, q.out_bin, sizeof st->out_bin);
  for (size_t k = 0; k < q.n_out_names; k++) /* the model's own name, or our copy */
    st->out_names[k] = q.out_names[k] == q.out_name_store[k] ? st->out_name_store[k] : q.out_names[k];
  if (q.text) { /* one BYTES input: a text job */
    r->route_state = st;
    r->free_state = v2_free;
    st = NULL;
    text_opts o = {.truncate = q.truncate, .deadline_s = dl};
    if (m->task == TASK_EMBED) serve_pick_prompt(m, NULL, &o, NULL, 0); /* the default prompt */
    res = serve_run_text_job(r, m, q.texts, q.lens, q.n_texts, &o, finish_text);
    goto out;
  }
  st->n_in = q.n_in;
  memcpy(st->in, q.in, sizeof st->in);
  /* Admission: a refusal reads no data. */
  /* the length model prices each row at its padded length (input_ids'
   * elements per row) */
  double row_tokens = q.rows ? (double)q.numel[0] / (double)q.rows : 0;
  if (!serve_admit(r, m, dl, q.rows, row_tokens, &res)) goto out;
  st->rows = q.rows;
  st->slot = r->adm.d.variant;
  for (size_t k = 0; k < st->n_in; k++) {
    at_tensor *t = &st->in[k];
    st->bufs[k] = malloc((q.numel[k] ? q.numel[k] : 1) * 8);
    t->data = st->bufs[k];
    if (!t->data) {
      res = serve_error(r, 500, "out of memory");
      goto out; /* on_completed releases what the admission holds */
    }
    if ((hs = v2_req_read(&q, k, t->data, err, sizeof err)) != 0) {
      res = serve_error(r, hs, "%s", err);
      goto out;
    }
  }
  if (!ids_in_range(r, st, &res)) goto out; /* on_completed releases the admission */
  r->route_state = st;
  r->free_state = v2_free;
  v2_state *owned = st;
  st = NULL;
  res = batchable(r, owned) ? run_batched(r, owned) : run_alone(r, owned);
out:
  v2_req_free(&q);
  v2_free(st);
  json_decref(body);
  if (r->adm.held && !r->suspended) serve_release(r, r->adm.held); /* answered with an error */
  return res;
}

static json_t *io_list(served_model *m, const at_model_info *mi, bool inputs) {
  json_t *a = json_array();
  size_t n = inputs ? mi->n_inputs : mi->n_outputs;
  const at_value_info *v = inputs ? mi->inputs : mi->outputs;
  if (inputs) json_array_append_new(a, json_pack("{s:s, s:s, s:[i]}", "name", "text", "datatype", "BYTES", "shape", -1));
  for (size_t i = 0; i < n; i++) {
    json_t *sh = json_array();
    for (size_t k = 0; k < v[i].ndim; k++) json_array_append_new(sh, json_integer(v[i].dims[k]));
    json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "name", v[i].name, "datatype",
                                       at_dtype_name(v[i].dtype), "shape", sh));
  }
  if (!inputs) {
    if (m->task == TASK_CLASSIFY)
      json_array_append_new(a, json_pack("{s:s, s:s, s:[i,i]}", "name", "probabilities", "datatype",
                                         "FP32", "shape", -1, (int)m->out_dim));
    else
      json_array_append_new(a, json_pack("{s:s, s:s, s:[i,i]}", "name", "embedding", "datatype",
                                         "FP32", "shape", -1, (int)m->out_dim));
  }
  return a;
}

/* Handlers for the route table (routes.c); m is the {m} of the path. */
enum MHD_Result serve_route_v2_server(req_ctx *r, served_model *m) {
  (void)m;
  return serve_reply_json(r, 200, json_pack("{s:s, s:s, s:[s]}", "name", "anytime", "version",
                                            AT_VERSION_STRING, "extensions", "binary_tensor_data"));
}
enum MHD_Result serve_route_v2_model(req_ctx *r, served_model *m) {
  const at_model_info *mi = at_engine_variant_info(r->srv->engine, m->variants[0].engine_index);
  json_t *vs = json_array();
  for (int v = 0; v < m->n_variants; v++) json_array_append_new(vs, json_string(m->variants[v].name));
  return serve_reply_json(r, 200, json_pack("{s:s, s:[s], s:s, s:o, s:o, s:o}", "name", m->name,
                                            "versions", "1", "platform", "onnxruntime_onnx",
                                            "inputs", io_list(m, mi, true), "outputs",
                                            io_list(m, mi, false), "variants", vs));
}
enum MHD_Result serve_route_v2_infer(req_ctx *r, served_model *m) { return infer(r, m); }
