/* src/tools/loadgen_proto.c — the pure parts of `anytime loadgen` (see
 * loadgen.h): seeded Poisson schedule, label,text data (the shared reader), URL and
 * request building with JSON escaping, the incremental HTTP/1.1 response
 * parser (with the Retry-After and retry-after-ms headers), the /predict
 * body reader, the retry rules of clients that come back after a 429, and
 * the summary arithmetic. No I/O except lg_data_load() reading its file
 * (through the shared dataset reader, tools/dataset.h). */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/dataset.h"
#include "anytime/status.h"
#include "tools/loadgen.h"

/* ---- randomness ------------------------------------------------------------ */

double lg_rng_exp(at_rng *r, double rate) {
  return -log1p(-at_rng_uniform(r)) / rate; /* 1 - U in (0, 1]: finite */
}

int lg_schedule(uint64_t seed, double rate, double duration, size_t max_n, double **out,
                size_t *n) {
  *out = NULL;
  *n = 0;
  if (!(rate > 0) || !(duration > 0)) return 0;
  at_rng r;
  at_rng_seed(&r, seed);
  size_t cap = (size_t)(rate * duration * 1.2) + 16, k = 0;
  double *t = malloc(cap * sizeof *t), now = 0;
  if (!t) return -1;
  for (;;) {
    now += lg_rng_exp(&r, rate);
    if (now >= duration) break;
    if (k == max_n) {
      free(t);
      return -1;
    }
    if (k == cap) {
      double *nt = realloc(t, (cap *= 2) * sizeof *t);
      if (!nt) {
        free(t);
        return -1;
      }
      t = nt;
    }
    t[k++] = now;
  }
  *out = t;
  *n = k;
  return 0;
}

/* ---- CSV ------------------------------------------------------------------ */

/* The rows of the shared reader (tools/dataset.h) with the sentiment rule,
 * moved into items. */
static int data_from(cli_dataset *ds, lg_data *d, char *err, size_t err_len) {
  d->items = calloc(ds->n, sizeof *d->items);
  if (!d->items) {
    cli_dataset_free(ds);
    if (err && err_len) snprintf(err, err_len, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < ds->n; i++) d->items[i] = (lg_item){ds->texts[i], ds->labels[i]};
  d->n = ds->n;
  ds->n = 0; /* the texts are the items' now */
  cli_dataset_free(ds);
  return 0;
}

int lg_data_parse(const char *buf, size_t len, lg_data *d, char *err, size_t err_len) {
  memset(d, 0, sizeof *d);
  cli_dataset ds;
  if (cli_dataset_parse(buf, len, &cli_labels_binary, &ds, err, err_len) != 0) return -1;
  return data_from(&ds, d, err, err_len);
}

int lg_data_load(const char *path, lg_data *d, char *err, size_t err_len) {
  memset(d, 0, sizeof *d);
  cli_dataset ds;
  if (cli_dataset_load(path, &cli_labels_binary, &ds, err, err_len) != 0) return -1;
  return data_from(&ds, d, err, err_len);
}

const char *lg_default_data_path(char *buf, size_t cap) {
  cli_default_test_csv(buf, cap);
  return buf;
}

void lg_data_free(lg_data *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n; i++) free(d->items[i].text);
  free(d->items);
  memset(d, 0, sizeof *d);
}

/* ---- requests ------------------------------------------------------------- */

int lg_url_parse(const char *url, lg_url *out) {
  memset(out, 0, sizeof *out);
  if (strncmp(url, "http://", 7) != 0) return -1;
  const char *h = url + 7, *slash = strchr(h, '/'), *colon = strchr(h, ':');
  const char *hend = slash ? slash : h + strlen(h);
  if (colon && colon > hend) colon = NULL;
  size_t hl = (size_t)((colon ? colon : hend) - h);
  if (hl == 0 || hl >= sizeof out->host) return -1;
  memcpy(out->host, h, hl);
  out->port = 80;
  if (colon) {
    char *e;
    long port = strtol(colon + 1, &e, 10);
    if (e != hend || port < 1 || port > 65535) return -1;
    out->port = (int)port;
  }
  const char *path = slash ? slash : "/";
  if (strlen(path) >= sizeof out->path) return -1;
  strcpy(out->path, path);
  return 0;
}

int lg_json_escape(const char *s, char *buf, size_t *len, size_t cap) {
  size_t n = *len;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char tmp[8];
    const char *rep = NULL;
    switch (*p) {
      case '"': rep = "\\\""; break;
      case '\\': rep = "\\\\"; break;
      case '\n': rep = "\\n"; break;
      case '\r': rep = "\\r"; break;
      case '\t': rep = "\\t"; break;
      case '\b': rep = "\\b"; break;
      case '\f': rep = "\\f"; break;
      default:
        if (*p < 0x20) {
          snprintf(tmp, sizeof tmp, "\\u%04x", *p);
          rep = tmp;
        }
    }
    size_t k = rep ? strlen(rep) : 1;
    if (n + k >= cap) return -1;
    if (rep) memcpy(buf + n, rep, k);
    else buf[n] = (char)*p;
    n += k;
  }
  buf[n] = '\0';
  *len = n;
  return 0;
}

long lg_build_request(const lg_url *u, const lg_request_spec *spec, const char *text, char *buf,
                      size_t cap) {
  static const lg_request_spec none = {0};
  if (!spec) spec = &none;
  /* The body goes after the headers, whose Content-Length we only know
   * once the body is escaped: escape into the tail region first. */
  size_t hdr_room = 640 + strlen(u->path) + strlen(u->host);
  if (cap <= hdr_room + 32) return -1;
  char *body = buf + hdr_room;
  size_t bl = 0, bcap = cap - hdr_room;
  bool cmpl = spec->max_tokens > 0;
  const char *pre = cmpl ? "{\"prompt\": \"" : "{\"inputs\": \"";
  char post[96];
  if (cmpl)
    snprintf(post, sizeof post, "\", \"max_tokens\": %d, \"temperature\": %.4g}", spec->max_tokens,
             spec->temperature);
  else
    snprintf(post, sizeof post, "\"}");
  size_t pl = strlen(post);
  if (strlen(pre) + pl + 2 >= bcap) return -1;
  strcpy(body, pre);
  bl = strlen(pre);
  if (lg_json_escape(text, body, &bl, bcap - pl - 1) != 0) return -1;
  memcpy(body + bl, post, pl + 1);
  bl += pl;
  char hdr[288] = "";
  int ho = 0;
  if (spec->client_prefix && spec->client_prefix[0])
    ho += snprintf(hdr + ho, sizeof hdr - (size_t)ho, "x-client-id: %.64s-%d\r\n",
                   spec->client_prefix, spec->client);
  if (spec->deadline_ms > 0)
    ho += snprintf(hdr + ho, sizeof hdr - (size_t)ho, "x-deadline-ms: %.3f\r\n", spec->deadline_ms);
  if (spec->ttft_ms > 0)
    ho += snprintf(hdr + ho, sizeof hdr - (size_t)ho, "x-ttft-ms: %.3f\r\n", spec->ttft_ms);
  if (spec->tpot_ms > 0)
    ho += snprintf(hdr + ho, sizeof hdr - (size_t)ho, "x-tpot-ms: %.3f\r\n", spec->tpot_ms);
  int hl = snprintf(buf, hdr_room,
                    "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                    "Accept: application/json\r\n%sContent-Length: %zu\r\n\r\n",
                    u->path, u->host, u->port, hdr, bl);
  if (hl < 0 || (size_t)hl >= hdr_room) return -1;
  memmove(buf + hl, body, bl);
  return (long)((size_t)hl + bl);
}

/* ---- responses ------------------------------------------------------------- */

static const char *find_crlfcrlf(const char *b, size_t len) {
  for (size_t i = 0; i + 3 < len; i++)
    if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') return b + i;
  return NULL;
}

static const char *find_crlf(const char *b, const char *end) {
  for (const char *p = b; p + 1 < end; p++)
    if (p[0] == '\r' && p[1] == '\n') return p;
  return NULL;
}

/* Whether `hay` contains `needle`, ignoring ASCII case. */
static bool ci_contains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0) return true;
  return false;
}

/* Case-insensitive header-name match; value trimmed into val. */
static bool header_is(const char *line, size_t len, const char *name, char *val, size_t cap) {
  size_t nl = strlen(name);
  if (len <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0) return false;
  const char *v = line + nl + 1, *e = line + len;
  while (v < e && (*v == ' ' || *v == '\t')) v++;
  while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
  size_t n = (size_t)(e - v) < cap - 1 ? (size_t)(e - v) : cap - 1;
  memcpy(val, v, n);
  val[n] = '\0';
  return true;
}

/* A header of milliseconds in seconds; -1 when it is not a number >= 0. */
static double ms_header_s(const char *val) {
  char *x;
  double ms = strtod(val, &x);
  return x != val && ms >= 0 && isfinite(ms) ? ms / 1e3 : -1;
}

long lg_http_parse(const char *buf, size_t len, bool eof, lg_response *out, char *body,
                   size_t cap) {
  memset(out, 0, sizeof *out);
  out->retry_after_s = -1;
  out->retry_after_ms = -1;
  out->inference_s = -1;
  out->ttft_s = out->tpot_s = -1;
  const char *hend = find_crlfcrlf(buf, len);
  if (!hend) return len > LG_MAX_HEADER ? -1 : 0;
  if ((size_t)(hend - buf) > LG_MAX_HEADER) return -1;
  /* status line */
  const char *le = find_crlf(buf, hend + 2);
  int minor = 0, status = 0;
  if (le - buf < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)buf[7]) ||
      buf[8] != ' ')
    return -1;
  minor = buf[7] - '0';
  for (int i = 9; i < 12; i++) {
    if (!isdigit((unsigned char)buf[i])) return -1;
    status = status * 10 + (buf[i] - '0');
  }
  if (status < 100) return -1;
  out->status = status;
  out->keep_alive = minor >= 1;
  bool chunked = false;
  long long clen = -1;
  char val[256];
  for (const char *l = le + 2; l < hend + 2;) {
    const char *e = find_crlf(l, hend + 2);
    if (!e) break;
    size_t ll = (size_t)(e - l);
    if (header_is(l, ll, "content-length", val, sizeof val)) {
      char *x;
      errno = 0;
      clen = strtoll(val, &x, 10);
      if (errno || *x || clen < 0 || x == val) return -1;
    } else if (header_is(l, ll, "transfer-encoding", val, sizeof val)) {
      if (ci_contains(val, "chunked")) chunked = true;
    } else if (header_is(l, ll, "connection", val, sizeof val)) {
      if (ci_contains(val, "close")) out->keep_alive = false;
      else if (ci_contains(val, "keep-alive")) out->keep_alive = true;
    } else if (header_is(l, ll, "x-variant", out->variant, sizeof out->variant)) {
      /* copied (truncated to fit) by header_is */
    } else if (header_is(l, ll, "retry-after", val, sizeof val)) {
      char *x;
      double ra = strtod(val, &x);
      if (x != val && ra >= 0 && isfinite(ra)) out->retry_after_s = ra;
    } else if (header_is(l, ll, "retry-after-ms", val, sizeof val)) {
      char *x;
      double ms = strtod(val, &x);
      if (x != val && ms >= 0 && isfinite(ms)) out->retry_after_ms = ms;
    } else if (header_is(l, ll, "x-inference-time", val, sizeof val)) {
      char *x;
      double ms = strtod(val, &x); /* milliseconds */
      if (x != val && ms >= 0 && isfinite(ms)) out->inference_s = ms / 1e3;
    } else if (header_is(l, ll, "x-time-to-first-token", val, sizeof val)) {
      out->ttft_s = ms_header_s(val);
    } else if (header_is(l, ll, "x-time-per-output-token", val, sizeof val)) {
      out->tpot_s = ms_header_s(val);
    }
    l = e + 2;
  }
  const char *p = hend + 4, *end = buf + len;
  if (status / 100 == 1 || status == 204 || status == 304) return (long)(p - buf);
  if (chunked) {
    size_t bl = 0;
    for (;;) {
      const char *e = find_crlf(p, end);
      if (!e) return (end - p > 1024) ? -1 : 0;
      char *x;
      errno = 0;
      unsigned long long sz = strtoull(p, &x, 16);
      if (x == p || errno || (x < e && *x != ';' && *x != ' ')) return -1;
      if (sz > LG_MAX_BODY) return -1;
      p = e + 2;
      if (sz == 0) { /* trailers until an empty line */
        for (;;) {
          const char *te = find_crlf(p, end);
          if (!te) return (end - p > LG_MAX_HEADER) ? -1 : 0;
          bool empty = te == p;
          p = te + 2;
          if (empty) break;
        }
        out->body_len = bl;
        if (bl < cap) body[bl] = '\0';
        return (long)(p - buf);
      }
      if ((size_t)(end - p) < sz + 2) return 0;
      if (p[sz] != '\r' || p[sz + 1] != '\n') return -1;
      if (bl + sz >= cap) return -1;
      memcpy(body + bl, p, sz);
      bl += sz;
      p += sz + 2;
    }
  }
  if (clen >= 0) {
    if ((unsigned long long)clen >= cap) return -1;
    if ((size_t)(end - p) < (size_t)clen) return 0;
    memcpy(body, p, (size_t)clen);
    body[clen] = '\0';
    out->body_len = (size_t)clen;
    return (long)(p - buf) + (long)clen;
  }
  /* delimited by close */
  if ((size_t)(end - p) >= cap) return -1;
  if (!eof) return 0;
  out->keep_alive = false;
  memcpy(body, p, (size_t)(end - p));
  body[end - p] = '\0';
  out->body_len = (size_t)(end - p);
  return (long)len;
}

int lg_top_label(const char *body, size_t len, char *label, size_t cap) {
  json_error_t e;
  json_t *root = json_loadb(body, len, 0, &e);
  if (!root) return -1;
  json_t *arr = root;
  if (json_is_array(arr) && json_array_size(arr) > 0 && json_is_array(json_array_get(arr, 0)))
    arr = json_array_get(arr, 0);
  int rc = -1;
  double best = -INFINITY;
  size_t i;
  json_t *it;
  if (json_is_array(arr)) {
    json_array_foreach(arr, i, it) {
      json_t *l = json_object_get(it, "label"), *s = json_object_get(it, "score");
      if (!json_is_string(l) || !json_is_number(s)) continue;
      double sc = json_number_value(s);
      if (rc == 0 && !(sc > best)) continue;
      best = sc;
      snprintf(label, cap, "%s", json_string_value(l));
      rc = 0;
    }
  }
  json_decref(root);
  return rc;
}

/* ---- retries ------------------------------------------------------------------ */

static const char *const retry_names[] = {"none", "now", "after", "backoff"};

int lg_retry_parse(const char *s, lg_retry *out) {
  for (int i = 0; i < 4; i++)
    if (s && strcmp(s, retry_names[i]) == 0) {
      *out = (lg_retry)i;
      return 0;
    }
  return -1;
}

const char *lg_retry_name(lg_retry r) {
  return (unsigned)r < 4 ? retry_names[r] : "?";
}

double lg_retry_advice_s(double retry_after_ms, double retry_after_s) {
  /* openai-node: `retry-after-ms` when it parses; a value of 0 is falsy
   * there and falls through to `retry-after` (seconds) */
  if (retry_after_ms > 0 && isfinite(retry_after_ms)) return retry_after_ms / 1e3;
  if (retry_after_s >= 0 && isfinite(retry_after_s)) return retry_after_s;
  if (retry_after_ms == 0) return 0;
  return -1;
}

double lg_retry_delay_s(lg_retry policy, int k, double retry_after_ms, double retry_after_s,
                        double u) {
  double advice = lg_retry_advice_s(retry_after_ms, retry_after_s);
  switch (policy) {
    case LG_RETRY_NONE: return -1;
    case LG_RETRY_NOW: return 0;
    case LG_RETRY_AFTER: return advice >= 0 ? advice : 1.0;
    case LG_RETRY_BACKOFF:
      if (k < 0 || k >= LG_BACKOFF_RETRIES) return -1;
      /* the SDK honours a "reasonable" advice: 0 < it < 60 s */
      if (advice > 0 && advice < 60) return advice;
      return fmin(0.5 * pow(2.0, k), 8.0) * (1.0 - 0.25 * u);
  }
  return -1;
}

/* ---- summary --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double nearest_rank(const double *sorted, size_t n, double q) {
  if (n == 0) return NAN;
  size_t k = (size_t)ceil(q * (double)n);
  if (k < 1) k = 1;
  return sorted[k - 1];
}

void lg_summarise(const lg_record *r, size_t n, int n_variants, double duration_s,
                  double deadline_s, double late_s, lg_summary *out) {
  memset(out, 0, sizeof *out);
  out->scheduled = n;
  out->duration_s = duration_s;
  double *lat = malloc((n ? n : 1) * sizeof *lat);
  double *inf = malloc((n ? n : 1) * sizeof *inf);
  size_t nl = 0, ni = 0;
  double first_send = INFINITY, last_answer = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    const lg_record *x = &r[i];
    if (x->sent_s < 0) continue; /* never sent */
    out->sent++;
    if (x->attempt > 0) out->retries++;
    else out->logical++;
    if (x->sent_s < first_send) first_send = x->sent_s;
    if (x->sent_s - x->scheduled_s > late_s) out->late_sends++;
    if (x->status == 200) {
      out->answered++;
      if (x->scheduled_s + x->latency_s > last_answer) last_answer = x->scheduled_s + x->latency_s;
      if (lat) lat[nl++] = x->latency_s;
      if (inf && x->inference_s >= 0) inf[ni++] = x->inference_s;
      if (deadline_s <= 0 || x->latency_s <= deadline_s) out->within_deadline++;
      out->logical_ok++; /* a 200 ends its logical request */
      if (deadline_s <= 0 || x->latency_s + (x->scheduled_s - x->origin_s) <= deadline_s)
        out->logical_in_time++;
      if (x->correct >= 0) {
        out->labelled++;
        out->correct += (size_t)x->correct;
      }
      if (x->variant >= 0 && x->variant < n_variants && x->variant < LG_MAX_VARIANTS)
        out->variant_count[x->variant]++;
    } else if (x->status == 429) {
      out->rejected++;
    } else {
      out->errors++;
    }
  }
  double d = duration_s > 0 ? duration_s : NAN;
  out->offered_rps = (double)out->sent / d;
  out->goodput_rps = (double)out->within_deadline / d;
  out->attainment = out->sent ? (double)out->within_deadline / (double)out->sent : NAN;
  out->admitted_share =
      out->sent ? (double)(out->sent - out->rejected) / (double)out->sent : NAN;
  out->logical_ok_share = out->logical ? (double)out->logical_ok / (double)out->logical : NAN;
  out->accuracy = out->labelled ? (double)out->correct / (double)out->labelled : NAN;
  out->answered_rps = out->answered >= 2 && last_answer > first_send
                          ? (double)out->answered / (last_answer - first_send)
                          : NAN;
  if (lat) qsort(lat, nl, sizeof *lat, cmp_double);
  out->p50_s = nearest_rank(lat, nl, 0.50);
  out->p95_s = nearest_rank(lat, nl, 0.95);
  out->p99_s = nearest_rank(lat, nl, 0.99);
  if (inf) qsort(inf, ni, sizeof *inf, cmp_double);
  out->inference_p50_s = nearest_rank(inf, ni, 0.50);
  free(lat);
  free(inf);
}

double lg_window_ok_share(const lg_record *r, size_t n, int min_client, double from_s,
                          double to_s, size_t *sent, size_t *ok) {
  size_t s = 0, k = 0;
  for (size_t i = 0; i < n; i++) {
    const lg_record *x = &r[i];
    if (x->sent_s < 0 || x->client < min_client) continue;
    if (x->scheduled_s < from_s || x->scheduled_s >= to_s) continue;
    s++;
    k += x->status == 200;
  }
  if (sent) *sent = s;
  if (ok) *ok = k;
  return s ? (double)k / (double)s : NAN;
}
