/* src/serve/metrics.c — Prometheus metrics for the server.
 *
 * Labelled series (requests, batches, rejections) live in a small list keyed
 * by their label values; histograms keep cumulative-at-render bucket counts.
 * Everything is guarded by one mutex: updates are a few increments per
 * request, far below the cost of the request itself, and rendering takes a
 * consistent snapshot.
 */
#include "serve/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_DUR_BUCKETS 16
static const double k_dur_buckets[N_DUR_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};
#define N_BATCH_BUCKETS 9
static const double k_batch_buckets[N_BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

typedef struct hist {
  uint64_t buckets[N_DUR_BUCKETS + 1]; /* last = +Inf */
  uint64_t count;
  double sum;
} hist;

typedef struct series {
  char key[512];      /* rendered label set, e.g. route="/embed",model="m" */
  int kind;           /* 0 request counter, 1 batch hist, 2 rejection counter, 3 model hists */
  uint64_t count;
  hist h[4];          /* kind 3: total, queue, compute, tokenize; kind 1: h[0] */
  struct series *next;
} series;

#define N_KINDS 4
struct at_metrics {
  pthread_mutex_t lock;
  series *head[N_KINDS]; /* guarded by lock: one list per kind, so the hot
                            lookups (a refusal's) scan only their own kind */
  int64_t inflight;      /* guarded by lock */
};

at_metrics *at_metrics_create(void) {
  at_metrics *m = calloc(1, sizeof *m);
  if (m) pthread_mutex_init(&m->lock, NULL);
  return m;
}

void at_metrics_destroy(at_metrics *m) {
  if (!m) return;
  for (int k = 0; k < N_KINDS; k++)
    for (series *s = m->head[k], *n; s; s = n) {
      n = s->next;
      free(s);
    }
  pthread_mutex_destroy(&m->lock);
  free(m);
}

/* Label values are escaped per the exposition format (\\, \", \n). */
static void esc(char *dst, size_t cap, const char *v) {
  size_t o = 0;
  for (; *v && o + 3 < cap; v++) {
    if (*v == '\\' || *v == '"') dst[o++] = '\\', dst[o++] = *v;
    else if (*v == '\n') dst[o++] = '\\', dst[o++] = 'n';
    else dst[o++] = *v;
  }
  dst[o] = '\0';
}

static series *find(at_metrics *m, int kind, const char *key) {
  for (series *s = m->head[kind]; s; s = s->next)
    if (strcmp(s->key, key) == 0) return s;
  series *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->kind = kind;
  snprintf(s->key, sizeof s->key, "%s", key);
  s->next = m->head[kind];
  m->head[kind] = s;
  return s;
}

static void observe(hist *h, const double *bounds, int nb, double v) {
  int i = 0;
  while (i < nb && v > bounds[i]) i++;
  h->buckets[i]++;
  h->count++;
  h->sum += v;
}

void at_metrics_request(at_metrics *m, const char *protocol, const char *route,
                        const char *model, const char *variant, int http_status, double total_s,
                        double queue_s, double compute_s, double tokenize_s) {
  char r[96], mo[96], v[96], pr[16], key[512], mkey[256];
  esc(pr, sizeof pr, protocol);
  esc(r, sizeof r, route);
  esc(mo, sizeof mo, model ? model : "");
  esc(v, sizeof v, variant ? variant : "");
  snprintf(key, sizeof key,
           "route=\"%s\",model=\"%s\",variant=\"%s\",status=\"%d\",protocol=\"%s\"", r, mo, v,
           http_status, pr);
  snprintf(mkey, sizeof mkey, "model=\"%s\"", mo);
  pthread_mutex_lock(&m->lock);
  series *s = find(m, 0, key);
  if (s) s->count++;
  if (http_status < 400 && model && *model) {
    series *h = find(m, 3, mkey);
    if (h) {
      double vals[4] = {total_s, queue_s, compute_s, tokenize_s};
      for (int i = 0; i < 4; i++)
        if (vals[i] >= 0) observe(&h->h[i], k_dur_buckets, N_DUR_BUCKETS, vals[i]);
    }
  }
  pthread_mutex_unlock(&m->lock);
}

void at_metrics_batch(at_metrics *m, const char *model, int batch_size) {
  char mo[96], key[128];
  esc(mo, sizeof mo, model);
  snprintf(key, sizeof key, "model=\"%s\"", mo);
  pthread_mutex_lock(&m->lock);
  series *s = find(m, 1, key);
  if (s) observe(&s->h[0], k_batch_buckets, N_BATCH_BUCKETS, (double)batch_size);
  pthread_mutex_unlock(&m->lock);
}

void at_metrics_rejection_add(at_metrics *m, const char *model, const char *reason, uint64_t n) {
  char mo[96], re[96], key[512];
  esc(mo, sizeof mo, model);
  esc(re, sizeof re, reason);
  snprintf(key, sizeof key, "model=\"%s\",reason=\"%s\"", mo, re);
  pthread_mutex_lock(&m->lock);
  series *s = find(m, 2, key);
  if (s) s->count += n;
  pthread_mutex_unlock(&m->lock);
}

void at_metrics_rejection(at_metrics *m, const char *model, const char *reason) {
  at_metrics_rejection_add(m, model, reason, 1);
}

void at_metrics_set_inflight(at_metrics *m, int64_t n) {
  pthread_mutex_lock(&m->lock);
  m->inflight = n;
  pthread_mutex_unlock(&m->lock);
}

typedef struct sbuf {
  char *p;
  size_t len, cap;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->p && (size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 8192;
    while (cap < b->len + (size_t)n + 1) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) return;
    b->p = np;
    b->cap = cap;
  }
}

static void put_hist(sbuf *b, const char *name, const char *labels, const hist *h,
                     const double *bounds, int nb) {
  uint64_t cum = 0;
  for (int i = 0; i < nb; i++) {
    cum += h->buckets[i];
    put(b, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, bounds[i], (unsigned long long)cum);
  }
  cum += h->buckets[nb];
  put(b, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)cum);
  put(b, "%s_sum{%s} %.9g\n", name, labels, h->sum);
  put(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

char *at_metrics_render(at_metrics *m, int64_t queued, at_metrics_extra_fn extra,
                        void *extra_user, size_t *len) {
  sbuf b = {0};
  static const char *hnames[4] = {"anytime_request_duration_seconds",
                                  "anytime_queue_duration_seconds",
                                  "anytime_compute_duration_seconds",
                                  "anytime_tokenization_duration_seconds"};
  static const char *hhelp[4] = {"Time from request arrival to answer.",
                                 "Time items waited in the batcher before their batch ran.",
                                 "Time the batch spent in ONNX Runtime.",
                                 "Time spent tokenising the request."};
  pthread_mutex_lock(&m->lock);
  put(&b, "# HELP anytime_requests_total Requests answered, by route, model, variant, HTTP status (for gRPC: the status its code stands for) and protocol (http, grpc).\n"
          "# TYPE anytime_requests_total counter\n");
  for (series *s = m->head[0]; s; s = s->next)
    put(&b, "anytime_requests_total{%s} %llu\n", s->key, (unsigned long long)s->count);
  put(&b, "# HELP anytime_rejections_total Requests refused at admission, by model and reason (deadline, infeasible, limit, queue_full, early).\n"
          "# TYPE anytime_rejections_total counter\n");
  for (series *s = m->head[2]; s; s = s->next)
    put(&b, "anytime_rejections_total{%s} %llu\n", s->key, (unsigned long long)s->count);
  for (int i = 0; i < 4; i++) {
    put(&b, "# HELP %s %s\n# TYPE %s histogram\n", hnames[i], hhelp[i], hnames[i]);
    for (series *s = m->head[3]; s; s = s->next)
      put_hist(&b, hnames[i], s->key, &s->h[i], k_dur_buckets, N_DUR_BUCKETS);
  }
  put(&b, "# HELP anytime_batch_size Items per batch run by the engine.\n"
          "# TYPE anytime_batch_size histogram\n");
  for (series *s = m->head[1]; s; s = s->next)
    put_hist(&b, "anytime_batch_size", s->key, &s->h[0], k_batch_buckets, N_BATCH_BUCKETS);
  put(&b, "# HELP anytime_inflight_requests Requests admitted and not yet answered.\n"
          "# TYPE anytime_inflight_requests gauge\nanytime_inflight_requests %lld\n",
      (long long)m->inflight);
  pthread_mutex_unlock(&m->lock);
  put(&b, "# HELP anytime_queued_items Items waiting in the batcher.\n"
          "# TYPE anytime_queued_items gauge\nanytime_queued_items %lld\n", (long long)queued);
  for (size_t cap = 1u << 17; extra && cap <= (64u << 20); cap *= 2) {
    char *tmp = malloc(cap);
    if (!tmp) break;
    size_t n = extra(extra_user, tmp, cap);
    if (n < cap) { /* it fit (a server with many models and variants needs more room) */
      if (n > 0) put(&b, "%.*s", (int)n, tmp);
      free(tmp);
      break;
    }
    free(tmp);
  }
  if (!b.p) put(&b, "%s", "");
  *len = b.len;
  return b.p;
}
