/* anytime/sim.h — a deterministic discrete-event simulator that drives the
 * REAL admission planner (anytime/plan.h, through its public API only) with
 * a simulated clock, so the planner's behaviour under overload can be
 * measured — and tested in CI — free of the host's noise.
 *
 * What is simulated (docs/simulator.md has the whole picture):
 *   - the server: `planner.workers` workers sharing one FIFO of admitted
 *     texts (across variants); a free worker takes up to `planner.max_batch`
 *     consecutive queued texts of the head's variant as one Run. A Run of b
 *     texts on variant v takes s_v(b) (at_plan_variant_service_s) × the host
 *     speed factor at its start × lognormal noise × an occasional stall.
 *     Each finished text is reported with at_planner_finished_n(); when its
 *     answer is ready (a random response overhead later, not occupying a
 *     worker) with at_planner_observe().
 *   - the host: a speed factor, log-uniform in [1, speed_max], redrawn every
 *     speed_dwell_min_s..speed_dwell_max_s seconds;
 *   - the clients (at_sim_clients): open-loop Poisson, on/off bursts, closed
 *     loop, retry storms, Retry-After honouring, the OpenAI SDK's retries,
 *     and a burst-then-light-load recovery scenario;
 *   - the oracle: for each frontier variant alone, the same clients (same
 *     seed) against a clairvoyant server that knows every true service time
 *     and admits a request exactly when it would be answered within its
 *     deadline (FIFO, batch 1); the oracle goodput is the best of those.
 *
 * Determinism: everything random comes from at_rng streams derived from
 * params.seed, the planner sees only simulated time (now_ns = 1 s + the
 * simulated seconds), and events at equal times run in the order they were
 * scheduled. The same params give bit-identical results on any host.
 *
 * Thread-safety: at_sim_run() keeps all its state in its own allocations;
 * any number of runs may go on at once in different threads. The other
 * functions are pure.
 */
#ifndef ANYTIME_SIM_H
#define ANYTIME_SIM_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/plan.h"
#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the simulated clients send. ρ (params.load) is relative to the most
 * accurate frontier variant's capacity c / s_acc(1) at host speed 1. */
typedef enum at_sim_clients {
  AT_SIM_POISSON = 0,     /* open loop, Poisson at λ = ρ·capacity */
  AT_SIM_ONOFF = 1,       /* open loop, Poisson at on_factor·λ for on_s, then
                             off_factor·λ for off_s, repeating (on first) */
  AT_SIM_CLOSED = 2,      /* N = round(ρ·capacity·think_s) clients: send, wait
                             for the answer (200 or 429), think Exp(think_s) */
  AT_SIM_RETRY = 3,       /* as CLOSED, but a 429 is resent at once (after
                             only the round trip): the retry storm */
  AT_SIM_RETRY_AFTER = 4, /* as RETRY, but waiting retry_after_s first */
  AT_SIM_OPENAI = 5,      /* as CLOSED with the OpenAI SDK's retries: on a 429
                             up to openai_max_retries resends, each after
                             retry_after_s if 0 < it < 60, else
                             min(0.5·2^k, 8)·(1 − 0.25·U) s; then the request
                             fails and the user thinks before a new one */
  AT_SIM_BURST = 6,       /* recovery: burst_clients RETRY clients with no
                             think time for burst_s, then light_clients
                             CLOSED clients (think light_think_s) for light_s;
                             params.load and duration_s are not used */
} at_sim_clients;
#define AT_SIM_N_CLIENTS 7

/* A population of closed-loop clients that share a behaviour (see
 * at_sim_params.groups). Each client is one identified client to the
 * planner (at_plan_request.client) unless `anonymous`. */
#define AT_SIM_MAX_GROUPS 8
typedef struct at_sim_group {
  const char *name;     /* for reports (borrowed); NULL: "g<i>" */
  at_sim_clients kind;  /* CLOSED, RETRY, RETRY_AFTER or OPENAI */
  int clients;          /* 1..100000 */
  double think_s;       /* mean think time; <= 0: params.think_s (RETRY may
                           not think 0: it would never stop sending) */
  double deadline_s;    /* each request's; <= 0: params.deadline_s */
  int n_texts;          /* texts per request, 1..4096; <= 0: 1 */
  int priority;         /* 1 high, 0 normal, -1 low */
  bool anonymous;       /* no identity: no client slots, no fair share */
} at_sim_group;

typedef struct at_sim_params {
  /* The family as the planner sees it: borrowed, read only during
   * at_sim_run() (names included). 1..AT_PLAN_MAX_VARIANTS entries. */
  const at_plan_variant *variants;
  size_t n_variants;
  /* The planner under test, passed to at_planner_create() as is; its
   * workers and max_batch also shape the simulated server. */
  at_planner_params planner;
  at_sim_clients clients;
  double load;       /* ρ > 0; default 1 */
  double duration_s; /* clients send during [0, duration_s); default 10 */
  /* Figures count attempts sent in [warmup_s, duration_s) (the "measured
   * window"); the planner runs from 0 s. 0 <= warmup < duration; default 1.
   * AT_SIM_BURST measures its whole run instead. */
  double warmup_s;
  uint64_t seed;                       /* default 1 */
  double deadline_s;                   /* each request's x-deadline-ms; <= 0: the planner's
                                          default (capped by its max, as the server does) */
  double think_s;                      /* closed-loop mean think time Z; default 0.100 */
  double rtt_s;                        /* network round trip added to every attempt; 1e-4 */
  double parse_s;                      /* mean delay from arrival to decision (uniform in
                                          [0.5, 1.5]·parse_s), passed as the request's age;
                                          default 3e-5 */
  double respond_min_s, respond_max_s; /* per-answer overhead after its Run,
                                          uniform; default 5e-5, 3e-4 */
  /* Host noise. host_noise = false switches all of it off (speed 1, no Run
   * noise, no stalls). Default on. */
  bool host_noise;
  double speed_max;         /* speed factor range [1, speed_max]; default 2 */
  double speed_dwell_min_s; /* each speed lasts uniform [min, max]; 0.5 */
  double speed_dwell_max_s; /* default 3 */
  double noise_sigma;       /* per-Run lognormal sigma (median 1); 0.1 */
  double stall_prob;        /* probability that a Run stalls; 0.002 */
  double stall_factor;      /* a stalled Run takes this many times; 10 */
  /* Host lateness after the Run: with probability late_prob (default 0)
   * an answer is written late_mean_s (exponential mean; default 0.008)
   * later — the HTTP thread or the worker waiting for a core that the
   * load generator holds, as on a 2-core host with 4 closed-loop clients
   * on it (results/planner_history.md, "The overrun allowance pinned at its cap").
   * It lands on idle and queued admissions alike: admission cannot
   * prevent it. Part of the host noise (off when host_noise is false). */
  double late_prob;
  double late_mean_s;
  /* AT_SIM_ONOFF; defaults 1 s at 3λ, 2 s at 0.2λ */
  double on_s, off_s, on_factor, off_factor;
  /* AT_SIM_OPENAI: resends of one request (default 2, as the SDK) */
  int openai_max_retries;
  /* RETRY_AFTER / OPENAI: wait the whole seconds the server's Retry-After
   * header carries (at_plan_retry_after_header) instead of the decision's
   * exact retry_after_s. Default false. */
  bool retry_after_header;
  /* The server's server.hold_early_retries: a DEADLINE refusal of a client
   * that came back before the return slot its previous refusal gave
   * (retry_after_s) is answered at that slot (at most 1 s later), not at
   * once. Each closed-loop client is one keep-alive connection; open-loop
   * attempts are never held. Default true, as the server. */
  bool hold_early_retries;
  /* The server's slots that belong to clients (server.c serve_admit): a
   * request of a client that comes back more than 1 ms before the return
   * slot its last refusal gave is refused before the planner — it neither
   * takes capacity nor counts as demand — and told the same slot (held to
   * it with hold_early_retries). The server does this for identified
   * clients (API key, x-client-id, trusted forwarded address); each
   * closed-loop client here is one. Default false (the old rule). */
  bool client_slots;
  /* Mixed populations: with clients RETRY_AFTER, this share of the
   * closed-loop clients (the first round(share·N)) resend every 429 at once
   * (RETRY) instead. 0..1, default 0. The result splits the figures by
   * kind (within_by_kind, clients_by_kind). */
  double retry_now_share;
  /* Priority classes: each attempt is high priority (at_plan_request
   * .priority 1) with this probability, else normal. 0..1, default 0. The
   * result gives each class's attempts and answers within the deadline. */
  double high_share;
  /* AT_SIM_BURST; defaults 200 clients for 2 s, then 8 clients with think
   * 0.020 s for 3 s */
  int burst_clients;
  double burst_s;
  int light_clients;
  double light_think_s;
  double light_s;
  bool oracle;           /* also run the oracle (default true) */
  uint64_t max_attempts; /* safety cap on attempts simulated, across the
                            planner run and each oracle run; default 2e8 */
  /* A cluster: `replicas` servers (1..AT_SIM_MAX_REPLICAS; default 1),
   * each with its own planner, workers (planner.workers each) and host
   * speed, behind a least-connections balancer that, with lb_retry
   * (default true), resends a refused attempt once to another replica
   * lb_hop_s (default 1e-4 s) later, as nginx's proxy_next_upstream
   * http_429 with proxy_next_upstream_tries 2 does. ρ and the capacity
   * are the cluster's (replicas × c / s_acc(1)); the oracle pools every
   * replica's workers; the hold of early retries is off (the balancer, not
   * the client, holds the connection). */
  int replicas;
  bool lb_retry;
  double lb_hop_s;
  /* Texts of two lengths. Each attempt's text has long_tokens tokens with
   * probability long_share, else short_tokens (drawn from a stream of its
   * own, so other draws are unchanged; a resend draws again). A Run of a
   * batch takes its table time times w(t) of its longest text (padding),
   * w the variant's length model (at_plan_variant: the truth here), and
   * the planner is told each request's tokens exactly. All 0 (default):
   * no lengths, every text costs the table. */
  double long_share;   /* 0..1 */
  double short_tokens; /* >= 0 */
  double long_tokens;  /* >= 0 */
  /* What the planner is told of the family, when it differs from the
   * truth above (`variants`, whose tables and length models make the Run
   * times): n_variants entries, or NULL for the same. E.g. the variants
   * with their length models switched off: a planner blind to length. */
  const at_plan_variant *planner_variants;
  /* Mixed populations: n_groups (0..AT_SIM_MAX_GROUPS) groups of
   * closed-loop clients side by side, borrowed during at_sim_run(). With
   * groups, they are the clients: `clients` and `load` do not set the
   * client count (load is only reported), retry_now_share and high_share
   * are not used, and the result has per-group figures (groups[]). A
   * request of n texts is n items in the FIFO; it is answered when its
   * last text is. One replica only. */
  const at_sim_group *groups;
  int n_groups;
} at_sim_params;
#define AT_SIM_MAX_REPLICAS 256

typedef struct at_sim_result {
  at_sim_clients clients;
  double load;         /* ρ as given */
  double capacity_rps; /* c / s_acc(1): what ρ = 1 means */
  double rate_rps;     /* open loop: mean offered rate; else 0 */
  int n_clients;       /* closed loop: clients; else 0 */
  double measured_s;   /* length of the measured window */
  int n_variants;
  int top_variant; /* the most accurate frontier variant */
  /* Counts over attempts sent in the measured window. */
  uint64_t sent;     /* attempts (each resend counts) */
  uint64_t answered; /* 200 */
  uint64_t refused;  /* 429 */
  uint64_t held;     /* of those, answered at the client's return slot */
  uint64_t within;   /* 200 within the deadline */
  uint64_t late;     /* 200 after the deadline */
  uint64_t failed;   /* OPENAI: requests given up after their retries */
  uint64_t refused_deadline, refused_infeasible, refused_limit; /* by reason */
  double goodput_rps;                                           /* within / measured_s */
  double attainment;                                            /* within / sent */
  double p50_s, p99_s, max_s;                 /* latency of the 200s (nearest rank); NaN if none */
  double accuracy;                            /* mean variant accuracy over the 200s; NaN if none */
  double variant_share[AT_PLAN_MAX_VARIANTS]; /* share of the 200s */
  /* Oscillation over the measured window in 100 ms bins (by decision
   * time): coefficient of variation of admitted texts per bin, and how
   * often the variant with most admissions changes between bins that
   * admitted anything. */
  double admitted_cv;
  int majority_changes;
  /* The planner's overrun allowance sampled every 100 ms in the window. */
  double overrun_mean_s, overrun_max_s;
  /* The oracle (NaN / -1 when params.oracle is false). */
  double oracle_rps;
  int oracle_variant;
  double oracle_ratio; /* goodput_rps / oracle_rps */
  /* AT_SIM_BURST: share of the light clients' attempts answered 200 within
   * the deadline, sent in [burst_s, burst_s + 1) and after; NaN otherwise. */
  double light_first_s, light_after;
  uint64_t light_first_n, light_after_n; /* attempts in those windows */
  uint64_t events;                       /* events simulated (planner run) */
  at_planner_stats final_stats;          /* the (first replica's) planner at the end */
  /* Clusters: replicas, attempts the balancer resent after a 429 (sent in
   * the measured window; a resend is not a new attempt in `sent`), their
   * share of `sent`, and goodput_rps / replicas. */
  int replicas;
  uint64_t retried;
  double retried_share;
  double goodput_per_replica_rps;
  /* By the kind of client that sent the attempt (closed-loop clients only;
   * open-loop attempts are not counted here): clients, attempts sent and
   * 200s within the deadline in the measured window, and refusals made
   * before the planner for a client early for its slot (client_slots). */
  int clients_by_kind[AT_SIM_N_CLIENTS];
  uint64_t sent_by_kind[AT_SIM_N_CLIENTS];
  uint64_t within_by_kind[AT_SIM_N_CLIENTS];
  uint64_t early_refused;
  /* By priority class (params.high_share): [0] normal, [1] high. */
  uint64_t sent_by_class[2], within_by_class[2];
  /* Texts answered within their deadline per second (requests of several
   * texts count each), and the oracle's: with groups the totals to compare. */
  double goodput_tps, oracle_tps;
  /* Per group (params.groups), over the measured window. */
  int n_groups;
  struct at_sim_group_result {
    int clients;
    uint64_t sent, refused, within; /* attempts; within: 200s within the deadline */
    double goodput_tps;             /* texts within the deadline per second */
    /* what the group would take if every request were answered at once:
     * clients x n_texts / think_s (INFINITY for think 0) */
    double demand_tps;
    /* its max-min fair share of oracle_tps: the clients' demands filled
     * from the smallest up, each client at most an equal split of what is
     * left (NaN without the oracle) */
    double fair_tps;
    double p50_s, p99_s; /* latency of its 200s (NaN if none) */
  } groups[AT_SIM_MAX_GROUPS];
} at_sim_result;

/* Defaults as documented on each field; variants NULL (the caller must set
 * them), planner = at_planner_default_params(), clients POISSON. */
AT_API at_sim_params at_sim_default_params(void);

/* Simulate `params` against a fresh planner (and, if params->oracle, the
 * oracle) and fill *out. Deterministic in params. Allocates and frees its
 * own state; nothing is kept after it returns.
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL pointers, a parameter out of
 * range, no variant on the frontier; the detail names it; also anything
 * at_planner_create() refuses), AT_ERR_NOMEM, AT_ERR_LIMIT (more than
 * max_attempts attempts), AT_ERR_STATE (the planner refused a call the
 * simulator made correctly, e.g. finished_n with texts in flight: a planner
 * bug; the detail says which call). *out is filled only on AT_OK. */
AT_API at_status at_sim_run(const at_sim_params *params, at_sim_result *out);

/* The most accurate frontier variant (ties: the cheaper) of `params`'
 * variants and its capacity replicas × c / s(1) at speed 1, without
 * simulating.
 * Returns AT_OK or AT_ERR_INVALID_ARG (as at_sim_run). */
AT_API at_status at_sim_capacity(const at_sim_params *params, int *top_variant, double *capacity_rps);

/* The standard mixed population (issue 41; docs/planner.md, "Fair
 * sharing between clients"), sized so that its demand in texts is
 * `load` x `capacity_rps`: "polite" clients honouring Retry-After (30 %
 * of the demand, think 0.5 s), "at-once" clients resending every 429 at
 * once (30 %, think 0.5 s), "greedy" clients sending ten times as often
 * and resending at once (25 %, think 0.05 s) and "long64" clients sending
 * 64 texts with a 10 s deadline (15 %, think 1 s). Fills out[0..3] and
 * returns 4. Pure. */
AT_API int at_sim_mixed_population(double load, double capacity_rps, at_sim_group out[4]);

/* "poisson", "onoff", "closed", "retry", "retry-after", "openai", "burst"
 * and back. The name is static, never NULL ("unknown" out of range). Parse
 * returns AT_OK or AT_ERR_INVALID_ARG (unknown name or NULL). */
AT_API const char *at_sim_clients_name(at_sim_clients clients);
AT_API at_status at_sim_clients_parse(const char *name, at_sim_clients *out);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_SIM_H */
