/* src/serve/grpc_server.c — KServe V2 / Open Inference Protocol over gRPC
 * (grpc_server.h): ServerLive, ServerReady, ModelReady, ServerMetadata,
 * ModelMetadata and ModelInfer, on grpc core's C API with protobuf-c
 * messages (docs/architecture.md, "gRPC front", says why these).
 *
 * ModelInfer takes what the HTTP V2 route takes: one BYTES input of texts
 * (contents.bytes_contents, or raw_input_contents as 4-byte little-endian
 * length + bytes per element) with outputs logits / probabilities /
 * embedding, or the model's INT64 (INT32 widened) tensors input_ids
 * [B, S], attention_mask and token_type_ids (int64_contents or
 * raw_input_contents) with the model's fixed-shape outputs [B, ...]. It goes
 * through the same planner, batcher and task head as HTTP: one batcher item
 * per text or per tensor row (of its mask's length), so the answers are
 * bit for bit HTTP's. Outputs come back in raw_output_contents, as Triton
 * answers. Not served over gRPC (INVALID_ARGUMENT says so): a mask that is
 * not ones-then-zeros and outputs with a sequence axis (HTTP runs or
 * stacks those). An embedding model's default prompt goes before each
 * text, as HTTP V2 puts it.
 *
 * Statuses: unknown model or version NOT_FOUND; bad input INVALID_ARGUMENT;
 * no or wrong API key (when keys are set; `authorization: Bearer KEY`
 * metadata) UNAUTHENTICATED; a planner refusal RESOURCE_EXHAUSTED with
 * `retry-after-ms` in the trailing metadata, or FAILED_PRECONDITION when no
 * variant could ever make the deadline; stopping UNAVAILABLE; a failed Run
 * INTERNAL. The call's gRPC deadline is the request's deadline (capped by
 * the planner as x-deadline-ms is). Each call is counted in
 * anytime_requests_total with protocol "grpc", route its method's path
 * (/inference.GRPCInferenceService/<Method>) and the HTTP status its gRPC
 * status stands for.
 *
 * DESIGN
 *   Threads: one completion-queue thread (cq_loop) accepts calls, reads
 *     each request, answers the metadata RPCs, and for ModelInfer checks,
 *     asks the planner, tokenises and queues the items (the same work an
 *     HTTP thread does). Engine workers complete items (on_item); the one
 *     that completes a call's last item builds its protobuf answer and
 *     starts the final batch (grpc_call_start_batch is thread-safe). The
 *     final batch's completion, on the queue thread, frees the call.
 *   Exactly one answer: every accepted call ends in exactly one final batch
 *     (send initial metadata, message or not, status, receive close):
 *     `answer()` is the only place that starts it, and it is reached once
 *     per call — from the queue thread for anything decided there, or from
 *     the worker whose atomic countdown reaches 0.
 *   Exactly-once release: an admitted call holds its n texts in the
 *     planner; each item releases its text in on_item (the batcher calls it
 *     once per item); texts that never reach the batcher are released
 *     where the submission failed.
 *   Drain: while the server drains, calls are still accepted and read,
 *     and a ModelInfer not admitted yet gets UNAVAILABLE at admission (as
 *     HTTP answers 503 then). An admitted call is counted in s->inflight
 *     (under s->lock, the same count HTTP uses) until its final batch
 *     completes; at_server_stop() waits for the count, then
 *     serve_grpc_stop() stops taking calls (grpc's shutdown_and_notify,
 *     GOAWAY), answers for up to GRPC_STOP_GRACE_MS the calls it still
 *     reads (UNAVAILABLE), cancels what is left — none of it admitted:
 *     calls being read or not handed to us yet; their clients see
 *     CANCELLED or a reset stream — and frees the server.
 *   Ownership: a gcall is calloc'ed when a call is requested and freed on
 *     its final batch's completion (or when the request for a call fails at
 *     shutdown); its items and buffers with it.
 *   Locks: none of its own; s->lock around inflight/stopping only.
 */
#include "serve/grpc_server.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/support/alloc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "grpc_inference.pb-c.h"
#include "serve/serve_internal.h"
#include "serve/v2_req.h"

#define GRPC_ACCEPT_SLOTS 8    /* calls requested ahead, so bursts are accepted at once */
#define GRPC_STOP_GRACE_MS 500 /* at stop: how long calls not admitted may still be answered */

struct serve_grpc {
  at_server *s;
  grpc_server *server;
  grpc_completion_queue *cq;
  pthread_t thread;
  bool thread_started;
  int port;
  int shutdown_tag;   /* its address is the shutdown notification's tag */
  pthread_mutex_t mu; /* guards shut_seen, which the loop sets when that tag arrives */
  pthread_cond_t cv;
  bool shut_seen;
};

typedef enum { G_ACCEPT, G_READ, G_FINAL } gstage;
typedef enum {
  M_LIVE,
  M_READY,
  M_MODEL_READY,
  M_SERVER_META,
  M_MODEL_META,
  M_INFER,
  M_OTHER
} gmethod;

struct gcall;
typedef struct gitem {
  struct gcall *c;
  size_t index;
  const int64_t *ids, *types;
  size_t len;
} gitem;

/* One output of a tensor request: model output `index`, row_elems per row. */
typedef struct gout {
  int index;
  size_t row_elems;
  at_dtype dtype;
  size_t ndim;
  int64_t dims[AT_MAX_DIMS];
  char *data; /* B x row_elems elements */
} gout;

typedef struct gcall {
  serve_grpc *g;
  gstage stage;
  gmethod method;
  grpc_call *call;
  grpc_call_details details;
  grpc_metadata_array md;
  grpc_byte_buffer *recv, *send;
  int cancelled;
  grpc_slice status_msg;
  grpc_metadata trailing[1];
  size_t n_trailing;
  char retry_ms[32];
  int http_status; /* what the answer counts as in anytime_requests_total */
  uint64_t t0_ns, tok_ns;
  bool inflight;
  /* ModelInfer */
  Inference__ModelInferRequest *req;
  served_model *m;
  at_plan_decision d;
  uint64_t decided_ns;
  bool text;
  bool want[3]; /* logits, probabilities, embedding */
  size_t n;     /* items: texts or rows */
  gitem *items;
  int64_t *tok;                    /* token ids (text path; serve_text_ids' ids) */
  size_t pool_skip;                /* text path: the prompt's tokens, left out of pooling */
  float *head;                     /* n x out_dim head outputs (text path) */
  int64_t *tensors[AT_MAX_INPUTS]; /* tensor path: input_ids, mask, types as int64 */
  int64_t S;
  size_t n_outs;
  gout outs[AT_MAX_OUTPUTS];
  atomic_int left, failed;
  char error[256];
  atomic_uint_least64_t max_queue_ns, max_compute_ns;
} gcall;

/* ------------------------------------------------------------ helpers */

static void atomic_max64(atomic_uint_least64_t *a, uint64_t v) {
  uint64_t cur = atomic_load(a);
  while (v > cur && !atomic_compare_exchange_weak(a, &cur, v)) {
  }
}

static int http_of(grpc_status_code c) {
  switch (c) {
    case GRPC_STATUS_OK: return 200;
    case GRPC_STATUS_INVALID_ARGUMENT: return 400;
    case GRPC_STATUS_UNAUTHENTICATED: return 401;
    case GRPC_STATUS_NOT_FOUND: return 404;
    case GRPC_STATUS_FAILED_PRECONDITION: return 422;
    case GRPC_STATUS_RESOURCE_EXHAUSTED: return 429;
    case GRPC_STATUS_UNAVAILABLE: return 503;
    case GRPC_STATUS_UNIMPLEMENTED: return 501;
    default: return 500;
  }
}

/* The gRPC status for an HTTP status the shared request checks give. */
static grpc_status_code grpc_of_http(int status) {
  switch (status) {
    case 400: case 413: case 422: return GRPC_STATUS_INVALID_ARGUMENT;
    case 404: return GRPC_STATUS_NOT_FOUND;
    case 429: return GRPC_STATUS_RESOURCE_EXHAUSTED;
    case 503: return GRPC_STATUS_UNAVAILABLE;
    default: return GRPC_STATUS_INTERNAL;
  }
}

static const char *method_label(gmethod m) {
  static const char *const names[] = {
      "/inference.GRPCInferenceService/ServerLive",
      "/inference.GRPCInferenceService/ServerReady",
      "/inference.GRPCInferenceService/ModelReady",
      "/inference.GRPCInferenceService/ServerMetadata",
      "/inference.GRPCInferenceService/ModelMetadata",
      "/inference.GRPCInferenceService/ModelInfer",
      "other"};
  return names[m];
}

static void free_call(gcall *c) {
  if (c->req) inference__model_infer_request__free_unpacked(c->req, NULL);
  if (c->recv) grpc_byte_buffer_destroy(c->recv);
  if (c->send) grpc_byte_buffer_destroy(c->send);
  if (c->call) grpc_call_unref(c->call);
  grpc_call_details_destroy(&c->details);
  grpc_metadata_array_destroy(&c->md);
  grpc_slice_unref(c->status_msg);
  free(c->items);
  free(c->tok);
  free(c->head);
  for (int k = 0; k < AT_MAX_INPUTS; k++) free(c->tensors[k]);
  for (size_t k = 0; k < c->n_outs; k++) free(c->outs[k].data);
  free(c);
}

/* The call's one answer: `msg` (packed protobuf; NULL for none) and the
 * status. Any thread; reached exactly once per call. */
static void answer(gcall *c, const ProtobufCMessage *msg, grpc_status_code code, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));
static void answer(gcall *c, const ProtobufCMessage *msg, grpc_status_code code, const char *fmt,
                   ...) {
  char text[1024] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
  }
  at_server *s = c->g->s;
  if (msg) {
    size_t len = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(len ? len : 1);
    if (buf) {
      protobuf_c_message_pack(msg, buf);
      grpc_slice sl = grpc_slice_new(buf, len, free);
      c->send = grpc_raw_byte_buffer_create(&sl, 1);
      grpc_slice_unref(sl);
    } else {
      code = GRPC_STATUS_RESOURCE_EXHAUSTED;
      snprintf(text, sizeof text, "out of memory");
    }
  }
  c->status_msg = grpc_slice_from_copied_string(text);
  c->http_status = http_of(code);
  grpc_op ops[4];
  memset(ops, 0, sizeof ops);
  size_t n = 0;
  ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[n++].data.send_initial_metadata.count = 0;
  if (c->send) {
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = c->send;
  }
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = code;
  ops[n].data.send_status_from_server.status_details = &c->status_msg;
  ops[n].data.send_status_from_server.trailing_metadata_count = c->n_trailing;
  ops[n++].data.send_status_from_server.trailing_metadata = c->n_trailing ? c->trailing : NULL;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
  c->stage = G_FINAL;
  /* counted when the answer leaves, as HTTP counts a queued answer */
  const char *model = c->m ? c->m->name : "";
  const char *variant = c->m && c->decided_ns ? c->m->variants[c->d.variant].name : "";
  bool ran = c->items && code == GRPC_STATUS_OK;
  double total = (double)(at_now_ns() - c->t0_ns) / 1e9;
  at_metrics_request(s->metrics, "grpc", method_label(c->method), model, variant, c->http_status, total,
                     ran ? (double)atomic_load(&c->max_queue_ns) / 1e9 : -1,
                     ran ? (double)atomic_load(&c->max_compute_ns) / 1e9 : -1,
                     ran && c->text ? (double)c->tok_ns / 1e9 : -1);
  if (grpc_call_start_batch(c->call, ops, n, c, NULL) != GRPC_CALL_OK) {
    /* cannot happen for a well-formed batch; the call is leaked rather than
     * freed under a batch grpc may still hold */
    at_log(AT_LOG_ERROR, "grpc", "cannot start the final batch of a call");
  }
}

static served_model *model_of(gcall *c, const char *name, const char *version) {
  served_model *m = serve_find_model(c->g->s, name ? name : "");
  if (!m) {
    answer(c, NULL, GRPC_STATUS_NOT_FOUND, "model '%s' is not served here", name ? name : "");
    return NULL;
  }
  if (version && version[0] && strcmp(version, "1")) {
    answer(c, NULL, GRPC_STATUS_NOT_FOUND, "model '%s' has no version '%s' (it has version 1)",
           m->name, version);
    return NULL;
  }
  return m;
}

/* The metadata value for `key` as a NUL-terminated copy in buf; NULL if absent. */
static const char *md_value(const grpc_metadata_array *md, const char *key, char *buf, size_t cap) {
  for (size_t i = 0; i < md->count; i++) {
    if (grpc_slice_str_cmp(md->metadata[i].key, key)) continue;
    size_t n = GRPC_SLICE_LENGTH(md->metadata[i].value);
    if (n >= cap) n = cap - 1;
    memcpy(buf, GRPC_SLICE_START_PTR(md->metadata[i].value), n);
    buf[n] = '\0';
    return buf;
  }
  return NULL;
}

/* ---------------------------------------------------- metadata RPCs */

static void tensor_meta(Inference__ModelMetadataResponse__TensorMetadata *t, const char *name,
                        const char *dtype, int64_t *shape, size_t ndim) {
  inference__model_metadata_response__tensor_metadata__init(t);
  t->name = (char *)name;
  t->datatype = (char *)dtype;
  t->n_shape = ndim;
  t->shape = shape;
}

static void model_metadata(gcall *c, served_model *m) {
  at_server *s = c->g->s;
  const at_model_info *mi = at_engine_variant_info(s->engine, m->variants[0].engine_index);
  size_t ni = mi->n_inputs + 1, no = mi->n_outputs + 1;
  Inference__ModelMetadataResponse__TensorMetadata tin[AT_MAX_INPUTS + 1], tout[AT_MAX_OUTPUTS + 1];
  Inference__ModelMetadataResponse__TensorMetadata *pin[AT_MAX_INPUTS + 1],
      *pout[AT_MAX_OUTPUTS + 1];
  int64_t shapes_in[AT_MAX_INPUTS + 1][AT_MAX_DIMS], shapes_out[AT_MAX_OUTPUTS + 1][AT_MAX_DIMS];
  shapes_in[0][0] = -1;
  tensor_meta(&tin[0], "text", "BYTES", shapes_in[0], 1);
  for (size_t i = 0; i < mi->n_inputs; i++) {
    memcpy(shapes_in[i + 1], mi->inputs[i].dims, sizeof shapes_in[0]);
    tensor_meta(&tin[i + 1], mi->inputs[i].name, at_dtype_name(mi->inputs[i].dtype),
                shapes_in[i + 1], mi->inputs[i].ndim);
  }
  for (size_t i = 0; i < mi->n_outputs; i++) {
    memcpy(shapes_out[i], mi->outputs[i].dims, sizeof shapes_out[0]);
    tensor_meta(&tout[i], mi->outputs[i].name, at_dtype_name(mi->outputs[i].dtype), shapes_out[i],
                mi->outputs[i].ndim);
  }
  shapes_out[no - 1][0] = -1, shapes_out[no - 1][1] = (int64_t)m->out_dim;
  tensor_meta(&tout[no - 1], m->task == TASK_CLASSIFY ? "probabilities" : "embedding", "FP32",
              shapes_out[no - 1], 2);
  for (size_t i = 0; i < ni; i++) pin[i] = &tin[i];
  for (size_t i = 0; i < no; i++) pout[i] = &tout[i];
  char *versions[1] = {"1"};
  Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
  r.name = m->name;
  r.n_versions = 1;
  r.versions = versions;
  r.platform = "onnxruntime_onnx";
  r.n_inputs = ni;
  r.inputs = pin;
  r.n_outputs = no;
  r.outputs = pout;
  answer(c, &r.base, GRPC_STATUS_OK, NULL);
}

/* ---------------------------------------------------------- ModelInfer */

static void finish_infer(gcall *c);

static void on_item(void *user, at_status st, const at_item_result *res, const char *err) {
  gitem *it = user;
  gcall *c = it->c;
  at_server *s = c->g->s;
  served_model *m = c->m;
  uint64_t now = at_now_ns();
  double service_s = 0;
  int peers = 0, bs = 1;
  if (st == AT_OK) {
    if (c->text) {
      const at_tensor *o = &res->outputs[m->head_output];
      float *out = c->head + it->index * m->out_dim;
      if (m->task == TASK_CLASSIFY)
        memcpy(out, o->data, m->out_dim * sizeof(float));
      else
        at_pool_from(m->head_pooling, o->data, res->len, c->pool_skip, m->out_dim, out);
    } else {
      for (size_t k = 0; k < c->n_outs; k++) {
        gout *g = &c->outs[k];
        const at_tensor *row = (size_t)g->index < res->n_outputs ? &res->outputs[g->index] : NULL;
        size_t esz = at_dtype_size(g->dtype);
        if (!row || row->dtype != g->dtype || at_tensor_numel(row, NULL) != g->row_elems) {
          int z = 0;
          if (atomic_compare_exchange_strong(&c->failed, &z, AT_ERR_SHAPE))
            snprintf(c->error, sizeof c->error, "output %d changed shape in a batch", g->index);
          continue;
        }
        memcpy(g->data + it->index * g->row_elems * esz, row->data, g->row_elems * esz);
      }
    }
    bs = res->batch_size > 0 ? res->batch_size : 1;
    atomic_max64(&c->max_queue_ns, res->dispatched_ns - res->enqueued_ns);
    atomic_max64(&c->max_compute_ns, res->finished_ns - res->started_ns);
    if (res->index_in_batch == 0) {
      service_s = (double)(res->finished_ns - res->started_ns) / 1e9;
      peers = res->peers;
      at_metrics_batch(s->metrics, m->name, res->batch_size);
    }
  } else {
    int z = 0;
    if (atomic_compare_exchange_strong(&c->failed, &z, (int)st))
      snprintf(c->error, sizeof c->error, "%s", err ? err : at_strerror(st));
  }
  serve_planner_release(s, m, c->d.variant, 1, c->d.weight, bs, service_s, peers, now);
  if (atomic_fetch_sub(&c->left, 1) == 1) finish_infer(c);
}

/* Append output `name` to the answer: shape [n, d...] and its raw bytes
 * (little-endian, as the protocol says; this host's order is checked at
 * start). */
typedef struct ganswer {
  Inference__ModelInferResponse r;
  Inference__ModelInferResponse__InferOutputTensor t[AT_MAX_OUTPUTS + 2];
  Inference__ModelInferResponse__InferOutputTensor *pt[AT_MAX_OUTPUTS + 2];
  ProtobufCBinaryData raw[AT_MAX_OUTPUTS + 2];
  int64_t shape[AT_MAX_OUTPUTS + 2][AT_MAX_DIMS];
} ganswer;

static void answer_out(ganswer *a, const char *name, at_dtype dt, const int64_t *shape, size_t ndim,
                       void *data, size_t bytes) {
  size_t k = a->r.n_outputs++;
  Inference__ModelInferResponse__InferOutputTensor *t = &a->t[k];
  inference__model_infer_response__infer_output_tensor__init(t);
  t->name = (char *)name;
  t->datatype = (char *)at_dtype_name(dt);
  memcpy(a->shape[k], shape, ndim * sizeof *shape);
  t->shape = a->shape[k];
  t->n_shape = ndim;
  a->pt[k] = t;
  a->raw[k].data = data;
  a->raw[k].len = bytes;
  a->r.n_raw_output_contents = k + 1;
}

static void finish_infer(gcall *c) {
  served_model *m = c->m;
  int failed = atomic_load(&c->failed);
  if (failed) {
    answer(c, NULL,
           failed == AT_ERR_QUEUE_FULL || failed == AT_ERR_SHUTDOWN ? GRPC_STATUS_UNAVAILABLE
                                                                    : GRPC_STATUS_INTERNAL,
           "inference failed: %s", c->error);
    return;
  }
  ganswer *a = calloc(1, sizeof *a);
  float *probs = NULL;
  if (!a) {
    answer(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  inference__model_infer_response__init(&a->r);
  a->r.model_name = m->name;
  a->r.model_version = "1";
  a->r.id = c->req->id;
  a->r.outputs = a->pt;
  a->r.raw_output_contents = a->raw;
  if (c->text) {
    size_t n = c->n, d = m->out_dim;
    int64_t shape[2] = {(int64_t)n, (int64_t)d};
    if (c->want[0]) answer_out(a, "logits", AT_DTYPE_FLOAT32, shape, 2, c->head, n * d * 4);
    if (c->want[1] && (probs = malloc(n * d * sizeof(float)))) {
      for (size_t i = 0; i < n; i++)
        at_class_scores(c->head + i * d, d, m->multi_label, probs + i * d);
      answer_out(a, "probabilities", AT_DTYPE_FLOAT32, shape, 2, probs, n * d * 4);
    }
    if (c->want[2]) {
      for (size_t i = 0; i < n; i++) at_l2_normalize(c->head + i * d, d);
      answer_out(a, "embedding", AT_DTYPE_FLOAT32, shape, 2, c->head, n * d * 4);
    }
  } else {
    const at_model_info *mi = at_engine_variant_info(c->g->s->engine, m->variants[0].engine_index);
    for (size_t k = 0; k < c->n_outs; k++) {
      gout *g = &c->outs[k];
      int64_t shape[AT_MAX_DIMS];
      shape[0] = (int64_t)c->n;
      for (size_t x = 1; x < g->ndim; x++) shape[x] = g->dims[x];
      answer_out(a, mi->outputs[g->index].name, g->dtype, shape, g->ndim, g->data,
                 c->n * g->row_elems * at_dtype_size(g->dtype));
    }
  }
  /* the overrun feedback, as serve_reply gives it for HTTP (before the
   * answer: after it the call may be freed) */
  at_planner_observe(m->planner, c->d.est_sojourn_s, (double)(at_now_ns() - c->decided_ns) / 1e9,
                     c->d.queued, at_now_ns());
  if (c->want[1] && c->text && !probs)
    answer(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  else
    answer(c, &a->r.base, GRPC_STATUS_OK, NULL);
  free(probs);
  free(a);
}

/* The call's deadline in seconds from now (0: none given). */
static double call_deadline_s(const gcall *c) {
  gpr_timespec dl = c->details.deadline;
  if (gpr_time_cmp(dl, gpr_inf_future(dl.clock_type)) == 0) return 0;
  gpr_timespec left = gpr_time_sub(dl, gpr_now(dl.clock_type));
  double s = (double)left.tv_sec + (double)left.tv_nsec / 1e9;
  return s > 1e-6 ? s : 1e-6; /* already past: the planner refuses it as infeasible */
}

/* Admission: true with c->d set; false when the call was answered. */
static bool admit(gcall *c, size_t n, double tokens) {
  at_server *s = c->g->s;
  served_model *m = c->m;
  uint64_t now = at_now_ns();
  char pv[16];
  int prio;
  if (!serve_priority_parse(md_value(&c->md, "x-priority", pv, sizeof pv), &prio)) {
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
           "x-priority must be high, normal or low (or 1, 0, -1)");
    return false;
  }
  /* who it is, as the HTTP routes tell (serve_client_from): the key,
   * the client-id metadata, a trusted forwarded address, else the peer */
  char auth[600], cid[256], xff[256];
  const char *h = s->cfg.client_id_header;
  serve_client who = serve_client_from(
      md_value(&c->md, "authorization", auth, sizeof auth),
      h[0] ? md_value(&c->md, h, cid, sizeof cid) : NULL,
      md_value(&c->md, "x-forwarded-for", xff, sizeof xff), NULL, NULL, s->auth.n > 0,
      s->cfg.trust_forwarded);
  char *peer = grpc_call_get_peer(c->call);
  at_plan_request rq = {.deadline_s = call_deadline_s(c),
                        .age_s = (double)(now - c->t0_ns) / 1e9,
                        .n_texts = (int)n,
                        .tokens = tokens,
                        .priority = prio,
                        .client = serve_client_share_key_text(who, peer)};
  gpr_free(peer);
  if (at_planner_decide_req(m->planner, now, &rq, &c->d) != AT_OK) {
    answer(c, NULL, GRPC_STATUS_INTERNAL, "admission failed: %s", at_last_error());
    return false;
  }
  if (!c->d.admit) {
    at_metrics_rejection(s->metrics, m->name, at_plan_reason_name(c->d.reason));
    double ra = serve_retry_after_s(&c->d);
    double ra_ms = ra * 1e3 < 1 ? 1 : ra * 1e3;
    char msg[640];
    const char *code;
    /* HTTP's words; a request that can never fit gets no retry advice */
    if (serve_refusal_text(m, &c->d, ra_ms, &code, msg, sizeof msg) == 422) {
      answer(c, NULL, GRPC_STATUS_FAILED_PRECONDITION, "%s", msg);
    } else {
      snprintf(c->retry_ms, sizeof c->retry_ms, "%.3f", ra_ms);
      c->trailing[0].key = grpc_slice_from_static_string("retry-after-ms");
      c->trailing[0].value = grpc_slice_from_static_string(c->retry_ms);
      c->n_trailing = 1;
      answer(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "%s", msg);
    }
    return false;
  }
  c->decided_ns = now;
  /* counted in the drain from here; a server already stopping refuses */
  pthread_mutex_lock(&s->lock);
  bool stopping = s->stopping;
  if (!stopping) s->inflight++;
  pthread_mutex_unlock(&s->lock);
  if (stopping) {
    serve_planner_release(s, m, c->d.variant, (int)n, c->d.weight, 1, 0, 0, at_now_ns());
    answer(c, NULL, GRPC_STATUS_UNAVAILABLE, "server is shutting down");
    return false;
  }
  c->inflight = true;
  return true;
}

/* Queue every item (admitted). Once the last item is queued the call may
 * be answered and freed by a worker at any moment: nothing here reads `c`
 * after a successful submission of it (n, variant and weight are copied). */
static void submit(gcall *c) {
  at_server *s = c->g->s;
  served_model *m = c->m;
  const size_t n = c->n;
  const int variant = c->d.variant;
  const double weight = c->d.weight;
  gitem *items = c->items;
  int ev = m->variants[variant].engine_index;
  atomic_store(&c->left, (int)n);
  /* queued together, as the HTTP text job queues them, so a request's
   * items share batches the same way on both fronts */
  enum { CHUNK = 64 };
  at_batch_item bi[CHUNK];
  for (size_t i = 0; i < n;) {
    size_t k = n - i < CHUNK ? n - i : CHUNK;
    for (size_t q = 0; q < k; q++)
      bi[q] = (at_batch_item){.input_ids = items[i + q].ids,
                              .token_type_ids = items[i + q].types,
                              .len = items[i + q].len,
                              .done = on_item,
                              .user = &items[i + q]};
    at_status bs = at_batcher_submit_n(s->batcher, ev, bi, k);
    if (bs == AT_OK) {
      i += k;
      continue;
    }
    int z = 0;
    if (atomic_compare_exchange_strong(&c->failed, &z, (int)bs))
      snprintf(c->error, sizeof c->error, "%s", at_last_error());
    if (bs == AT_ERR_QUEUE_FULL) at_metrics_rejection(s->metrics, m->name, "queue_full");
    size_t left = n - i; /* items i.. never queued: c is alive until they are counted */
    serve_planner_release(s, m, variant, (int)left, weight, 1, 0, 0, at_now_ns());
    if (atomic_fetch_sub(&c->left, (int)left) == (int)left) finish_infer(c);
    return;
  }
}

static bool param_bool(Inference__ModelInferRequest *q, const char *key, bool dflt) {
  for (size_t i = 0; i < q->n_parameters; i++)
    if (!strcmp(q->parameters[i]->key, key) && q->parameters[i]->value &&
        q->parameters[i]->value->parameter_choice_case ==
            INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM)
      return q->parameters[i]->value->bool_param;
  return dflt;
}

static void infer_text(gcall *c) {
  at_server *s = c->g->s;
  served_model *m = c->m;
  Inference__ModelInferRequest *q = c->req;
  Inference__ModelInferRequest__InferInputTensor *in = q->inputs[0];
  if (q->n_inputs != 1) {
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "a BYTES (text) request takes exactly one input");
    return;
  }
  static const char *const names[3] = {"logits", "probabilities", "embedding"};
  for (size_t k = 0; k < q->n_outputs; k++) {
    int f = -1;
    for (int o = 0; o < 3; o++)
      if (!strcmp(q->outputs[k]->name, names[o])) f = o;
    if (f < 0 || (m->task == TASK_EMBED ? f != 2 : f == 2)) {
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
             "model '%s' has no output '%s' for text input (it has %s)", m->name,
             q->outputs[k]->name, m->task == TASK_EMBED ? "embedding" : "logits, probabilities");
      return;
    }
    c->want[f] = true;
  }
  if (!q->n_outputs) c->want[m->task == TASK_EMBED ? 2 : 0] = true;
  /* the texts: bytes_contents, or raw_input_contents[0] as length-prefixed elements */
  size_t n = 0, cap = s->cfg.max_inputs;
  const char **texts = calloc(cap ? cap : 1, sizeof *texts);
  size_t *lens = calloc(cap ? cap : 1, sizeof *lens);
  if (!texts || !lens) {
    free(texts), free(lens);
    answer(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  const char *bad = NULL;
  char berr[256] = "";
  if (q->n_raw_input_contents) {
    /* the same element format as the HTTP binary extension's (v2_req.c) */
    if (v2_bytes_split(q->raw_input_contents[0].data, q->raw_input_contents[0].len, cap, texts,
                       lens, &n, berr, sizeof berr))
      bad = berr;
  } else if (in->contents) {
    for (size_t i = 0; i < in->contents->n_bytes_contents && !bad; i++) {
      if (n >= cap) {
        bad = "more texts in one request than server.max_inputs";
        break;
      }
      texts[n] = (const char *)in->contents->bytes_contents[i].data;
      lens[n++] = in->contents->bytes_contents[i].len;
    }
  }
  for (size_t i = 0; i < n && !bad; i++)
    if (!lens[i]) bad = "an input is an empty string";
  if (!bad && n == 0) bad = "no inputs: give at least one text";
  if (bad) {
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "%s", bad);
    free(texts), free(lens);
    return;
  }
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) bytes += lens[i];
  if (!admit(c, n, serve_guess_tokens(m, bytes, n))) {
    free(texts), free(lens);
    return;
  }
  /* tokenise (this thread's workspace; the model's default prompt before
   * each text, as HTTP V2 puts it), check, queue */
  text_opts o = {.truncate = param_bool(q, "truncate", s->cfg.auto_truncate)};
  if (m->task == TASK_EMBED) serve_pick_prompt(m, NULL, &o, NULL, 0);
  text_ids t;
  text_ids_error e;
  at_status st = serve_text_ids(s, m, texts, lens, n, &o, &t, &e);
  free(texts), free(lens);
  if (st == AT_OK) {
    c->items = calloc(n, sizeof *c->items);
    c->head = calloc(n * m->out_dim + 1, sizeof *c->head);
    if (!c->items || !c->head) {
      serve_text_ids_free(&t);
      st = AT_ERR_NOMEM;
      e.status = 500;
      snprintf(e.msg, sizeof e.msg, "out of memory");
    }
  }
  if (st != AT_OK) {
    serve_planner_release(s, m, c->d.variant, (int)n, c->d.weight, 1, 0, 0, at_now_ns());
    answer(c, NULL, st == AT_ERR_NOMEM ? GRPC_STATUS_RESOURCE_EXHAUSTED : grpc_of_http(e.status),
           "%s", e.msg);
    return;
  }
  c->tok = t.ids; /* owned by the call from here */
  for (size_t i = 0; i < n; i++) {
    gitem *it = &c->items[i];
    it->c = c, it->index = i, it->ids = t.ids + t.off[i], it->len = t.len[i];
  }
  c->pool_skip = t.pool_skip;
  c->n = n;
  c->tok_ns = t.ns;
  t.ids = NULL;
  serve_text_ids_free(&t);
  submit(c);
}

/* The outputs a tensor request gets: those named, or all; each must have a
 * fixed shape past the batch axis. Lays out B rows of each in c->outs.
 * false: the call was answered. */
static bool select_outputs(gcall *c, const at_model_info *mi, int64_t B) {
  Inference__ModelInferRequest *q = c->req;
  served_model *m = c->m;
  size_t n_sel = q->n_outputs ? q->n_outputs : mi->n_outputs;
  if (n_sel > AT_MAX_OUTPUTS) n_sel = AT_MAX_OUTPUTS;
  for (size_t k = 0; k < n_sel; k++) {
    int x = q->n_outputs ? -1 : (int)k;
    for (size_t o = 0; q->n_outputs && o < mi->n_outputs; o++)
      if (!strcmp(mi->outputs[o].name, q->outputs[k]->name)) x = (int)o;
    if (x < 0) {
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "model '%s' has no output '%s'", m->name,
             q->outputs[k]->name);
      return false;
    }
    const at_value_info *ov = &mi->outputs[x];
    bool fixed = ov->ndim >= 1 && (ov->dtype == AT_DTYPE_FLOAT32 || ov->dtype == AT_DTYPE_INT64 ||
                                   ov->dtype == AT_DTYPE_INT32);
    size_t re = 1;
    for (size_t a = 1; a < ov->ndim && fixed; a++) {
      if (ov->dims[a] < 0)
        fixed = false;
      else
        re *= (size_t)ov->dims[a];
    }
    if (!fixed) {
      if (!q->n_outputs) continue; /* all outputs: the fixed-shape ones */
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
             "output '%s' has a dynamic axis past the "
             "batch; over gRPC only fixed-shape outputs are served (HTTP V2 serves it)",
             ov->name);
      return false;
    }
    gout *g = &c->outs[c->n_outs++];
    g->index = x, g->row_elems = re, g->dtype = ov->dtype, g->ndim = ov->ndim;
    memcpy(g->dims, ov->dims, sizeof g->dims);
    if (!(g->data = calloc((size_t)B * re + 1, at_dtype_size(ov->dtype)))) {
      answer(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      return false;
    }
  }
  return true;
}

/* Read the request's tensors into c->tensors (by model input, as int64):
 * every input INT64 or INT32 [B, S], from contents or raw_input_contents.
 * false: the call was answered. */
static bool read_inputs(gcall *c, const at_model_info *mi, int64_t *Bp, int64_t *Sp) {
  at_server *s = c->g->s;
  served_model *m = c->m;
  Inference__ModelInferRequest *q = c->req;
  int64_t B = -1, S = -1;
  int slot_of[AT_MAX_INPUTS]; /* request input k -> model input */
  for (size_t k = 0; k < q->n_inputs; k++) {
    Inference__ModelInferRequest__InferInputTensor *in = q->inputs[k];
    int w = -1;
    for (size_t i = 0; i < mi->n_inputs; i++)
      if (!strcmp(mi->inputs[i].name, in->name)) w = (int)i;
    for (size_t j = 0; j < k && w >= 0; j++)
      if (slot_of[j] == w) {
        answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "input '%s' is given twice", in->name);
        return false;
      }
    if (w < 0) {
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "model '%s' has no input '%s'", m->name,
             in->name);
      return false;
    }
    slot_of[k] = w;
    bool i64 = !strcmp(in->datatype, "INT64"), i32 = !strcmp(in->datatype, "INT32");
    if (mi->inputs[w].dtype != AT_DTYPE_INT64 || !(i64 || i32)) {
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
             "input '%s': datatype %s is not served over "
             "gRPC for this model (INT64 or INT32 token tensors, or one BYTES input)",
             in->name, in->datatype);
      return false;
    }
    if (in->n_shape != 2 || in->shape[0] < 1 || in->shape[1] < 1 ||
        in->shape[0] > (int64_t)s->cfg.max_inputs || in->shape[1] > (int64_t)m->max_tokens ||
        (B >= 0 && (in->shape[0] != B || in->shape[1] != S))) {
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
             "input '%s': shape must be [B, S] with "
             "1 <= B <= %zu (server.max_inputs), 1 <= S <= %zu, the same for every input",
             in->name, s->cfg.max_inputs, m->max_tokens);
      return false;
    }
    B = in->shape[0], S = in->shape[1];
    size_t numel = (size_t)(B * S);
    int64_t *buf = malloc(numel * sizeof *buf);
    if (!buf) {
      answer(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      return false;
    }
    c->tensors[w] = buf;
    size_t esz = i64 ? 8 : 4;
    if (q->n_raw_input_contents) {
      const uint8_t *p = q->raw_input_contents[k].data;
      if (q->raw_input_contents[k].len != numel * esz) {
        answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
               "input '%s': raw_input_contents holds %zu "
               "bytes; shape [%lld, %lld] of %s needs %zu",
               in->name, q->raw_input_contents[k].len, (long long)B, (long long)S, in->datatype,
               numel * esz);
        return false;
      }
      for (size_t i = 0; i < numel; i++) {
        uint64_t v = 0;
        for (size_t b = 0; b < esz; b++) v |= (uint64_t)p[i * esz + b] << (8 * b);
        buf[i] = i64 ? (int64_t)v : (int64_t)(int32_t)(uint32_t)v;
      }
    } else {
      size_t got = !in->contents ? 0
                   : i64         ? in->contents->n_int64_contents
                                 : in->contents->n_int_contents;
      if (got != numel) {
        answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
               "input '%s': contents hold %zu values, "
               "the shape needs %zu",
               in->name, got, numel);
        return false;
      }
      for (size_t i = 0; i < numel; i++)
        buf[i] = i64 ? in->contents->int64_contents[i] : in->contents->int_contents[i];
    }
  }
  *Bp = B, *Sp = S;
  return true;
}

static void infer_tensors(gcall *c) {
  at_server *s = c->g->s;
  served_model *m = c->m;
  Inference__ModelInferRequest *q = c->req;
  const at_model_info *mi = at_engine_variant_info(s->engine, m->variants[0].engine_index);
  if (q->n_raw_input_contents && q->n_raw_input_contents != q->n_inputs) {
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
           "raw_input_contents has %zu entries for %zu "
           "inputs: give every input's data there, or none",
           q->n_raw_input_contents, q->n_inputs);
    return;
  }
  if (q->n_inputs != mi->n_inputs) {
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "model '%s' takes %zu inputs; %zu were given",
           m->name, mi->n_inputs, q->n_inputs);
    return;
  }
  int64_t B = -1, S = -1;
  if (!read_inputs(c, mi, &B, &S)) return;
  int ids_w = -1, mask_w = -1, types_w = -1;
  for (size_t i = 0; i < mi->n_inputs; i++) {
    if (!strcmp(mi->inputs[i].name, "input_ids"))
      ids_w = (int)i;
    else if (!strcmp(mi->inputs[i].name, "attention_mask"))
      mask_w = (int)i;
    else if (!strcmp(mi->inputs[i].name, "token_type_ids"))
      types_w = (int)i;
  }
  if (ids_w < 0 || mask_w < 0 || (size_t)(1 + 1 + (types_w >= 0)) != mi->n_inputs) {
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
           "model '%s' is not an input_ids / "
           "attention_mask model; its tensors are not served over gRPC",
           m->name);
    return;
  }
  const int64_t *ids = c->tensors[ids_w], *mask = c->tensors[mask_w];
  const int64_t *types = types_w >= 0 ? c->tensors[types_w] : NULL;
  for (int64_t i = 0; i < B * S; i++) {
    if (ids[i] < 0 || ids[i] >= m->vocab_size) {
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
             "input 'input_ids': value %lld at element "
             "%lld is outside the model's vocabulary (0..%lld)",
             (long long)ids[i], (long long)i, (long long)(m->vocab_size - 1));
      return;
    }
    if (types && m->type_vocab_size > 0 && (types[i] < 0 || types[i] >= m->type_vocab_size)) {
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
             "input 'token_type_ids': value %lld at "
             "element %lld is outside the model's token types",
             (long long)types[i], (long long)i);
      return;
    }
  }
  for (int64_t r = 0; r < B; r++) {
    size_t len = v2_mask_len(mask + r * S, (size_t)S);
    bool in_tables = len > 0;
    for (size_t k = 0; k < len && in_tables; k++)
      in_tables = ids[r * S + (int64_t)k] < m->id_limit &&
                  (!types || types[r * S + (int64_t)k] < m->type_limit);
    if (!in_tables) {
      answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
             "row %lld: over gRPC the attention_mask must "
             "be ones then zeros (at least one) and ids within the tokenizer's; HTTP V2 runs "
             "such a request alone",
             (long long)r);
      return;
    }
  }
  if (!select_outputs(c, mi, B)) return;
  if (!(c->items = calloc((size_t)B, sizeof *c->items))) {
    answer(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  if (!admit(c, (size_t)B, (double)S)) return;
  for (int64_t r = 0; r < B; r++) {
    gitem *it = &c->items[r];
    it->c = c, it->index = (size_t)r, it->ids = ids + r * S;
    it->types = types ? types + r * S : NULL;
    it->len = v2_mask_len(mask + r * S, (size_t)S);
  }
  c->n = (size_t)B;
  c->S = S;
  submit(c);
}

static void model_infer(gcall *c, const uint8_t *data, size_t len) {
  c->req = inference__model_infer_request__unpack(NULL, len, data);
  if (!c->req) {
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "ModelInferRequest does not parse");
    return;
  }
  if (!(c->m = model_of(c, c->req->model_name, c->req->model_version))) return;
  if (c->req->n_inputs == 0) {
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "\"inputs\" must be a non-empty list of tensors");
    return;
  }
  /* Triton's classification extension would change what an output holds:
   * refused, not ignored (docs/api.md, "Conformance") */
  for (size_t k = 0; k < c->req->n_outputs; k++)
    for (size_t i = 0; i < c->req->outputs[k]->n_parameters; i++)
      if (!strcmp(c->req->outputs[k]->parameters[i]->key, "classification")) {
        answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
               "outputs[%zu]: the classification extension is not supported: ask for "
               "\"probabilities\" and rank them",
               k);
        return;
      }
  c->text = !strcmp(c->req->inputs[0]->datatype, "BYTES");
  if (c->text)
    infer_text(c);
  else
    infer_tensors(c);
}

/* ------------------------------------------------------------ the loop */

static gmethod method_of(grpc_slice m) {
  static const char *const names[] = {"/inference.GRPCInferenceService/ServerLive",
                                      "/inference.GRPCInferenceService/ServerReady",
                                      "/inference.GRPCInferenceService/ModelReady",
                                      "/inference.GRPCInferenceService/ServerMetadata",
                                      "/inference.GRPCInferenceService/ModelMetadata",
                                      "/inference.GRPCInferenceService/ModelInfer"};
  for (int i = 0; i < 6; i++)
    if (!grpc_slice_str_cmp(m, names[i])) return (gmethod)i;
  return M_OTHER;
}

static void request_one(serve_grpc *g) {
  gcall *c = calloc(1, sizeof *c);
  if (!c) return; /* one accept slot fewer; the others keep serving */
  c->g = g;
  c->stage = G_ACCEPT;
  c->status_msg = grpc_empty_slice();
  grpc_call_details_init(&c->details);
  grpc_metadata_array_init(&c->md);
  if (grpc_server_request_call(g->server, &c->call, &c->details, &c->md, g->cq, g->cq, c) !=
      GRPC_CALL_OK)
    free_call(c);
}

/* The request message has arrived (or not): dispatch. */
static void on_read(gcall *c) {
  at_server *s = c->g->s;
  if (!c->recv) { /* the client sent no message (half-closed, or cancelled) */
    answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "no request message");
    return;
  }
  grpc_byte_buffer_reader rd;
  grpc_slice all = grpc_empty_slice();
  if (grpc_byte_buffer_reader_init(&rd, c->recv)) {
    all = grpc_byte_buffer_reader_readall(&rd);
    grpc_byte_buffer_reader_destroy(&rd);
  }
  const uint8_t *data = GRPC_SLICE_START_PTR(all);
  size_t len = GRPC_SLICE_LENGTH(all);
  char key[600];
  if (s->auth.n > 0 &&
      !serve_auth_check(&s->auth, md_value(&c->md, "authorization", key, sizeof key))) {
    answer(c, NULL, GRPC_STATUS_UNAUTHENTICATED,
           "this server needs an API key: send metadata "
           "\"authorization: Bearer KEY\" (the key was missing or is not one of the server's)");
  } else if (len > s->cfg.max_body_bytes) {
    answer(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED,
           "request of %zu bytes exceeds %zu bytes "
           "(server.max_body_bytes)",
           len, s->cfg.max_body_bytes);
  } else {
    switch (c->method) {
      case M_LIVE: {
        Inference__ServerLiveResponse r = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
        r.live = true;
        answer(c, &r.base, GRPC_STATUS_OK, NULL);
        break;
      }
      case M_READY: {
        Inference__ServerReadyResponse r = INFERENCE__SERVER_READY_RESPONSE__INIT;
        pthread_mutex_lock(&s->lock);
        r.ready = !s->stopping;
        pthread_mutex_unlock(&s->lock);
        answer(c, &r.base, GRPC_STATUS_OK, NULL);
        break;
      }
      case M_MODEL_READY:
      case M_MODEL_META: {
        Inference__ModelReadyRequest *q = inference__model_ready_request__unpack(NULL, len, data);
        if (!q) {
          answer(c, NULL, GRPC_STATUS_INVALID_ARGUMENT, "request does not parse");
          break;
        }
        served_model *m = model_of(c, q->name, q->version);
        if (m && c->method == M_MODEL_META) {
          model_metadata(c, m);
        } else if (m) {
          Inference__ModelReadyResponse r = INFERENCE__MODEL_READY_RESPONSE__INIT;
          r.ready = true;
          answer(c, &r.base, GRPC_STATUS_OK, NULL);
        }
        inference__model_ready_request__free_unpacked(q, NULL);
        break;
      }
      case M_SERVER_META: {
        char *ext[1] = {"binary_tensor_data"};
        Inference__ServerMetadataResponse r = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
        r.name = "anytime";
        r.version = AT_VERSION_STRING;
        r.n_extensions = 1;
        r.extensions = ext;
        answer(c, &r.base, GRPC_STATUS_OK, NULL);
        break;
      }
      case M_INFER: model_infer(c, data, len); break;
      default: answer(c, NULL, GRPC_STATUS_UNIMPLEMENTED, "method not served"); break;
    }
  }
  grpc_slice_unref(all);
}

static void *cq_loop(void *arg) {
  serve_grpc *g = arg;
  for (;;) {
    grpc_event ev = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
    if (ev.type != GRPC_OP_COMPLETE) continue;
    if (ev.tag == &g->shutdown_tag) {
      pthread_mutex_lock(&g->mu);
      g->shut_seen = true;
      pthread_cond_broadcast(&g->cv);
      pthread_mutex_unlock(&g->mu);
      continue;
    }
    gcall *c = ev.tag;
    switch (c->stage) {
      case G_ACCEPT: {
        if (!ev.success) { /* shutting down: no call came */
          free_call(c);
          break;
        }
        request_one(g); /* keep the accept slots full */
        c->t0_ns = at_now_ns();
        c->method = method_of(c->details.method);
        c->stage = G_READ;
        grpc_op op;
        memset(&op, 0, sizeof op);
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &c->recv;
        if (grpc_call_start_batch(c->call, &op, 1, c, NULL) != GRPC_CALL_OK) free_call(c);
        break;
      }
      case G_READ: on_read(c); break;
      case G_FINAL: {
        at_server *s = g->s;
        if (c->inflight) {
          pthread_mutex_lock(&s->lock);
          if (--s->inflight == 0) pthread_cond_broadcast(&s->idle);
          pthread_mutex_unlock(&s->lock);
        }
        free_call(c);
        break;
      }
    }
  }
  return NULL;
}

at_status serve_grpc_start(at_server *s) {
  const uint32_t one = 1;
  if (*(const uint8_t *)&one != 1)
    return at_fail(AT_ERR_UNSUPPORTED,
                   "the gRPC front writes raw tensors little-endian and "
                   "needs a little-endian host");
  serve_grpc *g = calloc(1, sizeof *g);
  if (!g) return at_fail(AT_ERR_NOMEM, "out of memory");
  g->s = s;
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  grpc_init();
  g->cq = grpc_completion_queue_create_for_next(NULL);
  grpc_arg args[1] = {
      {.type = GRPC_ARG_INTEGER,
       .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
       .value.integer =
           (int)(s->cfg.max_body_bytes > (1u << 30) ? (1u << 30) : s->cfg.max_body_bytes)}};
  grpc_channel_args ca = {.num_args = 1, .args = args};
  g->server = grpc_server_create(&ca, NULL);
  grpc_server_register_completion_queue(g->server, g->cq, NULL);
  grpc_server_credentials *creds;
  if (s->tls_cert_pem) {
    grpc_ssl_pem_key_cert_pair pair = {.private_key = s->tls_key_pem,
                                       .cert_chain = s->tls_cert_pem};
    creds = grpc_ssl_server_credentials_create(NULL, &pair, 1, 0, NULL);
  } else {
    creds = grpc_insecure_server_credentials_create();
  }
  char addr[96];
  snprintf(addr, sizeof addr, "%s:%d", s->cfg.host, s->cfg.grpc_port);
  g->port = creds ? grpc_server_add_http2_port(g->server, addr, creds) : 0;
  grpc_server_credentials_release(creds);
  s->grpc = g;
  if (g->port <= 0) {
    serve_grpc_stop(g);
    s->grpc = NULL;
    return at_fail(AT_ERR_IO, "gRPC cannot listen on %s (in use, or not permitted)", addr);
  }
  grpc_server_start(g->server);
  for (int i = 0; i < GRPC_ACCEPT_SLOTS; i++) request_one(g);
  if (pthread_create(&g->thread, NULL, cq_loop, g) != 0) {
    serve_grpc_stop(g);
    s->grpc = NULL;
    return at_fail(AT_ERR_THREAD, "cannot start the gRPC thread");
  }
  g->thread_started = true;
  at_log(AT_LOG_INFO, "serve", "gRPC (KServe V2) listening on %s%s", addr,
         s->tls_cert_pem ? " (TLS)" : "");
  return AT_OK;
}

void serve_grpc_stop(serve_grpc *g) {
  if (!g) return;
  /* After the drain no admitted call is left: what remains are calls not
   * admitted (being read, or received by grpc and not handed to us yet).
   * For up to GRPC_STOP_GRACE_MS the loop still answers those it gets
   * (UNAVAILABLE: the server is stopping) while grpc sends GOAWAY; then
   * the rest are cancelled — waiting longer would wait for the clients, as
   * grpc's shutdown also waits for every connection to close.
   * grpc_server_destroy needs the shutdown notification received first:
   * the loop reports it (or, without a loop, it is read here). */
  grpc_server_shutdown_and_notify(g->server, g->cq, &g->shutdown_tag); /* + GOAWAY */
  if (g->thread_started) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + GRPC_STOP_GRACE_MS * 1000000L;
    ts.tv_sec += ns / 1000000000L, ts.tv_nsec = ns % 1000000000L;
    pthread_mutex_lock(&g->mu);
    while (!g->shut_seen && pthread_cond_timedwait(&g->cv, &g->mu, &ts) == 0) {
    }
    bool done = g->shut_seen;
    pthread_mutex_unlock(&g->mu);
    if (!done) grpc_server_cancel_all_calls(g->server);
    pthread_mutex_lock(&g->mu);
    while (!g->shut_seen) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
  } else {
    grpc_server_cancel_all_calls(g->server);
    for (;;) {
      grpc_event ev = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
      if (ev.type != GRPC_OP_COMPLETE) continue;
      if (ev.tag == &g->shutdown_tag) break;
      free_call(ev.tag); /* an accept that failed */
    }
  }
  grpc_server_destroy(g->server);
  grpc_completion_queue_shutdown(g->cq);
  if (g->thread_started) {
    pthread_join(g->thread, NULL); /* it drains the queue to GRPC_QUEUE_SHUTDOWN */
  } else {
    for (;;) {
      grpc_event ev = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
      if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
      if (ev.type == GRPC_OP_COMPLETE && ev.tag && ev.tag != &g->shutdown_tag) free_call(ev.tag);
    }
  }
  grpc_completion_queue_destroy(g->cq);
  grpc_shutdown();
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
  free(g);
}
