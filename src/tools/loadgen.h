/* src/tools/loadgen.h — the pieces of `anytime loadgen`, a load generator for
 * the TEI-style /predict route, split out so the unit tests can drive each
 * one: the seeded arrival schedule, the label,text CSV reader, request
 * building (JSON escaping), the incremental HTTP/1.1 response parser
 * (Content-Length and chunked), the prediction reader, the retry rules of
 * clients that come back after a 429 (at once, after the server's advice,
 * or with the OpenAI SDK's backoff), the epoll client loops — open-loop
 * Poisson (lg_run) and closed-loop clients (lg_run_closed) — and the
 * summary arithmetic. `anytime sweep` calls these in-process.
 *
 * Thread-safety: nothing here is shared; lg_run() and lg_run_closed() use
 * only the calling thread and the memory they are given.
 */
#ifndef ANYTIME_TOOLS_LOADGEN_H
#define ANYTIME_TOOLS_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "anytime/rng.h"

/* ---- seeded randomness and the arrival schedule -------------------------- */

/* One exponential inter-arrival time (seconds) at `rate` per second, from
 * the shared generator (anytime/rng.h). */
double lg_rng_exp(at_rng *r, double rate);

/* Arrival offsets (seconds from the start) of a Poisson process at `rate`
 * over [0, duration): *out is malloc'd (free it), *n its length. The same
 * (seed, rate, duration) always yields the same schedule. Returns 0, or -1
 * when out of memory or more than `max_n` arrivals would be generated. */
int lg_schedule(uint64_t seed, double rate, double duration, size_t max_n, double **out,
                size_t *n);

/* ---- data ---------------------------------------------------------------- */

typedef struct lg_item {
  char *text;
  int label; /* 0 negative, 1 positive, -1 unknown */
} lg_item;

typedef struct lg_data {
  lg_item *items;
  size_t n;
} lg_data;

/* Read labelled texts with the shared reader (tools/dataset.h: RFC 4180
 * quoting, an optional BOM and header, unquoted commas in a last text
 * column) and the sentiment rule cli_labels_binary (1/positive → 1,
 * 0/-1/negative → 0). Returns 0, or -1 with a message in err. */
int lg_data_load(const char *path, lg_data *d, char *err, size_t err_len);
/* The same from a buffer (for tests). */
int lg_data_parse(const char *buf, size_t len, lg_data *d, char *err, size_t err_len);
void lg_data_free(lg_data *d);
/* The default data file: $ANYTIME_DATA_DIR/pang-lee/test.csv, else
 * $HOME/.cache/anytime/data/pang-lee/test.csv (the held-out split). Writes
 * it to buf and returns buf. */
const char *lg_default_data_path(char *buf, size_t cap);

/* ---- HTTP ------------------------------------------------------------------ */

typedef struct lg_url {
  char host[256]; /* numeric IPv4 or "localhost" */
  int port;
  char path[1024];
} lg_url;

/* Parse http://HOST[:PORT]/PATH. Returns 0 or -1. */
int lg_url_parse(const char *url, lg_url *out);

/* Append `s` JSON-escaped (without quotes) to buf[*len..cap). Returns 0 or
 * -1 if it does not fit. Control characters become \u00XX; bytes >= 0x80
 * pass through (the text is UTF-8). */
int lg_json_escape(const char *s, char *buf, size_t *len, size_t cap);

/* What every request carries besides its text. */
typedef struct lg_request_spec {
  double deadline_ms;  /* > 0: the x-deadline-ms header */
  /* > 0: an OpenAI completion, body {"prompt": "<text>", "max_tokens": N,
   * "temperature": T}, instead of the TEI body {"inputs": "<text>"} */
  int max_tokens;
  double temperature;
  double ttft_ms, tpot_ms; /* > 0: the x-ttft-ms / x-tpot-ms headers */
  /* closed loop, non-NULL: client k sends "x-client-id: <prefix>-<k>" (at
   * most 64 bytes of prefix) */
  const char *client_prefix;
  int client;
} lg_request_spec;

/* Build a complete POST request for `text` as `spec` says. Returns its
 * length, or -1 if it does not fit in cap. */
long lg_build_request(const lg_url *u, const lg_request_spec *spec, const char *text, char *buf,
                      size_t cap);

#define LG_MAX_HEADER 16384
#define LG_MAX_BODY (1u << 20)

typedef struct lg_response {
  int status;
  bool keep_alive;       /* false after "Connection: close" or HTTP/1.0 */
  char variant[64];      /* x-variant header, "" if none */
  double retry_after_s;  /* Retry-After in seconds, -1 if none (or an HTTP-date) */
  double retry_after_ms; /* retry-after-ms in milliseconds, -1 if none */
  double inference_s;    /* x-inference-time (the server's Run time), -1 if none */
  double ttft_s, tpot_s; /* x-time-to-first-token / x-time-per-output-token (a
                            generation's), -1 if none */
  size_t body_len;       /* decoded body (chunks joined) in the caller's buffer */
} lg_response;

/* Parse one response from the start of buf[0..len). Returns the number of
 * bytes it occupies once complete (the body, de-chunked, is in body[0..cap)
 * and out->body_len), 0 if more bytes are needed, -1 if malformed or over a
 * size cap. A response delimited by the connection's end (no length, not
 * chunked) completes only with `eof`. */
long lg_http_parse(const char *buf, size_t len, bool eof, lg_response *out, char *body,
                   size_t cap);

/* The top label of a TEI /predict body ([{"label","score"},...] or nested
 * [[...]]): the entry with the highest score. Writes it to label (cap
 * bytes). Returns 0 or -1. */
int lg_top_label(const char *body, size_t len, char *label, size_t cap);

/* ---- retries after a 429 ------------------------------------------------------ */

/* What a closed-loop client does when its request is refused (429). */
typedef enum lg_retry {
  LG_RETRY_NONE = 0, /* give up: the logical request failed */
  LG_RETRY_NOW,      /* resend at once, for as long as the run lasts */
  LG_RETRY_AFTER,    /* wait what the server advises (retry-after-ms, else
                        Retry-After; 1 s if it says neither), then resend */
  LG_RETRY_BACKOFF,  /* the OpenAI SDK's rule: at most LG_BACKOFF_RETRIES
                        retries, see lg_retry_delay_s() */
} lg_retry;

#define LG_BACKOFF_RETRIES 2

/* "none" / "now" / "after" / "backoff" -> *out. Returns 0, or -1 if unknown. */
int lg_retry_parse(const char *s, lg_retry *out);
const char *lg_retry_name(lg_retry r);

/* The server's advice in seconds, as the OpenAI SDK reads it:
 * retry-after-ms (milliseconds) when given and not 0, else Retry-After
 * (seconds); -1 when neither was given (pass -1 for an absent header). */
double lg_retry_advice_s(double retry_after_ms, double retry_after_s);

/* Seconds to wait before retry number k (k = 0 is the first retry) of a
 * request refused with a 429 carrying those headers (-1 = absent), or -1 to
 * give up. u is a uniform draw in [0, 1) (the SDK's jitter).
 *   NONE:    -1.
 *   NOW:     0.
 *   AFTER:   the advice (lg_retry_advice_s), 1 s when there is none.
 *   BACKOFF: -1 once k >= LG_BACKOFF_RETRIES; the advice when
 *            0 < advice < 60 s; else min(0.5 * 2^k, 8) * (1 - 0.25 u). */
double lg_retry_delay_s(lg_retry policy, int k, double retry_after_ms, double retry_after_s,
                        double u);

/* ---- the run ----------------------------------------------------------------- */

enum { LG_OK = 0, LG_ERR_CONNECT = -1, LG_ERR_IO = -2, LG_ERR_PARSE = -3,
       LG_ERR_TIMEOUT = -4, LG_ERR_UNSENT = -5 };

/* One attempt's fate (open loop: one per scheduled request; closed loop:
 * one per send, so a retried request has several). Times are seconds from
 * the start of the run. */
typedef struct lg_record {
  double scheduled_s; /* when the schedule (open loop) or the client (its
                         think time or retry delay over) said to send */
  double sent_s;      /* when its first byte was written (-1 if never) */
  double latency_s;   /* response complete − scheduled (-1 if none) */
  int status;         /* HTTP status, or an LG_ERR_* value */
  int variant;        /* index into the run's variant names, -1 if none */
  int correct;        /* 1/0 for 200 with a known label, -1 otherwise */
  int item;           /* index of the data item sent */
  double retry_after_s;  /* Retry-After of its answer, -1 if none */
  double inference_s; /* the server's x-inference-time, -1 if none */
  double retry_after_ms; /* retry-after-ms of its answer, -1 if none */
  double ttft_s, tpot_s; /* a generation's x-time-to-first-token and
                            x-time-per-output-token, -1 if none */
  int client;         /* closed loop: the client that sent it; -1 open loop */
  int attempt;        /* 0 for a logical request's first send, k for its k-th retry */
  double origin_s;    /* scheduled_s of the logical request's first attempt */
} lg_record;

typedef struct lg_config {
  lg_url url;
  double deadline_ms;    /* > 0: sent as x-deadline-ms; scores goodput */
  lg_request_spec spec;  /* the request's form (its deadline_ms: the one above) */
  size_t max_conns;      /* connection cap; default 512 (open loop only) */
  size_t initial_conns;  /* opened before the first send; default 4 (open loop) */
  double late_s;         /* a send later than this after its time is late */
  double drain_s;        /* wait this long for answers after the last send */
  uint64_t seed;
} lg_config;

#define LG_MAX_VARIANTS 32
/* Closed loop: attempts recorded at most (clients that resend a 429 at
 * once can send tens of thousands per second); past it no client sends
 * again and the result says `truncated`. */
#define LG_MAX_RECORDS ((size_t)5 * 1000 * 1000)

typedef struct lg_result {
  lg_record *records; /* n records, malloc'd by lg_run; free with lg_result_free */
  size_t n;
  char variants[LG_MAX_VARIANTS][64]; /* names seen in x-variant */
  int n_variants;
  size_t conns_opened;
  size_t peak_conns;
  double duration_s;  /* the schedule's length (the --duration) */
  bool truncated;     /* closed loop: LG_MAX_RECORDS reached */
} lg_result;

/* Send one request per schedule entry (offsets in seconds) using data items
 * drawn by the seed, collect every answer, fill *res. Returns 0, or -1 with
 * a message in err (setup failed: no socket, epoll, timerfd). Per-request
 * failures are recorded, not returned. */
int lg_run(const lg_config *cfg, const double *schedule, size_t n, double duration_s,
           const lg_data *data, lg_result *res, char *err, size_t err_len);

/* Closed-loop clients. Each client owns one keep-alive connection: it
 * sends a request, waits for its answer, then either thinks (an
 * exponential time of mean think_s; 0 = the next request at once) and
 * starts a new logical request with a new text, or — after a 429 — retries
 * the same text as `retry` says (lg_retry_delay_s). After a transport error
 * it gives the request up and waits at least 10 ms before the next one (a
 * server that is down is not hammered). Clients 0..burst_clients-1 are the
 * burst: back to back, retrying at once, from 0 to burst_s; clients
 * burst_clients..burst_clients+clients-1 run from burst_s (0 without a
 * burst) to duration_s. No attempt is sent at or after its client's end;
 * answers are awaited for cfg->drain_s more. */
typedef struct lg_closed {
  size_t clients;        /* N, >= 1 */
  double think_s;        /* mean think time (exponential); 0 = back to back */
  lg_retry retry;        /* what the N clients do on a 429 */
  double duration_s;     /* the whole run, burst included */
  double burst_s;        /* > 0 with burst_clients > 0: the burst phase */
  size_t burst_clients;  /* M */
} lg_closed;

/* Run closed-loop clients (see lg_closed) against cfg->url with texts from
 * data, drawn per client from cfg->seed; every attempt is a record (client
 * = its index, attempt and origin_s set), in send order. Returns 0, or -1
 * with a message in err (bad parameters, setup failed). */
int lg_run_closed(const lg_config *cfg, const lg_closed *cl, const lg_data *data,
                  lg_result *res, char *err, size_t err_len);
void lg_result_free(lg_result *res);

typedef struct lg_summary {
  size_t scheduled, sent, answered, rejected, errors, late_sends;
  size_t within_deadline;  /* answered with latency <= deadline */
  size_t correct, labelled;
  double duration_s;
  double offered_rps;      /* sent / duration */
  double goodput_rps;      /* within_deadline / duration */
  double attainment;       /* within_deadline / sent */
  double admitted_share;   /* (sent - rejected) / sent */
  double accuracy;         /* correct / labelled answered; NaN if none */
  double p50_s, p95_s, p99_s; /* latency of answered (200) requests; NaN if none */
  double inference_p50_s;  /* median x-inference-time of answered requests; NaN if none */
  double answered_rps;     /* answers per second from the first send to the last
                            * answer: under saturation (more connections than
                            * workers, sends back to back) the server's throughput;
                            * NaN if fewer than two answers */
  size_t variant_count[LG_MAX_VARIANTS];
  /* Logical requests (a first attempt and its retries; in an open-loop run
   * every attempt is its own logical request, so these equal sent/answered): */
  size_t retries;          /* attempts sent that were retries (attempt > 0) */
  size_t logical;          /* logical requests whose first attempt was sent */
  size_t logical_ok;       /* of those, answered 200 in the end */
  size_t logical_in_time;  /* answered 200 within the deadline counted from
                              the first attempt's time (origin_s) */
  double logical_ok_share; /* logical_ok / logical; NaN if none */
} lg_summary;

/* Summarise records against `deadline_s` (<= 0: every answer counts as in
 * time). Percentiles are nearest-rank. late_s as in lg_config. Every
 * attempt counts: goodput is answers within the deadline counted from that
 * attempt's own scheduled time. */
void lg_summarise(const lg_record *r, size_t n, int n_variants, double duration_s,
                  double deadline_s, double late_s, lg_summary *out);

/* The share of answers among the attempts sent by clients >= min_client
 * (pass -1 to include open-loop records) whose scheduled time is in
 * [from_s, to_s): *sent of them, *ok answered 200. Returns ok / sent, or
 * NaN when none was sent. (The burst scenario: the share of 200s from one
 * second after the burst on.) */
double lg_window_ok_share(const lg_record *r, size_t n, int min_client, double from_s,
                          double to_s, size_t *sent, size_t *ok);

#endif
