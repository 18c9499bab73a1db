/* tests/unit/test_plan_sim.c — the CI check of the admission planner under
 * overload, in the deterministic simulator (anytime/sim.h): the real
 * planner code, a simulated clock, simulated clients, workers and host
 * noise. With the default family's profile (configs/serving.yaml: two
 * frontier variants, c = 2, B = 1, deadline 20 ms, wait_quantile 0.99) it
 * asserts, for every load ρ in {0.4, 0.8, 1, 1.3, 2, 3, 5} and every client
 * model, that adaptive's goodput is at least 0.9 × the oracle's and its
 * admitted p99 within the deadline; that after a retry-storm burst a light
 * load is answered within the deadline again after one second; that light
 * load goes to the most accurate variant; that the server's hold turns a
 * retry storm into about one refusal per answer, and never holds a client
 * that waits as told; that pricing texts by their length pays at BERT-base
 * size (test_length_model_pays); that runs are deterministic; and
 * — checks that can fail — that the simulator tells the policies apart.
 * Every point runs 10 simulated seconds (figures from 1 s on), seed 1: the
 * same runs as `anytime simulate --grid` with configs/serving.yaml. */
#include <math.h>
#include <stdlib.h>

#include "anytime/sim.h"

#include "testutil.h"

/* configs/serving.yaml, model "sentiment": the two frontier variants. */
static const at_plan_variant k_family[2] = {
    {.name = "large-int8",
     .accuracy = 0.7200,
     .cost = 0.4431,
     .n_points = 5,
     .batch = {1, 2, 4, 8, 16},
     .service_s = {1.75319e-3, 4.11764e-3, 8.76692e-3, 20.06672e-3, 37.47873e-3},
     .busy_factor = 1.64413 / 1.75319},
    {.name = "small-int8",
     .accuracy = 0.7063,
     .cost = 0.1274,
     .n_points = 5,
     .batch = {1, 2, 4, 8, 16},
     .service_s = {0.50426e-3, 0.98776e-3, 2.21415e-3, 4.76561e-3, 10.67795e-3},
     .busy_factor = 0.53363 / 0.50426},
};

static const double k_loads[] = {0.4, 0.8, 1, 1.3, 2, 3, 5};
static const at_sim_clients k_clients[] = {AT_SIM_POISSON, AT_SIM_ONOFF,       AT_SIM_CLOSED,
                                           AT_SIM_RETRY,   AT_SIM_RETRY_AFTER, AT_SIM_OPENAI};
#define DEADLINE_S 0.020

static at_sim_params family_params(at_sim_clients clients, double load, at_plan_policy policy) {
  at_sim_params p = at_sim_default_params();
  p.variants = k_family;
  p.n_variants = 2;
  p.planner.workers = 2;
  p.planner.max_batch = 1;
  p.planner.default_deadline_s = DEADLINE_S;
  p.planner.max_deadline_s = 10.0;
  p.planner.wait_quantile = 0.99;
  p.planner.policy = policy;
  p.clients = clients;
  p.load = load;
  p.duration_s = 10.0;
  p.warmup_s = 1.0;
  p.seed = 1;
  return p;
}

static at_sim_result run(const at_sim_params *p) {
  at_sim_result r;
  at_status s = at_sim_run(p, &r);
  if (s != AT_OK) fail_msg("at_sim_run: %s: %s", at_status_name(s), at_last_error());
  return r;
}

static void describe(const char *tag, const at_sim_result *r) {
  const at_planner_stats *st = &r->final_stats;
  print_message(
      "%-5s %-11s rho %-4g goodput %7.1f oracle %7.1f (%.3f) p99 %6.2f ms sent %7llu "
      "200 %6llu 429 %7llu late %5llu mix large %.3f small %.3f overrun mean %.2f max "
      "%.2f ms scale %.2f/%.2f\n",
      tag, at_sim_clients_name(r->clients), r->load, r->goodput_rps, r->oracle_rps, r->oracle_ratio,
      r->p99_s * 1e3, (unsigned long long)r->sent, (unsigned long long)r->answered,
      (unsigned long long)r->refused, (unsigned long long)r->late, r->variant_share[0],
      r->variant_share[1], r->overrun_mean_s * 1e3, r->overrun_max_s * 1e3,
      st->variants[0].service_scale, st->variants[1].service_scale);
}

/* The acceptance grid: every point is run and reported before the test
 * fails, so one CI log shows every (load, client) that misses. */
static void test_adaptive_meets_oracle_everywhere(void **state) {
  (void)state;
  int bad = 0;
  for (size_t c = 0; c < sizeof k_clients / sizeof *k_clients; c++)
    for (size_t l = 0; l < sizeof k_loads / sizeof *k_loads; l++) {
      at_sim_params p = family_params(k_clients[c], k_loads[l], AT_PLAN_ADAPTIVE);
      at_sim_result r = run(&p);
      bool ok_goodput = r.goodput_rps >= 0.9 * r.oracle_rps;
      bool ok_p99 = r.answered == 0 || r.p99_s <= DEADLINE_S;
      describe(ok_goodput && ok_p99 ? "ok" : "FAIL", &r);
      if (!ok_goodput)
        print_message("      goodput %.1f < 0.9 x oracle %.1f\n", r.goodput_rps, r.oracle_rps);
      if (!ok_p99)
        print_message("      p99 %.3f ms > deadline %.0f ms\n", r.p99_s * 1e3, DEADLINE_S * 1e3);
      bad += !(ok_goodput && ok_p99);
    }
  if (bad)
    fail_msg(
        "%d of %zu (load, client) points miss goodput >= 0.9 x oracle or p99 <= "
        "deadline (listed above)",
        bad, (sizeof k_clients / sizeof *k_clients) * (sizeof k_loads / sizeof *k_loads));
}

/* 2 s of 200 retry-storm clients, then 8 light closed-loop clients: after
 * the first second following the burst, >= 99 % answered within D. */
static void test_recovers_after_burst(void **state) {
  (void)state;
  at_sim_params p = family_params(AT_SIM_BURST, 1, AT_PLAN_ADAPTIVE);
  at_sim_result r = run(&p);
  print_message("burst: light within deadline: first second %.4f (n=%llu), after %.4f (n=%llu)\n",
                r.light_first_s, (unsigned long long)r.light_first_n, r.light_after,
                (unsigned long long)r.light_after_n);
  assert_true(r.light_after_n > 500); /* 8 clients, ~2 s at ~20 ms each */
  assert_true(r.light_after >= 0.99);
}

/* The server's hold (server.hold_early_retries), as the simulator models
 * it: clients that resend every 429 at once get their refusals at their
 * return slots, so at ρ = 5 they send about one refusal per answer instead
 * of hundreds; goodput holds either way (the simulator charges nothing for
 * a refusal — the real server does, which is why the hold exists); clients
 * that wait as told are never held. */
static void test_hold_tames_retry_storm(void **state) {
  (void)state;
  at_sim_params p = family_params(AT_SIM_RETRY, 5, AT_PLAN_ADAPTIVE);
  p.duration_s = 4; /* the spun run simulates ~1.5 million attempts a second */
  at_sim_result held = run(&p);
  p.hold_early_retries = false;
  at_sim_result spun = run(&p);
  describe("held", &held);
  describe("spun", &spun);
  assert_true(held.held > 0 && held.held <= held.refused);
  assert_true(held.refused <= 2 * held.answered);
  assert_int_equal(spun.held, 0);
  assert_true(spun.refused >= 50 * spun.answered);
  assert_true(held.goodput_rps >= 0.9 * held.oracle_rps);
  assert_true(spun.goodput_rps >= 0.9 * spun.oracle_rps);
  p = family_params(AT_SIM_RETRY_AFTER, 5, AT_PLAN_ADAPTIVE);
  p.duration_s = 4;
  at_sim_result polite = run(&p);
  describe("ra", &polite);
  assert_true(polite.refused > 0);
  assert_int_equal(polite.held, 0);
}

/* Issue 41: half the closed-loop clients resend every 429 at once, half
 * wait the Retry-After they are told. Per client, goodput within the
 * deadline of the polite half over the at-once half: with the server's
 * client slots (an early request refused before the planner) each gets at
 * least 0.9 of the other's, at every load; totals stay >= 0.9 x oracle.
 * Without them (the old rule) the at-once clients take the capacity freed
 * between slots: printed for comparison, not asserted. */
static void test_client_slots_share_fairly(void **state) {
  (void)state;
  static const double loads[] = {1.3, 2, 3, 5};
  int bad = 0;
  /* the old rule is for comparison only: not run under the sanitizers,
   * where each run is ~6x slower */
  int first = getenv("ANYTIME_TEST_SANITIZED") ? 1 : 0;
  for (size_t i = 0; i < sizeof loads / sizeof *loads; i++) {
    for (int slots = first; slots < 2; slots++) {
      at_sim_params p = family_params(AT_SIM_RETRY_AFTER, loads[i], AT_PLAN_ADAPTIVE);
      p.duration_s = 4;
      p.retry_now_share = 0.5;
      p.client_slots = slots;
      at_sim_result r = run(&p);
      int nk = r.clients_by_kind[AT_SIM_RETRY], np = r.clients_by_kind[AT_SIM_RETRY_AFTER];
      assert_true(nk > 0 && np > 0);
      double now_pc = (double)r.within_by_kind[AT_SIM_RETRY] / nk / r.measured_s;
      double polite_pc = (double)r.within_by_kind[AT_SIM_RETRY_AFTER] / np / r.measured_s;
      double ratio = polite_pc / now_pc;
      print_message("rho %-4g %-9s clients %d+%d per client: at once %.2f req/s, polite %.2f "
                    "(%.3f); goodput %.1f oracle %.1f (%.3f); early refusals %llu\n",
                    loads[i], slots ? "slots" : "old rule", nk, np, now_pc, polite_pc, ratio,
                    r.goodput_rps, r.oracle_rps, r.oracle_ratio,
                    (unsigned long long)r.early_refused);
      if (slots && (!(ratio >= 0.9) || !(r.oracle_ratio >= 0.9))) bad++;
      if (!slots) assert_int_equal(r.early_refused, 0);
    }
  }
  assert_int_equal(bad, 0);
}

/* Issue 41: a high-priority class at half the capacity beside normal
 * traffic that makes up load ρ (open loop): the high class has >= 99 % of
 * its requests answered within the deadline at every load, and the total
 * stays >= 0.9 x the oracle. priority_fill 1 (no yielding) is printed for
 * comparison. */
static void test_priority_class_protected(void **state) {
  (void)state;
  static const double loads[] = {1.3, 2, 3, 5};
  int bad = 0;
  int last = getenv("ANYTIME_TEST_SANITIZED") ? 1 : 0; /* as above */
  for (size_t i = 0; i < sizeof loads / sizeof *loads; i++) {
    for (int yield = 1; yield >= last; yield--) {
      at_sim_params p = family_params(AT_SIM_POISSON, loads[i], AT_PLAN_ADAPTIVE);
      p.duration_s = 4;
      p.high_share = 0.5 / loads[i];
      p.planner.priority_fill = yield ? 0.5 : 1.0;
      at_sim_result r = run(&p);
      double hi = r.sent_by_class[1] ? (double)r.within_by_class[1] / r.sent_by_class[1] : 0;
      double lo = r.sent_by_class[0] ? (double)r.within_by_class[0] / r.sent_by_class[0] : 0;
      print_message("rho %-4g fill %.1f: high %llu sent, %.4f within; normal %llu sent, %.4f "
                    "within; goodput %.1f oracle %.1f (%.3f)\n",
                    loads[i], p.planner.priority_fill, (unsigned long long)r.sent_by_class[1], hi,
                    (unsigned long long)r.sent_by_class[0], lo, r.goodput_rps, r.oracle_rps,
                    r.oracle_ratio);
      if (yield && (!(hi >= 0.99) || !(r.oracle_ratio >= 0.9))) bad++;
    }
  }
  assert_int_equal(bad, 0);
}

/* Issue 41: four populations side by side, all identified clients, at
 * load rho (demand in texts over the most accurate variant's capacity):
 * polite clients (Retry-After, 30 % of the demand), clients that resend
 * every 429 at once (30 %), greedy clients sending ten times as often as
 * either and resending at once (25 %), and long-deadline clients sending
 * 64 texts with a 10 s deadline (15 %): at_sim_mixed_population. Per group, texts answered within
 * the deadline per second against its max-min fair share of the oracle's;
 * the polite group gets >= 0.9 of its share at every load, and the total
 * stays >= 0.9 x the oracle. */
static void test_mixed_population_fair(void **state) {
  (void)state;
  static const double loads[] = {1.3, 2, 3, 5};
  int bad = 0;
  for (size_t i = 0; i < sizeof loads / sizeof *loads; i++) {
    for (int fair = 1; fair >= (getenv("ANYTIME_TEST_SANITIZED") ? 1 : 0); fair--) {
      at_sim_params p = family_params(AT_SIM_RETRY_AFTER, loads[i], AT_PLAN_ADAPTIVE);
      /* two seconds to settle: each client's first request finds it in
       * credit, and the long-deadline clients think a second */
      p.duration_s = 5;
      p.warmup_s = 2;
      p.client_slots = true;
      at_sim_group g[AT_SIM_MAX_GROUPS];
      int top;
      double cap;
      assert_int_equal(at_sim_capacity(&p, &top, &cap), AT_OK);
      p.n_groups = at_sim_mixed_population(loads[i], cap, g);
      p.groups = g;
      if (!fair) p.planner.fair_fill = 1, p.planner.queue_horizon_s = p.planner.max_deadline_s;
      at_sim_result r = run(&p);
      print_message("rho %-4g %-8s texts/s %.0f oracle %.0f (%.3f)\n", loads[i],
                    fair ? "fair" : "old rule", r.goodput_tps, r.oracle_tps, r.oracle_ratio);
      for (int k = 0; k < r.n_groups; k++) {
        const struct at_sim_group_result *o = &r.groups[k];
        print_message("    %-8s %4d clients: %7.1f texts/s of demand %7.1f, fair share %7.1f "
                      "(%.3f); p99 %.2f ms; %llu sent, %llu refused\n",
                      g[k].name, o->clients, o->goodput_tps, o->demand_tps, o->fair_tps,
                      o->goodput_tps / o->fair_tps, o->p99_s * 1e3, (unsigned long long)o->sent,
                      (unsigned long long)o->refused);
      }
      if (fair && (!(r.groups[0].goodput_tps >= 0.9 * r.groups[0].fair_tps) ||
                   !(r.oracle_ratio >= 0.9)))
        bad++;
    }
  }
  assert_int_equal(bad, 0);
}

/* Issue 41: the other mix — clients with the OpenAI SDK's retries
 * (backoff), Retry-After clients, clients resending at once, and a
 * high-priority group of Retry-After clients offering 40 % of the most
 * accurate variant's capacity, the rest of load rho split 40/30/30. At
 * every load the high group has >= 99 % of its requests answered within
 * the deadline (a class never yields to a lower one for fair sharing: it
 * did, and got 0.64 at rho 5), the Retry-After group gets >= 0.9 of the
 * at-once group's goodput per client, and the total stays >= 0.9 x the
 * oracle. The SDK group is printed, not held: after two refusals the SDK
 * gives the request up and its user thinks before the next, so at rho 5
 * it offers, and gets, less (0.86 of the at-once group per client). */
static void test_mixed_population_sdk_priority(void **state) {
  (void)state;
  static const double loads[] = {1.3, 2, 3, 5};
  int bad = 0;
  for (size_t i = 0; i < sizeof loads / sizeof *loads; i++) {
    at_sim_params p = family_params(AT_SIM_RETRY_AFTER, loads[i], AT_PLAN_ADAPTIVE);
    p.duration_s = 5;
    p.warmup_s = 2;
    p.client_slots = true;
    int top;
    double cap;
    assert_int_equal(at_sim_capacity(&p, &top, &cap), AT_OK);
    at_sim_group g[4] = {
        {.name = "high", .kind = AT_SIM_RETRY_AFTER, .think_s = 0.5, .priority = 1},
        {.name = "sdk", .kind = AT_SIM_OPENAI, .think_s = 0.5},
        {.name = "polite", .kind = AT_SIM_RETRY_AFTER, .think_s = 0.5},
        {.name = "at-once", .kind = AT_SIM_RETRY, .think_s = 0.5},
    };
    double rest = loads[i] * cap - 0.4 * cap; /* texts/s the normal groups offer */
    const double split[4] = {0, 0.4, 0.3, 0.3};
    g[0].clients = (int)round(0.4 * cap * g[0].think_s);
    for (int k = 1; k < 4; k++) g[k].clients = (int)round(split[k] * rest * g[k].think_s);
    p.groups = g;
    p.n_groups = 4;
    at_sim_result r = run(&p);
    double per[4];
    for (int k = 0; k < 4; k++) per[k] = r.groups[k].goodput_tps / r.groups[k].clients;
    double hi = (double)r.groups[0].within / (double)r.groups[0].sent;
    print_message("rho %-4g high %.4f within (%llu sent); per client: sdk %.2f, polite %.2f, "
                  "at once %.2f texts/s; total %.0f oracle %.0f (%.3f)\n",
                  loads[i], hi, (unsigned long long)r.groups[0].sent, per[1], per[2], per[3],
                  r.goodput_tps, r.oracle_tps, r.oracle_ratio);
    if (!(hi >= 0.99) || !(per[2] >= 0.9 * per[3]) || !(r.oracle_ratio >= 0.9))
      bad++;
  }
  assert_int_equal(bad, 0);
}

/* ρ = 0.4, Poisson: every admitted request goes to the most accurate. */
static void test_light_load_is_most_accurate(void **state) {
  (void)state;
  at_sim_params p = family_params(AT_SIM_POISSON, 0.4, AT_PLAN_ADAPTIVE);
  at_sim_result r = run(&p);
  describe("light", &r);
  assert_int_equal(r.top_variant, 0);
  assert_true(r.answered > 1000);
  assert_true(r.variant_share[0] == 1.0);
  assert_int_equal(r.final_stats.variants[1].admitted, 0); /* warm-up included */
  assert_int_equal(r.refused, 0);
}

static void assert_same(const at_sim_result *a, const at_sim_result *b) {
  assert_int_equal(a->sent, b->sent);
  assert_int_equal(a->answered, b->answered);
  assert_int_equal(a->refused, b->refused);
  assert_int_equal(a->within, b->within);
  assert_int_equal(a->events, b->events);
  assert_int_equal(a->majority_changes, b->majority_changes);
  assert_true(a->p50_s == b->p50_s && a->p99_s == b->p99_s && a->max_s == b->max_s);
  assert_true(a->goodput_rps == b->goodput_rps && a->oracle_rps == b->oracle_rps);
  assert_true(a->admitted_cv == b->admitted_cv && a->overrun_max_s == b->overrun_max_s);
  assert_true(a->variant_share[0] == b->variant_share[0]);
  assert_true(a->final_stats.overrun_s == b->final_stats.overrun_s);
  assert_true(a->final_stats.variants[0].service_scale == b->final_stats.variants[0].service_scale);
}

static void test_deterministic(void **state) {
  (void)state;
  const at_sim_clients cs[] = {AT_SIM_ONOFF, AT_SIM_RETRY, AT_SIM_OPENAI};
  for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
    at_sim_params p = family_params(cs[i], 2, AT_PLAN_ADAPTIVE);
    p.duration_s = 4;
    at_sim_result a = run(&p), b = run(&p);
    assert_same(&a, &b);
    p.seed = 2; /* and the seed matters */
    at_sim_result c = run(&p);
    assert_true(c.sent != a.sent || c.within != a.within || c.p99_s != a.p99_s);
  }
}

/* Checks that can fail: no admission control collapses under overload;
 * the accurate-only baseline carries at most half of adaptive at ρ = 3. */
static void test_discriminates_policies(void **state) {
  (void)state;
  at_sim_params p = family_params(AT_SIM_POISSON, 3, AT_PLAN_NONE);
  at_sim_result none = run(&p);
  describe("none", &none);
  assert_true(none.refused == 0);
  assert_true(none.goodput_rps < 0.5 * none.oracle_rps);

  p = family_params(AT_SIM_POISSON, 3, AT_PLAN_ADAPTIVE);
  at_sim_result ad = run(&p);
  p.planner.policy = AT_PLAN_ACCURATE_ONLY;
  p.oracle = false;
  at_sim_result acc = run(&p);
  describe("acc", &acc);
  assert_true(acc.variant_share[1] == 0);
  assert_true(acc.goodput_rps <= 0.5 * ad.goodput_rps);
}

/* A host that is late on its own: four closed-loop clients with 1 ms think
 * time on a host where 5 % of answers are written an exponential 8 ms
 * (mean) after their Run, on idle and queued admissions alike — the load
 * generator holding one of the two cores (docs/planner.md, "The overrun
 * allowance pinned at its cap"). Admission cannot prevent that lateness;
 * refusing for it only loses answers. Against the strongest fair baseline
 * (every request on the cheapest variant, none refused), adaptive must
 * keep 0.95 x its goodput and lose at most 0.02 of its attainment
 * (answers within the deadline per request sent). (Seen to fail before
 * the allowance learned only what queueing adds: at p = 0.05 and 0.10 the
 * allowance sat at 17-19 ms and adaptive refused 13-14 % of requests,
 * attainment 0.856 vs 0.996; on the real host adaptive gave 0.33-0.81 x
 * none's goodput.) */
static void test_late_host_keeps_goodput(void **state) {
  (void)state;
  int bad = 0;
  const double probs[] = {0.02, 0.05, 0.10};
  for (size_t i = 0; i < sizeof probs / sizeof *probs; i++) {
    at_sim_params p = family_params(AT_SIM_CLOSED, 3.5, AT_PLAN_ADAPTIVE);
    p.think_s = 0.001; /* 4 clients: round(3.5 x 1140.8/s x 1 ms) */
    p.late_prob = probs[i];
    p.speed_max = 3.0;
    at_sim_result ad = run(&p);
    /* the strongest fair baseline: every request on the cheapest variant,
     * nothing refused (the same 4 clients: n = ρ·c/s(1)·think) */
    p.variants = &k_family[1];
    p.n_variants = 1;
    p.planner.policy = AT_PLAN_NONE;
    p.load = 3.5 * 0.50426e-3 / 1.75319e-3;
    p.oracle = false;
    at_sim_result none = run(&p);
    /* the oracle lets a late moment pass instead of refusing every request
     * to the worker that drew it (it answered 0 before) */
    assert_true(ad.oracle_rps >= none.goodput_rps);
    assert_int_equal(none.n_clients, 4);
    assert_int_equal(ad.n_clients, 4);
    print_message("late host p=%.2f: ", probs[i]);
    describe("none", &none);
    print_message("late host p=%.2f: ", probs[i]);
    describe("adapt", &ad);
    bool ok = ad.goodput_rps >= 0.95 * none.goodput_rps &&
              ad.attainment >= none.attainment - 0.02;
    if (!ok)
      print_message("      FAIL: adaptive goodput %.1f vs none %.1f (%.3f), attainment %.3f vs "
                    "%.3f\n",
                    ad.goodput_rps, none.goodput_rps, ad.goodput_rps / none.goodput_rps,
                    ad.attainment, none.attainment);
    bad += !ok;
  }
  if (bad)
    fail_msg("%d of 3 late-host points: adaptive goodput < 0.95 x none or attainment more "
             "than 0.02 below none's",
             bad);
}

/* Without host noise the numbers are those of a plain queue: at ρ = 0.4
 * everything is admitted and on time, and the oracle equals the offered
 * rate. */
static void test_no_noise_sanity(void **state) {
  (void)state;
  at_sim_params p = family_params(AT_SIM_POISSON, 0.4, AT_PLAN_ADAPTIVE);
  p.host_noise = false;
  at_sim_result r = run(&p);
  double lambda = 0.4 * 2 / 1.75319e-3;
  assert_true(fabs(r.capacity_rps - 2 / 1.75319e-3) < 1e-6);
  assert_true(fabs((double)r.sent / r.measured_s - lambda) < 0.05 * lambda);
  assert_true(r.within == r.sent);
  assert_true(r.oracle_rps == r.goodput_rps);
  assert_true(r.p50_s >= 1.75319e-3 && r.p50_s < 3e-3);
}

/* Replicas behind the balancer (at_sim_params.replicas): the capacity and
 * the load are the cluster's; at ρ = 3 per replica each replica still gives
 * the oracle's goodput; the balancer resends 429s only with lb_retry, and a
 * resend is not a new attempt; one replica is exactly the single server.
 * (Seen to fail: with balance() always choosing replica 0, 4 replicas
 * answered 0.277 of the oracle.) */
static void test_replicas(void **state) {
  (void)state;
  at_sim_params p = family_params(AT_SIM_POISSON, 3, AT_PLAN_ADAPTIVE);
  p.duration_s = 4;
  at_sim_result one = run(&p);
  p.replicas = 1;
  p.lb_retry = false; /* meaningless with one replica */
  at_sim_result one_b = run(&p);
  assert_same(&one, &one_b);
  assert_int_equal(one.retried, 0);
  p.replicas = 4;
  p.lb_retry = true;
  at_sim_result four = run(&p);
  describe("R=4", &four);
  assert_true(fabs(four.capacity_rps - 4 * one.capacity_rps) < 1e-6);
  assert_true(fabs(four.rate_rps - 4 * one.rate_rps) < 1e-6);
  assert_true(four.oracle_ratio >= 0.95);
  assert_true(four.goodput_per_replica_rps >= 0.9 * one.goodput_rps);
  assert_true(four.retried > 0 && four.retried <= four.sent);
  assert_true(fabs(four.retried_share - (double)four.retried / (double)four.sent) < 1e-12);
  p.lb_retry = false;
  at_sim_result no_retry = run(&p);
  assert_int_equal(no_retry.retried, 0);
  assert_true(no_retry.refused >= four.refused); /* the resend rescues some */
  p.replicas = AT_SIM_MAX_REPLICAS + 1;
  at_sim_result r;
  assert_int_equal(at_sim_run(&p, &r), AT_ERR_INVALID_ARG);
}

static void test_params_and_names(void **state) {
  (void)state;
  at_sim_result r;
  at_sim_params p = family_params(AT_SIM_POISSON, 1, AT_PLAN_ADAPTIVE);
  assert_int_equal(at_sim_run(NULL, &r), AT_ERR_INVALID_ARG);
  assert_int_equal(at_sim_run(&p, NULL), AT_ERR_INVALID_ARG);
  p.load = 0;
  assert_int_equal(at_sim_run(&p, &r), AT_ERR_INVALID_ARG);
  p = family_params(AT_SIM_POISSON, 1, AT_PLAN_ADAPTIVE);
  p.warmup_s = p.duration_s;
  assert_int_equal(at_sim_run(&p, &r), AT_ERR_INVALID_ARG);
  p = family_params(AT_SIM_POISSON, 1, AT_PLAN_ADAPTIVE);
  p.variants = NULL;
  assert_int_equal(at_sim_run(&p, &r), AT_ERR_INVALID_ARG);
  p = family_params(AT_SIM_RETRY, 3, AT_PLAN_ADAPTIVE);
  p.max_attempts = 1000;
  assert_int_equal(at_sim_run(&p, &r), AT_ERR_LIMIT);
  for (int i = 0; i < AT_SIM_N_CLIENTS; i++) {
    at_sim_clients c;
    assert_int_equal(at_sim_clients_parse(at_sim_clients_name((at_sim_clients)i), &c), AT_OK);
    assert_int_equal((int)c, i);
  }
  at_sim_clients c;
  assert_int_equal(at_sim_clients_parse("storm", &c), AT_ERR_INVALID_ARG);
  assert_string_equal(at_sim_clients_name((at_sim_clients)99), "unknown");
}

/* Pricing texts by length (at_plan_variant's length model) at BERT-base
 * size: two variants timed at 79 and 26 ms on texts of the mix's mean
 * length (64 tokens), a deadline of 500 ms, a fifth of the texts 256
 * tokens long and the rest 16 (w = 3.43 and 0.39: cost linear in length,
 * as `anytime profile --length-buckets` fits it). The Runs follow the
 * length model either way; the planner is told it, or not ("blind": every
 * text priced at the table, as before the model existed). Told, it keeps
 * 0.9 of the oracle and the admitted p99 within the deadline on open-loop
 * load up to 3x; blind it falls to 0.72-0.85 of the oracle with p99 past
 * the deadline, and on/off bursts lose half their answers. */
static void test_length_model_pays(void **state) {
  (void)state;
  static const at_plan_variant bert[2] = {
      {.name = "fp32", .accuracy = 0.90, .n_points = 1, .batch = {1}, .service_s = {0.079},
       .len_ref_tokens = 64, .len_cost_per_token = 0.0127},
      {.name = "int8", .accuracy = 0.88, .n_points = 1, .batch = {1}, .service_s = {0.026},
       .len_ref_tokens = 64, .len_cost_per_token = 0.0127},
  };
  at_plan_variant blind[2] = {bert[0], bert[1]};
  blind[0].len_cost_per_token = blind[1].len_cost_per_token = 0;
  const struct {
    at_sim_clients clients;
    double load, min_gain;
  } pts[] = {{AT_SIM_POISSON, 0.4, 0}, {AT_SIM_POISSON, 2, 1.1}, {AT_SIM_POISSON, 3, 1.1},
             {AT_SIM_ONOFF, 2, 1.3}};
  int bad = 0, blind_late = 0;
  for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
    at_sim_params p = family_params(pts[i].clients, pts[i].load, AT_PLAN_ADAPTIVE);
    p.variants = bert;
    p.planner.default_deadline_s = 0.5;
    p.duration_s = 30;
    p.short_tokens = 16, p.long_tokens = 256, p.long_share = 0.2;
    at_sim_result told = run(&p);
    p.planner_variants = blind;
    p.oracle = false;
    at_sim_result bl = run(&p);
    print_message("lengths %-7s rho %-3g told: goodput %5.1f oracle %5.1f (%.3f) p99 %6.1f ms; "
                  "blind: goodput %5.1f (%.3f) p99 %6.1f ms\n",
                  at_sim_clients_name(pts[i].clients), pts[i].load, told.goodput_rps,
                  told.oracle_rps, told.oracle_ratio, told.p99_s * 1e3, bl.goodput_rps,
                  bl.goodput_rps / told.oracle_rps, bl.p99_s * 1e3);
    blind_late += bl.p99_s > 0.5;
    bool ok = told.goodput_rps >= pts[i].min_gain * bl.goodput_rps;
    if (pts[i].clients == AT_SIM_POISSON) ok = ok && told.oracle_ratio >= 0.9 && told.p99_s <= 0.5;
    if (!ok) print_message("      FAIL\n");
    bad += !ok;
  }
  if (bad) fail_msg("%d length-model points below their bar", bad);
  /* the check can fail: blind, the admitted p99 passes the deadline */
  assert_true(blind_late >= 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_params_and_names),
      cmocka_unit_test(test_replicas),
      cmocka_unit_test(test_no_noise_sanity),
      cmocka_unit_test(test_light_load_is_most_accurate),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_discriminates_policies),
      cmocka_unit_test(test_late_host_keeps_goodput),
      cmocka_unit_test(test_length_model_pays),
      cmocka_unit_test(test_recovers_after_burst),
      cmocka_unit_test(test_hold_tames_retry_storm),
      cmocka_unit_test(test_client_slots_share_fairly),
      cmocka_unit_test(test_priority_class_protected),
      cmocka_unit_test(test_mixed_population_fair),
      cmocka_unit_test(test_mixed_population_sdk_priority),
      cmocka_unit_test(test_adaptive_meets_oracle_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
