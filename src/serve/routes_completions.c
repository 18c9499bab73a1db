/* src/serve/routes_completions.c — the two OpenAI generation routes on the
 * generation lane: POST /v1/completions (a prompt) and POST
 * /v1/chat/completions (messages rendered by the model's chat template,
 * chat_prompt.c). Request validation (completion_req.c), tokenisation, n
 * choices per request, log-probabilities, text assembly from generated
 * tokens (incremental decoding that never splits a UTF-8 character and never
 * lets a stop sequence out), and the two answer forms: one JSON body, or
 * server-sent events with `stream: true`.
 *
 * DESIGN
 *   A job (`gjob`) is shared by the HTTP side and the generator's scheduler
 *   thread, which calls on_token / on_logprobs / on_done for each of its n
 *   choices (one generation each; choice i samples with seed + i; choices
 *   after the first fork the first one's prompt cache, at_gen_request
 *   fork_of, instead of prefilling it again). It is
 *   reference counted: one reference for the HTTP side (dropped when MHD
 *   frees the request, or the streaming response's reader state) and one
 *   per submitted choice (dropped after its on_done). `lock` guards every
 *   field the sides share: the SSE bytes ready to send, `pending`, the
 *   connection's waiter `w`, `news`, `probe_due`, each choice's n_tokens and
 *   raw log-probabilities, and its result once it is done.
 *   The scheduler thread does no text work, because every running sequence
 *   waits on it: on_token appends the id (into an array allocated once for
 *   max_tokens, so the HTTP side reads a published prefix without the
 *   lock), bumps `news` and wakes the HTTP side; on_logprobs copies the raw
 *   figures; on_done records the result and wakes it. Decoding ids into
 *   text, looking for stop sequences, looking for a hang-up, JSON and SSE
 *   framing all happen on the HTTP side.
 *   Both answer forms wait the same way (conn_wait.h, a conn_waiter): the
 *   HTTP side, finding nothing new (`news` unchanged since it last looked)
 *   and the answer not complete, suspends the connection; on_token and
 *   on_done wake it. Both happen under `lock`, so a wake is never lost and
 *   a resume never overtakes its suspend. A stream's reader then turns the
 *   new ids into text and events (produce); a plain request's plain_resumed
 *   (called by server.c at every wake) looks for stop sequences and a
 *   hang-up, suspends again, and once every choice is done lets finish_job
 *   build the JSON. Either one that finds a stop sequence ends the choice
 *   with at_gen_stop (the lane may have generated a token or two more by
 *   then: they are dropped, and usage counts the tokens up to the stop).
 *   on_token wakes a stream and a plain request with stop sequences at every
 *   token, a plain request without them only to look for a hang-up (below).
 *   `pending` starts at n + 1: each choice's on_done takes one, and the
 *   submitting HTTP thread takes the last one (plus one for every choice it
 *   could not submit) once it has submitted what it could. Whoever brings it
 *   to 0 wakes the HTTP side for the last time: the stream's reader writes
 *   the last chunks, the usage chunk and [DONE]; a plain request is answered
 *   (server.c's resume path calls finish_job).
 *   A client that leaves mid-stream: MHD frees the reader state, which
 *   cancels every choice; each on_done drops its ref.
 *   A client that leaves a non-streamed request: libmicrohttpd does not
 *   watch a suspended connection, so nobody would notice until the whole
 *   answer was generated. So on_token, at most every PROBE_NS, asks the
 *   HTTP side to look (probe_due, and a wake), and plain_resumed polls the
 *   connection's socket for the peer's end of stream (peer_closed,
 *   POLLRDHUP: also seen behind pipelined bytes or a TLS close alert); a
 *   closed peer cancels every choice and the answer is a 499 nobody reads.
 *   The poll runs in the connection's own access handler, so its
 *   descriptor is open. A client that half-closes its sending side and
 *   still waits for the answer is taken for gone (as nginx does by
 *   default); a hang-up while the request waits for a slot is seen at its
 *   first token. If libmicrohttpd closes a resumed connection without
 *   calling the handler again, it frees the request: http_side_free closes
 *   the waiter (no later wake touches the connection) and cancels what is
 *   still running.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "serve/client_id.h"
#include "serve/completion_req.h"
#include "serve/request_json.h"
#include "serve/sse.h"
#include "serve/textstream.h"

typedef struct gjob gjob;

typedef struct choice {
  gjob *j;
  int index;
  uint64_t gen_id;
  /* The generated ids: allocated once for max_tokens and never moved. The
   * scheduler thread writes tokens[n_tokens] and then publishes n_tokens
   * under the job's lock, so the HTTP side reads ids[0, n_tokens) of a
   * snapshot without the lock. */
  int32_t *tokens;
  int n_tokens, cap_tokens;
  /* Raw log-probabilities, one per token, appended under the lock; turned
   * into JSON only on the HTTP side. */
  at_token_logprob *lps;
  int n_lps, cap_lps;
  /* Text assembly, HTTP side only: a stream's reader, or a plain answer's
   * plain_resumed (stop sequences) and finish_job. */
  ts_detok text;       /* the text so far, decoded incrementally */
  size_t emitted;      /* bytes of text already handed out (or checked) */
  int used;            /* tokens the text has been assembled from */
  /* stream, HTTP side only */
  json_t *lp;          /* logprobs entries built so far (chat's form) */
  size_t lp_sent;      /* entries already streamed */
  bool stopped;        /* a stop sequence appeared: later tokens are dropped
                          (HTTP side, stream or not) */
  bool fin_sent;       /* the choice's finish chunk is out */
  /* result, written by on_done under the job's lock */
  bool done;
  at_gen_finish finish;
  at_status status;
  char error[256];
  int n_generated, preemptions;
  double ttft_ms, tpot_ms;
} choice;

struct gjob {
  pthread_mutex_t lock;
  int refs;
  at_server *srv;
  int lane;             /* the lane admission chose (s->lanes[lane]) */
  at_generator *gen;    /* its scheduler, which runs every choice */
  bool chat, stream, include_usage, echo, logprobs;
  int top_logprobs;
  char id[48];
  long long created;
  char model[64];
  char *prompt; /* for echo */
  size_t prompt_len;
  int n_prompt;
  char *stops[TS_MAX_STOPS];
  size_t stop_len[TS_MAX_STOPS];
  int n_stops;
  int n;
  choice *ch;
  /* shared under lock */
  int pending;
  int fail_status;      /* a submission refused: the answer is this error */
  char fail_msg[400];
  char retry_after[16];
  char *sse;            /* SSE bytes ready for the reader */
  size_t sse_len, sse_cap;
  conn_waiter w;        /* the connection, suspended while the HTTP side waits */
  uint64_t news;        /* bumped by every token and every on_done */
  uint64_t next_probe_ns; /* non-stream: when on_token next asks for a probe */
  bool probe_due;       /* non-stream: look for a hang-up at the next wake */
  /* HTTP side only */
  uint64_t news_seen;   /* `news` when the HTTP side last looked */
  bool ended;           /* stream: usage and [DONE] are in `sse` */
  int fd;               /* non-stream: the connection's socket, -1 when not probed */
  bool peer_gone;       /* non-stream: the probe found the client gone */
};

#define PROBE_NS 20000000ull /* 20 ms: a wake and a poll() per job per 20 ms of tokens */

/* Has the peer of socket `fd` closed (or reset) its side? Never blocks. */
static bool peer_closed(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  int rc;
  do rc = poll(&p, 1, 0);
  while (rc < 0 && errno == EINTR);
  return rc > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Has the non-streamed job's client gone? Then cancel its choices (at most
 * once). HTTP side (plain_resumed, when on_token asked for a look). */
static void probe_peer(gjob *j) {
  if (j->fd < 0 || j->peer_gone || !peer_closed(j->fd)) return;
  j->peer_gone = true;
  for (int i = 0; i < j->n; i++) at_gen_cancel(j->gen, j->ch[i].gen_id);
}

static void job_unref(gjob *j) {
  pthread_mutex_lock(&j->lock);
  int left = --j->refs;
  pthread_mutex_unlock(&j->lock);
  if (left > 0) return;
  for (int i = 0; i < j->n_stops; i++) free(j->stops[i]);
  for (int i = 0; i < j->n && j->ch; i++) {
    choice *c = &j->ch[i];
    free(c->tokens);
    free(c->lps);
    ts_detok_free(&c->text);
    json_decref(c->lp);
  }
  free(j->ch);
  free(j->prompt);
  free(j->sse);
  pthread_mutex_destroy(&j->lock);
  free(j);
}

/* ------------------------------------------------------------ text */

/* Bring choice c's text up to its first `n` tokens (c->tokens, all
 * published) and decide how much of it can be released (textstream.h).
 * HTTP side, with the calling thread's workspace. */
static void assemble(choice *c, at_tok_workspace *ws, int n, bool final, const char **text,
                     size_t *safe, size_t *stop_at) {
  gjob *j = c->j;
  c->used = n;
  if (!ws || !ts_detok_step(&c->text, j->srv->lm->tok, ws, c->tokens, n, final)) {
    *text = c->text.text ? c->text.text : ""; /* out of memory: release nothing more */
    *safe = c->emitted;
    *stop_at = TS_NO_STOP;
    return;
  }
  *text = c->text.text ? c->text.text : "";
  ts_stops st = {.n = j->n_stops};
  for (int i = 0; i < j->n_stops; i++) {
    st.s[i] = j->stops[i];
    st.len[i] = j->stop_len[i];
  }
  *safe = ts_release(*text, c->text.len, c->emitted, &st, final, stop_at);
}

/* Look for the stop sequences in choice c's tokens up to `upto`, one token
 * at a time, so that c->used ends at the token that completed a stop;
 * `final`: the choice is done (nothing is held back). A stop found ends the
 * choice's generation with at_gen_stop: the lane may have generated a token
 * or two more by then; they are dropped, and usage counts c->used. *text
 * and *safe as assemble's (unchanged when there was nothing to look at).
 * HTTP side. */
static void find_stop(choice *c, at_tok_workspace *ws, int upto, bool final, const char **text,
                      size_t *safe) {
  size_t stop_at = TS_NO_STOP;
  while (c->used < upto && stop_at == TS_NO_STOP)
    assemble(c, ws, c->used + 1, final && c->used + 1 == upto, text, safe, &stop_at);
  if (stop_at == TS_NO_STOP && final) assemble(c, ws, upto, true, text, safe, &stop_at);
  if (stop_at != TS_NO_STOP) {
    c->stopped = true;
    at_gen_stop(c->j->gen, c->gen_id);
  }
}

/* ------------------------------------------------------------ logprobs */

/* A log-probability as JSON: finite, as OpenAI writes -9999 for "never". */
static json_t *lp_number(float x) { return json_real(isfinite(x) ? (double)x : -9999.0); }

/* {"token", "logprob", "bytes"} for id. HTTP side. The token's text is its
 * decode alone: a piece of a UTF-8 character split across ids reads as
 * U+FFFD. */
static json_t *token_json(gjob *j, at_tok_workspace *ws, int32_t id, float logprob) {
  const char *t = "";
  size_t n = 0;
  if (!ws || at_tokenizer_decode(j->srv->lm->tok, ws, &id, 1, false, &t, &n) != AT_OK) t = "", n = 0;
  json_t *s = json_stringn(t, n);
  if (!s) s = json_string("\xef\xbf\xbd");
  json_t *bytes = json_array();
  const char *bs = json_string_value(s);
  for (size_t i = 0; bs && i < json_string_length(s); i++)
    json_array_append_new(bytes, json_integer((unsigned char)bs[i]));
  return json_pack("{s:o, s:o, s:o}", "token", s, "logprob", lp_number(logprob), "bytes", bytes);
}

/* One token's chat-form entry, with its top_logprobs. */
static json_t *lp_entry(gjob *j, at_tok_workspace *ws, const at_token_logprob *lp) {
  json_t *e = token_json(j, ws, lp->token, lp->logprob);
  json_t *top = json_array();
  for (int i = 0; i < lp->n_top; i++)
    json_array_append_new(top, token_json(j, ws, lp->top_ids[i], lp->top_logprobs[i]));
  if (e) json_object_set_new(e, "top_logprobs", top);
  else json_decref(top);
  return e;
}

/* Scheduler thread: keep the raw figures; the JSON is the HTTP side's. */
static void on_logprobs(void *user, const at_token_logprob *lp) {
  choice *c = user;
  gjob *j = c->j;
  pthread_mutex_lock(&j->lock);
  if (c->n_lps == c->cap_lps) {
    int cap = c->cap_lps ? c->cap_lps * 2 : 16;
    at_token_logprob *nl = realloc(c->lps, (size_t)cap * sizeof *nl);
    if (nl) c->lps = nl, c->cap_lps = cap;
  }
  if (c->n_lps < c->cap_lps) c->lps[c->n_lps++] = *lp;
  pthread_mutex_unlock(&j->lock);
}

/* Chat-form entries for the first `upto` tokens of choice c (appended to
 * c->lp; those built before are kept). HTTP side: takes the job's lock
 * only to copy the raw figures out. */
static void build_lp(choice *c, at_tok_workspace *ws, int upto) {
  gjob *j = c->j;
  if (!c->lp) c->lp = json_array();
  size_t have = json_array_size(c->lp);
  if (!c->lp || (size_t)upto <= have) return;
  size_t want = (size_t)upto - have;
  at_token_logprob *raw = malloc(want * sizeof *raw);
  if (!raw) return;
  pthread_mutex_lock(&j->lock);
  size_t got = (size_t)c->n_lps > have ? (size_t)c->n_lps - have : 0;
  if (got > want) got = want;
  if (got) memcpy(raw, c->lps + have, got * sizeof *raw);
  pthread_mutex_unlock(&j->lock);
  for (size_t i = 0; i < got; i++) {
    json_t *e = lp_entry(j, ws, &raw[i]);
    if (!e || json_array_append_new(c->lp, e)) break;
  }
  free(raw);
}

/* Entries [from, to) of chat-form entries as the route's logprobs object:
 * chat {"content": [...]}, completions {tokens, token_logprobs,
 * top_logprobs, text_offset} with offsets counted from *offset (advanced). */
static json_t *logprobs_json(const gjob *j, json_t *lp, size_t from, size_t to, size_t *offset) {
  if (j->chat) {
    json_t *content = json_array();
    for (size_t i = from; i < to; i++) json_array_append(content, json_array_get(lp, i));
    return json_pack("{s:o}", "content", content);
  }
  json_t *toks = json_array(), *tlp = json_array(), *top = json_array(), *off = json_array();
  for (size_t i = from; i < to; i++) {
    json_t *e = json_array_get(lp, i);
    json_t *tok = json_object_get(e, "token");
    json_array_append(toks, tok);
    json_array_append(tlp, json_object_get(e, "logprob"));
    json_t *alts = json_object(), *a;
    size_t k;
    json_array_foreach(json_object_get(e, "top_logprobs"), k, a) {
      const char *ts = json_string_value(json_object_get(a, "token"));
      if (ts && !json_object_get(alts, ts)) json_object_set(alts, ts, json_object_get(a, "logprob"));
    }
    json_array_append_new(top, alts);
    json_array_append_new(off, json_integer((json_int_t)*offset));
    *offset += json_string_length(tok);
  }
  return json_pack("{s:o, s:o, s:o, s:o}", "tokens", toks, "token_logprobs", tlp, "top_logprobs",
                   top, "text_offset", off);
}

/* ------------------------------------------------------------ SSE */

/* Append bytes to b (a job's pending bytes under its lock, or the reader's
 * own buffer). False when memory runs out (the stream then ends short: the
 * client sees no [DONE]). */
static bool bytes_append(char **b, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t nc = *cap ? *cap : 1024;
    while (nc < *len + n + 1) nc *= 2;
    char *nb = realloc(*b, nc);
    if (!nb) return false;
    *b = nb;
    *cap = nc;
  }
  memcpy(*b + *len, s, n);
  *len += n;
  return true;
}

/* One event (j consumed) onto the reader's buffer. */
typedef struct outbuf {
  char *p;
  size_t len, cap;
} outbuf;

static void out_event(outbuf *o, json_t *ev) {
  size_t n;
  char *e = sse_event(ev, &n); /* sse.c: pure, fuzzed */
  if (!e) return;
  bytes_append(&o->p, &o->len, &o->cap, e, n);
  free(e);
}

/* Move what was built in o (freed here) to the bytes the reader sends. */
static void out_publish(gjob *j, outbuf *o) {
  pthread_mutex_lock(&j->lock);
  if (o->len) bytes_append(&j->sse, &j->sse_len, &j->sse_cap, o->p, o->len);
  pthread_mutex_unlock(&j->lock);
  free(o->p);
}

/* The chunk carrying choice c's text[from, to) and the logprobs of its
 * tokens not streamed yet (up to c->used). HTTP side. */
static json_t *choice_chunk(choice *c, at_tok_workspace *ws, const char *text, size_t len,
                            const char *finish) {
  gjob *j = c->j;
  json_t *lp = NULL;
  if (j->logprobs) {
    build_lp(c, ws, c->used);
    size_t have = c->lp ? json_array_size(c->lp) : 0;
    if (have > c->lp_sent) {
      size_t off = 0;
      lp = logprobs_json(j, c->lp, c->lp_sent, have, &off);
      c->lp_sent = have;
    }
  }
  return sse_choice_chunk(j->id, j->created, j->model, j->chat, c->index, text, len, false, lp,
                          finish);
}

/* What one choice has to say since the reader last looked: its new text
 * (stop sequences found here, token by token, end its generation with
 * at_gen_stop), and once it is done its finish chunk or error. `upto` and
 * `done` are a snapshot taken under the lock. HTTP side. */
static void produce_choice(choice *c, at_tok_workspace *ws, int upto, bool done, outbuf *o) {
  gjob *j = c->j;
  if (c->fin_sent) return;
  const char *text = c->text.text ? c->text.text : "";
  size_t safe = c->emitted, stop_at = TS_NO_STOP;
  bool final = done && c->status == AT_OK; /* a failed choice ends with its error */
  if (!c->stopped) {
    if (j->n_stops > 0) find_stop(c, ws, upto, final, &text, &safe);
    else if (upto > c->used || final) assemble(c, ws, upto, final, &text, &safe, &stop_at);
  }
  if (safe > c->emitted) {
    out_event(o, choice_chunk(c, ws, text + c->emitted, safe - c->emitted, NULL));
    c->emitted = safe;
  }
  if (!done) return;
  c->fin_sent = true;
  if (c->status != AT_OK) {
    char msg[400];
    snprintf(msg, sizeof msg, "generation failed: %s", c->error);
    size_t len; /* the same error object as the route's error answers (errors.h) */
    char *body = serve_error_body(SERVE_PROTO_OPENAI, 500, NULL, NULL, msg, &len);
    out_event(o, body ? json_loads(body, 0, NULL) : NULL);
    free(body);
    return;
  }
  const char *finish = c->stopped || c->finish != AT_GEN_LENGTH ? "stop" : "length";
  out_event(o, choice_chunk(c, ws, j->chat ? NULL : "", 0, finish));
}

/* Everything new for the stream since the reader last looked, onto o; the
 * usage chunk and [DONE] once every choice is done. HTTP side (the
 * stream's reader). */
static void produce(gjob *j, outbuf *o) {
  enum { SNAP = 16 }; /* n <= 16 (completion_req.c) */
  int upto[SNAP];
  bool done[SNAP];
  pthread_mutex_lock(&j->lock);
  j->news_seen = j->news;
  int n = j->n < SNAP ? j->n : SNAP;
  for (int i = 0; i < n; i++) upto[i] = j->ch[i].n_tokens, done[i] = j->ch[i].done;
  bool all_done = j->pending == 0, fail = j->fail_status != 0;
  pthread_mutex_unlock(&j->lock);
  at_tok_workspace *ws = serve_workspace(j->srv);
  for (int i = 0; i < n; i++) produce_choice(&j->ch[i], ws, upto[i], done[i], o);
  if (!all_done || j->ended) return;
  if (j->include_usage && !fail) {
    int gen = 0;
    for (int i = 0; i < j->n; i++) gen += j->ch[i].stopped ? j->ch[i].used : j->ch[i].n_generated;
    out_event(o, json_pack("{s:s, s:s, s:I, s:s, s:[], s:{s:i, s:i, s:i}}", "id", j->id,
                           "object", j->chat ? "chat.completion.chunk" : "text_completion",
                           "created", (json_int_t)j->created, "model", j->model, "choices",
                           "usage", "prompt_tokens", j->n_prompt, "completion_tokens", gen,
                           "total_tokens", j->n_prompt + gen));
  }
  bytes_append(&o->p, &o->len, &o->cap, SSE_DONE, strlen(SSE_DONE));
  j->ended = true;
}

/* The stream's reader (libmicrohttpd calls it for the connection, one call
 * at a time): hands out pending bytes; when there are none, turns what the
 * generator has handed over since into events (produce, without the lock),
 * and when nothing is new either, suspends the connection until on_token
 * or on_done wakes it. The check for news and the suspend happen under the
 * lock that the producers take to bump `news` and wake, so a wake can never
 * be lost. */
static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  gjob *j = cls;
  for (;;) {
    pthread_mutex_lock(&j->lock);
    if (j->sse_len > 0) {
      size_t n = j->sse_len < max ? j->sse_len : max;
      memcpy(buf, j->sse, n);
      memmove(j->sse, j->sse + n, j->sse_len - n);
      j->sse_len -= n;
      pthread_mutex_unlock(&j->lock);
      return (ssize_t)n;
    }
    if (j->ended) {
      pthread_mutex_unlock(&j->lock);
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (j->news == j->news_seen && j->pending > 0) {
      conn_waiter_suspend(&j->w);
      pthread_mutex_unlock(&j->lock);
      return 0;
    }
    pthread_mutex_unlock(&j->lock);
    outbuf o = {0};
    produce(j, &o);
    out_publish(j, &o);
  }
}

/* libmicrohttpd freed the HTTP side (a stream's reader state, or a plain
 * request): its connection is never woken again, choices still running
 * are cancelled (a client that left), and its reference is dropped. */
static void http_side_free(void *cls) {
  gjob *j = cls;
  pthread_mutex_lock(&j->lock);
  conn_waiter_close(&j->w);
  bool running = j->pending > 0;
  pthread_mutex_unlock(&j->lock);
  if (running)
    for (int i = 0; i < j->n; i++) at_gen_cancel(j->gen, j->ch[i].gen_id);
  job_unref(j);
}

/* ------------------------------------------------------------ generator callbacks */

/* Scheduler thread: publish the id and wake the HTTP side; nothing else
 * (text, stop sequences, JSON and the hang-up probe are the HTTP side's).
 * Woken at every token: a stream's reader, and a plain answer with stop
 * sequences, which looks for them; a plain answer without, at most every
 * PROBE_NS, to look for a hang-up (a plain answer with stop sequences is
 * asked to look as often). */
static bool on_token(void *user, int32_t tok, int n) {
  choice *c = user;
  gjob *j = c->j;
  (void)n;
  pthread_mutex_lock(&j->lock);
  bool room = c->n_tokens < c->cap_tokens;
  if (room) {
    c->tokens[c->n_tokens++] = tok;
    j->news++;
    bool wake = j->stream || j->n_stops > 0;
    if (!j->stream) {
      uint64_t now = at_now_ns();
      if (now >= j->next_probe_ns) j->next_probe_ns = now + PROBE_NS, j->probe_due = wake = true;
    }
    if (wake) conn_waiter_wake(&j->w);
  }
  pthread_mutex_unlock(&j->lock);
  return !room; /* cannot happen: cap_tokens >= max_tokens */
}

static void on_done(void *user, const at_gen_result *r) {
  choice *c = user;
  gjob *j = c->j;
  pthread_mutex_lock(&j->lock);
  c->done = true;
  c->finish = r->finish;
  c->status = r->status;
  if (r->error) snprintf(c->error, sizeof c->error, "%s", r->error);
  c->n_generated = r->n_generated;
  c->preemptions = r->preemptions;
  c->ttft_ms = r->first_token_ns ? (double)(r->first_token_ns - r->submitted_ns) / 1e6 : NAN;
  c->tpot_ms = r->n_generated > 1
                   ? (double)(r->finished_ns - r->first_token_ns) / 1e6 / (r->n_generated - 1)
                   : NAN;
  j->news++;
  --j->pending;
  conn_waiter_wake(&j->w); /* its finish chunk, and at 0 the end of the answer */
  pthread_mutex_unlock(&j->lock);
  job_unref(j);
}

/* ------------------------------------------------------------ answers */

/* A plain (non-streamed) request, resumed: server.c calls this on the HTTP
 * thread at every wake (r->resumed). It looks for a hang-up when on_token
 * asked, and for stop sequences in the tokens that arrived (one found ends
 * its choice with at_gen_stop). Returns true once every choice is done
 * (finish_job then answers), false after suspending the connection again.
 * "Nothing new: suspend" happens under the lock that on_token and on_done
 * take to bump `news` and wake, so a wake is never lost. */
static bool plain_resumed(req_ctx *r) {
  gjob *j = r->route_state;
  enum { SNAP = 16 }; /* n <= 16 (completion_req.c) */
  int upto[SNAP];
  bool done[SNAP];
  for (;;) {
    pthread_mutex_lock(&j->lock);
    bool all_done = j->pending == 0;
    if (!all_done && j->news == j->news_seen) {
      conn_waiter_suspend(&j->w);
      pthread_mutex_unlock(&j->lock);
      return false;
    }
    j->news_seen = j->news;
    bool probe = j->probe_due;
    j->probe_due = false;
    int n = j->n < SNAP ? j->n : SNAP;
    for (int i = 0; i < n; i++) upto[i] = j->ch[i].n_tokens, done[i] = j->ch[i].done;
    pthread_mutex_unlock(&j->lock);
    if (probe) probe_peer(j);
    at_tok_workspace *ws = j->n_stops > 0 ? serve_workspace(j->srv) : NULL;
    for (int i = 0; i < n && ws; i++) {
      choice *c = &j->ch[i];
      const char *text;
      size_t safe;
      if (c->stopped) continue;
      text = "", safe = c->emitted;
      find_stop(c, ws, upto[i], done[i] && c->status == AT_OK, &text, &safe);
      c->emitted = safe; /* checked: holds no stop */
    }
    if (all_done) return true;
  }
}

static void finish_job(req_ctx *r) {
  gjob *j = r->route_state;
  pthread_mutex_lock(&j->lock);
  int fail = j->fail_status;
  int bad = -1;
  for (int i = 0; i < j->n && bad < 0; i++)
    if (j->ch[i].status != AT_OK) bad = i;
  pthread_mutex_unlock(&j->lock);
  if (j->peer_gone) { /* nobody reads it; 499 (nginx's code) in the metrics and access log */
    serve_prepare_error(r, 499, "the client closed the connection; generation cancelled");
    return;
  }
  if (fail) {
    if (j->retry_after[0]) snprintf(r->retry_after, sizeof r->retry_after, "%s", j->retry_after);
    serve_prepare_error(r, fail, "%s", j->fail_msg);
    return;
  }
  if (bad >= 0) {
    serve_prepare_error(r, 500, "generation failed: %s", j->ch[bad].error);
    return;
  }
  at_tok_workspace *ws = serve_workspace(j->srv);
  json_t *choices = json_array();
  int gen = 0;
  double ttft = 0, tpot = 0;
  for (int i = 0; i < j->n; i++) {
    choice *c = &j->ch[i];
    int upto = c->stopped ? c->used : c->n_tokens; /* the tokens up to its stop */
    gen += c->stopped ? c->used : c->n_generated;
    const char *final = "";
    size_t flen = 0, stop_at;
    assemble(c, ws, upto, true, &final, &flen, &stop_at);
    size_t plen = j->echo ? j->prompt_len : 0, n = plen + flen;
    char *both = malloc(n + 1);
    if (!both) {
      json_decref(choices);
      serve_prepare_error(r, 500, "out of memory");
      return;
    }
    if (plen) memcpy(both, j->prompt, plen);
    memcpy(both + plen, final, flen);
    json_t *text = json_stringn(both, n);
    free(both);
    json_t *lp = json_null();
    if (j->logprobs) {
      size_t off = plen;
      json_decref(lp);
      build_lp(c, ws, upto);
      lp = logprobs_json(j, c->lp ? c->lp : json_array(), 0, c->lp ? json_array_size(c->lp) : 0,
                         &off);
    }
    const char *finish = c->stopped || c->finish != AT_GEN_LENGTH ? "stop" : "length";
    json_t *one = j->chat ? json_pack("{s:i, s:{s:s, s:o}, s:o, s:s}", "index", i, "message",
                                      "role", "assistant", "content",
                                      text ? text : json_string(""), "logprobs", lp,
                                      "finish_reason", finish)
                          : json_pack("{s:o, s:i, s:o, s:s}", "text",
                                      text ? text : json_string(""), "index", i, "logprobs", lp,
                                      "finish_reason", finish);
    json_array_append_new(choices, one);
    if (i == 0 || c->ttft_ms > ttft) ttft = c->ttft_ms;
    if (i == 0 || c->tpot_ms > tpot) tpot = c->tpot_ms;
  }
  json_t *out = json_pack("{s:s, s:s, s:I, s:s, s:o, s:{s:i, s:i, s:i}}", "id", j->id, "object",
                          j->chat ? "chat.completion" : "text_completion", "created",
                          (json_int_t)j->created, "model", j->model, "choices", choices, "usage",
                          "prompt_tokens", j->n_prompt, "completion_tokens", gen, "total_tokens",
                          j->n_prompt + gen);
  serve_prepare_json(r, 200, out);
  ttft = isfinite(ttft) && ttft < 1e9 ? ttft : 0.0;
  tpot = isfinite(tpot) && tpot < 1e9 ? tpot : 0.0;
  snprintf(r->ttft, sizeof r->ttft, "%.3f", ttft);
  snprintf(r->tpot, sizeof r->tpot, "%.3f", tpot);
}

/* ------------------------------------------------------------ request */

/* A seed for a request that named none: distinct per request. */
static uint64_t fresh_seed(void) {
  static _Atomic uint64_t counter;
  uint64_t z = at_now_ns() + 0x9e3779b97f4a7c15ull * (atomic_fetch_add(&counter, 1) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The prompt's ids: the messages rendered by the chat template and
 * encoded, or the prompt encoded. false: *res holds the error answer. */
static bool prompt_ids(req_ctx *r, bool chat, const cmpl_req *q, int32_t **ids, int *n_ids,
                       char **rendered, enum MHD_Result *res) {
  at_server *s = r->srv;
  at_status st;
  if (chat) {
    size_t rlen = 0;
    char err[400];
    int cst = serve_chat_prompt(s, q->messages, rendered, &rlen, err, sizeof err);
    if (cst) {
      *res = serve_error(r, cst, "%s", err);
      return false;
    }
    st = at_lm_encode_rendered(s->lm, serve_workspace(s), *rendered, rlen, ids, n_ids);
  } else {
    st = at_lm_encode(s->lm, serve_workspace(s), q->prompt, q->prompt_len, ids, n_ids);
  }
  if (st != AT_OK) {
    if (st == AT_ERR_LIMIT) serve_error_hint(r, "context_length_exceeded", chat ? "messages" : "prompt");
    *res = serve_error(r, serve_tokenise_status(st), "cannot tokenise the prompt: %s",
                       at_last_error());
    return false;
  }
  return true;
}

/* Which lane runs the request. admission queue: the first. admission slo:
 * forecast every lane's time to first token and per output token for n
 * choices of an n_ids-token prompt and take the most accurate lane that
 * meets the budgets (x-ttft-ms / x-tpot-ms, else the configured ones;
 * at_gen_choose_lane); when none does, refuse now with a Retry-After for
 * when the soonest lane's excess has drained. Returns the lane, or -1:
 * refused or a bad header, *res holds the answer. */
static int choose_lane(req_ctx *r, const int32_t *ids, int n_ids, int n, long long max_tokens,
                       double *tpot_budget, int *prio, enum MHD_Result *res) {
  at_server *s = r->srv;
  const at_server_generator_config *gc = &s->cfg.generator;
  *tpot_budget = 0;
  if (!serve_priority_parse(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "x-priority"),
                            prio)) {
    *res = serve_error(r, 400, "x-priority must be high, normal or low (or 1, 0, -1)");
    return -1;
  }
  if (strcmp(gc->admission, "slo")) return 0;
  double ttft_b, tpot_b;
  if (at_plan_parse_deadline_ms(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "x-ttft-ms"),
                                gc->ttft_slo_ms / 1e3, gc->ttft_slo_ms / 1e3, &ttft_b) != AT_OK ||
      at_plan_parse_deadline_ms(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "x-tpot-ms"),
                                gc->tpot_slo_ms / 1e3, gc->tpot_slo_ms / 1e3, &tpot_b) != AT_OK) {
    *res = serve_error(r, 400, "x-ttft-ms and x-tpot-ms must be positive numbers of milliseconds");
    return -1;
  }
  if (serve_refuse_early(r, gc->name, at_now_ns(), res)) return -1; /* its slot is kept */
  at_gen_load load[SERVE_MAX_GEN_LANES];
  at_gen_params par[SERVE_MAX_GEN_LANES];
  at_gen_forecast f[SERVE_MAX_GEN_LANES];
  int sequences = 0;
  /* the prompt's head a lane's prefix cache holds is not prefilled: the
   * forecasts price n_pre positions, and the held ones as cached positions
   * the decode steps read (the least any lane holds: one price for all) */
  int hit = n_ids;
  for (int i = 0; i < s->n_lanes; i++) {
    at_gen_load_get(s->lanes[i].gen, &load[i]);
    /* the waiting sequences of lower classes are admitted after this one */
    load[i] = at_gen_load_for_class(&load[i], *prio);
    par[i] = s->lanes[i].params;
    sequences += load[i].sequences;
    int h = at_gen_prefix_probe(s->lanes[i].gen, ids, n_ids - 1);
    if (h < hit) hit = h;
  }
  int n_pre = n_ids - hit;
  for (int i = 0; i < s->n_lanes; i++) load[i].cached_tokens += (long long)hit * n;
  /* A request no lane could answer within its budgets even when idle can
   * never be admitted: 422 at once, no Retry-After, and not counted as
   * demand (else tiny budgets sent on purpose would move every client to
   * the cheaper lane). */
  bool feasible = false;
  at_gen_forecast idle[SERVE_MAX_GEN_LANES];
  for (int i = 0; i < s->n_lanes; i++) {
    idle[i] = at_gen_idle_forecast(&load[i], &par[i], n_pre, n);
    if (idle[i].ttft_s <= ttft_b && idle[i].tpot_s <= tpot_b) feasible = true;
  }
  if (!feasible) {
    char each[400];
    size_t eo = 0;
    each[0] = 0;
    for (int i = 0; i < s->n_lanes && eo < sizeof each; i++)
      eo += (size_t)snprintf(each + eo, sizeof each - eo, "%s%s: %.1f ms, %.2f ms", i ? "; " : "",
                             s->lanes[i].variant, idle[i].ttft_s * 1e3, idle[i].tpot_s * 1e3);
    atomic_fetch_add(&s->gen_refused, 1);
    serve_error_hint(r, "deadline_infeasible", NULL);
    *res = serve_error(r, 422,
                       "budgets of %.1f ms to the first token and %.2f ms per output token are "
                       "below what %d sequence(s) of this %d-token prompt take on an idle server "
                       "(%s): no lane can answer in time; send a larger x-ttft-ms / x-tpot-ms or "
                       "a shorter prompt",
                       ttft_b * 1e3, tpot_b * 1e3, n, n_ids, each);
    return -1;
  }
  at_gen_demand demand = {.out_tokens = max_tokens > 1000000 ? 1000000 : (int)max_tokens};
  uint64_t t = at_now_ns();
  if (s->n_lanes > 1) { /* every request that could fit and reaches the choice is demand */
    pthread_mutex_lock(&s->gen_demand_lock);
    at_rate_record(&s->gen_offered, 0, t);
    demand.offered_per_s = at_rate_per_s(&s->gen_offered, 0, t, 0);
    demand.refused_per_s = at_rate_per_s(&s->gen_offered, 1, t, 0);
    demand.carrier = s->gen_carrier;
    pthread_mutex_unlock(&s->gen_demand_lock);
  }
  int lane = at_gen_choose_lane(load, par, s->n_lanes, n_pre, n, ttft_b, tpot_b,
                                s->n_lanes > 1 ? &demand : NULL, f);
  if (s->n_lanes > 1) {
    pthread_mutex_lock(&s->gen_demand_lock);
    s->gen_carrier = demand.carrier;
    if (lane < 0) at_rate_record(&s->gen_offered, 1, t);
    pthread_mutex_unlock(&s->gen_demand_lock);
  }
  if (lane >= 0) {
    *tpot_budget = tpot_b; /* promised: the lanes protect it (at_gen_choose_lane) */
    return lane;
  }
  atomic_fetch_add(&s->gen_refused, 1);
  /* come back when the soonest lane's excess has drained: the prefill
   * ahead, or the share of its sequences over the budget finishing */
  double ra = INFINITY;
  for (int i = 0; i < s->n_lanes; i++) {
    double ri = f[i].ttft_s - ttft_b, ri_tpot = (f[i].tpot_s - tpot_b) * (double)max_tokens;
    if (ri_tpot > ri) ri = ri_tpot;
    if (ri < ra) ra = ri;
  }
  if (ra < 0.05) ra = 0.05;
  uint64_t now = at_now_ns();
  uint64_t hold = serve_refusal_hold(r, now, &ra, s->holdq != NULL);
  char msg[600], each[400];
  size_t eo = 0;
  each[0] = 0;
  for (int i = 0; i < s->n_lanes && eo < sizeof each; i++)
    eo += (size_t)snprintf(each + eo, sizeof each - eo, "%s%s: %.0f ms, %.1f ms", i ? "; " : "",
                           s->lanes[i].variant, f[i].ttft_s * 1e3, f[i].tpot_s * 1e3);
  snprintf(msg, sizeof msg,
           "overloaded: forecast time to first token and per output token (%s) miss the "
           "budgets of %.0f ms and %.1f ms with %d sequences in the lane%s; retry after %.0f ms",
           each, ttft_b * 1e3, tpot_b * 1e3, sequences, s->n_lanes > 1 ? "s" : "", ra * 1e3);
  *res = serve_refusal_send(r, 429, msg, now, hold, ra);
  return -1;
}

/* A job for the request's n choices, holding the HTTP side's reference.
 * NULL: *res holds the error answer. */
static gjob *job_new(req_ctx *r, bool chat, const cmpl_req *q, int n_ids, int lane,
                     enum MHD_Result *res) {
  at_server *s = r->srv;
  int n = (int)q->n;
  gjob *j = calloc(1, sizeof *j);
  if (!j || !(j->ch = calloc((size_t)n, sizeof *j->ch))) {
    free(j);
    *res = serve_error(r, 500, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&j->lock, NULL);
  j->refs = 1; /* the HTTP side */
  j->srv = s;
  j->lane = lane;
  j->gen = s->lanes[lane].gen;
  j->fd = -1;
  conn_waiter_init(&j->w, r->conn);
  j->chat = chat;
  j->stream = q->stream;
  j->echo = q->echo;
  j->include_usage = q->include_usage;
  j->logprobs = q->logprobs;
  j->top_logprobs = q->top_logprobs;
  j->n = n;
  j->n_prompt = n_ids;
  j->created = (long long)time(NULL);
  snprintf(j->model, sizeof j->model, "%s", s->cfg.generator.name);
  static _Atomic unsigned long long counter;
  snprintf(j->id, sizeof j->id, "%s-%llx%06llx", chat ? "chatcmpl" : "cmpl",
           (unsigned long long)j->created, (unsigned long long)(++counter & 0xffffff));
  /* room for every token a choice may generate, allocated once (see
   * choice); a request past the model's positions is refused at submit */
  const at_decoder_info *di = at_gen_decoder_info(s->lanes[0].gen); /* every lane's */
  long long cap = q->max_tokens;
  if (di && di->max_positions > 0 && cap > di->max_positions) cap = di->max_positions;
  for (int i = 0; i < n; i++) {
    j->ch[i].j = j;
    j->ch[i].index = i;
    j->ch[i].cap_tokens = (int)cap;
    if (!(j->ch[i].tokens = malloc((size_t)cap * sizeof *j->ch[i].tokens))) {
      j->n = i + 1; /* job_unref frees what was made */
      job_unref(j);
      *res = serve_error(r, 500, "out of memory");
      return NULL;
    }
  }
  for (int i = 0; i < q->n_stops; i++) {
    j->stops[i] = strndup(q->stops[i], q->stop_len[i]);
    j->stop_len[i] = q->stop_len[i];
    if (!j->stops[i]) {
      job_unref(j);
      *res = serve_error(r, 500, "out of memory");
      return NULL;
    }
    j->n_stops = i + 1;
  }
  if (q->echo) {
    j->prompt = strndup(q->prompt, q->prompt_len);
    j->prompt_len = j->prompt ? q->prompt_len : 0;
  }
  return j;
}

/* Submit the job's choices (choice i samples with seed + i; choices after
 * the first fork its prompt cache), each carrying the per-token budget
 * admission promised (0: none). A refused submission cancels the ones
 * before it and records the answer in the job (fail_status, fail_msg).
 * Then hands back the HTTP thread's pending count; returns the job's
 * fail_status (0: all submitted). */
static int submit_choices(at_server *s, gjob *j, const cmpl_req *q, const int32_t *ids,
                          int n_ids, double dl, double tpot_budget, int prio) {
  int n = j->n, submitted = 0;
  uint64_t seed = q->has_seed ? (uint64_t)q->seed : fresh_seed();
  j->pending = n + 1;
  for (int i = 0; i < n; i++) {
    at_gen_request gr = {.prompt = ids,
                         .n_prompt = n_ids,
                         .max_tokens = (int)q->max_tokens,
                         .sample = {.temperature = (float)q->temperature,
                                    .top_k = (int)q->top_k,
                                    .top_p = (float)q->top_p,
                                    .seed = seed + (uint64_t)i},
                         .eos_id = s->lm->eos_id,
                         .n_eos = s->lm->n_eos,
                         .deadline_s = dl,
                         .tpot_budget_s = tpot_budget,
                         .priority = prio,
                         .presence_penalty = (float)q->presence_penalty,
                         .frequency_penalty = (float)q->frequency_penalty,
                         .logprobs = q->logprobs,
                         .top_logprobs = q->top_logprobs,
                         .on_logprobs = on_logprobs,
                         .fork_of = i > 0 ? j->ch[0].gen_id : 0, /* share the prompt's cache */
                         .on_token = on_token,
                         .on_done = on_done,
                         .user = &j->ch[i]};
    memcpy(gr.eos_ids, s->lm->eos_ids, sizeof gr.eos_ids);
    pthread_mutex_lock(&j->lock);
    j->refs++; /* the generator's, dropped after on_done */
    pthread_mutex_unlock(&j->lock);
    at_status st = at_gen_submit(j->gen, &gr, &j->ch[i].gen_id);
    if (st != AT_OK) {
      pthread_mutex_lock(&j->lock);
      j->refs--;
      j->fail_status = st == AT_ERR_QUEUE_FULL ? 429 : st == AT_ERR_SHUTDOWN ? 503 : 400;
      snprintf(j->fail_msg, sizeof j->fail_msg, "%s", at_last_error());
      if (st == AT_ERR_QUEUE_FULL) snprintf(j->retry_after, sizeof j->retry_after, "1");
      if (j->stream) conn_waiter_close(&j->w); /* it never starts: the error is the answer */
      pthread_mutex_unlock(&j->lock);
      for (int k = 0; k < i; k++) at_gen_cancel(j->gen, j->ch[k].gen_id);
      break;
    }
    submitted++;
  }
  pthread_mutex_lock(&j->lock);
  j->pending -= (n - submitted) + 1;
  int fail = j->fail_status;
  /* every choice already finished: end the answer here (non-stream: wake it
   * so finish_job answers; stream: its reader writes the rest) */
  if (j->pending == 0) conn_waiter_wake(&j->w);
  pthread_mutex_unlock(&j->lock);
  return fail;
}

/* Answer a streamed job: the SSE response, whose reader state takes the
 * HTTP side's reference (also on failure: then the choices are cancelled). */
static enum MHD_Result start_stream(req_ctx *r, gjob *j) {
  at_server *s = r->srv;
  const char *name = s->cfg.generator.name;
  const char *variant = s->lanes[j->lane].variant; /* the server's: outlives j */
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_reader, j, http_side_free);
  if (!resp) {
    for (int i = 0; i < j->n; i++) at_gen_cancel(j->gen, j->ch[i].gen_id);
    job_unref(j);
    return serve_error(r, 500, "out of memory");
  }
  MHD_add_response_header(resp, "Content-Type", "text/event-stream");
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  MHD_add_response_header(resp, "x-model", name);
  MHD_add_response_header(resp, "x-variant", variant);
  if (r->request_id[0]) MHD_add_response_header(resp, "x-request-id", r->request_id);
  enum MHD_Result res = MHD_queue_response(r->conn, 200, resp);
  MHD_destroy_response(resp);
  r->counted = true;
  at_metrics_request(s->metrics, "http", r->route, name, variant, 200, (double)(at_now_ns() - r->t0_ns) / 1e9,
                     -1, -1, -1);
  /* a stream's line is written when it starts: its length is not known */
  serve_log_request(r, 200, name, variant, (double)(at_now_ns() - r->t0_ns) / 1e6, -1, -1, -1, 0);
  return res;
}

/* A chat request without max_tokens gets the rest of the context, as
 * OpenAI's and vLLM's chat routes give: what the model's positions leave
 * after the prompt's n_ids tokens, at most generator.max_tokens and what
 * every lane's KV arena holds for one sequence. 0: nothing is left. */
static long long rest_of_context(at_server *s, int n_ids) {
  long long rest = s->cfg.generator.max_tokens;
  const at_decoder_info *di = at_gen_decoder_info(s->lanes[0].gen); /* every lane's */
  /* a sequence of prompt + max_tokens tokens caches one position fewer */
  if (di && di->max_positions > 0 && (long long)di->max_positions + 1 - n_ids < rest)
    rest = (long long)di->max_positions + 1 - n_ids;
  for (int i = 0; i < s->n_lanes; i++) {
    const at_gen_params *p = &s->lanes[i].params;
    /* ceil(t * safety / block_tokens) <= n_blocks for t cached positions */
    long long t = (long long)floor((double)p->n_blocks * p->block_tokens / p->safety);
    while (t > 0 && at_kv_blocks_needed(t, p->safety, p->block_tokens) > p->n_blocks) t--;
    if (t + 1 - n_ids < rest) rest = t + 1 - n_ids;
  }
  return rest > 0 ? rest : 0;
}

static enum MHD_Result generate(req_ctx *r, bool chat) {
  at_server *s = r->srv;
  const at_server_generator_config *gc = &s->cfg.generator;
  if (s->n_lanes < 1)
    return serve_error(serve_error_hint(r, "model_not_found", "model"), 404,
                       "this server has no text-generation model (configure a 'generator' "
                       "section; see docs/configuration.md)");
  enum MHD_Result res = MHD_YES;
  json_t *body = rj_parse(r, &res);
  if (!body) return res;
  gjob *j = NULL;
  int32_t *ids = NULL;
  int n_ids = 0;
  char *rendered = NULL;
  cmpl_req q;
  char err[400];
  cmpl_limits lim = {.model = gc->name,
                     .default_max_tokens = gc->default_max_tokens,
                     .max_tokens = gc->max_tokens};
  int bad = chat ? chat_req_parse(body, &lim, &q, err, sizeof err)
                 : cmpl_req_parse(body, &lim, &q, err, sizeof err);
  if (bad) {
    if (bad == 404) serve_error_hint(r, "model_not_found", "model");
    res = serve_error(r, bad, "%s", err);
    goto out;
  }
  r->model_hdr = gc->name;
  double dl = rj_deadline_s(r);
  if (dl < 0) {
    res = serve_error(r, 400, "x-deadline-ms must be a positive number of milliseconds");
    goto out;
  }
  int lane = -1, prio = 0;
  double tpot_budget = 0;
  if (!prompt_ids(r, chat, &q, &ids, &n_ids, &rendered, &res)) goto out;
  if (q.max_tokens == 0 && (q.max_tokens = rest_of_context(s, n_ids)) == 0) {
    res = serve_error(serve_error_hint(r, "context_length_exceeded", "messages"), 400,
                      "the prompt's %d tokens leave no room to generate in the model's context",
                      n_ids);
    goto out;
  }
  if ((lane = choose_lane(r, ids, n_ids, (int)q.n, q.max_tokens, &tpot_budget, &prio, &res)) < 0 ||
      !(j = job_new(r, chat, &q, n_ids, lane, &res)))
    goto out;
  atomic_fetch_add(&s->lanes[lane].chosen, 1);
  r->variant_hdr = s->lanes[lane].variant;
  if (!j->stream) { /* the socket is probed for a hang-up while it generates */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    j->fd = ci ? ci->connect_fd : -1;
  }
  /* non-streamed: suspended now, before its choices are submitted;
   * plain_resumed runs at every wake and finish_job answers once every
   * choice is done. streamed: its reader suspends and resumes itself. */
  if (!serve_go_async(r, j->stream ? NULL : finish_job, 0, j->stream ? NULL : plain_resumed, &res))
    goto out;
  if (!j->stream) {
    r->route_state = j, r->free_state = http_side_free;
    pthread_mutex_lock(&j->lock);
    conn_waiter_suspend(&j->w);
    pthread_mutex_unlock(&j->lock);
  }
  if (j->stream && chat) { /* each choice's first delta carries the role */
    outbuf o = {0};
    for (int i = 0; i < j->n; i++)
      out_event(&o, sse_choice_chunk(j->id, j->created, j->model, true, i, "", 0, true, NULL, NULL));
    out_publish(j, &o);
  }
  int fail = submit_choices(s, j, &q, ids, n_ids, dl, tpot_budget, prio);
  if (!j->stream) {
    j = NULL; /* owned by route_state now */
  } else if (fail) {
    if (j->retry_after[0]) snprintf(r->retry_after, sizeof r->retry_after, "%s", j->retry_after);
    res = serve_error(r, fail, "%s", j->fail_msg);
  } else {
    res = start_stream(r, j);
    j = NULL; /* the reader owns the HTTP reference */
  }
out:
  free(ids);
  free(rendered);
  if (j) job_unref(j);
  cmpl_req_free(&q);
  json_decref(body);
  return res;
}

/* Handlers for the route table (routes.c). */
enum MHD_Result serve_route_completions(req_ctx *r, served_model *m) {
  (void)m;
  return generate(r, false);
}
enum MHD_Result serve_route_chat_completions(req_ctx *r, served_model *m) {
  (void)m;
  return generate(r, true);
}
