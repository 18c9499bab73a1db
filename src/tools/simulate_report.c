/* src/tools/simulate_report.c — what `anytime simulate` prints for one run
 * (tools/simulate.h): the plain mode's table header and row (with the burst
 * scenario's line on the light clients), and the JSON object of --json, one
 * per line, with every figure of at_sim_result the tables show and more
 * (the variant mix, refusals by reason, per-kind and per-group goodput,
 * the balancer's resends). The modes' own tables are in simulate_modes.c. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "anytime/anytime.h"
#include "anytime/sim.h"
#include "tools/simulate.h"

/* A number, or null when it is not finite (NaN: nothing to measure). */
static json_t *jnum(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

void simdrv_print_json(const at_sim_params *sp, const at_sim_result *r) {
  json_t *mix = json_object();
  for (size_t v = 0; v < sp->n_variants; v++)
    json_object_set_new(mix, sp->variants[v].name, json_real(r->variant_share[v]));
  json_t *o = json_pack(
      "{s:s, s:s, s:f, s:f, s:i, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o,"
      " s:o, s:o, s:o, s:o, s:o, s:i, s:f, s:f}",
      "clients", at_sim_clients_name(r->clients), "policy", at_plan_policy_name(sp->planner.policy),
      "load", r->clients == AT_SIM_BURST ? 0.0 : r->load, "capacity_rps", r->capacity_rps,
      "n_clients", r->n_clients, "rate_rps", r->rate_rps, "sent", (json_int_t)r->sent, "answered",
      (json_int_t)r->answered, "refused", (json_int_t)r->refused, "within", (json_int_t)r->within,
      "late", (json_int_t)r->late, "failed", (json_int_t)r->failed, "goodput_rps",
      jnum(r->goodput_rps), "attainment", jnum(r->attainment), "p50_ms", jnum(r->p50_s * 1e3),
      "p99_ms", jnum(r->p99_s * 1e3), "accuracy", jnum(r->accuracy), "oracle_rps",
      jnum(r->oracle_rps), "goodput_over_oracle", jnum(r->oracle_ratio), "oracle_variant",
      r->oracle_variant >= 0 ? json_string(sp->variants[r->oracle_variant].name) : json_null(),
      "admitted_cv", jnum(r->admitted_cv), "variant_mix", mix, "majority_changes",
      r->majority_changes, "overrun_mean_ms", r->overrun_mean_s * 1e3, "overrun_max_ms",
      r->overrun_max_s * 1e3);
  if (r->clients == AT_SIM_BURST) {
    json_object_set_new(o, "light_first_s", jnum(r->light_first_s));
    json_object_set_new(o, "light_after", jnum(r->light_after));
  }
  json_object_set_new(o, "held", json_integer((json_int_t)r->held));
  if (sp->retry_now_share > 0) { /* per client of each kind, within the deadline */
    json_t *k = json_object();
    static const at_sim_clients kinds[] = {AT_SIM_RETRY, AT_SIM_RETRY_AFTER};
    for (int i = 0; i < 2; i++) {
      int n = r->clients_by_kind[kinds[i]];
      json_object_set_new(
          k, at_sim_clients_name(kinds[i]),
          json_pack("{s:i, s:o}", "clients", n, "goodput_per_client_rps",
                    jnum(n ? (double)r->within_by_kind[kinds[i]] / n / r->measured_s : NAN)));
    }
    json_object_set_new(o, "by_kind", k);
  }
  json_object_set_new(o, "early_refused", json_integer((json_int_t)r->early_refused));
  if (r->n_groups > 0) {
    json_object_set_new(o, "goodput_tps", jnum(r->goodput_tps));
    json_object_set_new(o, "oracle_tps", jnum(r->oracle_tps));
    json_t *gs = json_array();
    for (int k = 0; k < r->n_groups; k++) {
      const struct at_sim_group_result *q = &r->groups[k];
      json_t *g = json_object();
      json_object_set_new(g, "name", json_string(sp->groups[k].name ? sp->groups[k].name : ""));
      json_object_set_new(g, "clients", json_integer(q->clients));
      json_object_set_new(g, "sent", json_integer((json_int_t)q->sent));
      json_object_set_new(g, "refused", json_integer((json_int_t)q->refused));
      json_object_set_new(g, "within", json_integer((json_int_t)q->within));
      json_object_set_new(g, "goodput_tps", jnum(q->goodput_tps));
      json_object_set_new(g, "demand_tps", jnum(q->demand_tps));
      json_object_set_new(g, "fair_tps", jnum(q->fair_tps));
      json_object_set_new(g, "p99_s", jnum(q->p99_s));
      json_array_append_new(gs, g);
    }
    json_object_set_new(o, "groups", gs);
  }
  if (r->replicas > 1) {
    json_object_set_new(o, "replicas", json_integer(r->replicas));
    json_object_set_new(o, "retried", json_integer((json_int_t)r->retried));
    json_object_set_new(o, "goodput_per_replica_rps", jnum(r->goodput_per_replica_rps));
  }
  json_object_set_new(
      o, "refused_by_reason",
      json_pack("{s:I, s:I, s:I}", "deadline", (json_int_t)r->refused_deadline, "infeasible",
                (json_int_t)r->refused_infeasible, "limit", (json_int_t)r->refused_limit));
  char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
  if (s) printf("%s\n", s);
  free(s);
  json_decref(o);
}

void simdrv_print_header(void) {
  printf("%-11s %5s %5s %8s %7s %7s %8s %8s %5s %6s %7s %7s %5s %6s %5s %3s %6s\n", "clients",
         "load", "N", "sent", "200", "429", "goodput", "oracle", "g/o", "attain", "p50ms", "p99ms",
         "top", "acc", "cv", "sw", "ovr");
}

/* The load as printed: the burst scenario has none. */
const char *simdrv_load_str(const at_sim_result *r, char *buf, size_t cap) {
  if (r->clients == AT_SIM_BURST)
    snprintf(buf, cap, "-");
  else
    snprintf(buf, cap, "%.2g", r->load);
  return buf;
}

void simdrv_print_row(const at_sim_result *r) {
  char lb[32];
  printf(
      "%-11s %5s %5d %8llu %7llu %7llu %8.1f %8.1f %5.3f %6.3f %7.2f %7.2f %5.3f %6.4f "
      "%5.2f %3d %6.2f\n",
      at_sim_clients_name(r->clients), simdrv_load_str(r, lb, sizeof lb), r->n_clients,
      (unsigned long long)r->sent, (unsigned long long)r->answered, (unsigned long long)r->refused,
      r->goodput_rps, r->oracle_rps, r->oracle_ratio, r->attainment, r->p50_s * 1e3, r->p99_s * 1e3,
      r->variant_share[r->top_variant], r->accuracy, r->admitted_cv, r->majority_changes,
      r->overrun_max_s * 1e3);
  if (r->clients == AT_SIM_BURST)
    printf(
        "%-11s light clients within deadline: first second after the burst %.4f (n=%llu), "
        "after %.4f (n=%llu)\n",
        "", r->light_first_s, (unsigned long long)r->light_first_n, r->light_after,
        (unsigned long long)r->light_after_n);
}
