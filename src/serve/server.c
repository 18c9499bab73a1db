/* src/serve/server.c — the HTTP server's spine: loading the served models
 * into one engine + batcher + per-model planners, the libmicrohttpd daemon,
 * request bodies with a size cap, suspend/resume around inference, the
 * common answer path (timing headers, metrics), shutdown that drains.
 *
 * DESIGN
 *   Threads: MHD's pool of http_threads runs on_request(): it accumulates the
 *     body, routes, validates, tokenises and submits, then suspends the
 *     connection. Engine workers complete items (textjob.c); the last item
 *     of a request resumes the connection, and on_request() runs once more
 *     on an HTTP thread to build and queue the answer. So HTTP threads never
 *     wait for inference and JSON is never built on a worker.
 *   Ordering: a connection is suspended BEFORE its work is submitted, so a
 *     fast completion can never resume a connection that is not suspended;
 *     conn_wait.c owns that protocol (serve_go_async: a countdown of the
 *     request's pieces of work, or the route's own waiter, which may
 *     suspend it again from r->resumed until the answer is complete).
 *   Admission: serve_admit() asks the model's planner with the request's
 *     text count, deadline and age (now - t0); a refusal is answered at once
 *     by refuse() — one snprintf, no JSON library, no logging — with 429 +
 *     Retry-After + retry-after-ms (or 422). r->adm.held counts the admitted
 *     texts not yet handed to the batcher or released; serve_reply() on the
 *     HTTP thread and on_completed() release whatever is still held, so each
 *     admitted text leaves the planner exactly once. When an admitted
 *     request's answer is ready, serve_reply() reports the planner's
 *     estimate against the time since the decision (at_planner_observe).
 *   Ownership: req_ctx (and its job) is created on the first call for a
 *     request and freed by MHD's request-completed callback, which runs
 *     exactly once per request, including when the client went away.
 *   Shutdown: at_server_stop() sets `stopping` (new requests, on old and
 *     new connections, get 503 with Connection: close), waits until
 *     `inflight` (admitted async requests) reaches 0, then stops MHD (which
 *     closes the listening socket), the batcher and the engine.
 *   Lock: `lock` guards inflight and stopping only.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "serve/grpc_server.h"
#include "serve/serve_internal.h"

/* ---------------------------------------------------------------- helpers */

served_model *serve_find_model(at_server *s, const char *name) {
  for (int i = 0; i < s->n_models; i++)
    if (strcmp(s->models[i].name, name) == 0) return &s->models[i];
  return NULL;
}

/* `us` microseconds as milliseconds with three decimals ("12.345"), without
 * printf (every answer carries four of these). Returns the length. */
static size_t fmt_ms3(char *dst, uint64_t us) {
  char tmp[32];
  size_t n = 0;
  uint64_t ms = us / 1000, frac = us % 1000;
  do tmp[n++] = (char)('0' + ms % 10), ms /= 10; while (ms);
  size_t o = 0;
  while (n) dst[o++] = tmp[--n];
  dst[o++] = '.';
  dst[o++] = (char)('0' + frac / 100);
  dst[o++] = (char)('0' + frac / 10 % 10);
  dst[o++] = (char)('0' + frac % 10);
  dst[o] = '\0';
  return o;
}

/* The refusal: 429 (or 422 when no variant could ever make the deadline),
 * written with snprintf and errors.c's writer — no JSON library, no
 * logging — because under overload this is the server's most frequent
 * answer. */
int serve_refusal_text(const served_model *m, const at_plan_decision *d, double ra_ms,
                       const char **code, char *msg, size_t cap) {
  const char *name = m->name;
  const at_planner_params *pp = at_planner_get_params(m->planner);
  *code = NULL;
  if (d->reason == AT_PLAN_REJECT_INFEASIBLE) {
    *code = pp->policy == AT_PLAN_LIMIT ? "too_many_inputs" : "deadline_infeasible";
    if (pp->policy == AT_PLAN_LIMIT)
      snprintf(msg, cap,
               "%d texts in one request are more than the in-flight limit of %d (model '%s'): a "
               "request this large is never admitted; send at most %d texts per request",
               d->n_texts, pp->inflight_limit, name, pp->inflight_limit);
    else if (d->n_texts > 1)
      snprintf(msg, cap,
               "deadline %.3f ms is below the fastest variant's time for these %d texts on an "
               "idle server (%.3f ms); no variant of '%s' can answer in time: send fewer texts "
               "per request or a longer deadline",
               d->deadline_s * 1e3, d->n_texts, d->idle_s * 1e3, name);
    else if (d->weight != 1.0 && d->weight > 0)
      snprintf(msg, cap,
               "deadline %.3f ms is below the fastest variant's own service time for texts of "
               "this length (each priced %.2fx the profiled mean by the length model); no "
               "variant of '%s' can answer in time",
               d->deadline_s * 1e3, d->weight, name);
    else
      snprintf(msg, cap,
               "deadline %.3f ms is below the fastest variant's own service time; no variant of "
               "'%s' can answer in time",
               d->deadline_s * 1e3, name);
    return 422;
  }
  if (d->reason == AT_PLAN_REJECT_LIMIT)
    snprintf(msg, cap, "overloaded: in-flight limit %d reached (model '%s'); retry after %.3f ms",
             pp->inflight_limit, name, ra_ms);
  else
    snprintf(msg, cap,
             "overloaded: the work queued cannot finish within %.3f ms (model '%s'); retry "
             "after %.3f ms",
             d->deadline_s * 1e3, name, ra_ms);
  return 429;
}

double serve_retry_after_s(const at_plan_decision *d) {
  double ra_s = d->retry_after_s > 0 && isfinite(d->retry_after_s) ? d->retry_after_s : 0;
  return ra_s > 3600 ? 3600 : ra_s; /* as Retry-After: at most an hour */
}

static enum MHD_Result refuse(req_ctx *r, served_model *m, const at_plan_decision *d) {
  at_server *s = r->srv;
  at_metrics_rejection(s->metrics, m->name, at_plan_reason_name(d->reason));
  r->model_hdr = m->name;
  double ra_s = serve_retry_after_s(d);
  /* The same request again, before the slot its connection was told, is
   * refused at that slot (serve_hold_decide: holdq.c) and told its next,
   * counted from when the answer leaves (the body and the headers alike). */
  uint64_t now = at_now_ns(), hold_until = 0;
  if (d->reason != AT_PLAN_REJECT_INFEASIBLE)
    hold_until = serve_refusal_hold(r, now, &ra_s, s->holdq && d->reason == AT_PLAN_REJECT_DEADLINE);
  char msg[640];
  const char *code;
  int status = serve_refusal_text(m, d, ra_s * 1e3 < 1 ? 1 : ra_s * 1e3, &code, msg, sizeof msg);
  if (code) serve_error_hint(r, code, NULL);
  return serve_refusal_send(r, status, msg, now, hold_until, ra_s);
}

serve_client serve_client_of(req_ctx *r) {
  if (r->has_who) return r->who;
  at_server *s = r->srv;
  struct MHD_Connection *c = r->conn;
  const char *h = s->cfg.client_id_header;
  r->who = serve_client_from(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "authorization"),
                             h[0] ? MHD_lookup_connection_value(c, MHD_HEADER_KIND, h) : NULL,
                             MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-forwarded-for"),
                             MHD_lookup_connection_value(c, MHD_HEADER_KIND, "forwarded"),
                             MHD_lookup_connection_value(c, MHD_HEADER_KIND, "via"),
                             s->auth.n > 0, s->cfg.trust_forwarded);
  r->has_who = true;
  return r->who;
}

uint64_t serve_refusal_hold(req_ctx *r, uint64_t now, double *ra_s, bool may_hold) {
  at_server *s = r->srv;
  if (!s->slots) return 0;
  serve_client who = serve_client_of(r);
  uint64_t hold_until = 0, told = 0;
  if (who.kind == CLIENT_ID) { /* one slot across its connections, whatever it sends */
    told = serve_hold_told(now, *ra_s);
    hold_until = serve_hold_until(serve_slots_swap(s->slots, who.id, told), now, may_hold);
  } else if (who.kind == CLIENT_CONN && r->cs) { /* its own connection: the same request again */
    hold_until =
        serve_hold_decide(r->cs, now, *ra_s, serve_body_sig(r->body, r->body_len), may_hold);
    told = r->cs->told_ns;
  } /* else anonymous behind a proxy: never held */
  if (hold_until) *ra_s = (double)(told > hold_until ? told - hold_until : 0) / 1e9;
  return hold_until;
}

enum MHD_Result serve_refusal_send(req_ctx *r, int status, const char *msg, uint64_t now,
                                   uint64_t hold_until, double ra_s) {
  at_server *s = r->srv;
  if (status == 429) {
    double ra_ms = ra_s * 1e3 < 1 ? 1 : ra_s * 1e3;
    snprintf(r->retry_after, sizeof r->retry_after, "%d", at_plan_retry_after_header(ra_s));
    fmt_ms3(r->retry_after_ms, (uint64_t)(ra_ms * 1e3 + 0.5));
  }
  size_t len;
  char *copy = serve_error_body(r->proto, status, r->err_code, r->err_param, msg, &len);
  if (!copy) {
    r->failed_here = true;
    return MHD_NO;
  }
  if (hold_until) {
    enum MHD_Result res;
    if (!serve_go_async(r, NULL, 1, NULL, &res)) { /* stopping: 503 sent */
      free(copy);
      return res;
    }
    r->status = status; /* read on resume, which only the queue below can do */
    r->resp = copy;
    r->resp_len = len;
    r->content_type = "application/json";
    fmt_ms3(r->held_ms, (hold_until - now + 500) / 1000);
    atomic_fetch_add(&s->held_refusals, 1);
    serve_holdq_add(s->holdq, hold_until, &r->wait); /* its one piece: the due time */
    return MHD_YES;
  }
  return serve_reply(r, status, "application/json", copy, len);
}

/* Special tokens a text gains ([CLS]/[SEP], <s>/</s>): the length model
 * learns bytes per token over the rest. */
#define SPECIAL_TOKENS 2

double serve_guess_tokens(const served_model *m, size_t bytes, size_t n) {
  if (!bytes || !n) return 0;
  double bpt = atomic_load_explicit(&m->bytes_per_token, memory_order_relaxed);
  if (!(bpt > 0)) bpt = 4.0; /* English WordPiece/BPE text before anything is learnt */
  return SPECIAL_TOKENS + (double)bytes / (double)n / bpt;
}

/* What one request may teach: bytes per token between these bounds. Byte
 * fallback gives 1; English WordPiece/BPE about 4-6; 16 is already a text
 * mostly of whitespace. Without the bound one request of "a" and 1 MB of
 * spaces set the shared average near 10^4, and every other client's long
 * texts were then priced as short ones. */
#define BPT_MIN 1.0
#define BPT_MAX 16.0

void serve_learn_tokens(served_model *m, size_t bytes, size_t tokens, size_t n) {
  if (!n || tokens <= SPECIAL_TOKENS * n || !bytes) return;
  double x = (double)bytes / (double)(tokens - SPECIAL_TOKENS * n);
  x = x < BPT_MIN ? BPT_MIN : x > BPT_MAX ? BPT_MAX : x;
  double old = atomic_load_explicit(&m->bytes_per_token, memory_order_relaxed);
  /* an average over the last ~100 requests; a lost update under a race
   * only drops one sample */
  atomic_store_explicit(&m->bytes_per_token, old > 0 ? old + (x - old) / 100 : x,
                        memory_order_relaxed);
}

/* An identified client back more than this before its return slot is
 * early: a client that waits as told arrives after it. */
#define SLOT_EARLY_NS 1000000ull

bool serve_refuse_early(req_ctx *r, const char *model, uint64_t now, enum MHD_Result *res) {
  at_server *s = r->srv;
  if (!s->slots) return false;
  serve_client who = serve_client_of(r);
  if (who.kind != CLIENT_ID) return false;
  uint64_t told = serve_slots_get(s->slots, who.id);
  if (told <= now + SLOT_EARLY_NS) return false;
  /* the slot it was told is kept for it: refused before the planner (no
   * capacity taken, no demand counted), told the same slot, and held to
   * it when holds are on */
  at_metrics_rejection(s->metrics, model, "early");
  uint64_t hold_until = s->holdq ? serve_hold_until(told, now, true) : 0;
  double ra_s = (double)(told - (hold_until ? hold_until : now)) / 1e9;
  char msg[320];
  snprintf(msg, sizeof msg,
           "early: this client was told to come back %.3f ms from now (model '%s'); a request "
           "before then is refused without being considered",
           (double)(told - now) / 1e6, model);
  *res = serve_refusal_send(r, 429, msg, now, hold_until, ra_s);
  return true;
}

bool serve_admit(req_ctx *r, served_model *m, double deadline_s, size_t n_texts,
                 double tokens, enum MHD_Result *res) {
  uint64_t now = at_now_ns();
  int prio;
  const char *ph = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "x-priority");
  if (!serve_priority_parse(ph, &prio)) {
    *res = serve_error(r, 400, "x-priority must be high, normal or low (or 1, 0, -1)");
    return false;
  }
  if (!ph && r->has_body_priority) prio = r->body_priority; /* the header wins */
  if (serve_refuse_early(r, m->name, now, res)) return false;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  at_plan_request rq = {
      .deadline_s = deadline_s,
      .age_s = (double)(now - r->t0_ns) / 1e9,
      .n_texts = (int)n_texts,
      .tokens = tokens,
      .priority = prio,
      .client = serve_client_share_key(serve_client_of(r), ci ? ci->client_addr : NULL)};
  at_plan_decision d;
  if (n_texts < 1 || n_texts > (size_t)INT32_MAX ||
      /* every policy, "none" and "limit" included, lives in the planner */
      at_planner_decide_req(m->planner, now, &rq, &d) != AT_OK) {
    *res = serve_error(r, 500, "admission failed: %s", at_last_error());
    return false;
  }
  if (!d.admit) {
    *res = refuse(r, m, &d);
    return false;
  }
  r->adm.m = m;
  r->adm.d = d;
  r->adm.decided_ns = now;
  r->adm.held = n_texts;
  return true;
}

bool serve_admit_parsed(req_ctx *r, served_model *m, double deadline_s, size_t n_texts,
                        double tokens, enum MHD_Result *res) {
  if (r->adm.m && (r->adm.m != m || r->adm.held != n_texts)) {
    atomic_fetch_add(&r->srv->prescan_mismatches, 1);
    serve_release(r, r->adm.held);
    memset(&r->adm, 0, sizeof r->adm);
  }
  return r->adm.m || serve_admit(r, m, deadline_s, n_texts, tokens, res);
}

void serve_release(req_ctx *r, size_t n) {
  serve_admission *a = &r->adm;
  if (!a->m || n == 0) return;
  if (n > a->held) n = a->held; /* never more than is held: exactly once */
  if (n == 0) return;
  a->held -= n;
  serve_planner_release(r->srv, a->m, a->d.variant, (int)n, a->d.weight, 1, 0, 0, at_now_ns());
}

void serve_planner_release(at_server *s, served_model *m, int variant, int n_texts,
                           double weight, int batch_size, double observed_s, int peers,
                           uint64_t now_ns) {
  if (at_planner_finished_w(m->planner, variant, n_texts, weight, batch_size, observed_s, peers,
                            now_ns) != AT_OK)
    atomic_fetch_add(&s->release_errors, 1);
}

bool serve_go_async(req_ctx *r, void (*finish)(req_ctx *r), int pieces,
                    bool (*resumed)(req_ctx *r), enum MHD_Result *res) {
  at_server *s = r->srv;
  pthread_mutex_lock(&s->lock);
  bool stopping = s->stopping;
  if (!stopping) s->inflight++;
  pthread_mutex_unlock(&s->lock);
  if (stopping) {
    serve_release(r, r->adm.held);
    *res = serve_error(r, 503, "server is shutting down");
    return false;
  }
  r->inflight_counted = true;
  r->finish = finish;
  r->resumed = resumed;
  r->suspended = pieces > 0 || resumed;
  if (pieces > 0) conn_countdown_suspend(&r->wait, r->conn, pieces);
  return true;
}

static void destroy_ws(void *p) { at_tok_workspace_destroy(p); }

at_tok_workspace *serve_workspace(at_server *s) {
  at_tok_workspace *ws = pthread_getspecific(s->ws_key);
  if (!ws && at_tok_workspace_create(&ws) == AT_OK) pthread_setspecific(s->ws_key, ws);
  return ws;
}

static void add_ms_header(struct MHD_Response *resp, const char *name, uint64_t ns) {
  char v[32];
  fmt_ms3(v, (ns + 500) / 1000);
  MHD_add_response_header(resp, name, v);
}


static void finish_inflight(req_ctx *r) {
  at_server *s = r->srv;
  if (!r->inflight_counted) return;
  r->inflight_counted = false;
  pthread_mutex_lock(&s->lock);
  if (--s->inflight == 0) pthread_cond_broadcast(&s->idle);
  pthread_mutex_unlock(&s->lock);
}

/* Queue the prepared/given answer with timing headers; record metrics. */
void serve_log_request(req_ctx *r, int status, const char *model, const char *variant,
                       double total_ms, double queue_ms, double infer_ms, double tok_ms,
                       uint64_t bytes_out) {
  if (!r->srv->alog) return;
  serve_alog_entry e = {.request_id = r->request_id, .method = r->method, .route = r->route,
                        .model = model ? model : "", .variant = variant ? variant : "",
                        .status = status, .total_ms = total_ms, .queue_ms = queue_ms,
                        .inference_ms = infer_ms, .tokenize_ms = tok_ms, .bytes_in = r->bytes_in,
                        .bytes_out = bytes_out};
  serve_alog_write(r->srv->alog, &e);
}

/* The model and variant a request is answered and counted under (x-model,
 * x-variant, the metric labels, the access log): the admitted model, and
 * its variant once submitted to the batcher or the engine (r->finish set);
 * else the route's own (r->model_hdr, r->variant_hdr: static or
 * server-owned); "" for none. */
static void answer_labels(const req_ctx *r, const char **model, const char **variant) {
  const serve_admission *a = &r->adm;
  *model = a->m ? a->m->name : r->model_hdr ? r->model_hdr : "";
  *variant = a->m ? (r->finish ? a->m->variants[a->d.variant].name : "")
                  : r->variant_hdr ? r->variant_hdr : "";
}

enum MHD_Result serve_reply(req_ctx *r, int status, const char *ctype, char *body, size_t len) {
  at_server *s = r->srv;
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(len, body ? body : (char *)"", body ? MHD_RESPMEM_MUST_FREE
                                                                         : MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    free(body);
    r->failed_here = true;
    return MHD_NO;
  }
  if (ctype) MHD_add_response_header(resp, "Content-Type", ctype);
  if (status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
  if (r->request_id[0]) MHD_add_response_header(resp, "x-request-id", r->request_id);
  if (status == 503) { /* draining: a kept-alive client should reconnect elsewhere */
    pthread_mutex_lock(&s->lock);
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);
    if (stopping) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  }
  uint64_t now = at_now_ns();
  uint64_t total = now - r->t0_ns, queue = 0, infer = 0, tok = 0;
  /* An answer given on the HTTP thread while admitted texts are still held
   * (an error after an admission before parsing, a failed check): they will
   * never run, release them now. */
  if (r->adm.held && !r->suspended) serve_release(r, r->adm.held);
  const char *model, *variant;
  answer_labels(r, &model, &variant);
  if (model[0]) MHD_add_response_header(resp, "x-model", model);
  if (variant[0]) MHD_add_response_header(resp, "x-variant", variant);
  job *j = r->job;
  if (j) {
    queue = atomic_load(&j->max_queue_ns);
    infer = atomic_load(&j->max_compute_ns);
    tok = j->tokenize_ns;
  }
  serve_admission *a = &r->adm;
  if (a->m && r->finish && a->decided_ns && status < 400 && isfinite(a->d.est_sojourn_s)) {
    /* The overrun feedback (an admitted request that ran): the model's
     * estimate against the time from the decision to this answer being ready. */
    at_planner_observe(a->m->planner, a->d.est_sojourn_s, (double)(now - a->decided_ns) / 1e9,
                       a->d.queued, now);
    a->decided_ns = 0;
  }
  add_ms_header(resp, "x-total-time", total);
  add_ms_header(resp, "x-queue-time", queue);
  add_ms_header(resp, "x-inference-time", infer);
  add_ms_header(resp, "x-tokenization-time", tok);
  if (status == 429) { /* every 429 says when to come back, in both forms */
    if (!r->retry_after[0]) snprintf(r->retry_after, sizeof r->retry_after, "1");
    if (!r->retry_after_ms[0])
      snprintf(r->retry_after_ms, sizeof r->retry_after_ms, "%.3f",
               1e3 * strtod(r->retry_after, NULL));
  }
  if (r->retry_after[0]) MHD_add_response_header(resp, "Retry-After", r->retry_after);
  if (r->retry_after_ms[0]) MHD_add_response_header(resp, "retry-after-ms", r->retry_after_ms);
  if (r->held_ms[0]) MHD_add_response_header(resp, "x-held-ms", r->held_ms);
  if (r->infer_hdr_len[0])
    MHD_add_response_header(resp, "Inference-Header-Content-Length", r->infer_hdr_len);
  if (r->ttft[0]) MHD_add_response_header(resp, "x-time-to-first-token", r->ttft);
  if (r->tpot[0]) MHD_add_response_header(resp, "x-time-per-output-token", r->tpot);
  enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)status, resp);
  MHD_destroy_response(resp);
  r->counted = true;
  at_metrics_request(s->metrics, "http", r->route, model, variant, status, (double)total / 1e9,
                     j ? (double)queue / 1e9 : -1, j ? (double)infer / 1e9 : -1,
                     j ? (double)tok / 1e9 : -1);
  serve_log_request(r, status, model, variant, (double)total / 1e6, j ? (double)queue / 1e6 : -1,
                    j ? (double)infer / 1e6 : -1, j ? (double)tok / 1e6 : -1, len);
  return ok;
}

static char *dump(json_t *j, size_t *len) {
  char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));
  json_decref(j);
  *len = s ? strlen(s) : 0;
  return s;
}

enum MHD_Result serve_reply_json(req_ctx *r, int status, json_t *j) {
  size_t len;
  char *s = dump(j, &len);
  if (!s) return serve_error(r, 500, "could not serialise the answer");
  return serve_reply(r, status, "application/json", s, len);
}

static char *error_json(req_ctx *r, int status, const char *msg, size_t *len) {
  return serve_error_body(r->proto, status, r->err_code, r->err_param, msg, len);
}

int serve_tokenise_status(at_status st) {
  return st == AT_ERR_LIMIT ? 413 : st == AT_ERR_MODEL || st == AT_ERR_NOMEM ? 500 : 400;
}

enum MHD_Result serve_error(req_ctx *r, int status, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t len;
  char *body = error_json(r, status, msg, &len);
  return serve_reply(r, status, "application/json", body, len);
}

void serve_prepare_json(req_ctx *r, int status, json_t *j) {
  free(r->resp);
  r->status = status;
  r->resp = dump(j, &r->resp_len);
  r->content_type = "application/json";
  if (!r->resp) serve_prepare_error(r, 500, "could not serialise the answer");
}

void serve_prepare_error(req_ctx *r, int status, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  free(r->resp);
  r->status = status;
  r->resp = error_json(r, status, msg, &r->resp_len);
  r->content_type = "application/json";
}

/* ------------------------------------------------------- built-in routes */

/* The generation lanes' part of /metrics, appended at buf + o; returns the new
 * offset (planner_metrics' helper). */
static size_t gen_metrics(at_server *s, char *buf, size_t o, size_t cap) {
  at_gen_stats g = {0};
  for (int i = 0; i < s->n_lanes; i++) { /* the lanes' counts, summed */
    at_gen_stats l;
    at_gen_stats_get(s->lanes[i].gen, &l);
    g.submitted += l.submitted, g.finished += l.finished, g.rejected += l.rejected;
    g.cancelled += l.cancelled, g.preemptions += l.preemptions;
    g.tokens_generated += l.tokens_generated, g.shared_tokens += l.shared_tokens;
    g.prefill_chunks += l.prefill_chunks, g.decode_steps += l.decode_steps;
    g.waiting += l.waiting, g.running += l.running;
    g.free_blocks += l.free_blocks, g.total_blocks += l.total_blocks;
    g.prefix_query_tokens += l.prefix_query_tokens, g.prefix_hit_tokens += l.prefix_hit_tokens;
    g.cached_blocks += l.cached_blocks, g.shared_blocks += l.shared_blocks;
  }
  const char *n = s->cfg.generator.name;
  o += (size_t)snprintf(
      buf + o, cap - o,
      "# HELP anytime_gen_requests_total Generation requests by outcome.\n"
      "# TYPE anytime_gen_requests_total counter\n"
      "anytime_gen_requests_total{model=\"%s\",outcome=\"submitted\"} %llu\n"
      "anytime_gen_requests_total{model=\"%s\",outcome=\"finished\"} %llu\n"
      "anytime_gen_requests_total{model=\"%s\",outcome=\"rejected\"} %llu\n"
      "anytime_gen_requests_total{model=\"%s\",outcome=\"refused_forecast\"} %llu\n"
      "anytime_gen_requests_total{model=\"%s\",outcome=\"cancelled\"} %llu\n"
      "# HELP anytime_gen_preemptions_total Sequences evicted from the KV arena (recomputed later).\n"
      "# TYPE anytime_gen_preemptions_total counter\n"
      "anytime_gen_preemptions_total{model=\"%s\"} %llu\n"
      "# HELP anytime_gen_tokens_total Tokens generated.\n"
      "# TYPE anytime_gen_tokens_total counter\n"
      "anytime_gen_tokens_total{model=\"%s\"} %llu\n"
      "# HELP anytime_gen_shared_prompt_tokens_total Prompt positions a choice took from a sibling's KV cache instead of prefilling (n > 1).\n"
      "# TYPE anytime_gen_shared_prompt_tokens_total counter\n"
      "anytime_gen_shared_prompt_tokens_total{model=\"%s\"} %llu\n"
      "# HELP anytime_gen_steps_total Scheduler steps by kind.\n"
      "# TYPE anytime_gen_steps_total counter\n"
      "anytime_gen_steps_total{model=\"%s\",kind=\"prefill_chunk\"} %llu\n"
      "anytime_gen_steps_total{model=\"%s\",kind=\"decode\"} %llu\n"
      "# HELP anytime_gen_sequences Sequences waiting for KV blocks or running.\n"
      "# TYPE anytime_gen_sequences gauge\n"
      "anytime_gen_sequences{model=\"%s\",state=\"waiting\"} %d\n"
      "anytime_gen_sequences{model=\"%s\",state=\"running\"} %d\n"
      "# HELP anytime_gen_kv_blocks KV arena blocks (all lanes).\n"
      "# TYPE anytime_gen_kv_blocks gauge\n"
      "anytime_gen_kv_blocks{model=\"%s\",state=\"free\"} %d\n"
      "anytime_gen_kv_blocks{model=\"%s\",state=\"total\"} %d\n"
      "anytime_gen_kv_blocks{model=\"%s\",state=\"cached\"} %d\n"
      "anytime_gen_kv_blocks{model=\"%s\",state=\"shared\"} %d\n"
      "# HELP anytime_gen_prefix_tokens_total Prompt positions looked up in the prefix cache, and those found there (not prefilled).\n"
      "# TYPE anytime_gen_prefix_tokens_total counter\n"
      "anytime_gen_prefix_tokens_total{model=\"%s\",result=\"queried\"} %llu\n"
      "anytime_gen_prefix_tokens_total{model=\"%s\",result=\"hit\"} %llu\n",
      n, (unsigned long long)g.submitted, n, (unsigned long long)g.finished, n,
      (unsigned long long)g.rejected, n, (unsigned long long)atomic_load(&s->gen_refused), n,
      (unsigned long long)g.cancelled, n, (unsigned long long)g.preemptions, n,
      (unsigned long long)g.tokens_generated, n, (unsigned long long)g.shared_tokens, n,
      (unsigned long long)g.prefill_chunks, n,
      (unsigned long long)g.decode_steps, n, g.waiting, n, g.running, n, g.free_blocks, n,
      g.total_blocks, n, g.cached_blocks, n, g.shared_blocks, n,
      (unsigned long long)g.prefix_query_tokens, n, (unsigned long long)g.prefix_hit_tokens);
  /* per lane: what admission gave it, what it made, its fitted costs */
  static const char *const help =
      "# HELP anytime_gen_variant_chosen_total Generation requests admission gave each decoder variant.\n"
      "# TYPE anytime_gen_variant_chosen_total counter\n"
      "# HELP anytime_gen_variant_tokens_total Tokens generated by each decoder variant.\n"
      "# TYPE anytime_gen_variant_tokens_total counter\n"
      "# HELP anytime_gen_step_fit_seconds Fitted decode step cost: a + b * cached tokens.\n"
      "# TYPE anytime_gen_step_fit_seconds gauge\n"
      "# HELP anytime_gen_prefill_fit_seconds Fitted prefill chunk cost (the recompute price): a + b * tokens.\n"
      "# TYPE anytime_gen_prefill_fit_seconds gauge\n";
  if (o < cap) o += (size_t)snprintf(buf + o, cap - o, "%s", help);
  for (int i = 0; i < s->n_lanes && o < cap; i++) {
    at_gen_stats l;
    at_gen_stats_get(s->lanes[i].gen, &l);
    const char *v = s->lanes[i].variant;
    o += (size_t)snprintf(
        buf + o, cap - o,
        "anytime_gen_variant_chosen_total{model=\"%s\",variant=\"%s\"} %llu\n"
        "anytime_gen_variant_tokens_total{model=\"%s\",variant=\"%s\"} %llu\n"
        "anytime_gen_step_fit_seconds{model=\"%s\",variant=\"%s\",term=\"fixed\"} %.9f\n"
        "anytime_gen_step_fit_seconds{model=\"%s\",variant=\"%s\",term=\"per_cached_token\"} %.12f\n"
        "anytime_gen_prefill_fit_seconds{model=\"%s\",variant=\"%s\",term=\"fixed\"} %.9f\n"
        "anytime_gen_prefill_fit_seconds{model=\"%s\",variant=\"%s\",term=\"per_token\"} %.12f\n",
        n, v, (unsigned long long)atomic_load(&s->lanes[i].chosen), n, v,
        (unsigned long long)l.tokens_generated, n, v, l.step_a_s, n, v, l.step_b_s, n, v,
        l.prefill_a_s, n, v, l.prefill_b_s);
  }
  return o;
}

static size_t planner_metrics(void *user, char *buf, size_t cap) {
  at_server *s = user;
  size_t o = 0;
  uint64_t now = at_now_ns();
  o += (size_t)snprintf(buf + o, cap - o,
                        "# HELP anytime_planner_arrival_rate Texts per second offered to the planner and admitted by it (window); offered minus admitted is the demand refused.\n"
                        "# TYPE anytime_planner_arrival_rate gauge\n"
                        "# HELP anytime_planner_inflight_texts Texts admitted and not yet finished (the work the planner sees queued).\n"
                        "# TYPE anytime_planner_inflight_texts gauge\n"
                        "# HELP anytime_planner_overrun_seconds The overrun allowance the planner adds to estimates made with work queued.\n"
                        "# TYPE anytime_planner_overrun_seconds gauge\n"
                        "# HELP anytime_planner_queue_fill Work in flight over the worker pool, in default deadlines (1 = a whole deadline of work queued).\n"
                        "# TYPE anytime_planner_queue_fill gauge\n"
                        "# HELP anytime_planner_utilisation Offered texts/s x the most accurate variant's batch-1 service time over the workers: 1 = the pool fully busy answering everything with it; above 1 the planner degrades or refuses. The signal to autoscale on.\n"
                        "# TYPE anytime_planner_utilisation gauge\n"
                        "# HELP anytime_planner_clients_active Identified clients (API key, client id, trusted forwarded address, peer address) that offered work in the planner's window: the clients capacity is shared between.\n"
                        "# TYPE anytime_planner_clients_active gauge\n"
                        "# HELP anytime_planner_fair_yields_total Decisions in which a client past its fair share yielded to others while the pool was short (planner.fair_fill).\n"
                        "# TYPE anytime_planner_fair_yields_total counter\n"
                        "# HELP anytime_planner_horizon_capped_total Decisions in which a deadline longer than the queue horizon was capped to it while shorter deadlines were asked (planner.queue_horizon_ms).\n"
                        "# TYPE anytime_planner_horizon_capped_total counter\n"
                        "# HELP anytime_planner_release_errors_total Releases of admitted texts the planner refused (released twice or never admitted); stays 0.\n"
                        "# TYPE anytime_planner_release_errors_total counter\n"
                        "anytime_planner_release_errors_total %llu\n"
                        "# HELP anytime_prescan_refusals_total Text requests refused from a scan of the body, before it was parsed.\n"
                        "# TYPE anytime_prescan_refusals_total counter\n"
                        "anytime_prescan_refusals_total %llu\n"
                        "# HELP anytime_prescan_mismatches_total Requests admitted on a scanned text count the parse disagreed with (decided again); stays 0.\n"
                        "# TYPE anytime_prescan_mismatches_total counter\n"
                        "anytime_prescan_mismatches_total %llu\n"
                        "# HELP anytime_held_refusals_total 429s answered at the return slot the client's previous 429 gave, because it came back before it (server.hold_early_retries).\n"
                        "# TYPE anytime_held_refusals_total counter\n"
                        "anytime_held_refusals_total %llu\n"
                        "# HELP anytime_held_refusals_now Refusals being held right now.\n"
                        "# TYPE anytime_held_refusals_now gauge\n"
                        "anytime_held_refusals_now %zu\n"
                        "# HELP anytime_variant_admitted_total Texts the planner sent to each variant.\n"
                        "# TYPE anytime_variant_admitted_total counter\n"
                        "# HELP anytime_planner_service_scale Observed/profiled service-time factor.\n"
                        "# TYPE anytime_planner_service_scale gauge\n"
                        "# HELP anytime_planner_service_scale_pool The factor from Runs with the whole worker pool busy (full) and from the others (part); the planner uses the larger.\n"
                        "# TYPE anytime_planner_service_scale_pool gauge\n"
                        "# HELP anytime_planner_bytes_per_token Text bytes per token (special tokens aside) learnt from the texts tokenised: how the length model guesses a text's tokens before tokenising (0: nothing learnt yet).\n"
                        "# TYPE anytime_planner_bytes_per_token gauge\n",
                        (unsigned long long)atomic_load(&s->release_errors),
                        (unsigned long long)atomic_load(&s->prescan_refusals),
                        (unsigned long long)atomic_load(&s->prescan_mismatches),
                        (unsigned long long)atomic_load(&s->held_refusals),
                        serve_holdq_len(s->holdq));
  for (int i = 0; i < s->n_models && o < cap; i++) {
    served_model *m = &s->models[i];
    at_planner_stats st;
    if (at_planner_stats_get(m->planner, now, &st) != AT_OK) continue;
    o += (size_t)snprintf(buf + o, cap - o,
                          "anytime_planner_arrival_rate{model=\"%s\",basis=\"offered\"} %.3f\n"
                          "anytime_planner_arrival_rate{model=\"%s\",basis=\"admitted\"} %.3f\n"
                          "anytime_planner_inflight_texts{model=\"%s\"} %llu\n"
                          "anytime_planner_overrun_seconds{model=\"%s\"} %.6f\n"
                          "anytime_planner_queue_fill{model=\"%s\"} %.4f\n"
                          "anytime_planner_utilisation{model=\"%s\"} %.4f\n"
                          "anytime_planner_bytes_per_token{model=\"%s\"} %.3f\n"
                          "anytime_planner_clients_active{model=\"%s\"} %u\n"
                          "anytime_planner_fair_yields_total{model=\"%s\"} %llu\n"
                          "anytime_planner_horizon_capped_total{model=\"%s\"} %llu\n",
                          m->name, st.offered_rps, m->name, st.admitted_rps, m->name,
                          (unsigned long long)st.in_flight, m->name, st.overrun_s, m->name,
                          st.queue_fill, m->name, st.utilisation, m->name,
                          atomic_load_explicit(&m->bytes_per_token, memory_order_relaxed),
                          m->name, (unsigned)st.clients_active, m->name,
                          (unsigned long long)st.over_share, m->name,
                          (unsigned long long)st.horizon_capped);
    for (int v = 0; v < st.n_variants && o < cap; v++)
      o += (size_t)snprintf(buf + o, cap - o,
                            "anytime_variant_admitted_total{model=\"%s\",variant=\"%s\",frontier=\"%s\"} %llu\n"
                            "anytime_planner_service_scale{model=\"%s\",variant=\"%s\"} %.4f\n"
                            "anytime_planner_service_scale_pool{model=\"%s\",variant=\"%s\",pool=\"full\"} %.4f\n"
                            "anytime_planner_service_scale_pool{model=\"%s\",variant=\"%s\",pool=\"part\"} %.4f\n",
                            m->name, m->variants[v].name, st.variants[v].on_frontier ? "yes" : "no",
                            (unsigned long long)st.variants[v].admitted, m->name,
                            m->variants[v].name, st.variants[v].service_scale, m->name,
                            m->variants[v].name, st.variants[v].service_scale_full, m->name,
                            m->variants[v].name, st.variants[v].service_scale_part);
  }
  if (s->engine && o < cap) {
    at_engine_totals t = at_engine_totals_get(s->engine);
    o += (size_t)snprintf(buf + o, cap - o,
                          "# HELP anytime_engine_runs_total Runs the encoder workers finished (a batch is one Run).\n"
                          "# TYPE anytime_engine_runs_total counter\n"
                          "anytime_engine_runs_total %llu\n"
                          "# HELP anytime_engine_run_seconds_total Wall time inside those Runs.\n"
                          "# TYPE anytime_engine_run_seconds_total counter\n"
                          "anytime_engine_run_seconds_total %.6f\n"
                          "# HELP anytime_engine_run_cpu_seconds_total CPU time the workers' threads spent inside those Runs; the workers' CPU beyond it is the engine, batcher and callbacks around them.\n"
                          "# TYPE anytime_engine_run_cpu_seconds_total counter\n"
                          "anytime_engine_run_cpu_seconds_total %.6f\n",
                          (unsigned long long)t.runs, (double)t.run_wall_ns / 1e9,
                          (double)t.run_cpu_ns / 1e9);
  }
  if (s->n_lanes > 0 && o < cap) o = gen_metrics(s, buf, o, cap);
  return o < cap ? o : cap; /* did not fit: at_metrics_render asks again with more room */
}

/* GET /metrics (a route table handler, routes.c). */
enum MHD_Result serve_route_metrics(req_ctx *r, served_model *m) {
  (void)m;
  at_server *s = r->srv;
  pthread_mutex_lock(&s->lock);
  int inflight = s->inflight;
  pthread_mutex_unlock(&s->lock);
  at_metrics_set_inflight(s->metrics, inflight);
  size_t len;
  char *body = at_metrics_render(s->metrics, (int64_t)at_batcher_queued(s->batcher, -1),
                                 planner_metrics, s, &len);
  return serve_reply(r, 200, "text/plain; version=0.0.4", body, len);
}

/* --------------------------------------------------------- MHD callbacks */

/* x-request-id: the client's when it is 1..64 characters of [A-Za-z0-9._:-]
 * (what balancers and tracing headers use), else one made here: the
 * process's start time and a counter, 16 + 8 hex digits, unique per
 * server run. Echoed in the answer and written in the access log. */
static void set_request_id(at_server *s, req_ctx *r, const char *given) {
  if (serve_token_ok(given, 64)) {
    memcpy(r->request_id, given, strlen(given) + 1);
    return;
  }
  uint64_t k = atomic_fetch_add(&s->next_request_id, 1);
  snprintf(r->request_id, sizeof r->request_id, "%016llx%08llx",
           (unsigned long long)s->started_ns, (unsigned long long)(k & 0xffffffffull));
}

static enum MHD_Result answer_unauthorized(req_ctx *r) {
  return serve_error(r, 401, "this server needs an API key: send \"Authorization: Bearer KEY\" "
                     "(the key was missing or is not one of the server's)");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size,
                                  void **con_cls) {
  at_server *s = cls;
  req_ctx *r = *con_cls;
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    r->srv = s;
    r->conn = c;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->cs = ci ? ci->socket_context : NULL;
    r->t0_ns = at_now_ns();
    serve_route_label(url, r->route, sizeof r->route);
    r->proto = serve_proto_of(url);
    snprintf(r->method, sizeof r->method, "%s", method);
    set_request_id(s, r, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-request-id"));
    *con_cls = r;
    bool open = serve_route_open(url) && !(s->cfg.metrics_need_key && !strcmp(url, "/metrics"));
    if (s->auth.n > 0 && !open && /* no keys: no header lookup per request */
        !serve_auth_check(&s->auth, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                                 "Authorization")))
      r->unauthorized = true; /* answered 401 once the body has been read (and dropped) */
    /* A body declared past the cap is refused now, unread (401 first when
     * the key is wrong): waiting for it (10^18 bytes, say) would hold the
     * connection until the idle timeout. libmicrohttpd closes the
     * connection after this answer, as the body was not consumed. A chunked
     * body past the cap is read and dropped (below) and then refused. */
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
    if (declared > s->cfg.max_body_bytes && r->unauthorized) return answer_unauthorized(r);
    if (declared > s->cfg.max_body_bytes)
      return serve_error(r, 413, "request body of %llu bytes exceeds %zu bytes "
                         "(server.max_body_bytes)", declared, s->cfg.max_body_bytes);
    return MHD_YES;
  }
  if (r->suspended) { /* resumed: the work is done, answer now */
    if (r->resumed && !r->resumed(r)) return MHD_YES; /* not yet: suspended again */
    r->suspended = false;
    int failed = r->job ? atomic_load(&r->job->failed) : 0;
    if (failed)
      serve_prepare_error(r, failed == AT_ERR_QUEUE_FULL || failed == AT_ERR_SHUTDOWN ? 503 : 500,
                          "inference failed: %s", r->job->error);
    else if (r->finish)
      r->finish(r);
    enum MHD_Result res = serve_reply(r, r->status, r->content_type, r->resp, r->resp_len);
    r->resp = NULL; /* owned by MHD now */
    finish_inflight(r);
    return res;
  }
  if (*upload_size) {
    r->bytes_in += *upload_size;
    if (!r->too_large && !r->unauthorized) {
      if (r->body_len + *upload_size > s->cfg.max_body_bytes) {
        r->too_large = true;
        free(r->body);
        r->body = NULL;
        r->body_len = r->body_cap = 0;
      } else {
        if (r->body_len + *upload_size + 1 > r->body_cap) {
          size_t cap = r->body_cap ? r->body_cap : 1024; /* small bodies: malloc's fast path */
          while (cap < r->body_len + *upload_size + 1) cap *= 2;
          char *nb = realloc(r->body, cap);
          if (!nb) {
            r->failed_here = true;
            return MHD_NO;
          }
          r->body = nb;
          r->body_cap = cap;
        }
        memcpy(r->body + r->body_len, upload_data, *upload_size);
        r->body_len += *upload_size;
        r->body[r->body_len] = '\0';
      }
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->unauthorized) return answer_unauthorized(r);
  if (r->too_large)
    return serve_error(r, 413, "request body exceeds %zu bytes (server.max_body_bytes)",
                       s->cfg.max_body_bytes);
  pthread_mutex_lock(&s->lock);
  int stopping = s->stopping;
  pthread_mutex_unlock(&s->lock);
  if (stopping) return serve_error(r, 503, "server is shutting down");
  return serve_dispatch(r, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode code) {
  (void)c;
  at_server *s = cls;
  req_ctx *r = *con_cls;
  if (!r) return;
  /* A client that went away while its request was suspended: MHD may close
   * the connection after resume without calling on_request again. */
  finish_inflight(r);
  if (!r->counted) {
    /* No answer was queued: the server gave up on it (500, out of memory),
     * the connection timed out (408), the server stopped (503), or else the
     * client hung up (499, nginx's code: while its body was arriving, or
     * while it waited — a cancelled completion whose socket MHD found closed
     * on resume ends "with error", not "client abort"). Each request is
     * counted once, answered or not (serve_completions once saw a cancelled
     * request counted nowhere). */
    int st = r->failed_here                                     ? 500
             : code == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED    ? 408
             : code == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? 503
                                                               : 499;
    const char *model, *variant;
    answer_labels(r, &model, &variant);
    double total = (double)(at_now_ns() - r->t0_ns);
    r->counted = true;
    at_metrics_request(s->metrics, "http", r->route, model, variant, st, total / 1e9, -1, -1, -1);
    serve_log_request(r, st, model, variant, total / 1e6, -1, -1, -1, 0);
  }
  /* Admitted texts still held (a path that answered without releasing
   * them): release them now, so every admitted text leaves exactly once. */
  serve_release(r, r->adm.held);
  if (r->free_state) r->free_state(r->route_state);
  free(r->job); /* one block with its items */
  free(r->resp);
  free(r->body);
  free(r);
  *con_cls = NULL;
}

/* A connection opens (its state is made) or closes (freed). */
/* Linux's SCHED_BATCH (sched(7)), which <sched.h> names only under
 * _GNU_SOURCE: a thread of this class that wakes does not preempt the
 * thread running on its core; it waits for that thread's slice or sleep. */
#define SERVE_SCHED_BATCH 3

/* server.http_batch_sched: the HTTP thread that accepts a connection (and
 * serves it from then on) is moved to SCHED_BATCH once. A request's arrival
 * or a resume then no longer cuts into a worker's Run on a core both share:
 * the Run keeps its caches, and the HTTP work waits at most for the end of
 * the Run or the worker's slice. A refusal from the kernel leaves the
 * thread as it was. */
static void http_thread_sched(const at_server *s) {
  static _Thread_local bool done;
  if (done || !s->cfg.http_batch_sched) return;
  done = true;
  struct sched_param sp = {.sched_priority = 0};
  int rc = pthread_setschedparam(pthread_self(), SERVE_SCHED_BATCH, &sp);
  if (rc != 0)
    at_log(AT_LOG_WARN, "serve", "server.http_batch_sched: SCHED_BATCH refused (%s)",
           strerror(rc));
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
  (void)c;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    http_thread_sched(cls);
    *socket_context = calloc(1, sizeof(conn_state)); /* NULL: no holds for it */
  } else {
    free(*socket_context);
    *socket_context = NULL;
  }
}

/* libmicrohttpd's warnings (a client that sends garbage, hangs up, or is
 * refused past a connection cap) are rate-limited: at most
 * MHD_LOG_BURST lines per MHD_LOG_WINDOW_S; the next line after a window
 * with suppressed ones says how many were not shown, so that thousands of
 * misbehaving connections cannot write thousands of lines. */
#define MHD_LOG_BURST 10
#define MHD_LOG_WINDOW_S 10
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  at_server *s = cls;
  uint64_t now = at_now_ns();
  unsigned long long dropped = 0;
  bool show;
  pthread_mutex_lock(&s->log_lock);
  if (now - s->log_window_ns > (uint64_t)MHD_LOG_WINDOW_S * 1000000000ull) {
    dropped = s->log_suppressed;
    s->log_suppressed = 0;
    s->log_window_ns = now;
    s->log_in_window = 0;
  }
  show = s->log_in_window < MHD_LOG_BURST;
  if (show) s->log_in_window++;
  else s->log_suppressed++;
  pthread_mutex_unlock(&s->log_lock);
  if (dropped)
    at_log(AT_LOG_WARN, "http", "%llu more libmicrohttpd warnings in the last %d s were not shown",
           dropped, MHD_LOG_WINDOW_S);
  if (!show) return;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
  at_log(AT_LOG_WARN, "http", "%s", line);
}

/* ------------------------------------------------------------ lifecycle */

at_status serve_load_models(at_server *s); /* models.c */

/* A whole small file (keys, PEM) as a NUL-terminated string; NULL with
 * at_last_error() set when it cannot be read or is over 1 MiB. */
static char *read_small_file(const char *path, const char *what, size_t *len) {
  char *buf = NULL;
  return at_read_file(path, (size_t)1 << 20, what, &buf, len) == AT_OK ? buf : NULL;
}

/* API keys and TLS material from the configuration, before anything loads. */
static at_status load_access(at_server *s) {
  const at_server_config *cfg = &s->cfg;
  at_status st;
  for (int i = 0; i < cfg->n_api_keys; i++)
    if ((st = serve_auth_add(&s->auth, cfg->api_keys[i], strlen(cfg->api_keys[i]))) != AT_OK)
      return st;
  if (cfg->api_key_file[0]) {
    size_t n;
    char *text = read_small_file(cfg->api_key_file, "server.api_key_file", &n);
    if (!text) return AT_ERR_NOT_FOUND;
    st = serve_auth_add_text(&s->auth, text, n, cfg->api_key_file);
    free(text);
    if (st != AT_OK) return st;
    if (s->auth.n == 0)
      return at_fail(AT_ERR_INVALID_ARG, "server.api_key_file '%s' holds no key", cfg->api_key_file);
  }
  if (!cfg->tls_cert[0] != !cfg->tls_key[0])
    return at_fail(AT_ERR_INVALID_ARG, "HTTPS needs both a certificate and a key "
                   "(server.tls_cert and server.tls_key, or --tls-cert and --tls-key)");
  if (cfg->tls_cert[0]) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
      return at_fail(AT_ERR_UNSUPPORTED, "this libmicrohttpd was built without TLS");
    if (!(s->tls_cert_pem = read_small_file(cfg->tls_cert, "server.tls_cert", NULL)) ||
        !(s->tls_key_pem = read_small_file(cfg->tls_key, "server.tls_key", NULL)))
      return AT_ERR_NOT_FOUND;
  }
  if (cfg->access_log[0] && (st = serve_alog_open(cfg->access_log, &s->alog)) != AT_OK) return st;
  bool loopback = !strncmp(cfg->host, "127.", 4) || !strcmp(cfg->host, "localhost");
  if (!loopback && s->auth.n == 0)
    at_log(AT_LOG_WARN, "serve",
           "!!! listening on %s WITHOUT an API key: anyone who can reach this address can run "
           "the models. Set one with --api-key KEY, ANYTIME_API_KEY or server.api_key_file "
           "(docs/deployment.md) !!!", cfg->host);
  return AT_OK;
}

at_status at_server_start(const at_server_config *cfg, at_server **out) {
  if (!cfg || !out) return at_fail(AT_ERR_INVALID_ARG, "cfg and out are required");
  *out = NULL;
  if (cfg->n_models < 1 && !cfg->generator.enabled)
    return at_fail(AT_ERR_INVALID_ARG, "no models configured");
  at_status cst = at_server_config_check(cfg); /* whatever filled it: file, flags, code */
  if (cst != AT_OK) return cst;
  for (int m = 0; m < cfg->n_models; m++) {
    const at_server_model_config *mc = &cfg->models[m];
    if (!at_server_name_valid(mc->name))
      return at_fail(AT_ERR_INVALID_ARG, "model name '%s' is not 1..63 of [A-Za-z0-9._:-] "
                     "(names go into headers, metric labels and V2 URLs; with serve --model, give --name)",
                     mc->name);
    for (int v = 0; v < mc->n_variants; v++)
      if (!at_server_name_valid(mc->variants[v].name))
        return at_fail(AT_ERR_INVALID_ARG, "model '%s': variant name '%s' is not 1..63 of "
                       "[A-Za-z0-9._:-]", mc->name, mc->variants[v].name);
  }
  if (cfg->generator.enabled && !at_server_name_valid(cfg->generator.name))
    return at_fail(AT_ERR_INVALID_ARG, "generator name '%s' is not 1..63 of [A-Za-z0-9._:-] "
                   "(names go into headers, metric labels and V2 URLs)", cfg->generator.name);
  at_server *s = calloc(1, sizeof *s);
  if (!s) return at_fail(AT_ERR_NOMEM, "out of memory");
  s->cfg = *cfg;
  at_status ast = load_access(s);
  if (ast != AT_OK) {
    serve_alog_close(s->alog);
    free(s->tls_cert_pem);
    free(s->tls_key_pem);
    free(s);
    return ast;
  }
  s->started_ns = at_now_ns();
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->log_lock, NULL);
  pthread_cond_init(&s->idle, NULL);
  pthread_key_create(&s->ws_key, destroy_ws);
  s->metrics = at_metrics_create();
  at_status st = s->metrics ? serve_load_models(s) : at_fail(AT_ERR_NOMEM, "out of memory");
  if (st == AT_OK && cfg->generator.enabled) st = serve_load_generator(s);
  if (st == AT_OK && cfg->hold_early_retries) st = serve_holdq_create(&s->holdq);
  if (st == AT_OK) st = serve_slots_create(1u << 14, &s->slots);
  if (st != AT_OK) {
    at_server_stop(s);
    return st;
  }
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)cfg->port);
  if (inet_pton(AF_INET, cfg->host, &addr.sin_addr) != 1) {
    at_server_stop(s);
    return at_fail(AT_ERR_INVALID_ARG, "host '%s' is not an IPv4 address", cfg->host);
  }
  /* poll(), not epoll: libmicrohttpd's epoll loop (0.9.75, and its master
   * as of 2025) asks epoll_wait again, with the same timeout, whenever one
   * call returned its full 128 events, and only then handles them; when
   * exactly 128 were ready (a thread's 128 keep-alive clients all sending at
   * once) the thread sits on them until some other event or a connection's
   * timeout. tests/integration/conn_wave.c makes that wave; with epoll it
   * waited until the clients gave up (20 s in hey), with poll() it is
   * answered at once. poll() costs a pass over the thread's connections per
   * wake-up, which at max_connections 4,096 over 2 threads is some tens of
   * microseconds. */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ERROR_LOG;
  if (s->tls_cert_pem) flags |= MHD_USE_TLS;
  struct MHD_OptionItem opts[] = {
      /* first, so that one HTTP thread starts after it: a pool of one is no
       * pool, and libmicrohttpd warns when asked for it */
      {MHD_OPTION_THREAD_POOL_SIZE, cfg->http_threads, NULL},
      {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s},
      {MHD_OPTION_SOCK_ADDR, 0, &addr},
      {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s},
      {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s},
      {MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s, NULL},
      {MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, NULL},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_connections_per_client, NULL},
      /* the connection's memory pool holds the request line, the headers
       * and its read buffer (the body is copied out as it arrives); past
       * it libmicrohttpd answers 431. The default, 32 KiB, is its own. */
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, cfg->max_header_bytes, NULL},
      {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
      {s->tls_cert_pem ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->tls_cert_pem},
      {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key_pem},
      {MHD_OPTION_END, 0, NULL},
  };
  s->daemon = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, s,
                               MHD_OPTION_ARRAY, opts + (cfg->http_threads > 1 ? 0 : 1),
                               MHD_OPTION_END);
  if (!s->daemon) {
    at_server_stop(s);
    return at_fail(AT_ERR_IO, "cannot listen on %s:%d (in use, or not permitted)", cfg->host,
                   cfg->port);
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : cfg->port;
  if (cfg->grpc_port > 0 && (st = serve_grpc_start(s)) != AT_OK) { /* grpc_server.c */
    at_server_stop(s);
    return st;
  }
  at_log(AT_LOG_INFO, "serve", "listening on %s://%s:%d", s->tls_cert_pem ? "https" : "http",
         cfg->host, s->port);
  *out = s;
  return AT_OK;
}

int at_server_port(const at_server *s) { return s ? s->port : 0; }

at_status at_server_reopen_logs(at_server *s) {
  if (!s) return at_fail(AT_ERR_INVALID_ARG, "server required");
  return serve_alog_reopen(s->alog);
}

void at_server_stop(at_server *s) {
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_mutex_unlock(&s->lock);
  if (s->daemon) {
    /* The listener stays open through the drain (new connections are
     * answered 503 with Connection: close) and closes in MHD_stop_daemon().
     * MHD_quiesce_daemon() is not used: a client that connects during the
     * drain would find the port closed instead of a 503 saying why
     * (serve_drain holds it); under the epoll loop it also raced the
     * worker that drops the listen socket at the connection limit, and
     * libmicrohttpd 0.9.75 aborted. */
    serve_holdq_flush(s->holdq); /* held refusals are answered now */
    /* Drain: every admitted request is answered before the daemon stops.
     * A drain that takes over 5 s says where the requests are, every 5 s
     * (requests in flight, texts queued in the batcher, Runs pending in the
     * engine, texts the planners hold), so a request that was lost shows
     * where it was lost rather than only hanging the shutdown. */
    pthread_mutex_lock(&s->lock);
    while (s->inflight > 0) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts); /* s->idle uses the default clock */
      ts.tv_sec += 5;
      if (pthread_cond_timedwait(&s->idle, &s->lock, &ts) == 0 || s->inflight == 0) continue;
      int inflight = s->inflight;
      pthread_mutex_unlock(&s->lock);
      unsigned long long texts = 0;
      for (int i = 0; i < s->n_models; i++) {
        at_planner_stats st;
        if (at_planner_stats_get(s->models[i].planner, at_now_ns(), &st) == AT_OK)
          texts += (unsigned long long)st.in_flight;
      }
      at_log(AT_LOG_WARN, "serve",
             "draining for 5 s more: %d request(s) in flight; %zu text(s) queued in the "
             "batcher, %zu Run(s) pending in the engine, %llu text(s) held by the planners, "
             "%zu refusal(s) held",
             inflight, at_batcher_queued(s->batcher, -1), at_engine_pending(s->engine), texts,
             serve_holdq_len(s->holdq));
      pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    serve_holdq_destroy(s->holdq); /* empty: every held request was answered */
    s->holdq = NULL;
    MHD_stop_daemon(s->daemon);
  }
  serve_grpc_stop(s->grpc); /* after the drain, before the batcher goes */
  s->grpc = NULL;
  for (int i = 0; i < SERVE_MAX_GEN_LANES; i++) { /* also a lane half made */
    at_gen_destroy(s->lanes[i].gen);
    at_lm_close(s->lanes[i].lm);
  }
  at_gen_turns_destroy(s->gen_turns); /* after every lane using it */
  if (s->gen_offered.counts) {
    at_rate_free(&s->gen_offered);
    pthread_mutex_destroy(&s->gen_demand_lock);
  }
  at_chat_template_destroy(s->chat_tpl);
  at_batcher_destroy(s->batcher);
  at_engine_destroy(s->engine);
  for (int i = 0; i < s->n_models; i++) {
    served_model *m = &s->models[i];
    at_tokenizer_destroy(m->tok);
    at_planner_destroy(m->planner);
    for (int k = 0; k < m->n_labels; k++) free(m->labels[k]);
    free(m->labels);
    for (int k = 0; k < m->n_prompts; k++) free(m->prompt_name[k]), free(m->prompt_text[k]);
  }
  serve_holdq_destroy(s->holdq); /* a start that failed before the daemon ran */
  serve_slots_destroy(s->slots);
  at_metrics_destroy(s->metrics);
  pthread_key_delete(s->ws_key);
  pthread_cond_destroy(&s->idle);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->log_lock);
  serve_alog_close(s->alog);
  free(s->tls_cert_pem);
  if (s->tls_key_pem) { /* the private key: cleared before it is freed */
    memset(s->tls_key_pem, 0, strlen(s->tls_key_pem));
    free(s->tls_key_pem);
  }
  free(s);
}
