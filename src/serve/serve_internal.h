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
#include "serve/metrics.h"

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
  size_t out_dim;           /* n_labels (classify) or hidden size (embed) */
  int head_output;          /* output index: logits / last_hidden_state */
  int n_variants;           /* ordered most accurate first */
  served_variant variants[AT_SERVER_MAX_VARIANTS];
  at_planner *planner;      /* indices = positions in variants[] */
  char tokenizer_path[1024];
} served_model;

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
  at_lm *lm;                 /* the generation lane's model (NULL: none) */
  at_generator *gen;         /* its scheduler; owns the decoder */
  uint64_t started_ns;

  pthread_mutex_t lock;
  pthread_cond_t idle;       /* inflight reached 0 */
  int inflight;              /* guarded by lock: admitted async requests */
  int stopping;              /* guarded by lock */
};

struct job;

/* One HTTP request from first byte to answer. */
typedef struct req_ctx {
  at_server *srv;
  struct MHD_Connection *conn;
  uint64_t t0_ns;
  char *body;
  size_t body_len, body_cap;
  bool too_large;
  bool suspended;
  bool inflight_counted;     /* counted in srv->inflight until answered or closed */
  char route[48];            /* for metrics, e.g. "/embed" */
  /* The prepared answer (built on resume for async routes). */
  int status;
  char *resp;                /* malloc'ed */
  size_t resp_len;
  const char *content_type;
  char retry_after[16];
  char ttft[24], tpot[24];   /* completions: x-time-to-first-token / -per-output-token */
  const char *model_hdr;     /* x-model for answers without a job (static or server-owned) */
  struct job *job;
  /* Set by the async work before resuming: builds resp from job. */
  void (*finish)(struct req_ctx *r);
  void *route_state;         /* route-specific (freed by finish or on completion) */
  void (*free_state)(void *);
} req_ctx;

/* One text input of a job. */
typedef struct job_item {
  struct job *j;
  int64_t *ids;
  size_t len;
  float *out;                /* out_dim floats: logits, or pooled embedding */
  int batch_size;
} job_item;

/* The items of one request, sent to one variant. Owned by the req_ctx. */
typedef struct job {
  req_ctx *r;
  served_model *m;
  int slot;                  /* position in m->variants */
  size_t n;
  job_item *items;
  atomic_int remaining;
  atomic_int failed;         /* an at_status, 0 if none */
  char error[256];
  uint64_t tokenize_ns;
  atomic_uint_least64_t max_queue_ns, max_compute_ns;
  size_t prompt_tokens;
  bool truncated_any;
  at_plan_decision decision;
} job;

/* ---- response helpers (server.c) ---- */
enum MHD_Result serve_reply(req_ctx *r, int status, const char *ctype, char *body, size_t len);
enum MHD_Result serve_reply_json(req_ctx *r, int status, json_t *j); /* steals j */
enum MHD_Result serve_error(req_ctx *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepare (not send) a JSON or error answer; for async completion. */
void serve_prepare_json(req_ctx *r, int status, json_t *j);
void serve_prepare_error(req_ctx *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

served_model *serve_find_model(at_server *s, const char *name);
/* Admission for one request: the model's planner decides, except under
 * policy "none" (no admission control: always the most accurate variant,
 * counted in flight so the books stay balanced). Same contract as
 * at_planner_decide(). */
void serve_decide(at_server *s, served_model *m, double deadline_s, at_plan_decision *d);
/* The tokenizer workspace of the calling HTTP thread. */
at_tok_workspace *serve_workspace(at_server *s);

/* ---- text jobs (textjob.c) ---- */
typedef struct text_opts {
  bool truncate;             /* cut inputs longer than max_tokens instead of 413 */
  double deadline_s;         /* <= 0: the planner's default */
} text_opts;

/* Tokenise `texts`, ask the planner, and submit every item to the batcher;
 * on success the connection is suspended and `finish` runs (on the HTTP
 * thread, after resume) to build the answer from r->job. On failure an
 * error answer has been sent (4xx/429/503) and the return value says so. */
enum MHD_Result serve_run_text_job(req_ctx *r, served_model *m, const char *const *texts,
                                   const size_t *lens, size_t n, const text_opts *o,
                                   void (*finish)(req_ctx *r));
/* Tokenise only (no model run): used by /tokenize. */

/* ---- routes ---- */
enum MHD_Result route_tei(req_ctx *r, const char *url, const char *method);
enum MHD_Result route_openai(req_ctx *r, const char *url, const char *method);
enum MHD_Result route_v2(req_ctx *r, const char *url, const char *method);
enum MHD_Result route_completions(req_ctx *r, const char *method);

/* ---- the generation lane (models.c) ---- */
at_status serve_load_generator(at_server *s);

/* Timing headers and x-variant are added to every answer built from a job. */
#endif
