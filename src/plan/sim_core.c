/* src/plan/sim_core.c — the simulator's event loop (see anytime/sim.h):
 * a binary heap of timed events, the clients, the server (a FIFO of
 * admitted texts in front of c workers, or the clairvoyant oracle) and the
 * host's speed factor. src/plan/sim.c sets runs up and turns the counts
 * into a result.
 *
 * DESIGN
 *   Single-threaded and deterministic: one run's state lives in one `sim`;
 *   events are ordered by (time, scheduling sequence), so equal times run
 *   in the order they were scheduled, and every random draw comes from one
 *   of four at_rng streams seeded from params.seed (arrivals, think times,
 *   Run times, everything else) plus the host speed's own stream, which is
 *   generated in time order whatever asks for it — the planner run and
 *   every oracle run see the same host.
 *   Events: ARRIVAL (the next open-loop send), DECIDE (an attempt reaches
 *   the decision, rtt/2 + parse after its send), RUN_DONE (a worker's Run
 *   ends: at_planner_finished_w for each text), READY (an answer is written:
 *   at_planner_observe, and the client has it rtt/2 later), BIN (sample
 *   the planner's overrun every 100 ms). A client's reaction to an answer
 *   is computed when the answer is produced and scheduled as the DECIDE of
 *   its next attempt, so each client has at most one event pending.
 *   Ownership: the attempts live in a pool with a free list; an attempt is
 *   freed when its client is answered. The first replica's planner is
 *   borrowed (sim.c creates and destroys it), the others' are created here;
 *   every planner call is given the simulated time, never the wall clock.
 *   Replicas (params.replicas > 1): each has its own planner, FIFO,
 *   workers and host speed; a least-connections balancer (ties: rotating)
 *   sends each attempt to the replica with the fewest attempts in flight
 *   and, with params.lb_retry, resends a 429 once to another replica
 *   lb_hop_s later, as nginx's proxy_next_upstream http_429 does. The
 *   clients see one server. With one replica nothing of this draws a random
 *   number, so results are those of the single server.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "plan/sim_internal.h"

enum { EV_ARRIVAL = 0, EV_DECIDE, EV_RUN_DONE, EV_READY, EV_BIN };

static bool grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  void *b = realloc(*buf, n * elem);
  if (!b) return false;
  *buf = b;
  *cap = n;
  return true;
}

static void oom(sim *s) {
  if (s->err == AT_OK) s->err = at_fail(AT_ERR_NOMEM, "simulator: out of memory");
}

/* ---- the event heap ------------------------------------------------------- */

static bool ev_before(const sim_ev *a, const sim_ev *b) {
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(sim *s, double t, int type, int32_t arg) {
  if (!grow((void **)&s->heap, &s->hcap, s->hn + 1, sizeof *s->heap)) {
    oom(s);
    return;
  }
  sim_ev e = {.t = t, .seq = s->seq++, .type = type, .arg = arg};
  size_t i = s->hn++;
  while (i > 0) {
    size_t up = (i - 1) / 2;
    if (!ev_before(&e, &s->heap[up])) break;
    s->heap[i] = s->heap[up];
    i = up;
  }
  s->heap[i] = e;
}

static sim_ev pop(sim *s) {
  sim_ev top = s->heap[0], last = s->heap[--s->hn];
  size_t i = 0, n = s->hn;
  for (;;) {
    size_t l = 2 * i + 1, m = l + 1, k = i;
    const sim_ev *best = &last;
    if (l < n && ev_before(&s->heap[l], best)) k = l, best = &s->heap[l];
    if (m < n && ev_before(&s->heap[m], best)) k = m;
    if (k == i) break;
    s->heap[i] = s->heap[k];
    i = k;
  }
  if (n > 0) s->heap[i] = last;
  return top;
}

/* ---- randomness and the host ------------------------------------------------ */

static double unif(at_rng *r, double lo, double hi) {
  return lo + (hi - lo) * at_rng_uniform(r);
}
static double expo(at_rng *r, double mean) {
  return mean > 0 ? -mean * log(1.0 - at_rng_uniform(r)) : 0.0;
}
static double gauss(at_rng *r) {
  double u1 = 1.0 - at_rng_uniform(r), u2 = at_rng_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static double speed_at(sim *s, int r, double t) {
  const at_sim_params *p = s->p;
  if (!p->host_noise || !(p->speed_max > 1)) return 1.0;
  sim_speed *sp = &s->rep[r].speed;
  /* append segments, in time order, until one ends after t */
  while (sp->n == 0 || sp->seg[sp->n - 1].end <= t) {
    if (!grow((void **)&sp->seg, &sp->cap, sp->n + 1, sizeof *sp->seg)) {
      oom(s);
      return 1.0;
    }
    double start = sp->n ? sp->seg[sp->n - 1].end : 0.0;
    sp->seg[sp->n].level = exp(at_rng_uniform(&sp->rng) * log(p->speed_max));
    sp->seg[sp->n].end = start + unif(&sp->rng, p->speed_dwell_min_s, p->speed_dwell_max_s);
    sp->n++;
  }
  size_t lo = 0, hi = sp->n - 1; /* the first segment that ends after t */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (sp->seg[mid].end > t)
      hi = mid;
    else
      lo = mid + 1;
  }
  return sp->seg[lo].level;
}

/* One Run's noise: lognormal (median 1) times the occasional stall. */
static double run_noise(sim *s) {
  const at_sim_params *p = s->p;
  if (!p->host_noise) return 1.0;
  double x = 1.0;
  if (p->noise_sigma > 0) x *= exp(p->noise_sigma * gauss(&s->r_svc));
  if (p->stall_prob > 0 && at_rng_uniform(&s->r_svc) < p->stall_prob) x *= p->stall_factor;
  return x;
}

/* True duration of a Run of b texts on v, the longest of `tokens` tokens
 * (0: no length), starting at t on replica r's host with noise `noise`. */
static double run_time(sim *s, int r, int v, int b, double tokens, double t, double noise) {
  const at_plan_variant *pv = &s->p->variants[v];
  return at_plan_variant_service_s(pv, (double)b) * at_plan_variant_weight(pv, tokens) *
         speed_at(s, r, t) * noise;
}

/* The balancer's choice: the replica with the fewest attempts in flight,
 * other than `not` (-1: any); ties go to the first after the last pick. */
static int balance(sim *s, int not) {
  if (s->R == 1) return 0;
  int best = -1;
  for (int i = 0; i < s->R; i++) {
    int r = (s->lb_next + i) % s->R;
    if (r == not) continue;
    if (best < 0 || s->rep[r].conns < s->rep[best].conns) best = r;
  }
  s->lb_next = (best + 1) % s->R;
  return best;
}

/* From a Run's end to its answer being written: the per-answer overhead
 * and, now and then, the host's lateness (params.late_prob; no draw when
 * it is 0, so runs without it are what they always were). */
static double respond_time(sim *s) {
  const at_sim_params *p = s->p;
  double t = unif(&s->r_misc, p->respond_min_s, p->respond_max_s);
  if (p->host_noise && p->late_prob > 0 && at_rng_uniform(&s->r_misc) < p->late_prob)
    t += -p->late_mean_s * log1p(-at_rng_uniform(&s->r_misc));
  return t;
}

/* ---- attempts and clients ---------------------------------------------------- */

static bool in_window(const sim *s, double t) {
  return t >= s->warm_t && t < s->end_t;
}

/* Create an attempt sent at `t` by client `ci` (-1: open loop). */
static void send_at(sim *s, int32_t ci, double t) {
  if (++s->attempts > s->p->max_attempts) {
    if (s->err == AT_OK)
      s->err = at_fail(AT_ERR_LIMIT, "simulator: more than %llu attempts (max_attempts)",
                       (unsigned long long)s->p->max_attempts);
    return;
  }
  int32_t id = s->free_att;
  if (id >= 0) {
    s->free_att = s->att[id].next_free;
  } else {
    if (!grow((void **)&s->att, &s->attcap, s->natt + 1, sizeof *s->att)) {
      oom(s);
      return;
    }
    id = (int32_t)s->natt++;
  }
  sim_att *a = &s->att[id];
  memset(a, 0, sizeof *a);
  a->send_t = t;
  a->arrive_t = t + s->p->rtt_s / 2;
  a->client = ci;
  a->variant = -1;
  a->next_free = -1;
  if (s->p->long_share > 0 || s->p->short_tokens > 0)
    a->tokens = (float)(s->p->long_share > 0 && at_rng_uniform(&s->r_len) < s->p->long_share
                            ? s->p->long_tokens
                            : s->p->short_tokens);
  if (s->pl) {
    a->rep = (int16_t)balance(s, -1);
    s->rep[a->rep].conns++;
  }
  const at_sim_group *g = ci >= 0 && s->cl[ci].group >= 0 ? &s->p->groups[s->cl[ci].group] : NULL;
  a->texts = 1;
  a->deadline_s = s->deadline_s;
  if (g) {
    a->texts = g->n_texts > 0 ? g->n_texts : 1;
    a->deadline_s = at_plan_cap_deadline(g->deadline_s > 0 ? g->deadline_s : s->p->deadline_s,
                                         s->p->planner.default_deadline_s,
                                         s->p->planner.max_deadline_s);
    a->high = g->priority > 0;
  } else {
    a->high = s->p->high_share > 0 && at_rng_uniform(&s->r_prio) < s->p->high_share;
  }
  if (in_window(s, t)) {
    s->a.sent++;
    s->a.sent_class[a->high]++;
    if (ci >= 0) s->a.sent_kind[s->cl[ci].kind]++;
    if (g) s->a.g[s->cl[ci].group].sent++;
  }
  push(s, a->arrive_t + unif(&s->r_misc, 0.5, 1.5) * s->p->parse_s, EV_DECIDE, id);
}

static double retry_wait(const sim *s, double ra) {
  if (s->p->retry_after_header) return (double)at_plan_retry_after_header(ra);
  return ra > 0 ? ra : 0.0;
}

/* What client ci does after an answer (ok: 200) reaching it at tc. */
static void client_next(sim *s, int32_t ci, bool ok, double tc, double ra, bool counted) {
  sim_client *c = &s->cl[ci];
  double next = tc;
  if (ok) {
    c->tries = 0;
    next = tc + expo(&s->r_think, c->think_s);
  } else if (c->kind == AT_SIM_CLOSED) {
    next = tc + expo(&s->r_think, c->think_s);
  } else if (c->kind == AT_SIM_RETRY_AFTER) {
    next = tc + retry_wait(s, ra);
  } else if (c->kind == AT_SIM_OPENAI) {
    if (c->tries < s->p->openai_max_retries) {
      double w = s->p->retry_after_header ? retry_wait(s, ra) : ra;
      if (!(w > 0 && w < 60)) {
        double base = fmin(0.5 * pow(2.0, c->tries), 8.0);
        w = base * (1.0 - 0.25 * at_rng_uniform(&s->r_think));
      }
      c->tries++;
      next = tc + w;
    } else {
      c->tries = 0;
      if (counted) s->a.failed++;
      next = tc + expo(&s->r_think, c->think_s);
    }
  } /* AT_SIM_RETRY: at once */
  if (next < c->stop_t) send_at(s, ci, next);
}

/* The client of attempt `id` gets its answer at tc (ok: 200, else 429). */
static void answer(sim *s, int32_t id, bool ok, double tc, double ra) {
  sim_att *a = &s->att[id];
  double lat = tc - a->send_t;
  bool good = ok && lat <= a->deadline_s;
  bool counted = in_window(s, a->send_t);
  int gi = a->client >= 0 ? s->cl[a->client].group : -1;
  if (counted && gi >= 0) {
    if (!ok) s->a.g[gi].refused++;
    if (good) s->a.g[gi].within++, s->a.g[gi].texts += (uint64_t)a->texts;
    if (ok && grow((void **)&s->a.g[gi].lat, &s->a.g[gi].cap_lat, s->a.g[gi].n_lat + 1,
                   sizeof(double)))
      s->a.g[gi].lat[s->a.g[gi].n_lat++] = lat;
    else if (ok)
      oom(s);
  }
  if (counted) {
    if (good) s->a.within_texts += (uint64_t)a->texts;
    if (ok) {
      s->a.answered++;
      s->a.by_variant[a->variant]++;
      s->a.acc_sum += s->p->variants[a->variant].accuracy;
      if (good) {
        s->a.within++;
        s->a.within_class[a->high]++;
        if (a->client >= 0) s->a.within_kind[s->cl[a->client].kind]++;
      } else
        s->a.late++;
      if (!grow((void **)&s->a.lat, &s->a.cap_lat, s->a.n_lat + 1, sizeof(double)))
        oom(s);
      else
        s->a.lat[s->a.n_lat++] = lat;
    } else {
      s->a.refused++;
    }
  }
  int32_t ci = a->client;
  if (ci >= 0 && s->cl[ci].light) {
    int k = a->send_t - s->p->burst_s < 1.0 ? 0 : 1;
    s->a.light_n[k]++;
    if (good) s->a.light_ok[k]++;
  }
  a->next_free = s->free_att;
  s->free_att = id;
  if (ci >= 0) client_next(s, ci, ok, tc, ra, counted);
}

/* ---- the server --------------------------------------------------------------- */

static void count_admit(sim *s, const sim_att *a) {
  if (!in_window(s, a->decide_t) || !s->a.bins) return;
  size_t b = (size_t)((a->decide_t - s->warm_t) / SIM_BIN_S);
  if (b < s->a.n_bins) s->a.bins[b * s->p->n_variants + (size_t)a->variant]++;
}

static void start_run(sim *s, sim_rep *rp, int r, double t) {
  int k = rp->idle[--rp->n_idle];
  sim_worker *w = &s->w[k];
  int v = s->att[rp->q[rp->qhead]].variant, n = 0;
  double longest = 0;
  while (rp->qn > 0 && n < s->B && s->att[rp->q[rp->qhead]].variant == v) {
    if (s->att[rp->q[rp->qhead]].tokens > longest) longest = s->att[rp->q[rp->qhead]].tokens;
    w->ids[n++] = rp->q[rp->qhead];
    rp->qhead = (rp->qhead + 1) % rp->qcap;
    rp->qn--;
  }
  w->variant = v;
  w->n = n;
  w->svc_s = run_time(s, r, v, n, longest, t, run_noise(s));
  w->before = rp->running++;
  w->seq = rp->run_starts++;
  push(s, t + w->svc_s, EV_RUN_DONE, k);
}

static void dispatch(sim *s, int r, double t) {
  sim_rep *rp = &s->rep[r];
  while (rp->qn > 0 && rp->n_idle > 0 && s->err == AT_OK) start_run(s, rp, r, t);
}

static void enqueue(sim *s, sim_rep *rp, int32_t id) {
  if (rp->qn == rp->qcap) {
    size_t ncap = rp->qcap ? rp->qcap * 2 : 256;
    int32_t *nq = malloc(ncap * sizeof *nq);
    if (!nq) {
      oom(s);
      return;
    }
    for (size_t i = 0; i < rp->qn; i++) nq[i] = rp->q[(rp->qhead + i) % rp->qcap];
    free(rp->q);
    rp->q = nq;
    rp->qcap = ncap;
    rp->qhead = 0;
  }
  rp->q[(rp->qhead + rp->qn) % rp->qcap] = id;
  rp->qn++;
}

static void decide_planner(sim *s, int32_t id, double t) {
  sim_att *a = &s->att[id];
  int r = a->rep;
  sim_rep *rp = &s->rep[r];
  /* the server's client slots: early for its slot, refused before the
   * planner and told the same slot */
  sim_client *own = a->client >= 0 && s->R == 1 ? &s->cl[a->client] : NULL;
  bool anon = own && own->group >= 0 && s->p->groups[own->group].anonymous;
  if (own && !anon && s->p->client_slots && own->told_t > t + 1e-3) {
    a->decide_t = t;
    rp->conns--;
    if (in_window(s, a->send_t)) s->a.early++;
    double at = t;
    if (s->p->hold_early_retries) {
      at = fmin(own->told_t, t + AT_PLAN_HOLD_MAX_S);
      if (in_window(s, a->send_t)) s->a.held++;
    }
    answer(s, id, false, at + s->p->rtt_s / 2, fmax(own->told_t - at, 0));
    return;
  }
  const at_sim_group *g = own && own->group >= 0 ? &s->p->groups[own->group] : NULL;
  at_plan_request rq = {.deadline_s = g && g->deadline_s > 0 ? g->deadline_s : s->p->deadline_s,
                        .age_s = t - a->arrive_t,
                        .n_texts = a->texts,
                        .tokens = a->tokens,
                        .priority = g ? g->priority : a->high ? 1 : 0,
                        /* group clients are identified (the server's API key,
                         * x-client-id or peer address), others not */
                        .client = g && !g->anonymous ? (uint64_t)a->client + 1 : 0};
  at_plan_decision d;
  at_status st = at_planner_decide_req(rp->pl, sim_ns(t), &rq, &d);
  if (st != AT_OK) {
    s->err = at_fail(AT_ERR_STATE, "simulator: at_planner_decide_req at t=%.6f s returned %s", t,
                     at_status_name(st));
    return;
  }
  a->decide_t = t;
  if (!d.admit) {
    rp->conns--;
    if (s->R > 1 && s->p->lb_retry && a->hops == 0) { /* the balancer tries another once */
      a->hops = 1;
      a->rep = (int16_t)balance(s, r);
      s->rep[a->rep].conns++;
      a->arrive_t = t + s->p->lb_hop_s;
      if (in_window(s, a->send_t)) s->a.retried++;
      push(s, a->arrive_t + unif(&s->r_misc, 0.5, 1.5) * s->p->parse_s, EV_DECIDE, id);
      return;
    }
    if (in_window(s, a->send_t) && (int)d.reason >= 0 && (int)d.reason < 5)
      s->a.by_reason[d.reason]++;
    double at = t, ra = d.retry_after_s;
    sim_client *c = a->client >= 0 && s->R == 1 ? &s->cl[a->client] : NULL;
    if (c) { /* the server's hold (server.c refuse()): a client early for its slot waits */
      double told = c->told_t;
      c->told_t = t + ra;
      if (s->p->hold_early_retries && d.reason == AT_PLAN_REJECT_DEADLINE && told > t) {
        at = fmin(told, t + AT_PLAN_HOLD_MAX_S);
        ra = fmax(c->told_t - at, 0);
        if (in_window(s, a->send_t)) s->a.held++;
      }
    }
    answer(s, id, false, at + s->p->rtt_s / 2, ra);
    return;
  }
  a->variant = d.variant;
  a->weight = (float)d.weight;
  a->est_s = d.est_sojourn_s;
  a->queued = d.queued;
  a->left = a->texts;
  count_admit(s, a);
  for (int i = 0; i < a->texts; i++) enqueue(s, rp, id); /* one FIFO item per text */
  dispatch(s, r, t);
}

/* The clairvoyant server: FIFO on c workers, every Run's time known. */
static void decide_oracle_n(sim *s, int32_t id, double t);

static void decide_oracle(sim *s, int32_t id, double t) {
  sim_att *a = &s->att[id];
  if (a->texts > 1) {
    decide_oracle_n(s, id, t);
    return;
  }
  a->decide_t = t;
  int k = 0;
  for (int i = 1; i < s->nw; i++)
    if (s->wfree[i] < s->wfree[k]) k = i;
  double start = fmax(t, s->wfree[k]);
  /* the worker's next Run has its noise (and its answer its overhead)
   * already: refusing a request whose Run would be slow and admitting its
   * retry cannot pick faster Runs. With replicas the oracle pools all their
   * workers (each on its own replica's host): no balancer does better. */
  int r = k / s->p->planner.workers;
  double fin = start + run_time(s, r, s->ovar, 1, a->tokens, start, s->onoise[k]);
  double ready = fin + s->oresp[k];
  double late = ready + s->p->rtt_s / 2 - a->send_t - a->deadline_s;
  if (late > 0) {
    if (in_window(s, a->send_t)) s->a.by_reason[AT_PLAN_REJECT_DEADLINE]++;
    /* A late host (params.late_prob) belongs to the moment, not to the
     * worker: when its lateness alone, with no wait, would miss the
     * deadline, the moment passes and the worker's next answer draws
     * again (else one such draw would refuse every request to it). */
    if (s->oresp[k] > s->p->respond_max_s && late - (start - t) > 0)
      s->oresp[k] = respond_time(s);
    answer(s, id, false, t + s->p->rtt_s / 2, late);
    return;
  }
  s->wfree[k] = fin;
  s->onoise[k] = run_noise(s);
  s->oresp[k] = respond_time(s);
  a->variant = s->ovar;
  count_admit(s, a);
  push(s, ready, EV_READY, id);
}

/* The oracle for a request of several texts: each text in turn to the
 * worker free first (a worker's first Run takes its drawn noise, later
 * ones the median); admitted only when its last text is answered within
 * the deadline, and only then do the workers' times move. */
static void decide_oracle_n(sim *s, int32_t id, double t) {
  sim_att *a = &s->att[id];
  a->decide_t = t;
  double *free_at = malloc((size_t)s->nw * sizeof *free_at);
  bool *used = calloc((size_t)s->nw, sizeof *used);
  if (!free_at || !used) {
    free(free_at), free(used);
    oom(s);
    return;
  }
  memcpy(free_at, s->wfree, (size_t)s->nw * sizeof *free_at);
  double last = t;
  for (int i = 0; i < a->texts; i++) {
    int k = 0;
    for (int j = 1; j < s->nw; j++)
      if (free_at[j] < free_at[k]) k = j;
    double start = fmax(t, free_at[k]);
    int r = k / s->p->planner.workers;
    free_at[k] = start + run_time(s, r, s->ovar, 1, a->tokens, start, used[k] ? 1.0 : s->onoise[k]);
    used[k] = true;
    last = fmax(last, free_at[k] + s->oresp[k]);
  }
  double late = last + s->p->rtt_s / 2 - a->send_t - a->deadline_s;
  if (late > 0) {
    free(free_at), free(used);
    if (in_window(s, a->send_t)) s->a.by_reason[AT_PLAN_REJECT_DEADLINE]++;
    answer(s, id, false, t + s->p->rtt_s / 2, late);
    return;
  }
  for (int k = 0; k < s->nw; k++)
    if (used[k]) {
      s->wfree[k] = free_at[k];
      s->onoise[k] = run_noise(s);
      s->oresp[k] = respond_time(s);
    }
  free(free_at), free(used);
  a->variant = s->ovar;
  count_admit(s, a);
  push(s, last, EV_READY, id);
}

static void run_done(sim *s, int k, double t) {
  sim_worker *w = &s->w[k];
  int r = k / s->c;
  sim_rep *rp = &s->rep[r];
  uint64_t during = rp->run_starts - w->seq - 1;
  uint64_t peers = (uint64_t)w->before + during;
  if (peers > (uint64_t)(s->c - 1)) peers = (uint64_t)(s->c - 1);
  rp->running--;
  for (int i = 0; i < w->n; i++) {
    at_status st = at_planner_finished_w(rp->pl, w->variant, 1, s->att[w->ids[i]].weight, w->n,
                                         w->svc_s, (int)peers, sim_ns(t));
    if (st != AT_OK) {
      s->err = at_fail(AT_ERR_STATE,
                       "simulator: at_planner_finished_w(variant %d, batch %d) at t=%.6f s "
                       "returned %s",
                       w->variant, w->n, t, at_status_name(st));
      return;
    }
    if (--s->att[w->ids[i]].left == 0) /* its last text: the answer */
      push(s, t + respond_time(s), EV_READY, w->ids[i]);
  }
  rp->idle[rp->n_idle++] = k;
  dispatch(s, r, t);
}

static void ready(sim *s, int32_t id, double t) {
  sim_att *a = &s->att[id];
  if (s->pl) {
    s->rep[a->rep].conns--;
    at_status st = at_planner_observe(s->rep[a->rep].pl, a->est_s, t - a->decide_t, a->queued,
                                      sim_ns(t));
    if (st != AT_OK) {
      s->err = at_fail(AT_ERR_STATE, "simulator: at_planner_observe(%g, %g) returned %s", a->est_s,
                       t - a->decide_t, at_status_name(st));
      return;
    }
  }
  answer(s, id, true, t + s->p->rtt_s / 2, 0);
}

/* ---- open-loop arrivals ------------------------------------------------------- */

static double rate_at(const sim *s, double t, double *seg_end) {
  const at_sim_params *p = s->p;
  if (p->clients != AT_SIM_ONOFF) {
    *seg_end = INFINITY;
    return s->rate_rps;
  }
  double period = p->on_s + p->off_s, k = floor(t / period), ph = t - k * period;
  if (ph < p->on_s) {
    *seg_end = k * period + p->on_s;
    return s->rate_rps * p->on_factor;
  }
  *seg_end = (k + 1) * period;
  return s->rate_rps * p->off_factor;
}

/* The next open-loop send after t (piecewise-constant Poisson rate: the
 * process is memoryless, so a draw that crosses a boundary restarts there). */
static double next_arrival(sim *s, double t) {
  for (int guard = 0; guard < 1000000; guard++) {
    double end, r = rate_at(s, t, &end);
    double nt = r > 0 ? t + expo(&s->r_arr, 1.0 / r) : INFINITY;
    if (nt < end) return nt;
    if (!isfinite(end)) return INFINITY;
    t = end;
  }
  return INFINITY;
}

static void arrival(sim *s, double t) {
  send_at(s, -1, t);
  double nt = next_arrival(s, t);
  if (nt < s->end_t) push(s, nt, EV_ARRIVAL, -1);
}

static void bin_sample(sim *s, double t) {
  at_planner_stats st;
  if (at_planner_stats_get(s->pl, sim_ns(t), &st) != AT_OK) return;
  s->a.overrun_sum += st.overrun_s;
  s->a.overrun_n++;
  if (st.overrun_s > s->a.overrun_max) s->a.overrun_max = st.overrun_s;
  double nt = t + SIM_BIN_S;
  if (nt < s->end_t) push(s, nt, EV_BIN, 0);
}

/* ---- set-up and the loop ------------------------------------------------------ */

static at_status init_clients(sim *s, int n_clients) {
  const at_sim_params *p = s->p;
  bool burst = p->n_groups == 0 && p->clients == AT_SIM_BURST;
  s->ncl = burst ? p->burst_clients + p->light_clients : n_clients;
  s->cl = calloc((size_t)(s->ncl > 0 ? s->ncl : 1), sizeof *s->cl);
  if (!s->cl) return at_fail(AT_ERR_NOMEM, "simulator: out of memory");
  for (int i = 0; i < s->ncl; i++) {
    sim_client *c = &s->cl[i];
    double start = 0;
    if (burst && i >= p->burst_clients) {
      *c = (sim_client){.kind = AT_SIM_CLOSED,
                        .think_s = p->light_think_s,
                        .stop_t = p->burst_s + p->light_s,
                        .light = true,
                        .group = -1};
      start = p->burst_s;
    } else if (burst) {
      *c = (sim_client){.kind = AT_SIM_RETRY, .think_s = 0, .stop_t = p->burst_s, .group = -1};
    } else if (p->n_groups > 0) {
      int gi = 0, first = 0; /* the group of client i: groups in order */
      while (gi < p->n_groups - 1 && i >= first + p->groups[gi].clients) first += p->groups[gi++].clients;
      const at_sim_group *g = &p->groups[gi];
      *c = (sim_client){.kind = g->kind,
                        .think_s = g->think_s > 0 ? g->think_s : p->think_s,
                        .stop_t = s->end_t,
                        .group = gi};
    } else {
      at_sim_clients kind = p->clients;
      if (kind == AT_SIM_RETRY_AFTER && i < (int)lround(p->retry_now_share * n_clients))
        kind = AT_SIM_RETRY; /* a mixed population: these resend at once */
      *c = (sim_client){.kind = kind, .think_s = p->think_s, .stop_t = s->end_t, .group = -1};
    }
    /* the first send: as if each had just finished thinking */
    double first =
        start + (c->think_s > 0 ? expo(&s->r_think, c->think_s) : unif(&s->r_think, 0, p->rtt_s));
    if (first < c->stop_t) send_at(s, i, first);
  }
  return s->err;
}

static void seed_streams(sim *s) {
  uint64_t seed = s->p->seed;
  at_rng_seed(&s->r_arr, seed ^ 0x61727269766c7331ull);
  at_rng_seed(&s->r_think, seed ^ 0x7468696e6b3a3a32ull);
  at_rng_seed(&s->r_svc, seed ^ 0x736572766963653aull);
  at_rng_seed(&s->r_misc, seed ^ 0x6d6973633a3a3a34ull);
  at_rng_seed(&s->r_len, seed ^ 0x6c656e677468733aull);
  at_rng_seed(&s->r_prio, seed ^ 0x7072696f72697479ull);
  for (int r = 0; r < s->R; r++) /* replica 0's stream is the single server's */
    at_rng_seed(&s->rep[r].speed.rng,
                seed ^ 0x686f737473706564ull ^ ((uint64_t)r * 0x9e3779b97f4a7c15ull));
}

at_status sim_init(sim *s, const at_sim_params *p, at_planner *pl, int ovar, double rate_rps,
                   int n_clients) {
  memset(s, 0, sizeof *s);
  s->p = p;
  s->pl = pl;
  s->ovar = ovar;
  s->R = p->replicas;
  s->nw = s->R * p->planner.workers;
  s->c = pl ? p->planner.workers : s->nw; /* the oracle pools every worker */
  s->B = pl ? p->planner.max_batch : 1;
  s->deadline_s =
      at_plan_cap_deadline(p->deadline_s, p->planner.default_deadline_s, p->planner.max_deadline_s);
  bool burst = p->n_groups == 0 && p->clients == AT_SIM_BURST;
  s->warm_t = burst ? 0 : p->warmup_s;
  s->end_t = burst ? p->burst_s + p->light_s : p->duration_s;
  s->rate_rps = rate_rps;
  s->free_att = -1;
  s->rep = calloc((size_t)s->R, sizeof *s->rep);
  if (!s->rep) return at_fail(AT_ERR_NOMEM, "simulator: out of memory");
  seed_streams(s);
  s->a.n_bins = (size_t)floor((s->end_t - s->warm_t) / SIM_BIN_S + 1e-9);
  s->a.bins = calloc(s->a.n_bins ? s->a.n_bins * p->n_variants : 1, sizeof *s->a.bins);
  s->w = calloc((size_t)s->nw, sizeof *s->w);
  s->wfree = calloc((size_t)s->nw, sizeof *s->wfree);
  s->onoise = calloc((size_t)s->nw, sizeof *s->onoise);
  s->oresp = calloc((size_t)s->nw, sizeof *s->oresp);
  if (!s->a.bins || !s->w || !s->wfree || !s->onoise || !s->oresp)
    return at_fail(AT_ERR_NOMEM, "simulator: out of memory");
  for (int k = 0; k < s->nw && !pl; k++) s->onoise[k] = run_noise(s), s->oresp[k] = respond_time(s);
  int per = p->planner.workers;
  for (int r = 0; r < s->R; r++) {
    sim_rep *rp = &s->rep[r];
    rp->idle = calloc((size_t)per, sizeof *rp->idle);
    if (!rp->idle) return at_fail(AT_ERR_NOMEM, "simulator: out of memory");
    if (pl && r == 0) {
      rp->pl = pl;
    } else if (pl) {
      at_status st = at_planner_create(&p->planner,
                                       p->planner_variants ? p->planner_variants : p->variants,
                                       p->n_variants, &rp->pl);
      if (st != AT_OK) return st;
      rp->own_pl = true;
    }
    for (int k = 0; k < per; k++) rp->idle[rp->n_idle++] = r * per + per - 1 - k; /* lowest first */
  }
  for (int k = 0; k < s->nw; k++) {
    s->w[k].ids = calloc((size_t)s->B, sizeof(int32_t));
    if (!s->w[k].ids) return at_fail(AT_ERR_NOMEM, "simulator: out of memory");
  }
  if (p->n_groups == 0 && (p->clients == AT_SIM_POISSON || p->clients == AT_SIM_ONOFF)) {
    double t = next_arrival(s, 0.0);
    if (t < s->end_t) push(s, t, EV_ARRIVAL, -1);
  } else if (init_clients(s, n_clients) != AT_OK) {
    return s->err ? s->err : AT_ERR_NOMEM;
  }
  if (pl && s->a.n_bins > 0) push(s, s->warm_t, EV_BIN, 0);
  return s->err;
}

at_status sim_loop(sim *s) {
  while (s->hn > 0 && s->err == AT_OK) {
    sim_ev e = pop(s);
    s->now = e.t;
    s->events++;
    switch (e.type) {
      case EV_ARRIVAL: arrival(s, e.t); break;
      case EV_DECIDE:
        if (s->pl)
          decide_planner(s, e.arg, e.t);
        else
          decide_oracle(s, e.arg, e.t);
        break;
      case EV_RUN_DONE: run_done(s, e.arg, e.t); break;
      case EV_READY: ready(s, e.arg, e.t); break;
      case EV_BIN: bin_sample(s, e.t); break;
    }
  }
  return s->err;
}

void sim_free(sim *s) {
  if (!s) return;
  for (int k = 0; s->w && k < s->nw; k++) free(s->w[k].ids);
  for (int r = 0; s->rep && r < s->R; r++) {
    if (s->rep[r].own_pl) at_planner_destroy(s->rep[r].pl);
    free(s->rep[r].q);
    free(s->rep[r].idle);
    free(s->rep[r].speed.seg);
  }
  free(s->rep);
  free(s->w);
  free(s->wfree);
  free(s->onoise);
  free(s->oresp);
  free(s->heap);
  free(s->att);
  free(s->cl);
  free(s->a.lat);
  for (int g = 0; g < AT_SIM_MAX_GROUPS; g++) free(s->a.g[g].lat);
  free(s->a.bins);
  memset(s, 0, sizeof *s);
}
