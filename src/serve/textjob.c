/* src/serve/textjob.c — a text request's trip through the server: tokenise
 * its inputs (HTTP thread), ask the model's planner for a variant or refuse
 * at once with 429, suspend the connection, queue one batcher item per
 * input; on engine workers apply the task head (copy the logits row, or
 * mean-pool last_hidden_state over the item's real tokens) and, when the
 * last item is done, tell the planner and resume the connection.
 *
 * DESIGN: a job is one malloc holding its items, their token ids and their
 * head outputs; workers write only to their own item and to atomics, so no
 * lock is needed. `remaining` counts items not yet completed; whoever takes
 * it to zero (a worker, or the HTTP thread if submission failed part-way)
 * completes the job exactly once.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "serve/serve_internal.h"

static void atomic_max(atomic_uint_least64_t *a, uint64_t v) {
  uint64_t cur = atomic_load(a);
  while (v > cur && !atomic_compare_exchange_weak(a, &cur, v)) {
  }
}

static void complete_job(job *j, int batch_size, double service_s, int peers) {
  served_model *m = j->m;
  at_planner_finished(m->planner, j->slot, batch_size > 0 ? batch_size : 1, service_s, peers);
  MHD_resume_connection(j->r->conn);
}

static void on_item(void *user, at_status st, const at_item_result *res, const char *err) {
  job_item *it = user;
  job *j = it->j;
  served_model *m = j->m;
  double service_s = 0;
  int peers = 0;
  if (st == AT_OK) {
    const at_tensor *o = &res->outputs[m->head_output];
    const float *data = o->data;
    if (m->task == TASK_CLASSIFY) {
      memcpy(it->out, data, m->out_dim * sizeof(float));
    } else { /* mean of the item's real positions of [1, padded, H] */
      at_mean_pool(data, res->len, m->out_dim, it->out);
    }
    it->batch_size = res->batch_size;
    atomic_max(&j->max_queue_ns, res->dispatched_ns - res->enqueued_ns);
    atomic_max(&j->max_compute_ns, res->finished_ns - res->started_ns);
    service_s = (double)(res->finished_ns - res->started_ns) / 1e9;
    peers = res->peers;
    if (res->index_in_batch == 0) at_metrics_batch(j->r->srv->metrics, m->name, res->batch_size);
  } else {
    int expected = 0;
    if (atomic_compare_exchange_strong(&j->failed, &expected, (int)st))
      snprintf(j->error, sizeof j->error, "%s", err ? err : at_strerror(st));
  }
  if (atomic_fetch_sub(&j->remaining, 1) == 1) complete_job(j, res ? res->batch_size : 1, service_s, peers);
}

enum MHD_Result serve_run_text_job(req_ctx *r, served_model *m, const char *const *texts,
                                   const size_t *lens, size_t n, const text_opts *o,
                                   void (*finish)(req_ctx *r)) {
  at_server *s = r->srv;
  if (n == 0) return serve_error(r, 400, "no inputs: give at least one text");
  if (n > s->cfg.max_inputs)
    return serve_error(r, 413, "%zu inputs in one request; the limit is %zu (server.max_inputs)",
                       n, s->cfg.max_inputs);
  at_tok_workspace *ws = serve_workspace(s);
  if (!ws) return serve_error(r, 500, "out of memory");
  uint64_t t0 = at_now_ns();
  at_encoding *enc = malloc(n * sizeof *enc);
  if (!enc) return serve_error(r, 500, "out of memory");
  at_encode_params ep = at_encode_default_params();
  ep.max_length = o->truncate ? (int)m->max_tokens : 0;
  ep.pad_to = 0;
  for (size_t i = 0; i < n; i++)
    if (lens[i] == 0) {
      free(enc);
      return serve_error(r, 400, "input %zu is an empty string", i);
    }
  at_status st = at_tokenizer_encode_batch(m->tok, ws, texts, lens, n, &ep, enc);
  if (st != AT_OK) {
    free(enc);
    return serve_error(r, st == AT_ERR_LIMIT ? 413 : 400, "cannot tokenise the input: %s",
                       at_last_error());
  }
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (enc[i].n > m->max_tokens) {
      size_t got = enc[i].n;
      free(enc);
      return serve_error(r, 413,
                         "input %zu has %zu tokens; the limit is %zu (send \"truncate\": true to "
                         "cut it)", i, got, m->max_tokens);
    }
    total += enc[i].n;
  }
  size_t bytes = sizeof(job) + n * sizeof(job_item) + total * sizeof(int64_t) +
                 n * m->out_dim * sizeof(float);
  job *j = calloc(1, bytes);
  if (!j) {
    free(enc);
    return serve_error(r, 500, "out of memory");
  }
  j->r = r;
  j->m = m;
  j->slot = -1;
  j->n = n;
  j->items = (job_item *)(j + 1);
  int64_t *idp = (int64_t *)(j->items + n);
  float *outp = (float *)(idp + total);
  for (size_t i = 0; i < n; i++) {
    job_item *it = &j->items[i];
    it->j = j;
    it->ids = idp;
    it->len = enc[i].n;
    it->out = outp + i * m->out_dim;
    for (size_t k = 0; k < enc[i].n; k++) idp[k] = enc[i].ids[k];
    idp += enc[i].n;
    j->prompt_tokens += enc[i].n;
  }
  free(enc);
  r->job = j; /* freed (one block with its items) by on_completed */
  j->tokenize_ns = at_now_ns() - t0;

  at_plan_decision d;
  serve_decide(s, m, o->deadline_s, &d);
  j->decision = d;
  if (!d.admit) {
    at_metrics_rejection(s->metrics, m->name, at_plan_reason_name(d.reason));
    if (d.reason == AT_PLAN_REJECT_INFEASIBLE)
      return serve_error(r, 422,
                         "deadline %.3f ms is below the fastest variant's own service time; no "
                         "variant can answer in time", d.deadline_s * 1e3);
    snprintf(r->retry_after, sizeof r->retry_after, "%d", at_plan_retry_after_header(d.retry_after_s));
    return serve_error(r, 429,
                       "overloaded: no variant of '%s' can answer within %.3f ms (estimate %.3f "
                       "ms); retry after %s s", m->name, d.deadline_s * 1e3,
                       isfinite(d.est_sojourn_s) ? d.est_sojourn_s * 1e3 : -1.0, r->retry_after);
  }
  j->slot = d.variant;
  pthread_mutex_lock(&s->lock);
  if (s->stopping) {
    pthread_mutex_unlock(&s->lock);
    at_planner_finished(m->planner, j->slot, 1, 0, 0);
    return serve_error(r, 503, "server is shutting down");
  }
  s->inflight++;
  pthread_mutex_unlock(&s->lock);
  r->inflight_counted = true;

  r->finish = finish;
  r->suspended = true;
  atomic_store(&j->remaining, (int)n);
  MHD_suspend_connection(r->conn);
  int ev = m->variants[j->slot].engine_index;
  for (size_t i = 0; i < n; i++) {
    at_batch_item bi = {.input_ids = j->items[i].ids, .len = j->items[i].len,
                        .done = on_item, .user = &j->items[i]};
    at_status bs = at_batcher_submit(s->batcher, ev, &bi);
    if (bs != AT_OK) {
      /* Items i..n-1 never entered the batcher: count them done here. */
      int expected = 0;
      if (atomic_compare_exchange_strong(&j->failed, &expected, (int)bs))
        snprintf(j->error, sizeof j->error, "%s", at_last_error());
      if (bs == AT_ERR_QUEUE_FULL) at_metrics_rejection(s->metrics, m->name, "queue_full");
      int left = (int)(n - i);
      if (atomic_fetch_sub(&j->remaining, left) == left) complete_job(j, 1, 0, 0);
      break;
    }
  }
  return MHD_YES;
}
