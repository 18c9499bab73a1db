/* src/tools/sweep_csv.c — the sweep's CSV: its header and one row per
 * (repeat, policy, kind of client, ρ) as the points are measured, and the
 * reader --from-csv uses to summarise an earlier sweep's rows (written by
 * this file, or by sweeps before the oracle beside each point, 31 columns)
 * without running anything. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/sweep_internal.h"

/* The CSV's columns: the first 31 (all that older sweep files have;
 * --from-csv still reads those), then the oracle beside the point. */
#define CSV_COLS_OLD 31
#define CSV_COLS 36
void sweep_csv_header(FILE *csv, bool old) {
  fprintf(csv,
          "repeat,policy,rho,rate_rps,sent,answered,rejected,errors,goodput_rps,attainment,"
          "admitted_share,accuracy,p50_ms,p95_ms,p99_ms,cost_rel,variant_mix,run_p50_ms,"
          "capacity_rps,steal_pct,probe_ms,clients,n_clients,think_ms,offered_rps,retries,"
          "logical,logical_ok,cheapest_capacity_rps,oracle_rps,goodput_over_oracle%s\n",
          old ? ""
              : ",cheapest_capacity_beside_rps,loadgen_cores,loadgen_cores_capacity,"
                "oracle_host_rps,goodput_over_oracle_host");
}

void sweep_csv_row(FILE *csv, const sweep *sw, int r, const char *pol, int cm, double rho,
                   const pt *p) {
  fprintf(csv,
          "%d,%s,%.2f,%.1f,%.0f,%.0f,%.0f,%.0f,%.2f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.4f,%s,"
          "%.3f,%.1f,%.2f,%.3f,%s,",
          r + 1, pol, rho, p->rate, p->sent, p->answered, p->rejected, p->errors, p->good, p->att,
          p->adm, p->accy, p->p50, p->p95, p->p99, p->cost_rel, p->mix, p->run_p50, sw->capacity,
          p->steal, p->probe, sweep_client_names[cm]);
  if (cm == CM_CLOSED_RETRY)
    fprintf(csv, "%.0f,%g,", p->n_clients, sw->think_ms);
  else
    fprintf(csv, ",,");
  fprintf(csv, "%.2f,%.0f,%.0f,%.0f,%.1f,%.2f,%.4f,%.1f,%.3f,%.3f,%.2f,%.4f\n", p->offered,
          p->retries, p->logical, p->logical_ok, sw->cheap_capacity, p->oracle,
          p->oracle > 0 ? p->good / p->oracle : NAN, p->cheap_cap, p->lg_cores, p->lg_cores_cap,
          p->oracle_host, p->oracle_host > 0 ? p->good / p->oracle_host : NAN);
  fflush(csv);
}

/* Index of `name` among `names` (n), or -1. */
static int name_index(const char *name, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return i;
  return -1;
}

/* The most-accurate share of a recorded variant mix ("name=count;..."):
 * what run_point() (sweep_run.c) computed from the same counts. */
static double mix_top(const sweep *sw, const char *mix, double answered) {
  double top = 0;
  for (const char *p = mix; p && *p;) {
    const char *eq = strchr(p, '='), *end = strchr(p, ';');
    if (!eq || (end && eq > end)) break;
    for (int k = 0; k < sw->mc->n_variants; k++) {
      const char *nm = sw->mc->variants[k].name;
      if (strlen(nm) == (size_t)(eq - p) && !strncmp(nm, p, (size_t)(eq - p)) &&
          sw->mc->variants[k].accuracy >= sw->best_acc)
        top += atof(eq + 1);
    }
    p = end ? end + 1 : NULL;
  }
  return answered > 0 ? top / answered : NAN;
}

/* Read the rows sweep_csv_row() wrote back into sw: the policies, kinds of client
 * and loads in the order they first appear, the repeats, each point's
 * figures, C, each repeat's cheapest capacity and the host probes. The
 * duration per point is not a column: it is taken as sent / rate of the
 * open-loop rows (to 0.5 s). Returns 0, or -1 with a message naming the
 * line and the problem. */
static int read_rows(sweep *sw, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return fprintf(stderr, "anytime sweep: cannot read %s: %s\n", path, strerror(errno)), -1;
  char line[2048], want[1024], want_old[1024];
  FILE *h = fmemopen(want, sizeof want, "w"), *ho = fmemopen(want_old, sizeof want_old, "w");
  if (!h || !ho) return h ? fclose(h) : 0, ho ? fclose(ho) : 0, fclose(f), -1;
  sweep_csv_header(h, false);
  sweep_csv_header(ho, true);
  fclose(h);
  fclose(ho);
  int rc = -1, ln = 1, rows = 0;
  double dur[MAX_POINTS];
  int n_dur = 0;
  if (!fgets(line, sizeof line, f) || (strcmp(line, want) != 0 && strcmp(line, want_old) != 0)) {
    fprintf(stderr, "anytime sweep: %s: line 1 is not the header this sweep writes:\n%s", path,
            want);
    goto out;
  }
  sw->n_pol = sw->n_cm = sw->n_rho = sw->repeats = sw->n_probe = 0;
  sw->capacity = -1;
  while (fgets(line, sizeof line, f)) {
    ln++;
    size_t L = strlen(line);
    if (L && line[L - 1] == '\n') line[--L] = '\0';
    if (!L) continue;
    char *fld[CSV_COLS + 1];
    int nf = 0;
    for (char *p = line; nf < CSV_COLS + 1;) {
      fld[nf++] = p;
      char *c = strchr(p, ',');
      if (!c) break;
      *c = '\0';
      p = c + 1;
    }
    if (nf != CSV_COLS && nf != CSV_COLS_OLD) {
      fprintf(stderr,
              "anytime sweep: %s:%d: %d fields, want %d (or %d, before the oracle beside "
              "each point)\n",
              path, ln, nf, CSV_COLS, CSV_COLS_OLD);
      goto out;
    }
    int r = atoi(fld[0]) - 1, pol = name_index(fld[1], sweep_policy_names, MAX_POL);
    int cm = name_index(fld[21], sweep_client_names, MAX_CM);
    double rho = atof(fld[2]);
    if (r < 0 || r >= MAX_REP || pol < 0 || cm < 0 || !(rho > 0)) {
      fprintf(stderr,
              "anytime sweep: %s:%d: repeat 1..%d, a known policy and kind of client and "
              "rho > 0 needed\n",
              path, ln, MAX_REP);
      goto out;
    }
    int pi = -1, ci = -1, k = -1;
    for (int i = 0; i < sw->n_pol; i++) pi = sw->pol[i] == pol ? i : pi;
    for (int i = 0; i < sw->n_cm; i++) ci = sw->cms[i] == cm ? i : ci;
    for (int i = 0; i < sw->n_rho; i++) k = fabs(sw->rhos[i] - rho) < 1e-9 ? i : k;
    if (pi < 0) sw->pol[pi = sw->n_pol++] = pol;
    if (ci < 0) sw->cms[ci = sw->n_cm++] = cm;
    if (k < 0) {
      if (sw->n_rho == MAX_RHO) {
        fprintf(stderr, "anytime sweep: %s:%d: more than %d loads\n", path, ln, MAX_RHO);
        goto out;
      }
      sw->rhos[k = sw->n_rho++] = rho;
    }
    if (r + 1 > sw->repeats) sw->repeats = r + 1;
    pt *q = &sw->pts[pi][cm][k][r];
    *q = (pt){.ok = true,
              .rate = atof(fld[3]),
              .sent = atof(fld[4]),
              .answered = atof(fld[5]),
              .rejected = atof(fld[6]),
              .errors = atof(fld[7]),
              .good = atof(fld[8]),
              .att = atof(fld[9]),
              .adm = atof(fld[10]),
              .accy = atof(fld[11]),
              .p50 = atof(fld[12]),
              .p95 = atof(fld[13]),
              .p99 = atof(fld[14]),
              .cost_rel = atof(fld[15]),
              .run_p50 = atof(fld[17]),
              .steal = atof(fld[19]),
              .probe = atof(fld[20]),
              .n_clients = atof(fld[22]),
              .offered = atof(fld[24]),
              .retries = atof(fld[25]),
              .logical = atof(fld[26]),
              .logical_ok = atof(fld[27]),
              .oracle = atof(fld[29])};
    bool beside_cols = nf == CSV_COLS;
    q->cheap_cap = beside_cols ? atof(fld[31]) : NAN;
    q->lg_cores = beside_cols ? atof(fld[32]) : NAN;
    q->lg_cores_cap = beside_cols ? atof(fld[33]) : NAN;
    q->oracle_host = beside_cols ? atof(fld[34]) : NAN;
    snprintf(q->mix, sizeof q->mix, "%s", fld[16]);
    q->top = mix_top(sw, q->mix, q->answered);
    double cap = atof(fld[18]);
    if (sw->capacity < 0)
      sw->capacity = cap;
    else if (fabs(cap - sw->capacity) > 0.05 * sw->capacity)
      fprintf(stderr,
              "anytime sweep: %s:%d: capacity %.1f, not the first row's %.1f (rows of "
              "two sweeps?)\n",
              path, ln, cap, sw->capacity);
    sw->cheap_caps[r] = atof(fld[28]);
    if (*fld[23]) sw->think_ms = atof(fld[23]);
    if (sw->n_probe < MAX_POINTS) sw->probes[sw->n_probe++] = q->probe;
    if (cm == CM_POISSON && q->rate > 0 && n_dur < MAX_POINTS) dur[n_dur++] = q->sent / q->rate;
    rows++;
  }
  if (!rows) {
    fprintf(stderr, "anytime sweep: %s has no rows\n", path);
    goto out;
  }
  sw->probe0 = sw->probes[0];
  sw->duration = n_dur ? round(2 * sweep_med(dur, n_dur)) / 2 : NAN;
  sw->cheap_measured = true;
  snprintf(sw->cheap_how, sizeof sw->cheap_how, "as %s recorded it", path);
  rc = 0;
  fprintf(stderr,
          "sweep: read %d rows of %s: %d repeat(s), %d policies, %d kind(s) of client, "
          "%d loads\n",
          rows, path, sw->repeats, sw->n_pol, sw->n_cm, sw->n_rho);
out:
  fclose(f);
  return rc;
}

int sweep_read_csv(sweep *sw) {
  if (sweep_make_tmpdir(sw) != 0)
    return fprintf(stderr, "anytime sweep: mkdtemp: %s\n", strerror(errno)), -1;
  return read_rows(sw, sw->from_csv);
}
