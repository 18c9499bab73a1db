/* src/tools/loadgen_report.h — what `anytime loadgen` does with a run once
 * the arguments are read: start the open or the closed loop as they say,
 * then report it — the summary as text lines or one JSON object on stdout,
 * and the per-attempt CSV. The pieces it drives (schedule, clients, summary
 * arithmetic) are in tools/loadgen.h; this is their one caller's glue, kept
 * here so the command stays argument parsing and printing.
 *
 * Ownership: nothing here keeps a pointer past the call; the caller owns
 * every argument. Thread-safety: no shared state; lg_run_load() runs the
 * load on the calling thread, and the printers write to stdout, so call them
 * from one thread at a time. */
#ifndef ANYTIME_TOOLS_LOADGEN_REPORT_H
#define ANYTIME_TOOLS_LOADGEN_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "tools/loadgen.h"

/* The run as the command line described it (what the report repeats). */
typedef struct lg_report {
  const char *url;   /* as given */
  double rate;       /* open loop: requests per second */
  double duration_s; /* --duration (with a burst, the whole run) */
  uint64_t seed;
  double deadline_ms; /* > 0: the deadline; else none */
  double clients;     /* > 0: closed loop with this many clients; 0: open loop */
  double think_ms;    /* closed loop: mean think time */
  lg_retry retry;     /* closed loop: what a client does on a 429 */
  double burst_s;     /* > 0: a burst of burst_clients for the first burst_s */
  double burst_clients;
} lg_report;

/* Run the load rp describes against cfg->url with texts from data: the
 * closed loop (lg_run_closed) when rp->clients > 0, else the open loop
 * (lg_run) over the Poisson schedule of rp->rate for rp->duration_s drawn
 * from cfg->seed, at most 50 million sends. Fills *res (free it with
 * lg_result_free) and returns 0, or returns -1 with a message in err (the
 * schedule too large, the run could not be set up); *res is then empty. */
int lg_run_load(const lg_config *cfg, const lg_report *rp, const lg_data *data, lg_result *res,
                char *err, size_t err_len);

/* Write one CSV row per attempt of res to path (created or truncated):
 * scheduled_s,sent_s,status,latency_s,variant,correct,retry_after_s,item,
 * inference_s,client,attempt,origin_s,retry_after_ms,ttft_s,tpot_s; a
 * transport failure's status is its name (connect, io, parse, timeout,
 * unsent), absent values are empty fields. Returns 0, or -1 with errno set
 * when the file could not be opened or written. */
int lg_write_csv(const char *path, const lg_result *res);

/* The summary s of res (lg_summarise) as one compact JSON object on one
 * line of stdout, numbers that are not finite as null. */
void lg_print_json(const lg_report *rp, const lg_result *res, const lg_summary *s);

/* The same summary as text lines on stdout. */
void lg_print_text(const lg_report *rp, const lg_result *res, const lg_summary *s);

#endif /* ANYTIME_TOOLS_LOADGEN_REPORT_H */
