/* src/serve/textjob.c — a request's trip through the server once its body
 * is read: cheap checks, the model's planner (admit to a variant, or refuse
 * at once with 429 before any tokenising), tokenise (HTTP thread), suspend
 * the connection, queue one batcher item per text (or per V2 tensor row);
 * on engine workers apply the task head (copy the logits row, or pool
 * last_hidden_state over the item's real tokens as the export says) or the route's own row
 * handler, release the item in the planner, and, when the last item is
 * done, resume the connection.
 *
 * DESIGN
 *   Order: count and empty-string checks, then at_planner_decide_req() with
 *     n_texts = the number of texts, so a refusal costs no tokenising and
 *     no allocation; only an admitted request is tokenised.
 *   Exactly-once release: an admitted request holds n texts in flight in
 *     the planner (r->adm.held). Each text leaves exactly once: an item that
 *     entered the batcher releases itself in on_item() (its callback runs
 *     exactly once, success or failure); a text that never entered it
 *     (tokenizer error, 413, out of memory, shutting down, batcher refusal)
 *     is released by serve_release(); whatever is still held when the
 *     request ends is released in server.c's on_completed().
 *   Service observations: one per Run — the item at index 0 of its batch
 *     reports the batch's size, Run time and peers; the other items of the
 *     batch leave with no observation.
 *   Memory: a job is one calloc holding its items, their token ids and their
 *     head outputs; workers write only to their own item and to atomics, so
 *     no lock is needed. The request's countdown (r->wait, conn_wait.h)
 *     counts items not yet completed; whoever takes it to zero (a worker, or
 *     the HTTP thread if submission failed part-way) resumes the connection
 *     exactly once.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "core/internal.h"
#include "serve/serve_internal.h"

static void atomic_max(atomic_uint_least64_t *a, uint64_t v) {
  uint64_t cur = atomic_load(a);
  while (v > cur && !atomic_compare_exchange_weak(a, &cur, v)) {
  }
}

static void fail_job(job *j, at_status st, const char *msg) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&j->failed, &expected, (int)st))
    snprintf(j->error, sizeof j->error, "%s", msg ? msg : at_strerror(st));
}

static void on_item(void *user, at_status st, const at_item_result *res, const char *err) {
  job_item *it = user;
  job *j = it->j;
  served_model *m = j->m;
  uint64_t now = at_now_ns();
  double service_s = 0;
  int peers = 0, bs = 1;
  if (st == AT_OK) {
    if (j->on_row) {
      char msg[256] = "";
      at_status rs = j->on_row(j, it, res, msg, sizeof msg);
      if (rs != AT_OK) fail_job(j, rs, msg);
    } else {
      const at_tensor *o = &res->outputs[m->head_output];
      const float *data = o->data;
      if (m->task == TASK_CLASSIFY) {
        memcpy(it->out, data, m->out_dim * sizeof(float));
      } else { /* pool the item's real positions of [1, padded, H], or copy [1, H] */
        at_pool_from(m->head_pooling, data, res->len, j->pool_skip, m->out_dim, it->out);
      }
    }
    it->batch_size = res->batch_size;
    bs = res->batch_size > 0 ? res->batch_size : 1;
    atomic_max(&j->max_queue_ns, res->dispatched_ns - res->enqueued_ns);
    atomic_max(&j->max_compute_ns, res->finished_ns - res->started_ns);
    if (res->index_in_batch == 0) { /* one observation per Run */
      service_s = (double)(res->finished_ns - res->started_ns) / 1e9;
      peers = res->peers;
      at_metrics_batch(j->r->srv->metrics, m->name, res->batch_size);
    }
  } else {
    fail_job(j, st, err);
  }
  serve_planner_release(j->r->srv, m, j->slot, 1, j->r->adm.d.weight, bs, service_s, peers, now);
  conn_countdown_done(&j->r->wait, 1);
}

job *serve_job_alloc(req_ctx *r, served_model *m, size_t n, size_t extra) {
  job *j = at_fault_alloc() ? NULL : calloc(1, sizeof(job) + n * sizeof(job_item) + extra);
  if (!j) return NULL;
  j->r = r;
  j->m = m;
  j->slot = -1;
  j->n = n;
  j->items = (job_item *)(j + 1);
  for (size_t i = 0; i < n; i++) j->items[i].j = j, j->items[i].index = i;
  return j;
}

enum MHD_Result serve_submit_job(req_ctx *r, job *j, void (*finish)(req_ctx *r)) {
  at_server *s = r->srv;
  served_model *m = j->m;
  r->job = j; /* freed (one block with its items) by on_completed */
  j->slot = r->adm.d.variant;
  enum MHD_Result res;
  size_t n = j->n;
  if (!serve_go_async(r, finish, (int)n, NULL, &res)) return res; /* a countdown of n items */
  int ev = m->variants[j->slot].engine_index;
  enum { CHUNK = 64 }; /* queued together, so they can share batches */
  at_batch_item bi[CHUNK];
  for (size_t i = 0; i < n;) {
    size_t k = n - i < CHUNK ? n - i : CHUNK;
    for (size_t q = 0; q < k; q++)
      bi[q] = (at_batch_item){.input_ids = j->items[i + q].ids,
                              .token_type_ids = j->items[i + q].types,
                              .len = j->items[i + q].len, .done = on_item,
                              .user = &j->items[i + q]};
    at_status bs = at_batcher_submit_n(s->batcher, ev, bi, k);
    if (bs == AT_OK) {
      r->adm.held -= k; /* the items release themselves now */
      i += k;
      continue;
    }
    /* Items i..n-1 never entered the batcher: release them and count them
     * done here. */
    fail_job(j, bs, at_last_error());
    if (bs == AT_ERR_QUEUE_FULL) at_metrics_rejection(s->metrics, m->name, "queue_full");
    size_t left = n - i;
    serve_release(r, left);
    conn_countdown_done(&r->wait, (int)left);
    break;
  }
  return MHD_YES;
}

static enum MHD_Result tokenise_and_submit(req_ctx *r, served_model *m, const char *const *texts,
                                           const size_t *lens, size_t n, const text_opts *o,
                                           void (*finish)(req_ctx *r));

enum MHD_Result serve_run_text_job(req_ctx *r, served_model *m, const char *const *texts,
                                   const size_t *lens, size_t n, const text_opts *o,
                                   void (*finish)(req_ctx *r)) {
  at_server *s = r->srv;
  /* 1. cheap checks: no tokenising, no allocation (an answer here releases
   * what an admission before parsing holds: see serve_reply) */
  if (n == 0) return serve_error(r, 400, "no inputs: give at least one text");
  if (n > s->cfg.max_inputs)
    return serve_error(r, 413, "%zu inputs in one request; the limit is %zu (server.max_inputs)",
                       n, s->cfg.max_inputs);
  for (size_t i = 0; i < n; i++)
    if (lens[i] == 0) return serve_error(r, 400, "input %zu is an empty string", i);
  /* 2. the planner: a refusal is answered here, before any tokenising. A
   * request admitted before its body was parsed (rj_predecide) keeps that
   * admission if the scan counted what the parse found. */
  enum MHD_Result res;
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) bytes += lens[i] + (o->pairs && o->pairs[i] ? o->pair_lens[i] : 0);
  if (!serve_admit_parsed(r, m, o->deadline_s, n, serve_guess_tokens(m, bytes, n), &res))
    return res;
  /* 3. admitted: tokenise (the prompt put before each text) and queue */
  return tokenise_and_submit(r, m, texts, lens, n, o, finish);
}

bool serve_pick_prompt(const served_model *m, const char *name, text_opts *o, char *err,
                       size_t cap) {
  o->use_prompt = false;
  if (!name) {
    if (m->default_prompt >= 0 && m->default_prompt < m->n_prompts)
      o->use_prompt = true, o->prompt = m->default_prompt;
    return true;
  }
  for (int i = 0; i < m->n_prompts; i++)
    if (!strcmp(m->prompt_name[i], name)) {
      o->use_prompt = true, o->prompt = i;
      return true;
    }
  if (m->n_prompts == 0) {
    snprintf(err, cap, "model '%s' has no prompts (config_sentence_transformers.json names none), "
             "so \"prompt_name\" cannot be used", m->name);
    return false;
  }
  int k = snprintf(err, cap, "prompt_name '%.64s' is not one of model '%s''s prompts (", name,
                   m->name);
  for (int i = 0; i < m->n_prompts && k > 0 && (size_t)k < cap; i++)
    k += snprintf(err + k, cap - (size_t)k, "%s%s", i ? ", " : "", m->prompt_name[i]);
  if (k > 0 && (size_t)k < cap) snprintf(err + k, cap - (size_t)k, ")");
  return false;
}

/* Step 3 of serve_run_text_job for admitted texts: their ids
 * (serve_text_ids: prompt, tokenise, checks), copied into one job with
 * their head outputs, handed to the batcher. Any failure releases the n
 * texts. */
static enum MHD_Result tokenise_and_submit(req_ctx *r, served_model *m, const char *const *texts,
                                           const size_t *lens, size_t n, const text_opts *o,
                                           void (*finish)(req_ctx *r)) {
  text_ids t;
  text_ids_error e;
  if (serve_text_ids(r->srv, m, texts, lens, n, o, &t, &e) != AT_OK) {
    serve_release(r, n);
    if (e.code) serve_error_hint(r, e.code, e.param);
    return serve_error(r, e.status, "%s", e.msg);
  }
  size_t per_tok = t.types ? 2 * sizeof(int64_t) : sizeof(int64_t); /* ids (+ type ids) */
  job *j = serve_job_alloc(r, m, n, t.total * per_tok + n * m->out_dim * sizeof(float));
  if (!j) {
    serve_text_ids_free(&t);
    serve_release(r, n);
    return serve_error(r, 500, "out of memory");
  }
  j->pool_skip = t.pool_skip;
  int64_t *idp = (int64_t *)(j->items + n);
  float *outp = (float *)(idp + t.total * (t.types ? 2 : 1));
  for (size_t i = 0; i < n; i++) {
    job_item *it = &j->items[i];
    size_t k = t.len[i], w = t.types ? 2 * k : k;
    memcpy(idp, t.ids + t.off[i], w * sizeof *idp);
    it->ids = idp;
    it->types = t.types ? idp + k : NULL;
    it->len = k;
    it->out = outp + i * m->out_dim;
    idp += w;
    j->prompt_tokens += k;
  }
  j->tokenize_ns = t.ns;
  serve_text_ids_free(&t);
  /* 4. queue every text */
  return serve_submit_job(r, j, finish);
}
