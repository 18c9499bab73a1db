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
                                           size_t pool_skip, void (*finish)(req_ctx *r));

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
  /* 3. admitted: put the prompt before each text, then tokenise */
  if (!o->use_prompt || o->pairs) return tokenise_and_submit(r, m, texts, lens, n, o, 0, finish);
  const char *pt = m->prompt_text[o->prompt];
  size_t pl = strlen(pt), total = 0;
  for (size_t i = 0; i < n; i++) total += pl + lens[i];
  char **joined = malloc(n * sizeof *joined + n * sizeof(size_t) + total + 1);
  if (!joined) {
    serve_release(r, n);
    return serve_error(r, 500, "out of memory");
  }
  size_t *jl = (size_t *)(joined + n);
  char *at = (char *)(jl + n);
  for (size_t i = 0; i < n; i++) {
    joined[i] = at;
    memcpy(at, pt, pl);
    memcpy(at + pl, texts[i], lens[i]);
    jl[i] = pl + lens[i];
    at += jl[i];
  }
  res = tokenise_and_submit(r, m, (const char *const *)joined, jl, n, o, m->prompt_skip[o->prompt],
                            finish);
  free(joined);
  return res;
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

/* Step 3 of serve_run_text_job for admitted texts (the prompt already put
 * before each): tokenise, check, and hand the items to the batcher;
 * `pool_skip` leading tokens are left out of pooling. Any failure releases
 * the n texts. */
static enum MHD_Result tokenise_and_submit(req_ctx *r, served_model *m, const char *const *texts,
                                           const size_t *lens, size_t n, const text_opts *o,
                                           size_t pool_skip, void (*finish)(req_ctx *r)) {
  at_tok_workspace *ws = serve_workspace(r->srv);
  uint64_t t0 = at_now_ns();
  at_encoding *enc = ws ? malloc(n * sizeof *enc) : NULL;
  if (!enc) {
    serve_release(r, n);
    return serve_error(r, 500, "out of memory");
  }
  at_encode_params ep = at_encode_default_params();
  ep.max_length = o->truncate ? (int)m->max_tokens : 0;
  ep.pad_to = 0;
  ep.truncation_direction = o->trunc_dir;
  at_status st = o->pairs ? AT_OK : at_tokenizer_encode_batch(m->tok, ws, texts, lens, n, &ep, enc);
  if (st != AT_OK) {
    free(enc);
    serve_release(r, n);
    if (st == AT_ERR_LIMIT) serve_error_hint(r, "context_length_exceeded", "input");
    return serve_error(r, serve_tokenise_status(st), "cannot tokenise the input: %s",
                       at_last_error());
  }
  /* Pairs are encoded one at a time; each encoding lives in the workspace
   * until the next, so its ids and type ids are copied out at once. */
  int64_t *pair_buf = NULL;
  size_t pair_cap = 0, pair_used = 0;
  for (size_t i = 0; o->pairs && i < n; i++) {
    st = at_tokenizer_encode(m->tok, ws, texts[i], lens[i], o->pairs[i],
                             o->pairs[i] ? o->pair_lens[i] : 0, &ep, &enc[i]);
    if (st == AT_OK && pair_used + 2 * enc[i].n > pair_cap) {
      size_t cap = (pair_used + 2 * enc[i].n) * 2 + 64;
      int64_t *nb = realloc(pair_buf, cap * sizeof *nb);
      if (nb) pair_buf = nb, pair_cap = cap;
      else st = at_fail(AT_ERR_NOMEM, "out of memory");
    }
    if (st != AT_OK) {
      free(enc);
      free(pair_buf);
      serve_release(r, n);
      if (st == AT_ERR_LIMIT) serve_error_hint(r, "context_length_exceeded", "input");
      return serve_error(r, serve_tokenise_status(st), "cannot tokenise input %zu: %s", i,
                         at_last_error());
    }
    for (size_t k = 0; k < enc[i].n; k++) {
      pair_buf[pair_used + k] = enc[i].ids[k];
      pair_buf[pair_used + enc[i].n + k] = enc[i].type_ids[k];
    }
    pair_used += 2 * enc[i].n;
  }
  /* Every id must index the model's tables. A tokenizer.json that gives ids
   * past config.json's vocab_size (or type ids past type_vocab_size) would
   * make the Run fail for the whole batch — other requests included — or,
   * for a negative id, read the table from its end. Such a request is
   * answered alone, before it reaches a batch. */
  const int64_t *pb = pair_buf;
  for (size_t i = 0; i < n; i++) {
    for (size_t k = 0; k < enc[i].n; k++) {
      int64_t id = o->pairs ? pb[k] : (int64_t)enc[i].ids[k];
      int64_t ty = o->pairs ? pb[enc[i].n + k] : 0;
      if (id >= 0 && id < m->id_limit && ty >= 0 && ty < m->type_limit) continue;
      free(enc);
      free(pair_buf);
      serve_release(r, n);
      return serve_error(r, 500, "the tokenizer gave input %zu the token id %lld (type %lld), "
                         "outside the model's %lld ids (%lld types): its tokenizer and its "
                         "config.json disagree; nothing was run", i, (long long)id, (long long)ty,
                         (long long)m->id_limit, (long long)m->type_limit);
    }
    if (o->pairs) pb += 2 * enc[i].n;
  }
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (enc[i].n > m->max_tokens) {
      size_t got = enc[i].n;
      free(enc);
      free(pair_buf);
      serve_release(r, n);
      return serve_error(r, 413,
                         "input %zu has %zu tokens; the limit is %zu (send \"truncate\": true to "
                         "cut it)", i, got, m->max_tokens);
    }
    total += enc[i].n;
  }
  /* what these texts teach the length model about bytes per token (a text
   * cut at the limit would teach it wrong) */
  size_t lb = 0, lt = 0, ln = 0;
  for (size_t i = 0; i < n; i++)
    if (enc[i].n < m->max_tokens)
      lb += lens[i] + (o->pairs && o->pairs[i] ? o->pair_lens[i] : 0), lt += enc[i].n, ln++;
  serve_learn_tokens(m, lb, lt, ln);
  size_t per_tok = o->pairs ? 2 * sizeof(int64_t) : sizeof(int64_t); /* ids (+ type ids) */
  job *j = serve_job_alloc(r, m, n, total * per_tok + n * m->out_dim * sizeof(float));
  if (!j) {
    free(enc);
    free(pair_buf);
    serve_release(r, n);
    return serve_error(r, 500, "out of memory");
  }
  j->pool_skip = pool_skip;
  int64_t *idp = (int64_t *)(j->items + n);
  float *outp = (float *)(idp + total * (o->pairs ? 2 : 1));
  const int64_t *from = pair_buf;
  for (size_t i = 0; i < n; i++) {
    job_item *it = &j->items[i];
    it->ids = idp;
    it->len = enc[i].n;
    it->out = outp + i * m->out_dim;
    if (o->pairs) { /* ids then type ids, as copied above */
      memcpy(idp, from, 2 * enc[i].n * sizeof *idp);
      it->types = idp + enc[i].n;
      from += 2 * enc[i].n;
      idp += 2 * enc[i].n;
    } else {
      for (size_t k = 0; k < enc[i].n; k++) idp[k] = enc[i].ids[k];
      idp += enc[i].n;
    }
    j->prompt_tokens += enc[i].n;
  }
  free(enc);
  free(pair_buf);
  j->tokenize_ns = at_now_ns() - t0;
  /* 4. queue every text */
  return serve_submit_job(r, j, finish);
}
