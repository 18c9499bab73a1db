/* src/tools/loadgen_report.c — the rest of `anytime loadgen` behind its
 * argument parsing: pick the open or the closed loop and run it, then report
 * the run — the summary as text or JSON on stdout (with the share of 200s
 * after a burst) and one CSV row per attempt. The arithmetic is
 * lg_summarise()'s (loadgen_proto.c); this file only lays it out. */
#include "tools/loadgen_report.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_run_load(const lg_config *cfg, const lg_report *rp, const lg_data *data, lg_result *res,
                char *err, size_t err_len) {
  memset(res, 0, sizeof *res);
  if (rp->clients > 0) {
    lg_closed cl = {.clients = (size_t)rp->clients,
                    .think_s = rp->think_ms / 1000.0,
                    .retry = rp->retry,
                    .duration_s = rp->duration_s,
                    .burst_s = rp->burst_s,
                    .burst_clients = (size_t)rp->burst_clients};
    return lg_run_closed(cfg, &cl, data, res, err, err_len);
  }
  double *sched = NULL;
  size_t n = 0;
  if (lg_schedule(cfg->seed, rp->rate, rp->duration_s, 50u * 1000 * 1000, &sched, &n) != 0) {
    snprintf(err, err_len, "schedule too large (rate x duration)");
    return -1;
  }
  int rc = lg_run(cfg, sched, n, rp->duration_s, data, res, err, err_len);
  free(sched);
  return rc;
}

/* A transport failure's name for the CSV's status column. */
static const char *status_text(int s) {
  switch (s) {
    case LG_ERR_CONNECT: return "connect";
    case LG_ERR_IO: return "io";
    case LG_ERR_PARSE: return "parse";
    case LG_ERR_TIMEOUT: return "timeout";
    case LG_ERR_UNSENT: return "unsent";
  }
  return "";
}

/* One record as a CSV row (the variant's name quoted, quotes doubled). */
static void csv_row(FILE *f, const lg_result *res, const lg_record *x) {
  fprintf(f, "%.6f,%.6f,", x->scheduled_s, x->sent_s);
  if (x->status >= 100)
    fprintf(f, "%d,", x->status);
  else
    fprintf(f, "%s,", status_text(x->status));
  if (x->latency_s >= 0)
    fprintf(f, "%.6f,", x->latency_s);
  else
    fputc(',', f);
  if (x->variant >= 0) {
    fputc('"', f);
    for (const char *p = res->variants[x->variant]; *p; p++) {
      if (*p == '"') fputc('"', f);
      fputc(*p, f);
    }
    fputc('"', f);
  }
  fputc(',', f);
  if (x->correct >= 0) fprintf(f, "%d", x->correct);
  fputc(',', f);
  if (x->retry_after_s >= 0) fprintf(f, "%g", x->retry_after_s);
  fprintf(f, ",%d,", x->item);
  if (x->inference_s >= 0) fprintf(f, "%.6f", x->inference_s);
  fprintf(f, ",%d,%d,%.6f,", x->client, x->attempt, x->origin_s);
  if (x->retry_after_ms >= 0) fprintf(f, "%g", x->retry_after_ms);
  fputc(',', f);
  if (x->ttft_s >= 0) fprintf(f, "%.6f", x->ttft_s);
  fputc(',', f);
  if (x->tpot_s >= 0) fprintf(f, "%.6f", x->tpot_s);
  fputc('\n', f);
}

int lg_write_csv(const char *path, const lg_result *res) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f,
          "scheduled_s,sent_s,status,latency_s,variant,correct,retry_after_s,item,inference_s,"
          "client,attempt,origin_s,retry_after_ms,ttft_s,tpot_s\n");
  for (size_t i = 0; i < res->n; i++) csv_row(f, res, &res->records[i]);
  return fclose(f) == 0 ? 0 : -1;
}

/* The share of 200s among the N clients' attempts from one second after
 * the burst to the end (NaN without a burst). */
static double after_burst(const lg_report *rp, const lg_result *res, size_t *sent, size_t *ok) {
  *sent = *ok = 0;
  if (!(rp->burst_s > 0)) return NAN;
  return lg_window_ok_share(res->records, res->n, (int)rp->burst_clients, rp->burst_s + 1.0,
                            rp->duration_s, sent, ok);
}

static json_t *jnum(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static json_t *jsize(size_t x) {
  return json_integer((json_int_t)x);
}

/* The fields added with the closed loop (older readers ignore them). */
static void json_closed(json_t *j, const lg_report *rp, const lg_result *res, const lg_summary *s) {
  bool closed = rp->clients > 0;
  json_object_set_new(j, "mode", json_string(closed ? "closed" : "open"));
  json_object_set_new(j, "clients", closed ? json_integer((json_int_t)rp->clients) : json_null());
  json_object_set_new(j, "think_ms", closed ? json_real(rp->think_ms) : json_null());
  json_object_set_new(j, "retry", closed ? json_string(lg_retry_name(rp->retry)) : json_null());
  json_object_set_new(j, "retries", jsize(s->retries));
  json_object_set_new(j, "logical", jsize(s->logical));
  json_object_set_new(j, "logical_ok", jsize(s->logical_ok));
  json_object_set_new(j, "logical_in_time", jsize(s->logical_in_time));
  json_object_set_new(j, "logical_ok_share", jnum(s->logical_ok_share));
  json_object_set_new(j, "truncated", json_boolean(res->truncated));
  if (rp->burst_s > 0) {
    size_t sent, ok;
    double share = after_burst(rp, res, &sent, &ok);
    json_t *b = json_object();
    json_object_set_new(b, "burst_s", json_real(rp->burst_s));
    json_object_set_new(b, "burst_clients", json_integer((json_int_t)rp->burst_clients));
    json_object_set_new(b, "from_s", json_real(rp->burst_s + 1.0));
    json_object_set_new(b, "sent", jsize(sent));
    json_object_set_new(b, "ok", jsize(ok));
    json_object_set_new(b, "ok_share", jnum(share));
    json_object_set_new(j, "after_burst", b);
  }
}

void lg_print_json(const lg_report *rp, const lg_result *res, const lg_summary *s) {
  json_t *j = json_object(), *lat = json_object(), *mix = json_object();
  json_object_set_new(j, "url", json_string(rp->url));
  json_object_set_new(j, "rate_rps", rp->clients > 0 ? json_null() : json_real(rp->rate));
  json_object_set_new(j, "duration_s", json_real(rp->duration_s));
  json_object_set_new(j, "seed", json_integer((json_int_t)rp->seed));
  json_object_set_new(j, "deadline_ms",
                      rp->deadline_ms > 0 ? json_real(rp->deadline_ms) : json_null());
  json_object_set_new(j, "scheduled", jsize(s->scheduled));
  json_object_set_new(j, "sent", jsize(s->sent));
  json_object_set_new(j, "answered", jsize(s->answered));
  json_object_set_new(j, "rejected", jsize(s->rejected));
  json_object_set_new(j, "errors", jsize(s->errors));
  json_object_set_new(j, "late_sends", jsize(s->late_sends));
  json_object_set_new(j, "within_deadline", jsize(s->within_deadline));
  json_object_set_new(j, "offered_rps", jnum(s->offered_rps));
  json_object_set_new(j, "goodput_rps", jnum(s->goodput_rps));
  json_object_set_new(j, "attainment", jnum(s->attainment));
  json_object_set_new(j, "admitted_share", jnum(s->admitted_share));
  json_object_set_new(j, "accuracy", jnum(s->accuracy));
  json_object_set_new(lat, "p50", jnum(s->p50_s));
  json_object_set_new(lat, "p95", jnum(s->p95_s));
  json_object_set_new(lat, "p99", jnum(s->p99_s));
  json_object_set_new(j, "latency_s", lat);
  json_object_set_new(j, "inference_p50_ms", jnum(s->inference_p50_s * 1e3));
  json_object_set_new(j, "answered_rps", jnum(s->answered_rps));
  for (int v = 0; v < res->n_variants; v++)
    json_object_set_new(mix, res->variants[v], jsize(s->variant_count[v]));
  json_object_set_new(j, "variants", mix);
  json_object_set_new(j, "connections_opened", jsize(res->conns_opened));
  json_object_set_new(j, "peak_connections", jsize(res->peak_conns));
  json_closed(j, rp, res, s);
  char *txt = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
  if (txt) printf("%s\n", txt);
  free(txt);
  json_decref(j);
}

void lg_print_text(const lg_report *rp, const lg_result *res, const lg_summary *s) {
  if (rp->clients > 0)
    printf(
        "url %s  closed loop: %.0f clients, think %.3f ms, retry %s  duration %.2f s  "
        "seed %llu\n",
        rp->url, rp->clients, rp->think_ms, lg_retry_name(rp->retry), rp->duration_s,
        (unsigned long long)rp->seed);
  else
    printf("url %s  rate %.2f/s  duration %.2f s  seed %llu\n", rp->url, rp->rate, rp->duration_s,
           (unsigned long long)rp->seed);
  if (rp->deadline_ms > 0)
    printf("deadline %.3f ms\n", rp->deadline_ms);
  else
    printf("deadline none (every answer counts as in time)\n");
  printf("sent %zu of %zu  answered %zu  rejected (429) %zu  errors %zu  late sends %zu\n", s->sent,
         s->scheduled, s->answered, s->rejected, s->errors, s->late_sends);
  printf("goodput %.2f/s  attainment %.4f  admitted share %.4f  accuracy %.4f\n", s->goodput_rps,
         s->attainment, s->admitted_share, s->accuracy);
  printf("latency of answers: p50 %.3f ms  p95 %.3f ms  p99 %.3f ms\n", s->p50_s * 1e3,
         s->p95_s * 1e3, s->p99_s * 1e3);
  printf("server Run time (x-inference-time), median: %.3f ms\n", s->inference_p50_s * 1e3);
  printf("answers per second, first send to last answer: %.2f\n", s->answered_rps);
  printf(
      "logical requests %zu (retries %zu): answered %zu (%.4f), within the deadline from "
      "the first attempt %zu%s\n",
      s->logical, s->retries, s->logical_ok, s->logical_ok_share, s->logical_in_time,
      res->truncated ? "  (TRUNCATED)" : "");
  if (rp->burst_s > 0) {
    size_t sent, ok;
    double share = after_burst(rp, res, &sent, &ok);
    printf(
        "after the burst (%.0f clients for %.2f s), from %.2f s: %zu of %zu attempts "
        "answered 200 (%.4f)\n",
        rp->burst_clients, rp->burst_s, rp->burst_s + 1.0, ok, sent, share);
  }
  printf("variants:");
  for (int v = 0; v < res->n_variants; v++)
    printf(" %s=%zu", res->variants[v], s->variant_count[v]);
  printf("\nconnections opened %zu, peak %zu\n", res->conns_opened, res->peak_conns);
}
