/* src/serve/serve_internal.h — what the server's files share: the served
 * model table, the per-connection request context, the text job that
 * carries a request's items through planner -> batcher -> task head, and
 * the response helpers the route files use. Internal to src/serve. */
#ifndef ANYTIME_SERVE_INTERNAL_H
#define ANYTIME_SERVE_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "anytime/anytime.h"
#include "anytime/batcher.h"
#include "anytime/plan.h"
#include "anytime/server.h"
#include "anytime/tokenizer.h"
#include "serve/accesslog.h"
#include "serve/auth.h"
#include "serve/conn_wait.h"
#include "serve/errors.h"
#include "serve/client_id.h"
#include "serve/holdq.h"
#include "serve/metrics.h"
#include "plan/rate.h"

typedef enum { TASK_CLASSIFY = 0, TASK_EMBED = 1 } serve_task;

typedef struct served_variant {
  char name[64];
  int engine_index;
  double accuracy;
} served_variant;

typedef struct served_model {
  char name[64];
  serve_task task;
  at_tokenizer *tok;
  int32_t pad_id;
  char **labels;            /* id2label, n_labels entries (classify) */
  int n_labels;
  size_t max_tokens;        /* per input, including special tokens */
  int64_t id_limit;         /* token ids below this are safe to batch: the smaller of
                               config.json's vocab_size and the tokenizer's */
  int64_t type_limit;       /* token_type_ids below this (type_vocab_size; default 1) */
  int64_t vocab_size;       /* config.json's vocab_size, else the tokenizer's: a V2
                               input_ids value outside [0, this) is the client's 400 */
  int64_t type_vocab_size;  /* config.json's type_vocab_size (0: not stated): a V2
                               token_type_ids value outside [0, this) is a 400 */
  size_t out_dim;           /* n_labels (classify) or hidden size (embed) */
  int head_output;          /* output index: logits / sentence_embedding / last_hidden_state */
  at_pooling pooling;       /* embed: what the export files say (mean by default) */
  at_pooling head_pooling;  /* embed: what the head does (AT_POOL_NONE: graph pooled) */
  bool dense_module;        /* a Dense module follows pooling (the graph must include it) */
  /* embed: sentence-transformers prompts (config_sentence_transformers.json):
   * prompt_text[i] goes before every input of a request that names
   * prompt_name[i] (TEI's "prompt_name"), default_prompt (-1: none) before
   * every other; prompt_skip[i] tokens ([CLS] and the prompt's) are left out
   * of pooling when 1_Pooling says include_prompt: false, else 0. */
  int n_prompts, default_prompt;
  char *prompt_name[AT_MODEL_MAX_PROMPTS], *prompt_text[AT_MODEL_MAX_PROMPTS];
  size_t prompt_skip[AT_MODEL_MAX_PROMPTS];
  bool multi_label;         /* classify: problem_type multi_label_classification (sigmoid) */
  int n_variants;           /* ordered most accurate first */
  served_variant variants[AT_SERVER_MAX_VARIANTS];
  at_planner *planner;      /* indices = positions in variants[] */
  char tokenizer_path[AT_PATH_CAP];
  /* text bytes per token beyond the special ones, learnt from the texts
   * tokenised (0: none yet; serve_guess_tokens() then assumes 4): how the
   * planner's length model learns a text's length before tokenising */
  _Atomic double bytes_per_token;
} served_model;

/* One generation lane: a decoder variant and its scheduler. */
#define SERVE_MAX_GEN_LANES 2
typedef struct serve_gen_lane {
  at_lm *lm;               /* the variant's model (owned) */
  at_generator *gen;       /* its scheduler; owns the decoder */
  at_gen_params params;    /* what it was created with (the forecast reads them) */
  char variant[32];        /* the variant's name, as at_lm resolved it */
  atomic_uint_least64_t chosen; /* requests admission gave this lane */
} serve_gen_lane;

struct at_server {
  at_server_config cfg;
  at_engine *engine;
  at_batcher *batcher;
  at_metrics *metrics;
  struct MHD_Daemon *daemon;
  int port;
  int n_models;
  served_model models[AT_SERVER_MAX_MODELS];
  int variant_model[256];    /* engine variant index -> model index */
  int variant_slot[256];     /* engine variant index -> position in model->variants */
  pthread_key_t ws_key;      /* per-HTTP-thread tokenizer workspace */
  /* The generation lanes, one per decoder variant, most accurate first
   * (generator.variant, then generator.fallback_variant); n_lanes = 0: no
   * generator. One scheduler thread drives them all (gen_turns): they
   * alternate steps on the CPU one lane would use. */
  serve_gen_lane lanes[SERVE_MAX_GEN_LANES];
  int n_lanes;
  at_gen_turns *gen_turns;
  /* With more than one lane: the generation requests reaching the variant
   * choice over the last second, refused or not (channel 0) and refused
   * (channel 1), and the last choice's carrier: the demand that decides
   * which lane carries the load (at_gen_choose_lane), under its lock. */
  pthread_mutex_t gen_demand_lock;
  at_rate_window gen_offered;
  int gen_carrier;
  at_lm *lm;                 /* lanes[0].lm (not owned separately): the tokenizer
                                and EOS ids every lane shares; NULL: none */
  struct at_chat_template *chat_tpl; /* its chat template (NULL: no chat route) */
  char chat_tpl_error[512];  /* why there is none */
  uint64_t started_ns;

  atomic_uint_least64_t release_errors; /* planner releases refused (a bug if ever > 0) */
  atomic_uint_least64_t prescan_refusals;  /* refused before the body was parsed */
  atomic_uint_least64_t prescan_mismatches; /* a scanned count the parse disagreed with */
  atomic_uint_least64_t held_refusals;     /* 429s answered at the client's return slot */
  atomic_uint_least64_t gen_refused;       /* generation requests refused by their forecast */
  serve_holdq *holdq;        /* held refusals (NULL: server.hold_early_retries off) */
  serve_slots *slots;        /* identified clients' return slots (client_id.h) */
  serve_auth auth;           /* API keys (none: every request passes) */
  serve_alog *alog;          /* access log (NULL: off) */
  pthread_mutex_t log_lock;  /* guards the libmicrohttpd warning rate limit: */
  uint64_t log_window_ns;
  int log_in_window;
  unsigned long long log_suppressed;
  atomic_uint_least64_t next_request_id;
  char *tls_cert_pem, *tls_key_pem; /* HTTPS (NULL: plain HTTP) */
  struct serve_grpc *grpc;   /* the KServe V2 gRPC front (grpc_server.h; NULL: off) */

  pthread_mutex_t lock;
  pthread_cond_t idle;       /* inflight reached 0 */
  int inflight;              /* guarded by lock: admitted async requests */
  int stopping;              /* guarded by lock */
};

struct job;

/* A request's admission: the planner's decision and when it was made. Set
 * by serve_admit(); `admitted` texts are in flight in the planner until
 * released — by the job's items as they finish, or by serve_release() when
 * they will never run. */
typedef struct serve_admission {
  served_model *m;           /* NULL: no admission asked */
  at_plan_decision d;
  uint64_t decided_ns;       /* monotonic; 0 after the overrun was observed */
  size_t held;               /* admitted texts neither handed to the batcher nor
                                released yet (HTTP thread only); whatever is
                                left when the request ends is released then */
} serve_admission;

/* One HTTP request from first byte to answer. */
typedef struct req_ctx {
  at_server *srv;
  struct MHD_Connection *conn;
  conn_state *cs;            /* the connection's state (holdq.h; created when it
                                opens, freed when it closes; NULL if none) */
  uint64_t t0_ns;
  char *body;
  size_t body_len, body_cap;
  bool too_large;
  bool unauthorized;         /* no or a wrong API key: its body is not kept, 401 */
  char request_id[72];       /* x-request-id: the client's (checked) or made here */
  int body_priority;         /* the body's "priority" (V2: "parameters"."priority"), used
                                when there is no x-priority header */
  serve_client who;          /* serve_client_of()'s answer, once has_who */
  bool has_who;
  bool has_body_priority;
  char method[12];
  uint64_t bytes_in;         /* body bytes received (kept or not) */
  bool suspended;            /* waiting for its work (serve_go_async): the next
                                call of on_request is a resume */
  conn_countdown wait;       /* how it waits, when it waits for n pieces */
  /* Set by a route whose own conn_waiter suspends and wakes the request:
   * called on every resume (HTTP thread); true: build the answer now
   * (finish), false: it suspended the connection again. */
  bool (*resumed)(struct req_ctx *r);
  bool inflight_counted;     /* counted in srv->inflight until answered or closed */
  bool counted;              /* in anytime_requests_total and the access log: an
                                answer queued, or (on_completed) a 499/408/503/500
                                for a request that ended without one; once */
  bool failed_here;          /* on_request gave up on it (out of memory): 500 */
  char route[48];            /* for metrics, e.g. "/embed" */
  serve_proto proto;         /* whose error object its errors are (errors.h) */
  const struct serve_route *rt; /* the route dispatch chose (NULL before) */
  /* OpenAI's error.code and error.param for the next error answer (NULL:
   * the status's code, no param): set by serve_error_hint() where the
   * cause is known (an unknown model, a prompt past the context). */
  const char *err_code, *err_param;
  /* The prepared answer (built on resume for async routes). */
  int status;
  char *resp;                /* malloc'ed */
  size_t resp_len;
  const char *content_type;
  char retry_after[16];      /* 429: Retry-After (whole seconds) */
  char retry_after_ms[24];   /* 429: retry-after-ms (what OpenAI's SDK reads first) */
  char ttft[24], tpot[24];   /* completions: x-time-to-first-token / -per-output-token */
  char held_ms[24];          /* a held 429: x-held-ms, how long it was held */
  char infer_hdr_len[24];    /* a V2 answer with binary outputs: its JSON header's
                                length, sent as Inference-Header-Content-Length */
  const char *model_hdr;     /* x-model for answers without a job (static or server-owned) */
  const char *variant_hdr;   /* x-variant for them, when one was chosen (the same) */
  serve_admission adm;       /* the planner's decision, if one was asked */
  struct job *job;
  /* Set by the async work before resuming: builds resp from job. */
  void (*finish)(struct req_ctx *r);
  void *route_state;         /* route-specific (freed by finish or on completion) */
  void (*free_state)(void *);
} req_ctx;

/* One row of a job: a text's token ids, or one row of a V2 tensor request. */
typedef struct job_item {
  struct job *j;
  const int64_t *ids;        /* len tokens; owned by the job or the route's state */
  const int64_t *types;      /* token_type_ids (len) or NULL */
  size_t len;
  size_t index;              /* row in the request */
  float *out;                /* text jobs: out_dim floats: logits, or pooled embedding */
  int batch_size;
} job_item;

/* Rows a route handles itself (V2 tensors): called on an engine worker for
 * each item that ran, instead of the task head; writes only that row's
 * storage. A status other than AT_OK fails the job with `err`. */
typedef at_status (*job_row_fn)(struct job *j, job_item *it, const at_item_result *res,
                                char *err, size_t err_cap);

/* The items of one request, sent to one variant. Owned by the req_ctx. */
typedef struct job {
  req_ctx *r;
  served_model *m;
  int slot;                  /* position in m->variants */
  size_t n;
  job_item *items;
  job_row_fn on_row;         /* NULL: the model's task head */
  void *row_user;
  atomic_int failed;         /* an at_status, 0 if none */
  char error[256];
  uint64_t tokenize_ns;
  atomic_uint_least64_t max_queue_ns, max_compute_ns;
  size_t prompt_tokens;
  size_t pool_skip;          /* embed: leading tokens pooling leaves out (a prompt's) */
  bool truncated_any;
} job;

/* Is `s` 1..max_len characters of [A-Za-z0-9._:-]? The one alphabet for
 * what the server echoes into headers and metric labels: served names
 * (at_server_name_valid) and request ids. (config.c) */
bool serve_token_ok(const char *s, size_t max_len);

/* ---- response helpers (server.c) ---- */
/* The HTTP status for a tokeniser failure `st`: 413 for a text past a
 * limit, 500 when the tokenizer itself cannot encode it (AT_ERR_MODEL: e.g.
 * its unk_token is missing from its vocabulary — the server's files, not
 * the client, are at fault) or memory ran out, 400 otherwise (the text). */
int serve_tokenise_status(at_status st);
enum MHD_Result serve_reply(req_ctx *r, int status, const char *ctype, char *body, size_t len);
enum MHD_Result serve_reply_json(req_ctx *r, int status, json_t *j); /* steals j */
/* An error answer in the request's protocol's error object (errors.h). */
enum MHD_Result serve_error(req_ctx *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Name OpenAI's error.code and error.param (static strings) for the error
 * answer that follows; a chainable no-op for the other protocols. */
static inline req_ctx *serve_error_hint(req_ctx *r, const char *code, const char *param) {
  r->err_code = code;
  r->err_param = param;
  return r;
}
/* Prepare (not send) a JSON or error answer; for async completion. */
void serve_prepare_json(req_ctx *r, int status, json_t *j);
void serve_prepare_error(req_ctx *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

served_model *serve_find_model(at_server *s, const char *name);
/* Ask the planner about a request of `n_texts` texts with the client's
 * deadline (seconds, <= 0 = the default) and its age (now - r->t0_ns).
 * Admitted: fills r->adm and returns true; the caller owns the n_texts in
 * flight and must release each exactly once (the job's items do as they
 * finish; serve_release() for any that never run). Refused: the answer has
 * been sent (429 with Retry-After and retry-after-ms, or 422 when no
 * variant could ever make the deadline), *res says how, returns false. */
bool serve_admit(req_ctx *r, served_model *m, double deadline_s, size_t n_texts,
                 double tokens, enum MHD_Result *res);
/* serve_admit() for a request whose body has been parsed into n_texts:
 * an admission before parsing (rj_predecide) stands if it was for this
 * model and count; otherwise it is released (counted in
 * prescan_mismatches) and the planner decides again. */
bool serve_admit_parsed(req_ctx *r, served_model *m, double deadline_s, size_t n_texts,
                        double tokens, enum MHD_Result *res);
/* The tokens per text the planner's length model prices (`tokens` above)
 * for n texts of `bytes` bytes in all, from the model's learnt bytes per
 * token, before anything is tokenised; 0 (unknown) for bytes or n of 0. */
double serve_guess_tokens(const served_model *m, size_t bytes, size_t n);
/* Learn the bytes per token from texts just tokenised: `bytes` of text gave
 * `tokens` ids in all over n texts (special tokens included). Any thread. */
void serve_learn_tokens(served_model *m, size_t bytes, size_t tokens, size_t n);
/* Release `n` admitted texts that will never run (observed 0). */
void serve_release(req_ctx *r, size_t n);
/* The one way a request goes asynchronous (inference, a held refusal, a
 * generation): it is counted in the server's in-flight requests (shutdown
 * waits for them) and `finish` (may be NULL) will build its answer on
 * resume. How its connection waits (conn_wait.h):
 *   pieces >= 1: suspended here until conn_countdown_done(&r->wait, ...)
 *     has counted that many pieces of work done — so the caller hands its
 *     work out after this call, and no completion can resume a connection
 *     that is not yet suspended;
 *   pieces 0 with `resumed`: the route's own conn_waiter suspends and wakes
 *     it (the route suspends it before handing its work out); on_request
 *     calls resumed(r) on every resume (r->resumed);
 *   pieces 0 without: not suspended (a streamed answer, whose reader
 *     suspends and resumes the connection itself).
 * Returns false when the server is stopping: then its held texts are
 * released, 503 is sent, *res says how, and nothing is suspended. */
bool serve_go_async(req_ctx *r, void (*finish)(req_ctx *r), int pieces,
                    bool (*resumed)(req_ctx *r), enum MHD_Result *res);
/* at_planner_finished_w() for texts of model `m` admitted at price
 * `weight` each (the decision's), counting a refusal (a
 * text released twice, or never admitted) in s->release_errors, which
 * /metrics exports so tests can hold it at 0. Any thread. */
void serve_planner_release(at_server *s, served_model *m, int variant, int n_texts,
                           double weight, int batch_size, double observed_s, int peers,
                           uint64_t now_ns);
/* One access-log line for an answered request (nothing when the log is
 * off): serve_reply() calls it for every answer it sends; a streamed answer
 * calls it when its response starts. Times in ms, < 0 = not measured. */
void serve_log_request(req_ctx *r, int status, const char *model, const char *variant,
                       double total_ms, double queue_ms, double infer_ms, double tok_ms,
                       uint64_t bytes_out);
/* The tokenizer workspace of the calling HTTP thread. */
at_tok_workspace *serve_workspace(at_server *s);

/* ---- text jobs (textjob.c) ---- */
typedef struct text_opts {
  bool truncate;             /* cut inputs longer than max_tokens instead of 413 */
  at_trunc_direction trunc_dir; /* which end truncate cuts (0: tokenizer.json's) */
  bool use_prompt;           /* embed: put the model's prompt `prompt` before each text */
  int prompt;
  double deadline_s;         /* <= 0: the planner's default */
  /* Text pairs (cross-encoders): pairs[i] (pair_lens[i] bytes) is encoded as
   * the second sequence with texts[i], token_type_ids from the tokenizer's
   * pair template; pairs NULL, or pairs[i] NULL, for a single text. */
  const char *const *pairs;
  const size_t *pair_lens;
} text_opts;

/* The token ids of an admitted request's n texts (text_encode.c; both
 * fronts use it): text i has len[i] ids at ids + off[i], and with pairs its
 * len[i] type ids right after them. ids and off (len shares off's block)
 * are freed by serve_text_ids_free(); a caller that keeps ids sets it NULL
 * first. */
typedef struct text_ids {
  int64_t *ids;
  size_t *off, *len;
  size_t n, total;   /* total: the sum of len */
  bool types;        /* type ids stored (text pairs) */
  size_t pool_skip;  /* leading tokens pooling leaves out (the prompt's) */
  uint64_t ns;       /* time spent tokenising */
} text_ids;
typedef struct text_ids_error {
  int status;              /* the HTTP status: 400, 413 or 500 */
  const char *code, *param; /* the OpenAI error code and param, or NULL */
  char msg[384];
} text_ids_error;
/* Put o's prompt before each text (o->use_prompt, single texts), tokenise
 * on this thread's workspace, and check every id against the model's tables
 * and every text against max_tokens; teaches the length model. AT_OK fills
 * `out`; otherwise `e` says why and nothing is allocated. The caller holds
 * (and on failure releases) the planner's admission. Any thread. */
at_status serve_text_ids(at_server *s, served_model *m, const char *const *texts,
                         const size_t *lens, size_t n, const text_opts *o, text_ids *out,
                         text_ids_error *e);
void serve_text_ids_free(text_ids *t);

/* Cheap checks (count, empty strings), then the planner (serve_admit: a
 * refusal costs no tokenising; a request admitted before parsing by
 * rj_predecide() is checked against its parsed count and model, and
 * decided again if they differ), then tokenise and submit every text to the
 * batcher; on success the connection is suspended and `finish` runs (on
 * the HTTP thread, after resume) to build the answer from r->job. On
 * failure an error answer has been sent (4xx/429/503), every admitted text
 * has been released, and the return value says how the answer went. */
/* The prompt an embed request gets: the one `name` names (NULL: the model's
 * default, if any). Fills o->use_prompt/o->prompt and returns true, or
 * writes why not (an unknown name, a model without prompts) to err and
 * returns false. */
bool serve_pick_prompt(const served_model *m, const char *name, text_opts *o, char *err,
                       size_t cap);
enum MHD_Result serve_run_text_job(req_ctx *r, served_model *m, const char *const *texts,
                                   const size_t *lens, size_t n, const text_opts *o,
                                   void (*finish)(req_ctx *r));
/* A job of `n` items with `extra` zeroed bytes after its items (for token
 * ids and head outputs); one calloc, freed with the req_ctx. NULL if out
 * of memory. */
job *serve_job_alloc(req_ctx *r, served_model *m, size_t n, size_t extra);
/* Submit an admitted job (r->adm) to the batcher: suspend the connection,
 * queue every item; `finish` builds the answer after the last item. Items
 * that never enter the batcher are released and fail the job (503/500).
 * Shutting down: answers 503 and releases everything. Takes ownership of
 * `j` (r->job). */
enum MHD_Result serve_submit_job(req_ctx *r, job *j, void (*finish)(req_ctx *r));

/* The words of a planner refusal `d` of model m, for both fronts: returns
 * 422 (no variant could ever answer in time, or more texts than the
 * in-flight limit: a retry cannot succeed, so no retry advice) or 429
 * (overloaded: retry after ra_ms), with the message in msg and, for a 422,
 * the OpenAI error code in *code (NULL for a 429). */
int serve_refusal_text(const served_model *m, const at_plan_decision *d, double ra_ms,
                       const char **code, char *msg, size_t cap);
/* A refusal's retry advice in seconds: the decision's, 0 when it has none,
 * at most an hour (as Retry-After). Both fronts. */
double serve_retry_after_s(const at_plan_decision *d);

/* ---- routes ---- */
/* routes.c: the route table. serve_dispatch answers a request whose body
 * has been read: the route whose path (exact, or with one {m} segment, a
 * served model's name) and method match, 405 naming the method when only
 * the path matches, 404 otherwise; it sets r->route, the metrics label (the
 * pattern). serve_route_open: whether a path answers without an API key
 * (the health probes). serve_route_label: the label a path will have
 * (whatever the method), "other" if none; set when the headers arrive, so
 * that a request its client abandons before dispatch is counted under its
 * route. Any HTTP thread. */
enum MHD_Result serve_dispatch(req_ctx *r, const char *url, const char *method);
bool serve_route_open(const char *url);
void serve_route_label(const char *url, char *out, size_t n);
/* One route's handler: the method is checked, m is the {m} model (or NULL). */
typedef enum MHD_Result (*serve_route_fn)(req_ctx *r, served_model *m);
typedef struct serve_route {
  const char *method; /* "GET" (HEAD answers too) or "POST" */
  const char *path;   /* exact, or with one "{m}" segment */
  serve_route_fn fn;
  bool open;          /* answers without an API key */
  /* The JSON body members the route reads (fields.h; NULL-terminated),
   * every other refused with 400; NULL: no JSON body, or members not
   * checked (docs/api.md's conformance table says which). */
  const char *const *fields;
} serve_route;
/* The table itself, for the tests that hold docs/api.md to it. */
const serve_route *serve_routes(size_t *n);
enum MHD_Result serve_route_metrics(req_ctx *r, served_model *m);        /* server.c */
enum MHD_Result serve_route_health(req_ctx *r, served_model *m);         /* routes_tei.c */
enum MHD_Result serve_route_info(req_ctx *r, served_model *m);
enum MHD_Result serve_route_embed(req_ctx *r, served_model *m);
enum MHD_Result serve_route_predict(req_ctx *r, served_model *m);
enum MHD_Result serve_route_rerank(req_ctx *r, served_model *m);
enum MHD_Result serve_route_tokenize(req_ctx *r, served_model *m);
enum MHD_Result serve_route_v1_rerank(req_ctx *r, served_model *m);
/* Matryoshka truncation of one pooled embedding v (out_dim floats, changed
 * in place), as TEI's /embed and OpenAI's "dimensions" do it: keep the
 * first `dims` values (0, or >= out_dim: all of them), then L2-normalize
 * those when `normalize`. Returns how many values to send (v[0..k)).
 * Validate the request's value with rj_dims_get() (req_parse.h: 400 naming
 * the model's size). Pure; any thread. (routes_tei.c) */
size_t serve_embed_dims(float *v, size_t out_dim, size_t dims, bool normalize);
enum MHD_Result serve_route_embeddings(req_ctx *r, served_model *m);     /* routes_openai.c */
enum MHD_Result serve_route_models(req_ctx *r, served_model *m);
enum MHD_Result serve_route_completions(req_ctx *r, served_model *m);    /* routes_completions.c */
enum MHD_Result serve_route_chat_completions(req_ctx *r, served_model *m);
enum MHD_Result serve_route_v2_server(req_ctx *r, served_model *m);      /* routes_v2.c */
enum MHD_Result serve_route_v2_model(req_ctx *r, served_model *m);
enum MHD_Result serve_route_v2_infer(req_ctx *r, served_model *m);
/* A refusal in two steps (server.c), shared by the encoder planner's and
 * the generation lane's 429s. serve_refusal_hold: the hold rule
 * (holdq.h) for this request; returns when to answer (0: now) and sets
 * *ra_s to the slot the answer will tell. serve_refusal_send: answers
 * status with `msg` in the request's error object (errors.h), Retry-After
 * and retry-after-ms from ra_s for a 429, at once or, with hold_until, at
 * that time. */
uint64_t serve_refusal_hold(req_ctx *r, uint64_t now, double *ra_s, bool may_hold);
/* Who request r is from (client_id.h), from its headers; worked out on the
 * first call and kept (the early-slot check, the hold and the planner's
 * client all ask). */
serve_client serve_client_of(req_ctx *r);
/* Slots that belong to clients: an identified client (client_id.h) back
 * more than 1 ms before the return slot its last 429 gave is refused at
 * once, before any planner — 429, the same slot, held to it when holds are
 * on — and true is returned with *res the answer; else false. Counted as
 * rejection reason "early". */
bool serve_refuse_early(req_ctx *r, const char *model, uint64_t now, enum MHD_Result *res);
enum MHD_Result serve_refusal_send(req_ctx *r, int status, const char *msg, uint64_t now,
                                   uint64_t hold_until, double ra_s);
/* chat_prompt.c: the chat messages (each {"role", "content"[, "name"]})
 * rendered by the generator model's chat template, with the generation
 * prompt. Returns 0 (*text malloc'd, the caller frees it) or the HTTP status
 * to answer with the message in err: 400 when the model has no template or
 * the template refuses the conversation (raise_exception), 413 when the
 * rendering is too long. Any thread. */
int serve_chat_prompt(at_server *s, json_t *messages, char **text, size_t *len, char *err,
                      size_t cap);
/* Load the generation model's chat template when the lane starts (absent or
 * broken: the chat route answers 400 saying why). */
void serve_chat_template_load(at_server *s, const char *model_dir);

/* ---- the generation lane (models.c) ---- */
at_status serve_load_generator(at_server *s);

/* Timing headers and x-variant are added to every answer built from a job. */
#endif
