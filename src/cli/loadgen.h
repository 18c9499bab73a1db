/* src/cli/loadgen.h — the pieces of `anytime loadgen`, an open-loop Poisson
 * load generator for the TEI-style /predict route, split out so the unit
 * tests can drive each one: the seeded arrival schedule, the label,text CSV
 * reader, request building (JSON escaping), the incremental HTTP/1.1
 * response parser (Content-Length and chunked), the prediction reader, the
 * epoll client loop, and the summary arithmetic.
 *
 * Thread-safety: nothing here is shared; lg_run() uses only the calling
 * thread and the memory it is given.
 */
#ifndef ANYTIME_CLI_LOADGEN_H
#define ANYTIME_CLI_LOADGEN_H

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

/* Read a label,text CSV (RFC 4180 quoting: "..." with "" for a quote,
 * fields may span lines; an optional UTF-8 BOM; a header row whose first
 * field is not a number is skipped; labels 1/positive → 1, 0/-1/negative
 * → 0). Returns 0, or -1 with a message in err. */
int lg_data_load(const char *path, lg_data *d, char *err, size_t err_len);
/* The same from a buffer (for tests). */
int lg_data_parse(const char *buf, size_t len, lg_data *d, char *err, size_t err_len);
void lg_data_free(lg_data *d);

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

/* Build a complete POST request with body {"inputs": "<text>"}, and the
 * x-deadline-ms header when deadline_ms > 0. Returns its length, or -1 if
 * it does not fit in cap. */
long lg_build_request(const lg_url *u, const char *text, double deadline_ms, char *buf,
                      size_t cap);

#define LG_MAX_HEADER 16384
#define LG_MAX_BODY (1u << 20)

typedef struct lg_response {
  int status;
  bool keep_alive;       /* false after "Connection: close" or HTTP/1.0 */
  char variant[64];      /* x-variant header, "" if none */
  double retry_after_s;  /* Retry-After in seconds, -1 if none */
  double inference_s;    /* x-inference-time (the server's Run time), -1 if none */
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

/* ---- the run ----------------------------------------------------------------- */

enum { LG_OK = 0, LG_ERR_CONNECT = -1, LG_ERR_IO = -2, LG_ERR_PARSE = -3,
       LG_ERR_TIMEOUT = -4, LG_ERR_UNSENT = -5 };

/* One request's fate. Times are seconds from the start of the run. */
typedef struct lg_record {
  double scheduled_s; /* when the Poisson schedule said to send */
  double sent_s;      /* when its first byte was written (-1 if never) */
  double latency_s;   /* response complete − scheduled (-1 if none) */
  int status;         /* HTTP status, or an LG_ERR_* value */
  int variant;        /* index into the run's variant names, -1 if none */
  int correct;        /* 1/0 for 200 with a known label, -1 otherwise */
  int item;           /* index of the data item sent */
  double retry_after_s;
  double inference_s; /* the server's x-inference-time, -1 if none */
} lg_record;

typedef struct lg_config {
  lg_url url;
  double deadline_ms;    /* > 0: sent as x-deadline-ms; scores goodput */
  size_t max_conns;      /* connection cap; default 512 */
  size_t initial_conns;  /* opened before the first send; default 4 */
  double late_s;         /* a send later than this after its time is late */
  double drain_s;        /* wait this long for answers after the last send */
  uint64_t seed;
} lg_config;

#define LG_MAX_VARIANTS 32

typedef struct lg_result {
  lg_record *records; /* n records, malloc'd by lg_run; free with lg_result_free */
  size_t n;
  char variants[LG_MAX_VARIANTS][64]; /* names seen in x-variant */
  int n_variants;
  size_t conns_opened;
  size_t peak_conns;
  double duration_s;  /* the schedule's length (the --duration) */
} lg_result;

/* Send one request per schedule entry (offsets in seconds) using data items
 * drawn by the seed, collect every answer, fill *res. Returns 0, or -1 with
 * a message in err (setup failed: no socket, epoll, timerfd). Per-request
 * failures are recorded, not returned. */
int lg_run(const lg_config *cfg, const double *schedule, size_t n, double duration_s,
           const lg_data *data, lg_result *res, char *err, size_t err_len);
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
} lg_summary;

/* Summarise records against `deadline_s` (<= 0: every answer counts as in
 * time). Percentiles are nearest-rank. late_s as in lg_config. */
void lg_summarise(const lg_record *r, size_t n, int n_variants, double duration_s,
                  double deadline_s, double late_s, lg_summary *out);

#endif
