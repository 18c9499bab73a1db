/* src/serve/metrics.h — the server's Prometheus metrics: labelled counters,
 * fixed-bucket histograms and gauges, rendered in the text exposition format
 * at GET /metrics. Internal to src/serve. */
#ifndef ANYTIME_SERVE_METRICS_H
#define ANYTIME_SERVE_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct at_metrics at_metrics;

at_metrics *at_metrics_create(void);
void at_metrics_destroy(at_metrics *m);

/* One answered request, by protocol ("http" or "grpc"), route (an HTTP
 * path, or a gRPC method's full path) and status (HTTP's, or the one a gRPC
 * code stands for). variant may be "" (not routed to a variant).
 * Durations in seconds; negative = not applicable (not observed). */
void at_metrics_request(at_metrics *m, const char *protocol, const char *route,
                        const char *model, const char *variant, int http_status, double total_s,
                        double queue_s, double compute_s, double tokenize_s);
/* One batch that ran, with its size. */
void at_metrics_batch(at_metrics *m, const char *model, int batch_size);
/* One admission refusal by the planner or a full queue. */
void at_metrics_rejection(at_metrics *m, const char *model, const char *reason);
/* The same for `n` refusals; n = 0 declares the series (it shows 0). */
void at_metrics_rejection_add(at_metrics *m, const char *model, const char *reason, uint64_t n);
/* Gauges. */
void at_metrics_set_inflight(at_metrics *m, int64_t n);

/* Extra gauge lines appended at render time (planner state etc.): writes
 * them to buf and returns their length (< cap), or returns cap when they do
 * not fit, and is then called again with twice the room (up to 64 MiB). */
typedef size_t (*at_metrics_extra_fn)(void *user, char *buf, size_t cap);

/* Render everything into a malloc'ed string (caller frees); *len gets its
 * length. queued = items waiting in the batcher right now. */
char *at_metrics_render(at_metrics *m, int64_t queued, at_metrics_extra_fn extra,
                        void *extra_user, size_t *len);

#endif
