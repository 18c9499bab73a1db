/* src/serve/routes_completions.c — POST /v1/completions (OpenAI-compatible)
 * on the generation lane: request validation, prompt tokenisation, text
 * assembly from generated tokens (incremental decoding over a window of
 * recent tokens, that never splits a UTF-8 character and never lets a stop
 * sequence out), and the two answer
 * forms: one JSON body, or server-sent events with `stream: true`.
 *
 * DESIGN
 *   A completion (`cmpl`) is shared by the HTTP side and the generator's
 *   scheduler thread, which calls on_token / on_done. It is reference
 *   counted: one reference for the generator (dropped after on_done) and
 *   one for the HTTP side (dropped when MHD frees the request, or the
 *   streaming response's reader state). `lock` guards every field the two
 *   sides share: the pending SSE bytes, `done`, `suspended`, the result.
 *   Non-streaming: the connection is suspended before submit; on_done
 *   resumes it and the HTTP thread builds the JSON (server.c's resume path).
 *   Streaming: the response is a callback reader. When it has nothing to
 *   send it suspends the connection and returns 0 (libmicrohttpd's pattern
 *   for "no data yet"); a producer that appends bytes resumes it. Both
 *   happen under `lock`, so a resume can never overtake its suspend.
 *   A client that leaves mid-stream: MHD frees the reader state, which
 *   cancels the generation; the generator's on_done drops the last ref.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "serve/completion_req.h"
#include "serve/request_json.h"
#include "serve/sse.h"
#include "serve/textstream.h"

typedef struct cmpl {
  pthread_mutex_t lock;
  int refs;
  at_server *srv;
  struct MHD_Connection *conn;
  bool stream, include_usage, echo;
  char id[48];
  long long created;
  char model[64];
  uint64_t gen_id;
  uint64_t t0_ns;
  /* prompt (for echo) */
  char *prompt;
  size_t prompt_len;
  int n_prompt;
  /* generation state: touched by the scheduler thread only, until done */
  at_tok_workspace *ws;
  int32_t *tokens;
  int n_tokens, cap_tokens;
  char *stops[TS_MAX_STOPS];
  size_t stop_len[TS_MAX_STOPS];
  int n_stops;
  ts_detok text;       /* the text so far, decoded incrementally */
  size_t emitted;      /* bytes of text already handed out */
  bool stopped_by_seq; /* a stop sequence ended it */
  char *final_text;    /* the whole text once done (non-stream) */
  size_t final_len;
  /* shared under lock */
  char *sse;           /* pending SSE bytes */
  size_t sse_len, sse_cap;
  bool suspended, done, reader_gone;
  at_gen_finish finish;
  at_status status;
  char error[256];
  int n_generated, preemptions;
  double ttft_ms, tpot_ms;
} cmpl;

static void cmpl_unref(cmpl *c) {
  pthread_mutex_lock(&c->lock);
  int left = --c->refs;
  pthread_mutex_unlock(&c->lock);
  if (left > 0) return;
  at_tok_workspace_destroy(c->ws);
  for (int i = 0; i < c->n_stops; i++) free(c->stops[i]);
  free(c->tokens);
  ts_detok_free(&c->text);
  free(c->prompt);
  free(c->final_text);
  free(c->sse);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* ------------------------------------------------------------ text */

/* Bring the text up to date and decide how much of it can be released
 * (textstream.h). Scheduler thread. */
static void assemble(cmpl *c, bool final, const char **text, size_t *safe, size_t *stop_at) {
  if (!ts_detok_step(&c->text, c->srv->lm->tok, c->ws, c->tokens, c->n_tokens, final)) {
    *text = c->text.text ? c->text.text : ""; /* out of memory: release nothing more */
    *safe = c->emitted;
    *stop_at = TS_NO_STOP;
    return;
  }
  *text = c->text.text ? c->text.text : "";
  ts_stops st = {.n = c->n_stops};
  for (int i = 0; i < c->n_stops; i++) {
    st.s[i] = c->stops[i];
    st.len[i] = c->stop_len[i];
  }
  *safe = ts_release(*text, c->text.len, c->emitted, &st, final, stop_at);
}

/* ------------------------------------------------------------ SSE */

/* Append bytes and wake the reader. Caller holds c->lock. */
static void sse_append_locked(cmpl *c, const char *s, size_t n) {
  if (c->reader_gone) return;
  if (c->sse_len + n + 1 > c->sse_cap) {
    size_t cap = c->sse_cap ? c->sse_cap : 1024;
    while (cap < c->sse_len + n + 1) cap *= 2;
    char *nb = realloc(c->sse, cap);
    if (!nb) return; /* the stream ends short; the client sees no [DONE] */
    c->sse = nb;
    c->sse_cap = cap;
  }
  memcpy(c->sse + c->sse_len, s, n);
  c->sse_len += n;
  if (c->suspended) {
    c->suspended = false;
    MHD_resume_connection(c->conn);
  }
}

static json_t *chunk_json(const cmpl *c, const char *text, size_t len, const char *finish) {
  return sse_chunk_json(c->id, c->created, c->model, text, len, finish);
}

static void sse_event_locked(cmpl *c, json_t *j) {
  size_t n;
  char *e = sse_event(j, &n); /* sse.c: pure, fuzzed */
  if (!e) return;
  sse_append_locked(c, e, n);
  free(e);
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  cmpl *c = cls;
  pthread_mutex_lock(&c->lock);
  if (c->sse_len > 0) {
    size_t n = c->sse_len < max ? c->sse_len : max;
    memcpy(buf, c->sse, n);
    memmove(c->sse, c->sse + n, c->sse_len - n);
    c->sse_len -= n;
    pthread_mutex_unlock(&c->lock);
    return (ssize_t)n;
  }
  if (c->done) {
    pthread_mutex_unlock(&c->lock);
    return MHD_CONTENT_READER_END_OF_STREAM;
  }
  c->suspended = true;
  MHD_suspend_connection(c->conn);
  pthread_mutex_unlock(&c->lock);
  return 0;
}

static void sse_reader_free(void *cls) {
  cmpl *c = cls;
  pthread_mutex_lock(&c->lock);
  c->reader_gone = true;
  bool running = !c->done;
  pthread_mutex_unlock(&c->lock);
  if (running) at_gen_cancel(c->srv->gen, c->gen_id);
  cmpl_unref(c);
}

/* ------------------------------------------------------------ generator callbacks */

static bool on_token(void *user, int32_t tok, int n) {
  cmpl *c = user;
  (void)n;
  if (c->n_tokens == c->cap_tokens) {
    int cap = c->cap_tokens ? c->cap_tokens * 2 : 64;
    int32_t *nt = realloc(c->tokens, (size_t)cap * sizeof *nt);
    if (!nt) return true;
    c->tokens = nt;
    c->cap_tokens = cap;
  }
  c->tokens[c->n_tokens++] = tok;
  if (!c->stream && c->n_stops == 0) return false; /* assembled once at the end */
  const char *text;
  size_t safe, stop_at;
  assemble(c, false, &text, &safe, &stop_at);
  if (c->stream && safe > c->emitted) {
    json_t *j = chunk_json(c, text + c->emitted, safe - c->emitted, NULL);
    pthread_mutex_lock(&c->lock);
    sse_event_locked(c, j);
    pthread_mutex_unlock(&c->lock);
  }
  c->emitted = safe;
  if (stop_at != TS_NO_STOP) {
    c->stopped_by_seq = true;
    return true;
  }
  return false;
}

static void on_done(void *user, const at_gen_result *r) {
  cmpl *c = user;
  const char *text = "";
  size_t safe = 0, stop_at = TS_NO_STOP;
  if (r->status == AT_OK) assemble(c, true, &text, &safe, &stop_at);
  c->final_text = malloc(safe + 1);
  if (c->final_text) {
    memcpy(c->final_text, text, safe);
    c->final_text[safe] = '\0';
    c->final_len = safe;
  }
  const char *finish = r->finish == AT_GEN_LENGTH ? "length" : "stop";
  pthread_mutex_lock(&c->lock);
  c->finish = r->finish;
  c->status = r->status;
  if (r->error) snprintf(c->error, sizeof c->error, "%s", r->error);
  c->n_generated = r->n_generated;
  c->preemptions = r->preemptions;
  c->ttft_ms = r->first_token_ns ? (double)(r->first_token_ns - r->submitted_ns) / 1e6 : NAN;
  c->tpot_ms = r->n_generated > 1
                   ? (double)(r->finished_ns - r->first_token_ns) / 1e6 / (r->n_generated - 1)
                   : NAN;
  if (c->stream) {
    if (r->status != AT_OK) {
      char msg[400];
      snprintf(msg, sizeof msg, "generation failed: %s", c->error);
      sse_event_locked(c, json_pack("{s:{s:s, s:s}}", "error", "message", msg, "type",
                                    "server_error"));
    } else {
      if (safe > c->emitted) sse_event_locked(c, chunk_json(c, text + c->emitted, safe - c->emitted, NULL));
      sse_event_locked(c, chunk_json(c, "", 0, finish));
      if (c->include_usage) {
        json_t *u = json_pack("{s:s, s:s, s:I, s:s, s:[], s:{s:i, s:i, s:i}}", "id", c->id, "object",
                              "text_completion", "created", (json_int_t)c->created, "model",
                              c->model, "choices", "usage", "prompt_tokens", c->n_prompt,
                              "completion_tokens", r->n_generated, "total_tokens",
                              c->n_prompt + r->n_generated);
        sse_event_locked(c, u);
      }
    }
    sse_append_locked(c, SSE_DONE, strlen(SSE_DONE));
  }
  c->done = true;
  if (c->stream && c->suspended) {
    c->suspended = false;
    MHD_resume_connection(c->conn);
  }
  pthread_mutex_unlock(&c->lock);
  if (!c->stream) MHD_resume_connection(c->conn); /* server.c answers via finish_completion */
  cmpl_unref(c);
}

/* ------------------------------------------------------------ answers */

static void finish_completion(req_ctx *r) {
  cmpl *c = r->route_state;
  pthread_mutex_lock(&c->lock);
  bool ok = c->status == AT_OK;
  pthread_mutex_unlock(&c->lock);
  if (!ok) {
    serve_prepare_error(r, 500, "generation failed: %s", c->error);
    return;
  }
  json_t *text;
  if (c->echo) {
    size_t n = c->prompt_len + c->final_len;
    char *both = malloc(n + 1);
    if (!both) {
      serve_prepare_error(r, 500, "out of memory");
      return;
    }
    memcpy(both, c->prompt, c->prompt_len);
    memcpy(both + c->prompt_len, c->final_text ? c->final_text : "", c->final_len);
    text = json_stringn(both, n);
    free(both);
  } else {
    text = json_stringn(c->final_text ? c->final_text : "", c->final_len);
  }
  json_t *choice = json_pack("{s:o, s:i, s:n, s:s}", "text", text ? text : json_string(""), "index",
                             0, "logprobs", "finish_reason",
                             c->finish == AT_GEN_LENGTH ? "length" : "stop");
  json_t *out = json_pack("{s:s, s:s, s:I, s:s, s:[o], s:{s:i, s:i, s:i}}", "id", c->id, "object",
                          "text_completion", "created", (json_int_t)c->created, "model", c->model,
                          "choices", choice, "usage", "prompt_tokens", c->n_prompt,
                          "completion_tokens", c->n_generated, "total_tokens",
                          c->n_prompt + c->n_generated);
  serve_prepare_json(r, 200, out);
  double ttft = isfinite(c->ttft_ms) && c->ttft_ms < 1e9 ? c->ttft_ms : 0.0;
  double tpot = isfinite(c->tpot_ms) && c->tpot_ms < 1e9 ? c->tpot_ms : 0.0;
  snprintf(r->ttft, sizeof r->ttft, "%.3f", ttft);
  snprintf(r->tpot, sizeof r->tpot, "%.3f", tpot);
}

static void free_cmpl_state(void *p) { cmpl_unref(p); }

/* ------------------------------------------------------------ request */

static enum MHD_Result completions(req_ctx *r) {
  at_server *s = r->srv;
  const at_server_generator_config *gc = &s->cfg.generator;
  if (!s->gen)
    return serve_error(r, 404,
                       "this server has no text-generation model (configure a 'generator' "
                       "section; see docs/configuration.md)");
  enum MHD_Result res = MHD_YES;
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  cmpl *c = NULL;
  int32_t *ids = NULL;
  int n_ids = 0;
  cmpl_req q;
  char err[400];
  cmpl_limits lim = {.model = gc->name,
                     .default_max_tokens = gc->default_max_tokens,
                     .max_tokens = gc->max_tokens};
  int bad = cmpl_req_parse(body, &lim, &q, err, sizeof err);
  if (bad) {
    res = serve_error(r, bad, "%s", err);
    goto out;
  }
  const char *prompt = q.prompt;
  size_t prompt_len = q.prompt_len;
  bool stream = q.stream, echo = q.echo, include_usage = q.include_usage;
  c = calloc(1, sizeof *c);
  if (!c || at_tok_workspace_create(&c->ws) != AT_OK) {
    res = serve_error(r, 500, "out of memory");
    goto out;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->refs = 1; /* the HTTP side */
  r->model_hdr = gc->name;
  c->srv = s;
  c->conn = r->conn;
  c->stream = stream;
  c->echo = echo;
  c->include_usage = include_usage;
  c->created = (long long)time(NULL);
  c->t0_ns = r->t0_ns;
  snprintf(c->model, sizeof c->model, "%s", gc->name);
  static _Atomic unsigned long long counter;
  snprintf(c->id, sizeof c->id, "cmpl-%llx%06llx", (unsigned long long)c->created,
           (unsigned long long)(++counter & 0xffffff));
  for (int i = 0; i < q.n_stops; i++) {
    c->stops[i] = strndup(q.stops[i], q.stop_len[i]);
    c->stop_len[i] = q.stop_len[i];
    if (!c->stops[i]) {
      res = serve_error(r, 500, "out of memory");
      goto out;
    }
    c->n_stops = i + 1;
  }
  if (echo) {
    c->prompt = strndup(prompt, prompt_len);
    c->prompt_len = prompt_len;
  }
  at_status st = at_lm_encode(s->lm, serve_workspace(s), prompt, prompt_len, &ids, &n_ids);
  if (st != AT_OK) {
    res = serve_error(r, 400, "cannot tokenise the prompt: %s", at_last_error());
    goto out;
  }
  c->n_prompt = n_ids;
  at_gen_request gr = {.prompt = ids,
                       .n_prompt = n_ids,
                       .max_tokens = (int)q.max_tokens,
                       .sample = {.temperature = (float)q.temperature,
                                  .top_k = (int)q.top_k,
                                  .top_p = (float)q.top_p,
                                  .seed = (uint64_t)q.seed},
                       .eos_id = s->lm->eos_id,
                       .n_eos = s->lm->n_eos,
                       .on_token = on_token,
                       .on_done = on_done,
                       .user = c};
  memcpy(gr.eos_ids, s->lm->eos_ids, sizeof gr.eos_ids);
  double dl = rj_deadline_s(r);
  if (dl < 0) {
    res = serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
    goto out;
  }
  gr.deadline_s = dl;
  pthread_mutex_lock(&s->lock);
  bool stopping = s->stopping;
  if (!stopping) s->inflight++;
  pthread_mutex_unlock(&s->lock);
  if (stopping) {
    res = serve_error(r, 503, "server is shutting down");
    goto out;
  }
  r->inflight_counted = true;
  c->refs = 2; /* + the generator, dropped after on_done */
  if (!stream) {
    r->route_state = c;
    r->free_state = free_cmpl_state;
    r->finish = finish_completion;
    r->suspended = true;
    MHD_suspend_connection(r->conn);
  }
  st = at_gen_submit(s->gen, &gr, &c->gen_id);
  if (st != AT_OK) {
    c->refs = 1;
    if (!stream) { /* not answered yet: answer the refusal on resume */
      if (st == AT_ERR_QUEUE_FULL) snprintf(r->retry_after, sizeof r->retry_after, "1");
      serve_prepare_error(r, st == AT_ERR_QUEUE_FULL ? 429 : st == AT_ERR_SHUTDOWN ? 503 : 400,
                          "%s", at_last_error());
      r->finish = NULL;
      c = NULL; /* owned by route_state */
      MHD_resume_connection(r->conn);
      goto out;
    }
    if (st == AT_ERR_QUEUE_FULL) snprintf(r->retry_after, sizeof r->retry_after, "1");
    res = serve_error(r, st == AT_ERR_QUEUE_FULL ? 429 : st == AT_ERR_SHUTDOWN ? 503 : 400, "%s",
                      at_last_error());
    goto out;
  }
  if (!stream) {
    c = NULL; /* owned by route_state now */
    goto out;
  }
  /* streaming: the reader state holds the HTTP side's reference */
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_reader, c, sse_reader_free);
  if (!resp) {
    at_gen_cancel(s->gen, c->gen_id);
    res = serve_error(r, 500, "out of memory");
    goto out;
  }
  MHD_add_response_header(resp, "Content-Type", "text/event-stream");
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  MHD_add_response_header(resp, "x-model", gc->name);
  if (r->request_id[0]) MHD_add_response_header(resp, "x-request-id", r->request_id);
  res = MHD_queue_response(r->conn, 200, resp);
  MHD_destroy_response(resp);
  at_metrics_request(s->metrics, r->route, gc->name, "", 200,
                     (double)(at_now_ns() - r->t0_ns) / 1e9, -1, -1, -1);
  /* a stream's line is written when it starts: its length is not known */
  serve_log_request(r, 200, gc->name, "", (double)(at_now_ns() - r->t0_ns) / 1e6, -1, -1, -1, 0);
  c = NULL; /* the reader owns the HTTP reference */
out:
  free(ids);
  if (c) cmpl_unref(c);
  json_decref(body);
  return res;
}

enum MHD_Result route_completions(req_ctx *r, const char *method) {
  snprintf(r->route, sizeof r->route, "/v1/completions");
  if (strcmp(method, "POST")) return serve_error(r, 405, "use POST for /v1/completions");
  return completions(r);
}
