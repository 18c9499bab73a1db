/* src/plan/sim_internal.h — the state of one simulation run, shared by
 * src/plan/sim.c (parameters, the oracle, the result) and
 * src/plan/sim_core.c (the event loop: clients, server, host). Not part of
 * the public API; see anytime/sim.h for the contract. */
#ifndef ANYTIME_PLAN_SIM_INTERNAL_H
#define ANYTIME_PLAN_SIM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "anytime/plan.h"
#include "anytime/rng.h"
#include "anytime/sim.h"

#define SIM_BIN_S 0.1 /* oscillation and overrun sampling bins */

/* The planner's clock for simulated time t: 1 s + t (0 means "never" to
 * the planner's bookkeeping). */
static inline uint64_t sim_ns(double t) {
  return 1000000000ull + (uint64_t)(t * 1e9 + 0.5);
}

typedef struct sim_ev {
  double t;
  uint64_t seq; /* scheduling order: breaks ties between equal times */
  int32_t type;
  int32_t arg;
} sim_ev;

/* One attempt (one HTTP request sent). */
typedef struct sim_att {
  double send_t;   /* when the client sent it */
  double arrive_t; /* when it reached the server (the replica it is at) */
  double decide_t; /* when the planner (or the oracle) decided */
  double est_s;    /* the decision's est_sojourn_s */
  int32_t client;  /* index into sim.cl, -1 for open-loop arrivals */
  int32_t variant; /* admitted to */
  int32_t next_free;
  int16_t rep;     /* the replica the balancer sent it to */
  int16_t hops;    /* times the balancer resent it after a 429 */
  bool queued;     /* the decision's `queued` (admitted behind work) */
  bool high;       /* high priority (params.high_share) */
  float tokens;    /* its text's length (params.long_share); 0: none given */
  float weight;    /* the decision's price per text (at_planner_finished_w) */
  int32_t texts;   /* texts in the request (>= 1) */
  int32_t left;    /* admitted: texts not yet run */
  double deadline_s; /* its deadline, capped as the server caps it */
} sim_att;

typedef struct sim_client {
  at_sim_clients kind; /* CLOSED, RETRY, RETRY_AFTER or OPENAI */
  double think_s;
  double stop_t; /* sends nothing at or after this */
  int tries;     /* OPENAI: resends of the current request so far */
  bool light;    /* BURST: one of the light clients */
  double told_t; /* the return slot its last refusal gave (hold_early_retries) */
  int group;     /* index into params.groups, or -1 */
} sim_client;

typedef struct sim_worker {
  int variant, n; /* the Run in progress: variant and texts */
  int32_t *ids;   /* its attempts [max_batch] */
  double svc_s;   /* its true duration */
  int before;     /* Runs in progress when it started */
  uint64_t seq;   /* run_starts when it started */
} sim_worker;

/* The host speed factor: piecewise constant, generated on demand. */
typedef struct sim_speed {
  at_rng rng;
  struct {
    double end, level; /* segment i covers [seg[i-1].end, seg[i].end) */
  } * seg;
  size_t n, cap;
} sim_speed;

/* One replica: its planner, its FIFO of admitted attempts, its idle
 * workers (of sim.w: workers [index·c, index·c + c)), the attempts the
 * balancer has in flight to it, and its host's speed. With one replica the
 * simulator is the single server it always was. */
typedef struct sim_rep {
  at_planner *pl; /* NULL in oracle mode */
  bool own_pl;    /* created by sim_init (every replica after the first) */
  int32_t *q;     /* FIFO ring of admitted attempts */
  size_t qhead, qn, qcap;
  int *idle; /* stack of idle workers */
  int n_idle, running;
  uint64_t run_starts;
  int conns;
  sim_speed speed;
} sim_rep;

/* Figures over the measured window. */
typedef struct sim_acc {
  uint64_t sent, answered, refused, held, within, late, failed;
  uint64_t by_reason[5];
  uint64_t by_variant[AT_PLAN_MAX_VARIANTS];
  double acc_sum;
  double *lat;
  size_t n_lat, cap_lat;
  uint32_t *bins; /* n_bins × n_variants admitted texts */
  size_t n_bins;
  double overrun_sum, overrun_max;
  uint64_t overrun_n;
  uint64_t light_ok[2], light_n[2];
  uint64_t retried; /* attempts the balancer resent to another replica */
  uint64_t sent_kind[AT_SIM_N_CLIENTS], within_kind[AT_SIM_N_CLIENTS];
  uint64_t early; /* refused before the planner: early for the client's slot */
  uint64_t sent_class[2], within_class[2]; /* normal, high */
  uint64_t within_texts;
  struct {
    uint64_t sent, refused, within, texts;
    double *lat;
    size_t n_lat, cap_lat;
  } g[AT_SIM_MAX_GROUPS];
} sim_acc;

typedef struct sim {
  const at_sim_params *p;
  at_planner *pl; /* the first replica's planner; NULL in oracle mode */
  int ovar;       /* oracle mode: the one variant */
  int c, B;       /* workers per replica (oracle: all of them, pooled), batch */
  int R, nw;      /* replicas; workers in all */
  int lb_next;    /* the balancer's tie-break rotation */
  sim_rep *rep;
  double deadline_s;    /* each request's, capped */
  double warm_t, end_t; /* measured window [warm_t, end_t); sends stop at end_t */
  double rate_rps;      /* open loop λ */
  double now;

  sim_ev *heap;
  size_t hn, hcap;
  uint64_t seq, events;

  sim_att *att;
  size_t natt, attcap;
  int32_t free_att;
  uint64_t attempts;

  sim_client *cl;
  int ncl;

  sim_worker *w;   /* nw workers */
  double *wfree;  /* oracle mode: when each worker is next free */
  double *onoise; /* oracle mode: the noise of each worker's next Run */
  double *oresp;  /* oracle mode: the answer overhead of that Run */

  at_rng r_arr, r_think, r_svc, r_misc;
  at_rng r_len; /* each attempt's text length (params.long_share) */
  at_rng r_prio; /* each attempt's priority class (params.high_share) */
  sim_acc a;
  at_status err;
} sim;

/* Set up `s` for params `p`: planner mode when `pl` is non-NULL, else the
 * clairvoyant oracle on variant `ovar`. Returns AT_OK or AT_ERR_NOMEM. */
at_status sim_init(sim *s, const at_sim_params *p, at_planner *pl, int ovar, double rate_rps,
                   int n_clients);
/* Run the event loop to the end (every attempt answered). Returns AT_OK,
 * AT_ERR_NOMEM, AT_ERR_LIMIT, AT_ERR_STATE. */
at_status sim_loop(sim *s);
void sim_free(sim *s);

#endif /* ANYTIME_PLAN_SIM_INTERNAL_H */
