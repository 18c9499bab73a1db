/* src/decode/gen_policy.c — the generator's policy arithmetic, pure and
 * unit-tested (tests/unit/test_decode_parts.c): which decoding sequences
 * share a step (the batch pick), what rebuilding a cache and finishing a
 * sequence cost by the fitted prefill line and the decode EWMA, when
 * enough KV blocks will be free for a waiting head, and the forecast of a
 * newcomer's time to first token and per output token that forecast
 * admission (the server's generator.admission: slo) refuses by. The
 * scheduler thread (generator.c) owns the state and calls these (the
 * forecast is called by the HTTP side on a published at_gen_load); the
 * eviction order is its neighbour evict.c. No state, no locks: any
 * thread. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "anytime/decode.h"
#include "anytime/generate.h"


/* The anchor (the longest-waiting sequence), then up to max_batch - 1 more:
 * PICK_WAIT the longest-waiting, PICK_NEAR the closest cached lengths to the
 * anchor's (ties: longest-waiting), PICK_SAME only the anchor's length. */
enum { PICK_WAIT, PICK_NEAR, PICK_SAME };
static int pick_around_anchor(const int *len, const uint64_t *last, int n, int max_batch, int how,
                              int *pick) {
  int anchor = 0;
  for (int i = 1; i < n; i++)
    if (last[i] < last[anchor]) anchor = i;
  /* selection of max_batch by key; n and max_batch are small */
  int k = 0;
  pick[k++] = anchor;
  while (k < max_batch) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      if (how == PICK_SAME && len[i] != len[anchor]) continue;
      bool taken = false;
      for (int j = 0; j < k && !taken; j++) taken = pick[j] == i;
      if (taken) continue;
      if (best < 0) {
        best = i;
        continue;
      }
      if (how == PICK_NEAR) {
        long di = labs((long)len[i] - len[anchor]), db = labs((long)len[best] - len[anchor]);
        if (di < db || (di == db && last[i] < last[best])) best = i;
      } else if (last[i] < last[best]) {
        best = i;
      }
    }
    if (best < 0) break; /* PICK_SAME: no more of the anchor's length */
    pick[k++] = best;
  }
  return k;
}

int at_gen_pick_batch(const int *len, const uint64_t *last, int n, int max_batch, bool bucketing,
                      int *pick) {
  if (n <= 0 || max_batch <= 0) return 0;
  if (n <= max_batch) {
    for (int i = 0; i < n; i++) pick[i] = i;
    return n;
  }
  return pick_around_anchor(len, last, n, max_batch, bucketing ? PICK_NEAR : PICK_WAIT, pick);
}

int at_gen_pick_same_length(const int *len, const uint64_t *last, int n, int max_batch,
                            int *pick) {
  if (n <= 0 || max_batch <= 0) return 0;
  return pick_around_anchor(len, last, n, max_batch, PICK_SAME, pick);
}

/* ------------------------------------------------------------ cost model */

/* The fitted line at x, or `fallback` while the fit is empty or says <= 0. */
static double fit_eval(const at_linfit *f, double x, double fallback) {
  double a, b;
  if (!at_linfit_get(f, &a, &b)) return fallback;
  double y = a + b * x;
  return y > 0 ? y : fallback;
}

double at_gen_recompute_s(const at_linfit *prefill, int chunk_tokens, int tokens) {
  if (tokens <= 0 || chunk_tokens <= 0) return 0;
  int W = chunk_tokens, chunks = (tokens + W - 1) / W;
  double full = fit_eval(prefill, W, 1e-3);
  double last = fit_eval(prefill, tokens - (chunks - 1) * W, 1e-3);
  return (chunks - 1) * full + last;
}

double at_gen_remaining_s(const at_linfit *prefill, int chunk_tokens, int to_prefill,
                          int to_decode, double tpot_s) {
  return at_gen_recompute_s(prefill, chunk_tokens, to_prefill > 0 ? to_prefill : 0) +
         (to_decode > 0 ? to_decode : 0) * tpot_s;
}

double at_gen_blocks_free_in(const double *t_left, int *blocks, int n, int free_now, int need) {
  double when = 0;
  int have = free_now;
  while (have < need) { /* take the soonest finisher each round */
    int k = -1;
    for (int i = 0; i < n; i++)
      if (blocks[i] >= 0 && (k < 0 || t_left[i] < t_left[k])) k = i;
    if (k < 0) return INFINITY;
    have += blocks[k];
    blocks[k] = -1;
    when = t_left[k];
  }
  return when;
}

/* ------------------------------------------------------------ forecast */

/* Seconds for prefilling `tokens` positions in `chunks` chunks: each chunk
 * costs a + b * its positions, so the whole is chunks * a + b * tokens. */
static double prefill_time(const at_gen_load *l, long long tokens, long long chunks) {
  if (tokens <= 0 || chunks <= 0) return 0;
  double t = (double)chunks * l->prefill_a_s + l->prefill_b_s * (double)tokens;
  return t > 0 ? t : 0;
}

/* The model's decode step (seconds) with S sequences holding `positions`. */
static double model_step(const at_gen_load *l, int B, long long S, long long positions) {
  if (S < 1) return 0;
  double mean_len = (double)positions / (double)S;
  long long batch = S < B ? S : B;
  double step = l->step_fitted ? l->step_a_s + l->step_b_s * (double)batch * (mean_len + 1) : 0;
  return step > 0 ? step : 0;
}

/* The prefill chunks before n_seqs newcomers of n_prompt tokens have their
 * first token: priced as one chunk of one sequence per turn, oldest first (a
 * turn may finish several short tails: an overestimate, on the side of
 * refusing), so
 * the lane's count (never fewer than its positions packed in whole chunks),
 * then the newcomers' own. */
static long long chunks_to_first(const at_gen_load *l, int W, int n_prompt, int n_seqs) {
  long long ahead = (l->prefill_tokens + W - 1) / W;
  if (l->prefill_chunks > ahead) ahead = l->prefill_chunks;
  return ahead + (long long)n_seqs * ((n_prompt + W - 1) / W);
}

/* The per-token time the model gives the sequences lane `l` holds now, with
 * the other lanes' turns taking `others` seconds per round, uncalibrated. */
static double held_model(const at_gen_load *l, int B, double others) {
  long long S = l->sequences;
  if (S < 1) return 0;
  return (double)((S + B - 1) / B) * (model_step(l, B, S, l->cached_tokens + l->prefill_tokens) + others);
}

/* Calibration: the lane's measured gap against what the model says for the
 * load it measured it under — its steps and the other lanes' turns —
 * (prefill chunks between steps, batching effects the fit misses),
 * clamped to 1..4: the model is a floor, since the gap is an average over
 * ~100 tokens that lags a lane filling up (with 0.5 as the floor, 256
 * clients resending every 429 filled an fp32 lane to ~110 sequences, twice
 * what its budget allowed). Only while sequences decode: an idle lane's gap is
 * stale. */
static double calibration(const at_gen_load *l, int B, double others) {
  double scale = 1;
  if (l->decoding > 0 && l->tpot_s > 0) {
    double now = held_model(l, B, others);
    if (now > 0) scale = l->tpot_s / now;
    if (scale < 1) scale = 1;
    if (scale > 4) scale = 4;
  }
  return scale;
}

/* The forecast of a lane that shares its scheduler thread with lanes whose
 * turns take `others` seconds per round (0: alone), its decode terms
 * scaled by `scale` (< 0: the lane's own calibration). */
static at_gen_forecast forecast_scaled(const at_gen_load *l, const at_gen_params *p, int n_prompt,
                                       int n_seqs, double others, double scale) {
  at_gen_forecast f = {0, 0};
  if (!l || !p || n_seqs < 1 || n_prompt < 1 || p->chunk_tokens < 1 || p->max_batch < 1) return f;
  int W = p->chunk_tokens, B = p->max_batch;
  long long S = (long long)l->sequences + n_seqs;
  long long pre = l->prefill_tokens + (long long)n_seqs * n_prompt;
  long long chunks = chunks_to_first(l, W, n_prompt, n_seqs);
  double step = model_step(l, B, S, l->cached_tokens + pre);
  if (!(others > 0)) others = 0;
  if (scale < 0) scale = calibration(l, B, others);
  if (!(step > 0)) step = l->tpot_s > 0 ? l->tpot_s : 0, scale = 1, others = 0;
  /* each of the chunks to its first token is a turn of this lane: with a
   * decode step while anything is in it (what decodes now, and what is
   * ahead, which decodes once prefilled), and a turn of every other lane */
  f.ttft_s = prefill_time(l, pre, chunks) +
             (double)chunks * ((l->sequences > 0 ? step : 0) + others) * scale;
  /* the measured gap is not a floor by itself: it lags the load, and a
   * floor would keep refusing after a burst has drained */
  f.tpot_s = (double)((S + B - 1) / B) * (step + others) * scale;
  return f;
}

static at_gen_forecast forecast_among(const at_gen_load *l, const at_gen_params *p, int n_prompt,
                                      int n_seqs, double others) {
  return forecast_scaled(l, p, n_prompt, n_seqs, others, -1);
}

at_gen_forecast at_gen_forecast_for(const at_gen_load *l, const at_gen_params *p, int n_prompt,
                                    int n_seqs) {
  return forecast_among(l, p, n_prompt, n_seqs, 0);
}

at_gen_forecast at_gen_idle_forecast(const at_gen_load *l, const at_gen_params *p, int n_prompt,
                                     int n_seqs) {
  if (!l) return (at_gen_forecast){0, 0};
  at_gen_load idle = *l;
  idle.sequences = idle.decoding = 0;
  idle.prefill_tokens = idle.prefill_chunks = idle.cached_tokens = 0;
  idle.tpot_budget_s = 0;
  if (!idle.step_fitted) idle.tpot_s = 0; /* the measured gap is the load's, not idle's */
  return forecast_among(&idle, p, n_prompt, n_seqs, 0);
}

double at_gen_turn_s(const at_gen_load *l, const at_gen_params *p) {
  if (!l || !p || l->sequences < 1 || p->chunk_tokens < 1 || p->max_batch < 1) return 0;
  double t = 0;
  if (l->prefill_tokens > 0) {
    long long w = l->prefill_tokens < p->chunk_tokens ? l->prefill_tokens : p->chunk_tokens;
    double chunk = l->prefill_a_s + l->prefill_b_s * (double)w;
    if (chunk > 0) t += chunk;
  }
  if (l->decoding > 0) t += model_step(l, p->max_batch, l->decoding, l->cached_tokens);
  return t;
}

/* Lane `l` once n_seqs newcomers of n_prompt tokens are in it, for the
 * price of its turn: they prefill, and then decode in its step. */
static at_gen_load with_newcomers(const at_gen_load *l, int W, int n_prompt, int n_seqs) {
  at_gen_load m = *l;
  long long add = (long long)n_seqs * n_prompt;
  m.prefill_chunks = chunks_to_first(l, W, n_prompt, n_seqs);
  m.sequences += n_seqs;
  m.decoding += n_seqs;
  m.prefill_tokens += add;
  m.cached_tokens += add;
  return m;
}

/* Does a newcomer on lane i harm the other lanes' held sequences: the
 * turns it adds (its prefill, a larger step) push one past its smallest
 * promised tpot_budget_s (else the configured tpot_slo_s) and make it
 * slower than now? If so, fi->tpot_s shows the held sequences' time. */
static bool harms_others(const at_gen_load *loads, const at_gen_params *params, int n_lanes, int i,
                         const double *turn, double all_turns, int n_prompt, int n_seqs,
                         at_gen_forecast *fi) {
  const at_gen_params *p = &params[i];
  if (p->chunk_tokens < 1 || n_seqs < 1 || n_prompt < 1) return false;
  at_gen_load mine = with_newcomers(&loads[i], p->chunk_tokens, n_prompt, n_seqs);
  double grow = at_gen_turn_s(&mine, p) - turn[i];
  bool harms = false;
  for (int j = 0; j < n_lanes && grow > 0; j++) {
    const at_gen_load *o = &loads[j];
    if (j == i || o->sequences < 1 || params[j].max_batch < 1) continue;
    int B = params[j].max_batch;
    double rest = all_turns - turn[j];
    double scale = calibration(o, B, rest);
    double before = held_model(o, B, rest) * scale, after = held_model(o, B, rest + grow) * scale;
    double budget = o->tpot_budget_s > 0 ? o->tpot_budget_s : params[j].tpot_slo_s;
    if (after > budget && after > before) {
      harms = true;
      if (after > fi->tpot_s) fi->tpot_s = after;
    }
  }
  return harms;
}

/* What lane i would hold carrying the whole load alone at `tb` seconds
 * per token: every lane's sequences, positions and prefill work on it,
 * priced by its own costs; and with a demand, at least what its offered
 * rate keeps there by Little's law (each request stays out_tokens tokens
 * at tb). The forecast grows with the load and the load with tb, so while
 * the demand is below the lane's capacity "lane i carries it within tb" is
 * exactly "this load's forecast is within tb"; past it, no tb is. (Moving
 * another lane's sequences over unstretched undercounts them when that
 * lane is faster; the rate is the measure of demand, the holdings only a
 * floor under it for a burst the rate has not caught up with.) */
static at_gen_load whole_load_on(const at_gen_load *loads, int n_lanes, int i, int n_prompt,
                                 int n_seqs, double tb, const at_gen_demand *d) {
  at_gen_load m = loads[i];
  for (int j = 0; j < n_lanes; j++) {
    if (j == i) continue;
    m.sequences += loads[j].sequences;
    m.decoding += loads[j].decoding;
    m.prefill_tokens += loads[j].prefill_tokens;
    m.prefill_chunks += loads[j].prefill_chunks;
    m.cached_tokens += loads[j].cached_tokens;
  }
  if (d && d->offered_per_s > 0 && d->out_tokens > 0 && tb > 0) {
    double want = d->offered_per_s * n_seqs * d->out_tokens * tb;
    if (want > 1e6) want = 1e6;
    if (want > m.decoding) {
      long long extra = (long long)ceil(want - m.decoding);
      double mean = m.decoding > 0 ? (double)m.cached_tokens / m.decoding
                                   : n_prompt + d->out_tokens / 2.0;
      m.sequences += (int)extra;
      m.decoding += (int)extra;
      m.cached_tokens += (long long)ceil((double)extra * mean);
    }
  }
  return m;
}

/* The share of the budgets a lane admits within (admit_fill, else 1). */
static double fill_of(const at_gen_params *p) {
  return p->admit_fill > 0 && p->admit_fill <= 1 ? p->admit_fill : 1;
}

static bool within(at_gen_forecast f, const at_gen_params *p, double ttft_budget_s,
                   double tpot_budget_s) {
  double fill = fill_of(p);
  return f.ttft_s <= fill * ttft_budget_s && f.tpot_s <= fill * tpot_budget_s;
}

int at_gen_choose_lane(const at_gen_load *loads, const at_gen_params *params, int n_lanes,
                       int n_prompt, int n_seqs, double ttft_budget_s, double tpot_budget_s,
                       at_gen_demand *demand, at_gen_forecast *f) {
  if (!loads || !params || n_lanes < 1) return -1;
  double turn[16], all_turns = 0;
  if (n_lanes > 16) n_lanes = 16;
  for (int i = 0; i < n_lanes; i++) all_turns += turn[i] = at_gen_turn_s(&loads[i], &params[i]);
  /* which lanes can take the newcomer now: its forecast among the others'
   * turns fits, and its turns keep the others' promises */
  bool fits_now[16];
  for (int i = 0; i < n_lanes; i++) {
    at_gen_forecast fi = forecast_among(&loads[i], &params[i], n_prompt, n_seqs, all_turns - turn[i]);
    bool harms = harms_others(loads, params, n_lanes, i, turn, all_turns, n_prompt, n_seqs, &fi);
    if (f) f[i] = fi;
    fits_now[i] = !harms && within(fi, &params[i], ttft_budget_s, tpot_budget_s);
  }
  if (n_lanes == 1) return fits_now[0] ? 0 : -1;
  /* which lane could carry the whole load (everything held now and the
   * newcomer) alone, with the host's slowdown the most slowed lane
   * measures. The most accurate such lane (the carrier) takes the
   * newcomer, else the less accurate ones after it; the lanes before it
   * take nothing, so they drain instead of refilling as each sequence
   * ends (refilling them kept a dear lane full while the cheap one that
   * could carry the load got nothing: 0 of 1,200 requests at 80 req/s).
   * While they drain, a newcomer whose turns would break their promises
   * is refused. */
  double scale = 1, whole_tpot[16];
  for (int j = 0; j < n_lanes; j++) {
    if (params[j].max_batch < 1) continue;
    double c = calibration(&loads[j], params[j].max_batch, all_turns - turn[j]);
    if (c > scale) scale = c;
  }
  /* the offered rate counts once something was refused, or while the load
   * is off the first lane (to judge the way back by it): on the first lane
   * with nothing refused, 8 closed-loop clients (whose rate follows the
   * answers) looked like 68 sequences to fp32, and the carrier flipped
   * between the lanes, answering less than either alone */
  const at_gen_demand *use =
      demand && (demand->refused_per_s > 0 || demand->carrier != 0) ? demand : NULL;
  int carrier = -1;
  for (int i = 0; i < n_lanes; i++) {
    at_gen_load whole =
        whole_load_on(loads, n_lanes, i, n_prompt, n_seqs, fill_of(&params[i]) * tpot_budget_s, use);
    at_gen_forecast w = forecast_scaled(&whole, &params[i], n_prompt, n_seqs, 0, scale);
    whole_tpot[i] = w.tpot_s;
    if (carrier < 0 && within(w, &params[i], ttft_budget_s, tpot_budget_s)) carrier = i;
  }
  if (demand) demand->carrier = carrier;
  if (carrier >= 0) {
    for (int i = carrier; i < n_lanes; i++)
      if (fits_now[i]) return i;
    return -1;
  }
  /* none could (overload): only the lane that would carry the load in the
   * least time per token, so the cores go to the cheapest steps */
  int cheapest = 0;
  for (int i = 1; i < n_lanes; i++)
    if (whole_tpot[i] < whole_tpot[cheapest]) cheapest = i;
  return fits_now[cheapest] ? cheapest : -1;
}
