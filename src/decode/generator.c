/* src/decode/generator.c — the generation lane's scheduler (see
 * anytime/generate.h for the loop and the contract): admission into the KV
 * arena, slack-priced preemption with recompute, one prefill chunk and one
 * batched decode step per turn, sampling, and the online fits that price a
 * decode step and a recompute.
 *
 * DESIGN
 *   Threads: one scheduler thread owns the decoder, the arena, the waiting
 *     list and every running sequence. Other threads only touch `incoming`
 *     (submit), the `cancel` flags of live sequences (cancel, stop) and the
 *     published stats, all under `lock`.
 *   Shared scheduler: lanes created with p.turns (one per decoder variant
 *     of a model) have no thread of their own; the at_gen_turns thread
 *     gives each a turn per round (lane_turn: the same body as a lane's own
 *     loop), so the lanes alternate steps on one thread with no hand-off
 *     between them. (Two threads passing a turn lock lost ~30 % of the
 *     lane's CPU to wake-up latency on this 2-core host under load.)
 *   Lock: `lock` guards incoming, live (the list cancel walks), each
 *     sequence's `cancel` flag, stopping and pub. Callbacks run with it NOT
 *     held. No other lock is taken while it is held.
 *   Ownership: a gseq is created by submit and freed by the scheduler right
 *     after its on_done call.
 *   Sequence states: cached = kv.len positions are in the arena; n_tok
 *     tokens are known (prompt + generated). cached < n_tok - 1: prefilling
 *     (or recomputing after a preemption); cached == n_tok - 1: decoding.
 *     A prefill chunk that reaches n_tok samples the next token.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/generate.h"
#include "core/internal.h"

typedef struct gseq {
  uint64_t id;
  at_gen_request req; /* prompt pointer not used after submit */
  int32_t *tok;
  int n_tok, n_prompt, n_gen;
  at_kv_seq kv;
  int need_blocks;
  int expect_hit; /* prompt positions the prefix cache held when it was queued */
  at_rng rng;
  uint64_t submitted_ns, admitted_ns, first_ns, last_tok_ns, deadline_ns, ttft_deadline_ns;
  uint64_t last_step;
  int preemptions;
  bool cancel;     /* guarded by lock */
  bool cancel_stop; /* the cancel is a caller's stop (finish "stop", not counted
                       as cancelled); guarded by lock */
  bool evicted;    /* waiting again after a preemption */
  struct gseq *next_live, *prev_live; /* guarded by lock */
  struct gseq *next_in;               /* incoming list, guarded by lock */
} gseq;

struct at_generator {
  at_gen_params p;
  at_decoder *dec;
  at_kv_arena *arena;
  const at_decoder_info *info;

  pthread_t thread;
  bool thread_started;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  bool stopping;            /* guarded by lock */
  bool stopped;             /* every request finished after stopping; guarded by lock */
  bool registered;          /* a lane of p.turns (no thread of its own) */
  gseq *in_head, *in_tail;  /* guarded by lock */
  int n_incoming;           /* guarded by lock */
  long long incoming_tokens; /* prompt tokens of the incoming list; guarded by lock */
  long long incoming_chunks; /* and the prefill chunks they need; guarded by lock */
  int incoming_cls[3];      /* the same by priority class + 1; guarded by lock */
  long long incoming_tokens_cls[3], incoming_chunks_cls[3];
  double incoming_budget;    /* their smallest tpot_budget_s (0: none); guarded by lock */
  at_gen_load load;         /* published by the scheduler; guarded by lock */
  gseq *live;               /* guarded by lock */
  uint64_t next_id;         /* guarded by lock */
  at_gen_stats pub;         /* guarded by lock */

  /* scheduler thread only */
  gseq **waiting;
  int n_waiting, cap_waiting;
  gseq **running;
  int n_running, cap_running;
  float *logits, *scratch;
  int *pen_count;       /* vocab zeros for at_apply_penalties */
  at_token_logprob lp;  /* the token being emitted, when its sequence asked */
  /* decode-step scratch: per running sequence (cap_step) and per batch slot */
  int *step_idx, *step_len, cap_step;
  uint64_t *step_last;
  int *step_pick;
  at_decode_item *step_items;
  gseq **step_sel;
  at_linfit step_fit, prefill_fit;
  double tpot_ewma;
  double tpot_slow; /* the same gap averaged over ~100 tokens: the forecast's calibration */
  at_gen_stats st;
};

at_gen_params at_gen_default_params(void) {
  return (at_gen_params){.block_tokens = 16,
                         .n_blocks = 512,
                         .safety = 1.0,
                         .chunk_tokens = 64,
                         .max_batch = 8,
                         .bucketing = false,
                         .preempt = true,
                         .max_waiting = 256,
                         .ttft_slo_s = 2.0,
                         .tpot_slo_s = 0.2,
                         .admit_fill = 0.8,
                         .prefix_cache = true};
}

const char *at_gen_finish_name(at_gen_finish f) {
  switch (f) {
    case AT_GEN_LENGTH: return "length";
    case AT_GEN_STOP: return "stop";
    case AT_GEN_CANCELLED: return "cancelled";
    case AT_GEN_ERROR: return "error";
  }
  return "unknown";
}

/* ------------------------------------------------------------ turns */

/* One scheduler thread for several lanes (at_gen_turns): each round it
 * gives every registered lane one turn, and sleeps when none had work until
 * a submit, cancel, stop or destroy pokes it. `m` guards `pending` and
 * `stop`; `lanes_m` guards the lane list and is held for a whole round, so a
 * lane is unregistered (at_gen_destroy) only between rounds. Lock order:
 * lanes_m, then a lane's lock, then m. */
#define TURNS_MAX_LANES 8
struct at_gen_turns {
  pthread_mutex_t m, lanes_m;
  pthread_cond_t cv;
  bool pending, stop;
  at_generator *lanes[TURNS_MAX_LANES];
  int n;
  pthread_t thread;
  bool started;
};

enum { TURN_IDLE, TURN_WORKED, TURN_STOPPED };
static int lane_turn(at_generator *g);

static void turns_poke(at_gen_turns *t) {
  if (!t) return;
  pthread_mutex_lock(&t->m);
  t->pending = true;
  pthread_cond_signal(&t->cv);
  pthread_mutex_unlock(&t->m);
}

static void *turns_drive(void *arg) {
  at_gen_turns *t = arg;
  at_thread_name("at-gen-turns");
  for (;;) {
    pthread_mutex_lock(&t->m);
    t->pending = false; /* a poke from here on is seen by the wait below */
    bool stop = t->stop;
    pthread_mutex_unlock(&t->m);
    if (stop) return NULL;
    bool worked = false;
    pthread_mutex_lock(&t->lanes_m);
    for (int i = 0; i < t->n; i++) worked |= lane_turn(t->lanes[i]) != TURN_IDLE;
    pthread_mutex_unlock(&t->lanes_m);
    if (worked) continue;
    pthread_mutex_lock(&t->m);
    while (!t->pending && !t->stop) pthread_cond_wait(&t->cv, &t->m);
    pthread_mutex_unlock(&t->m);
  }
}

at_status at_gen_turns_create(at_gen_turns **out) {
  if (!out) return at_fail(AT_ERR_INVALID_ARG, "generator turns: NULL out");
  *out = NULL;
  at_gen_turns *t = calloc(1, sizeof *t);
  if (!t) return at_fail(AT_ERR_NOMEM, "generator turns");
  pthread_mutex_init(&t->m, NULL);
  pthread_mutex_init(&t->lanes_m, NULL);
  pthread_cond_init(&t->cv, NULL);
  if (pthread_create(&t->thread, NULL, turns_drive, t) != 0) {
    at_gen_turns_destroy(t);
    return at_fail(AT_ERR_THREAD, "generator: could not start the shared scheduler thread");
  }
  t->started = true;
  *out = t;
  return AT_OK;
}

void at_gen_turns_destroy(at_gen_turns *t) {
  if (!t) return;
  if (t->started) {
    pthread_mutex_lock(&t->m);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->m);
    pthread_join(t->thread, NULL);
  }
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->lanes_m);
  pthread_mutex_destroy(&t->m);
  free(t);
}

static at_status turns_add(at_gen_turns *t, at_generator *g) {
  pthread_mutex_lock(&t->lanes_m);
  bool room = t->n < TURNS_MAX_LANES;
  if (room) t->lanes[t->n++] = g;
  pthread_mutex_unlock(&t->lanes_m);
  return room ? AT_OK
              : at_fail(AT_ERR_LIMIT, "generator: at most %d lanes share a scheduler", TURNS_MAX_LANES);
}

static void turns_remove(at_gen_turns *t, at_generator *g) {
  pthread_mutex_lock(&t->lanes_m);
  for (int i = 0; i < t->n; i++)
    if (t->lanes[i] == g) {
      t->lanes[i] = t->lanes[--t->n];
      break;
    }
  pthread_mutex_unlock(&t->lanes_m);
}

/* ------------------------------------------------------------ helpers */

static bool is_decoding(const gseq *s);

/* The smaller of two budgets, where 0 is none. */
static double min_budget(double a, double b) {
  if (!(b > 0)) return a;
  return a > 0 && a < b ? a : b;
}

/* Count the submitted requests the scheduler has not taken yet into load
 * `l`. Call with g->lock held. */
static void add_incoming(const at_generator *g, at_gen_load *l) {
  l->sequences += g->n_incoming;
  l->prefill_tokens += g->incoming_tokens;
  l->prefill_chunks += g->incoming_chunks;
  l->tpot_budget_s = min_budget(l->tpot_budget_s, g->incoming_budget);
  for (int k = 0; k < 3; k++) {
    l->waiting_by_class[k] += g->incoming_cls[k];
    l->waiting_tokens_by_class[k] += g->incoming_tokens_cls[k];
    l->waiting_chunks_by_class[k] += g->incoming_chunks_cls[k];
  }
}

/* A priority's class index: 0 low, 1 normal, 2 high. */
static int cls_index(int priority) {
  return priority > 0 ? 2 : priority < 0 ? 0 : 1;
}

at_gen_load at_gen_load_for_class(const at_gen_load *l, int priority) {
  at_gen_load v = *l;
  int c = cls_index(priority);
  for (int k = 0; k < c; k++) {
    v.sequences -= l->waiting_by_class[k];
    v.prefill_tokens -= l->waiting_tokens_by_class[k];
    v.prefill_chunks -= l->waiting_chunks_by_class[k];
    v.waiting_by_class[k] = 0, v.waiting_tokens_by_class[k] = 0, v.waiting_chunks_by_class[k] = 0;
  }
  if (v.sequences < 0) v.sequences = 0;
  if (v.prefill_tokens < 0) v.prefill_tokens = 0;
  if (v.prefill_chunks < 0) v.prefill_chunks = 0;
  return v;
}

static int cls_of(const at_gen_request *r) {
  return cls_index(r->priority);
}

static void publish(at_generator *g) {
  g->st.waiting = g->n_waiting;
  g->st.running = g->n_running;
  g->st.free_blocks = at_kv_arena_free_blocks(g->arena);
  g->st.total_blocks = at_kv_arena_total_blocks(g->arena);
  at_kv_prefix_counts pc;
  at_kv_prefix_stats(g->arena, &pc);
  g->st.prefix_query_tokens = pc.query_tokens;
  g->st.prefix_hit_tokens = pc.hit_tokens;
  g->st.cached_blocks = pc.cached_blocks;
  g->st.shared_blocks = pc.shared_blocks;
  at_decoder_carry_stats(g->dec, &g->st.kv_carried_steps, &g->st.kv_gathered_steps);
  bool fitted = at_linfit_get(&g->step_fit, &g->st.step_a_s, &g->st.step_b_s);
  at_linfit_get(&g->prefill_fit, &g->st.prefill_a_s, &g->st.prefill_b_s);
  at_gen_load l = {.sequences = g->n_running + g->n_waiting,
                   .step_fitted = fitted,
                   .step_a_s = g->st.step_a_s,
                   .step_b_s = g->st.step_b_s,
                   .prefill_a_s = g->st.prefill_a_s,
                   .prefill_b_s = g->st.prefill_b_s,
                   .tpot_s = g->tpot_slow};
  for (int pass = 0; pass < 2; pass++) {
    gseq **arr = pass ? g->running : g->waiting;
    int n = pass ? g->n_running : g->n_waiting;
    for (int i = 0; i < n; i++) {
      const gseq *q = arr[i];
      /* not started: what the prefix cache held when it was queued is free */
      int left = q->n_tok - 1 - q->kv.len - (q->kv.len == 0 ? q->expect_hit : 0);
      l.prefill_tokens += left > 0 ? left : 0;
      /* a prefilling sequence runs its left + 1 positions (the last prompt
       * token too) in chunks of at most W */
      long long chunks = left > 0 ? (left + g->p.chunk_tokens) / g->p.chunk_tokens : 0;
      l.prefill_chunks += chunks;
      if (!pass) {
        int c = cls_of(&q->req);
        l.waiting_by_class[c]++;
        l.waiting_tokens_by_class[c] += left > 0 ? left : 0;
        l.waiting_chunks_by_class[c] += chunks;
      }
      l.cached_tokens += q->kv.len;
      l.decoding += pass && is_decoding(q);
      l.tpot_budget_s = min_budget(l.tpot_budget_s, q->req.tpot_budget_s);
    }
  }
  pthread_mutex_lock(&g->lock);
  g->load = l;
  uint64_t sub = g->pub.submitted, rej = g->pub.rejected;
  g->pub = g->st;
  g->pub.submitted = sub;
  g->pub.rejected = rej;
  pthread_mutex_unlock(&g->lock);
}

static bool push(gseq ***arr, int *n, int *cap, gseq *s) {
  if (*n == *cap) {
    int c = *cap ? *cap * 2 : 16;
    gseq **na = realloc(*arr, (size_t)c * sizeof *na);
    if (!na) return false;
    *arr = na;
    *cap = c;
  }
  (*arr)[(*n)++] = s;
  return true;
}

static void remove_at(gseq **arr, int *n, int i) {
  memmove(arr + i, arr + i + 1, (size_t)(*n - i - 1) * sizeof *arr);
  (*n)--;
}

/* Insert into the waiting list: the higher priority class first, arrival
 * (id) order within a class. */
static bool wait_after(const gseq *a, const gseq *s) { /* a belongs after s */
  int ca = cls_of(&a->req), cs = cls_of(&s->req);
  return ca != cs ? ca < cs : a->id > s->id;
}

static bool wait_insert(at_generator *g, gseq *s) {
  if (!push(&g->waiting, &g->n_waiting, &g->cap_waiting, s)) return false;
  int i = g->n_waiting - 1;
  while (i > 0 && wait_after(g->waiting[i - 1], s)) {
    g->waiting[i] = g->waiting[i - 1];
    i--;
  }
  g->waiting[i] = s;
  return true;
}

static void finish(at_generator *g, gseq *s, at_gen_finish why, at_status st, const char *err) {
  at_kv_prefix_publish(g->arena, &s->kv, s->tok); /* its generated tokens too: a next turn */
  at_kv_seq_release(g->arena, &s->kv);
  at_gen_result r = {.finish = why,
                     .status = st,
                     .error = err,
                     .n_prompt = s->n_prompt,
                     .n_generated = s->n_gen,
                     .tokens = s->tok + s->n_prompt,
                     .preemptions = s->preemptions,
                     .submitted_ns = s->submitted_ns,
                     .admitted_ns = s->admitted_ns,
                     .first_token_ns = s->first_ns,
                     .finished_ns = at_now_ns()};
  s->req.on_done(s->req.user, &r);
  pthread_mutex_lock(&g->lock);
  if (s->prev_live) s->prev_live->next_live = s->next_live;
  else g->live = s->next_live;
  if (s->next_live) s->next_live->prev_live = s->prev_live;
  pthread_mutex_unlock(&g->lock);
  g->st.finished++;
  at_kv_seq_free(&s->kv);
  free(s->tok);
  free(s);
}

/* Seconds to rebuild `tokens` cached positions in chunks (gen_policy.c). */
static double recompute_s(const at_generator *g, int tokens) {
  return at_gen_recompute_s(&g->prefill_fit, g->p.chunk_tokens, tokens);
}

/* Expected seconds for `s` to finish from now if it keeps its cache. */
static double remaining_s(const at_generator *g, const gseq *s) {
  int to_prefill = s->n_tok - 1 - s->kv.len;
  return at_gen_remaining_s(&g->prefill_fit, g->p.chunk_tokens, to_prefill,
                            s->req.max_tokens - s->n_gen, g->tpot_ewma);
}

static bool is_decoding(const gseq *s) { return s->kv.len == s->n_tok - 1; }

/* Give `s` room for `want` positions; blocks beyond its admission come from
 * the free pool only. */
static at_status ensure_room(at_generator *g, gseq *s, int want) {
  int bt = g->p.block_tokens;
  int need = (want + bt - 1) / bt - s->kv.n_blocks;
  return need > 0 ? at_kv_seq_grow(g->arena, &s->kv, need) : AT_OK;
}

/* Preempt running sequence at index i: drop its cache, queue it again. */
static void preempt(at_generator *g, int i) {
  gseq *s = g->running[i];
  remove_at(g->running, &g->n_running, i);
  at_kv_prefix_publish(g->arena, &s->kv, s->tok); /* its recompute may find them */
  at_kv_seq_release(g->arena, &s->kv);
  s->preemptions++;
  s->evicted = true;
  g->st.preemptions++;
  if (!wait_insert(g, s)) finish(g, s, AT_GEN_ERROR, AT_ERR_NOMEM, "out of memory re-queueing");
}

/* Can the waiting head still make its first-token deadline if admitted
 * now? Preempting others for a head that misses anyway only burns their
 * recompute (measured: under overload it made attainment worse). */
static bool head_can_make_it(const at_generator *g, const gseq *h, uint64_t now) {
  return (double)now + recompute_s(g, h->n_tok) * 1e9 <= (double)h->ttft_deadline_ns;
}

/* Would the waiting head miss its first-token deadline if it waited for
 * blocks to free naturally? */
static bool head_at_risk(at_generator *g, const gseq *h, uint64_t now) {
  int n = g->n_running, free_b = at_kv_arena_free_blocks(g->arena);
  double *t = malloc((size_t)(n ? n : 1) * sizeof *t);
  int *b = malloc((size_t)(n ? n : 1) * sizeof *b);
  if (!t || !b) {
    free(t);
    free(b);
    return false;
  }
  for (int i = 0; i < n; i++) {
    t[i] = remaining_s(g, g->running[i]);
    b[i] = g->running[i]->kv.n_blocks - at_kv_seq_shared_blocks(g->arena, &g->running[i]->kv);
  }
  double when = at_gen_blocks_free_in(t, b, n, free_b, h->need_blocks);
  free(t);
  free(b);
  if (isinf(when)) return true;
  double ttft = when + recompute_s(g, h->n_tok);
  return (double)now + ttft * 1e9 > (double)h->ttft_deadline_ns;
}

/* Move waiting[i] into the running set with its blocks (the caller checked
 * that they are free). */
static void admit_one(at_generator *g, int i) {
  gseq *h = g->waiting[i];
  remove_at(g->waiting, &g->n_waiting, i);
  if (at_kv_seq_grow(g->arena, &h->kv, h->need_blocks) != AT_OK ||
      !push(&g->running, &g->n_running, &g->cap_running, h)) {
    finish(g, h, AT_GEN_ERROR, AT_ERR_NOMEM, "out of memory admitting a sequence");
    return;
  }
  if (!h->admitted_ns) h->admitted_ns = at_now_ns();
  h->last_step = g->st.decode_steps;
}

/* Preempt running sequences, chosen by slack, so that `h` fits. Returns
 * false (and evicts nobody) when no admissible plan exists. */
static bool evict_for(at_generator *g, const gseq *h, uint64_t now) {
  int n = g->n_running;
  at_evict_cand *c = malloc((size_t)n * sizeof *c);
  int *vict = malloc((size_t)n * sizeof *vict);
  size_t nv = 0;
  if (c && vict) {
    for (int i = 0; i < n; i++) {
      const gseq *r = g->running[i];
      if (g->p.preempt_always) { /* everyone evictable, oldest first */
        c[i] = (at_evict_cand){.id = i,
                               .slack_s = -1.0 - (double)(n - i),
                               .blocks = r->kv.n_blocks - at_kv_seq_shared_blocks(g->arena, &r->kv)};
        continue;
      }
      c[i] = (at_evict_cand){.id = i,
                             .slack_s = ((double)r->deadline_ns - (double)now) / 1e9 -
                                        remaining_s(g, r),
                             .recompute_s = recompute_s(g, r->kv.len),
                             .blocks = r->kv.n_blocks - at_kv_seq_shared_blocks(g->arena, &r->kv)};
      if (cls_of(&r->req) > cls_of(&h->req)) /* never preempted for a lower class: withheld */
        c[i].slack_s = 0, c[i].recompute_s = 1;
    }
    nv = at_evict_plan(c, (size_t)n, at_kv_arena_free_blocks(g->arena), h->need_blocks, vict);
  }
  /* preempt from the highest running index down so indices stay valid */
  for (size_t a = 0; a < nv; a++)
    for (size_t b = a + 1; b < nv; b++)
      if (vict[b] > vict[a]) {
        int t = vict[a];
        vict[a] = vict[b];
        vict[b] = t;
      }
  for (size_t k = 0; k < nv; k++) preempt(g, vict[k]);
  free(c);
  free(vict);
  return nv > 0;
}

/* The running request `h` may fork its prompt's cache from: 1 and *parent
 * when it can now, -1 while that parent is still prefilling (wait for it),
 * 0 when there is none (prefill alone). */
static int fork_source(const at_generator *g, const gseq *h, gseq **parent) {
  if (!h->req.fork_of || h->evicted || h->n_prompt < 2) return 0;
  for (int i = 0; i < g->n_running; i++) {
    gseq *p = g->running[i];
    if (p->id != h->req.fork_of) continue;
    if (p->n_prompt != h->n_prompt || memcmp(p->tok, h->tok, (size_t)h->n_prompt * sizeof *h->tok))
      return 0;
    *parent = p;
    return p->kv.len >= h->n_prompt - 1 ? 1 : -1;
  }
  return 0;
}

/* Admit waiting[i] on a fork of parent's prompt cache: every prompt
 * position but the last is shared or copied, so its "prefill" is one
 * token. The caller checked free blocks >= need_blocks - shared full ones. */
static bool admit_fork(at_generator *g, int i, gseq *parent) {
  gseq *h = g->waiting[i];
  int pos = h->n_prompt - 1;
  if (at_kv_seq_fork(g->arena, &parent->kv, &h->kv, pos) != AT_OK) return false;
  int more = h->need_blocks - h->kv.n_blocks;
  if ((more > 0 && at_kv_seq_grow(g->arena, &h->kv, more) != AT_OK)) {
    at_kv_seq_release(g->arena, &h->kv);
    return false;
  }
  remove_at(g->waiting, &g->n_waiting, i);
  if (!push(&g->running, &g->n_running, &g->cap_running, h)) {
    finish(g, h, AT_GEN_ERROR, AT_ERR_NOMEM, "out of memory admitting a sequence");
    return true;
  }
  if (!h->admitted_ns) h->admitted_ns = at_now_ns();
  h->last_step = g->st.decode_steps;
  g->st.shared_tokens += (uint64_t)pos;
  return true;
}

static void admit(at_generator *g) {
  while (g->n_waiting > 0) {
    gseq *h = g->waiting[0];
    gseq *parent = NULL;
    int fs = fork_source(g, h, &parent);
    if (fs < 0) break; /* its sibling's prompt is a few chunks from cached */
    if (fs > 0 && at_kv_arena_free_blocks(g->arena) >=
                      h->need_blocks - (h->n_prompt - 1) / g->p.block_tokens &&
        admit_fork(g, 0, parent))
      continue;
    if (at_kv_arena_free_blocks(g->arena) >= h->need_blocks) {
      admit_one(g, 0);
      continue;
    }
    /* Preemption is never made on behalf of a sequence that was itself
     * preempted (it waits for blocks), and the head it was made for is
     * admitted at once, ahead of its re-queued victims: no ping-pong. */
    uint64_t now = at_now_ns();
    if (!g->p.preempt || h->evicted || g->n_running == 0) break;
    if (!g->p.preempt_always && (!head_can_make_it(g, h, now) || !head_at_risk(g, h, now))) break;
    if (!evict_for(g, h, now)) break;
    for (int i = 0; i < g->n_waiting; i++)
      if (g->waiting[i] == h) {
        admit_one(g, i);
        break;
      }
  }
}

/* Choose the next token of `s` from its row of logits (penalties modify the
 * row). With logprobs asked, g->lp describes the token chosen. */
static int32_t next_token(at_generator *g, gseq *s, float *logits) {
  int V = g->info->vocab;
  double lse = 0;
  if (s->req.logprobs) lse = at_logprobs_top(logits, V, s->req.top_logprobs, &g->lp);
  float raw_tok_logit = 0;
  at_apply_penalties(logits, V, s->tok + s->n_prompt, s->n_gen, s->req.presence_penalty,
                     s->req.frequency_penalty, g->pen_count);
  int32_t tok = at_sample(logits, V, &s->req.sample, &s->rng, g->scratch);
  if (s->req.logprobs && tok >= 0 && tok < V) {
    /* the chosen token's raw logit: undo its penalty */
    raw_tok_logit = logits[tok];
    int c = 0;
    for (int i = 0; i < s->n_gen; i++) c += s->tok[s->n_prompt + i] == tok;
    if (c > 0) raw_tok_logit += s->req.frequency_penalty * (float)c + s->req.presence_penalty;
    g->lp.token = tok;
    g->lp.logprob = (float)(raw_tok_logit - lse);
  }
  return tok;
}

/* Append a sampled token to `s`. Returns -1 while it goes on, else how it
 * ended (the caller takes it out of the running set and finishes it). */
static int emit(at_generator *g, gseq *s, int32_t tok, uint64_t now) {
  if (!s->first_ns) s->first_ns = now;
  s->last_tok_ns = now;
  g->st.tokens_generated++;
  if (tok == s->req.eos_id) return AT_GEN_STOP;
  for (int i = 0; i < s->req.n_eos && i < AT_GEN_MAX_EOS; i++)
    if (tok == s->req.eos_ids[i]) return AT_GEN_STOP;
  if (s->req.logprobs && s->req.on_logprobs) s->req.on_logprobs(s->req.user, &g->lp);
  s->tok[s->n_tok++] = tok;
  s->n_gen++;
  bool stop = s->req.on_token && s->req.on_token(s->req.user, tok, s->n_gen);
  if (stop) return AT_GEN_STOP;
  return s->n_gen >= s->req.max_tokens ? AT_GEN_LENGTH : -1;
}

/* Take running sequence `s` out of the running set and finish it. */
static void finish_running(at_generator *g, gseq *s, at_gen_finish why, at_status st,
                           const char *err) {
  for (int i = 0; i < g->n_running; i++)
    if (g->running[i] == s) {
      remove_at(g->running, &g->n_running, i);
      break;
    }
  finish(g, s, why, st, err);
}

/* One prefill chunk of at most `budget` positions of the oldest prefilling
 * sequence. Returns the positions run; 0 when no sequence is prefilling,
 * -1 when the turn's prefill should end (the sequence was preempted or
 * failed). */
static int prefill_one(at_generator *g, int budget) {
  int k = -1;
  for (int i = 0; i < g->n_running; i++)
    if (!is_decoding(g->running[i]) && (k < 0 || g->running[i]->id < g->running[k]->id)) k = i;
  if (k < 0) return 0;
  gseq *s = g->running[k];
  /* before its first chunk: take what the prefix cache holds of every
   * position but the last (whose logits are needed) */
  if (s->kv.len == 0) at_kv_prefix_attach(g->arena, &s->kv, s->tok, s->n_tok - 1);
  int S = s->n_tok - s->kv.len;
  if (S > budget) S = budget;
  at_status st = ensure_room(g, s, s->kv.len + S);
  if (st != AT_OK) { /* beyond its admission and the pool is dry: wait */
    preempt(g, k);
    return -1;
  }
  at_decode_item it = {.seq = &s->kv, .tokens = s->tok + s->kv.len, .n_new = S, .id = s->id};
  uint64_t t0 = at_now_ns();
  st = at_decoder_step(g->dec, g->arena, &it, 1, g->logits);
  uint64_t t1 = at_now_ns();
  g->st.prefill_chunks++;
  g->st.steps++;
  if (st != AT_OK) {
    finish_running(g, s, AT_GEN_ERROR, st, at_last_error());
    return -1;
  }
  at_linfit_add(&g->prefill_fit, S, (double)(t1 - t0) / 1e9);
  at_kv_prefix_publish(g->arena, &s->kv, s->tok);
  if (s->kv.len == s->n_tok) {
    s->last_step = g->st.decode_steps;
    int32_t tok = next_token(g, s, g->logits);
    int end = emit(g, s, tok, t1);
    if (end >= 0) finish_running(g, s, (at_gen_finish)end, AT_OK, NULL);
  }
  return S;
}

/* One batched decode step. Uses the generator's step scratch (no
 * allocation once the running set has stopped growing). */
static bool decode_one(at_generator *g) {
  int n = 0;
  if (g->n_running > g->cap_step) {
    int cap = g->n_running * 2;
    int *ni = realloc(g->step_idx, (size_t)cap * sizeof *ni);
    if (ni) g->step_idx = ni;
    int *nl = realloc(g->step_len, (size_t)cap * sizeof *nl);
    if (nl) g->step_len = nl;
    uint64_t *nt = realloc(g->step_last, (size_t)cap * sizeof *nt);
    if (nt) g->step_last = nt;
    if (!ni || !nl || !nt) return false; /* try again next turn */
    g->cap_step = cap;
  }
  int *idx = g->step_idx, *len = g->step_len, *pick = g->step_pick;
  uint64_t *last = g->step_last;
  at_decode_item *items = g->step_items;
  gseq **sel = g->step_sel;
  for (int i = 0; i < g->n_running; i++) {
    gseq *s = g->running[i];
    if (!is_decoding(s)) continue;
    idx[n] = i;
    len[n] = s->kv.len;
    last[n] = s->last_step;
    n++;
  }
  if (n == 0) return false;
  int m = g->info->position_ids
              ? at_gen_pick_batch(len, last, n, g->p.max_batch, g->p.bucketing, pick)
              : at_gen_pick_same_length(len, last, n, g->p.max_batch, pick);
  int b = 0, P = 0;
  for (int j = 0; j < m; j++) {
    gseq *s = g->running[idx[pick[j]]];
    if (ensure_room(g, s, s->kv.len + 1) != AT_OK) continue; /* handled below */
    sel[b] = s;
    items[b] = (at_decode_item){.seq = &s->kv, .tokens = s->tok + s->n_tok - 1, .n_new = 1, .id = s->id};
    if (s->kv.len > P) P = s->kv.len;
    b++;
  }
  if (b == 0) { /* every pick is out of room: preempt the youngest */
    int y = idx[pick[0]];
    for (int j = 1; j < m; j++)
      if (g->running[idx[pick[j]]]->id > g->running[y]->id) y = idx[pick[j]];
    preempt(g, y);
    return true;
  }
  uint64_t t0 = at_now_ns();
  at_status st = at_decoder_step(g->dec, g->arena, items, b, g->logits);
  uint64_t t1 = at_now_ns();
  g->st.decode_steps++;
  g->st.steps++;
  if (st != AT_OK) {
    for (int j = 0; j < b; j++) finish_running(g, sel[j], AT_GEN_ERROR, st, at_last_error());
    return true;
  }
  for (int j = 0; j < b; j++) {
    gseq *s = sel[j];
    s->last_step = g->st.decode_steps;
    int32_t tok = next_token(g, s, g->logits + (size_t)j * g->info->vocab);
    if (s->last_tok_ns && t1 > s->last_tok_ns) { /* inter-token gap feeds the TPOT estimate */
      double gap = (double)(t1 - s->last_tok_ns) / 1e9;
      g->tpot_ewma = 0.95 * g->tpot_ewma + 0.05 * gap;
      g->tpot_slow = 0.99 * g->tpot_slow + 0.01 * gap;
    }
    int end = emit(g, s, tok, t1);
    if (end >= 0) finish_running(g, s, (at_gen_finish)end, AT_OK, NULL);
  }
  /* The fit prices the whole step as the scheduler spends it: the Run and
   * the arena's copies, then sampling and the callbacks of b sequences.
   * Fitting the Run alone left the rest to the forecast's calibration
   * factor, which is clamped at 4: when sampling cost more than the Run
   * (a comparison sort of the vocabulary per token, say) the forecast
   * would admit what the lane could not carry. */
  at_linfit_add(&g->step_fit, (double)b * (P + 1), (double)(at_now_ns() - t0) / 1e9);
  return true;
}

static void handle_cancels(at_generator *g) {
  pthread_mutex_lock(&g->lock);
  bool any = false;
  for (gseq *s = g->live; s; s = s->next_live) any |= s->cancel;
  pthread_mutex_unlock(&g->lock);
  if (!any) return;
  for (int pass = 0; pass < 2; pass++) {
    gseq **arr = pass ? g->running : g->waiting;
    int *n = pass ? &g->n_running : &g->n_waiting;
    for (int i = *n - 1; i >= 0; i--) {
      pthread_mutex_lock(&g->lock);
      bool c = arr[i]->cancel, as_stop = arr[i]->cancel_stop;
      pthread_mutex_unlock(&g->lock);
      if (!c) continue;
      gseq *s = arr[i];
      remove_at(arr, n, i);
      if (!as_stop) g->st.cancelled++;
      finish(g, s, as_stop ? AT_GEN_STOP : AT_GEN_CANCELLED, AT_OK, NULL);
    }
  }
}

/* One turn of lane g: take what was submitted, then (unless stopping)
 * cancels, admission, a prefill chunk and a decode step. TURN_IDLE when it
 * had nothing to do; TURN_STOPPED once, when it finished every request
 * because it is stopping (it is idle after that). */
static int lane_turn(at_generator *g) {
  pthread_mutex_lock(&g->lock);
  if (g->stopped ||
      (!g->stopping && !g->in_head && g->n_waiting == 0 && g->n_running == 0)) {
    pthread_mutex_unlock(&g->lock);
    return TURN_IDLE;
  }
  bool stop = g->stopping;
  gseq *in = g->in_head;
  /* what is taken stays in the published load until the turn's publish():
   * a forecast made during the turn must not see a lane without it (it
   * did, and a burst of newcomers was admitted turn after turn into a lane
   * that looked empty) */
  add_incoming(g, &g->load);
  g->in_head = g->in_tail = NULL;
  g->n_incoming = 0;
  g->incoming_tokens = 0;
  g->incoming_chunks = 0;
  g->incoming_budget = 0;
  memset(g->incoming_cls, 0, sizeof g->incoming_cls);
  memset(g->incoming_tokens_cls, 0, sizeof g->incoming_tokens_cls);
  memset(g->incoming_chunks_cls, 0, sizeof g->incoming_chunks_cls);
  pthread_mutex_unlock(&g->lock);
  for (gseq *s = in, *nx; s; s = nx) {
    nx = s->next_in;
    s->expect_hit = at_kv_prefix_probe(g->arena, s->tok, s->n_tok - 1); /* 0 when off */
    if (!wait_insert(g, s)) finish(g, s, AT_GEN_ERROR, AT_ERR_NOMEM, "out of memory queueing");
  }
  if (stop) {
    while (g->n_running) {
      gseq *s = g->running[g->n_running - 1];
      g->n_running--;
      finish(g, s, AT_GEN_CANCELLED, AT_OK, NULL);
    }
    while (g->n_waiting) {
      gseq *s = g->waiting[g->n_waiting - 1];
      g->n_waiting--;
      finish(g, s, AT_GEN_CANCELLED, AT_OK, NULL);
    }
    publish(g);
    pthread_mutex_lock(&g->lock);
    g->stopped = true;
    pthread_cond_broadcast(&g->wake); /* at_gen_destroy waits for it */
    pthread_mutex_unlock(&g->lock);
    return TURN_STOPPED;
  }
  handle_cancels(g);
  admit(g);
  /* a turn prefills at most chunk_tokens positions: one chunk of a long
   * prompt, or the tails of several whose heads the prefix cache held */
  for (int budget = g->p.chunk_tokens, used; budget > 0; budget -= used)
    if ((used = prefill_one(g, budget)) <= 0) break;
  decode_one(g);
  publish(g);
  return TURN_WORKED;
}

/* A lane's own scheduler thread (no shared at_gen_turns). */
static void *loop(void *arg) {
  at_generator *g = arg;
  at_thread_name("at-gen");
  for (;;) {
    pthread_mutex_lock(&g->lock);
    while (!g->stopping && !g->in_head && g->n_waiting == 0 && g->n_running == 0)
      pthread_cond_wait(&g->wake, &g->lock);
    pthread_mutex_unlock(&g->lock);
    if (lane_turn(g) == TURN_STOPPED) return NULL;
  }
}

/* Time `reps` decode steps over items[0..n) (each advances every sequence
 * by a position); *best gets the fastest (INFINITY when none ran). False
 * when a step failed (*best then holds the fastest before it). The start-up
 * seeds take the fastest of three: a hiccup of this host while one is
 * timed would price the lane high, and a lane priced high may never be
 * chosen to correct it. */
static bool fastest_step(at_generator *g, at_decode_item *items, int n, int reps, double *best) {
  *best = INFINITY;
  for (int q = 0; q < reps; q++) {
    uint64_t t0 = at_now_ns();
    if (at_decoder_step(g->dec, g->arena, items, n, g->logits) != AT_OK) return false;
    double d = (double)(at_now_ns() - t0) / 1e9;
    if (d < *best) *best = d;
  }
  return true;
}

/* The step fit's second point: a decode step of max_batch sequences of
 * about W cached positions (one step to warm the shape, then the fastest
 * of three). With only calibrate()'s batch-1 point the fit runs through
 * the origin and prices a full batch at max_batch times that step, so a
 * lane that has not run yet looks dearer than it is (an int8 fallback lane
 * seeded that way was forecast at 63 ms per token where the running fp32
 * lane was at 41 ms: never chosen, so never run, so its fit never moved).
 * Skipped, the seed staying one point, when the arena cannot hold the
 * batch. */
static void calibrate_full_step(at_generator *g, const int32_t *tok, int W) {
  int B = g->p.max_batch, bt = g->p.block_tokens;
  if (B < 2 || B > 64) return;
  at_kv_seq kv[64];
  at_decode_item it[64];
  memset(kv, 0, sizeof kv);
  bool ok = true;
  for (int i = 0; i < B && ok; i++) {
    ok = at_kv_seq_grow(g->arena, &kv[i], (W + 5 + bt - 1) / bt) == AT_OK;
    at_decode_item pre = {.seq = &kv[i], .tokens = tok, .n_new = W};
    ok = ok && at_decoder_step(g->dec, g->arena, &pre, 1, g->logits) == AT_OK;
    it[i] = (at_decode_item){.seq = &kv[i], .tokens = tok, .n_new = 1};
  }
  int P = kv[0].len;
  double warm, best;
  if (ok && fastest_step(g, it, B, 1, &warm) && fastest_step(g, it, B, 3, &best))
    at_linfit_add(&g->step_fit, (double)B * (P + 2), best);
  for (int i = 0; i < B; i++) {
    at_kv_seq_release(g->arena, &kv[i]);
    at_kv_seq_free(&kv[i]);
  }
}

/* Seed the two fits (and warm the session) with a few real steps. */
static void calibrate(at_generator *g) {
  int W = g->p.chunk_tokens, maxp = g->info->max_positions > 0 ? g->info->max_positions : 512;
  if (W > maxp / 2) W = maxp / 2;
  if (W < 1) W = 1;
  int32_t *tok = calloc((size_t)W + 1, sizeof *tok);
  at_kv_seq kv = {0};
  int bt = g->p.block_tokens;
  if (!tok || at_kv_seq_grow(g->arena, &kv, (W + 3 + bt - 1) / bt) != AT_OK) {
    free(tok);
    at_kv_seq_free(&kv);
    g->tpot_ewma = g->tpot_slow = 0.01;
    return;
  }
  for (int rep = 0; rep < 2; rep++) {
    int sizes[2] = {1, W};
    for (int k = 0; k < 2; k++) {
      kv.len = 0;
      at_decode_item it = {.seq = &kv, .tokens = tok, .n_new = sizes[k]};
      uint64_t t0 = at_now_ns();
      if (at_decoder_step(g->dec, g->arena, &it, 1, g->logits) != AT_OK) break;
      double dt = (double)(at_now_ns() - t0) / 1e9;
      if (rep) at_linfit_add(&g->prefill_fit, sizes[k], dt);
      if (rep && k == 1) { /* a decode step with W cached: the fastest of three */
        it = (at_decode_item){.seq = &kv, .tokens = tok, .n_new = 1};
        double best;
        fastest_step(g, &it, 1, 3, &best);
        if (isfinite(best)) {
          g->tpot_ewma = best;
          /* the fit's first point; calibrate_full_step adds a full batch */
          at_linfit_add(&g->step_fit, (double)(W + 1), g->tpot_ewma);
        }
      }
    }
  }
  if (!(g->tpot_ewma > 0)) g->tpot_ewma = 0.01;
  g->tpot_slow = g->tpot_ewma;
  at_kv_seq_release(g->arena, &kv);
  at_kv_seq_free(&kv);
  calibrate_full_step(g, tok, W);
  free(tok);
}

at_status at_gen_create(at_decoder *dec, const at_gen_params *params, at_generator **out) {
  if (!dec || !out) {
    at_decoder_destroy(dec);
    return at_fail(AT_ERR_INVALID_ARG, "generator: NULL decoder or out");
  }
  *out = NULL;
  at_gen_params p = params ? *params : at_gen_default_params();
  if (p.block_tokens < 1 || p.n_blocks < 1 || !(p.safety > 0) || p.chunk_tokens < 1 ||
      p.max_batch < 1 || p.max_batch > 256 || p.max_waiting < 1 || !(p.ttft_slo_s > 0) ||
      !(p.tpot_slo_s > 0)) {
    at_decoder_destroy(dec);
    return at_fail(AT_ERR_INVALID_ARG,
                   "generator: block_tokens, n_blocks, chunk_tokens, max_waiting >= 1, "
                   "max_batch 1..256, safety and SLOs > 0");
  }
  at_generator *g = calloc(1, sizeof *g);
  if (!g) {
    at_decoder_destroy(dec);
    return at_fail(AT_ERR_NOMEM, "generator");
  }
  g->p = p;
  g->dec = dec;
  g->info = at_decoder_get_info(dec);
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->wake, NULL);
  at_kv_layout l = {g->info->layers, g->info->heads, g->info->head_dim, p.block_tokens};
  at_status st = at_kv_arena_create(&l, p.n_blocks, &g->arena);
  if (st != AT_OK) {
    at_gen_destroy(g);
    return st;
  }
  g->logits = malloc((size_t)p.max_batch * g->info->vocab * sizeof *g->logits);
  g->scratch = malloc((size_t)AT_SAMPLE_SCRATCH_PER_VOCAB * g->info->vocab * sizeof *g->scratch);
  g->pen_count = calloc((size_t)g->info->vocab, sizeof *g->pen_count);
  g->step_pick = malloc((size_t)p.max_batch * sizeof *g->step_pick);
  g->step_items = malloc((size_t)p.max_batch * sizeof *g->step_items);
  g->step_sel = malloc((size_t)p.max_batch * sizeof *g->step_sel);
  if (!g->logits || !g->scratch || !g->pen_count || !g->step_pick || !g->step_items || !g->step_sel) {
    at_gen_destroy(g);
    return at_fail(AT_ERR_NOMEM, "generator buffers");
  }
  calibrate(g);
  if (p.prefix_cache && (st = at_kv_arena_set_prefix_cache(g->arena, true)) != AT_OK) {
    at_gen_destroy(g);
    return st;
  }
  g->st.total_blocks = g->st.free_blocks = p.n_blocks;
  publish(g); /* the calibrated fits, for a forecast before the first turn */
  if (p.turns) { /* the shared scheduler thread drives it */
    if ((st = turns_add(p.turns, g)) != AT_OK) {
      at_gen_destroy(g);
      return st;
    }
    g->registered = true;
  } else if (pthread_create(&g->thread, NULL, loop, g) != 0) {
    at_gen_destroy(g);
    return at_fail(AT_ERR_THREAD, "generator: could not start the scheduler thread");
  } else {
    g->thread_started = true;
  }
  *out = g;
  return AT_OK;
}

void at_gen_destroy(at_generator *g) {
  if (!g) return;
  if (g->thread_started) {
    pthread_mutex_lock(&g->lock);
    g->stopping = true;
    pthread_cond_broadcast(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
  } else if (g->registered) { /* the shared thread finishes its requests */
    pthread_mutex_lock(&g->lock);
    g->stopping = true;
    pthread_mutex_unlock(&g->lock);
    turns_poke(g->p.turns);
    pthread_mutex_lock(&g->lock);
    while (!g->stopped) pthread_cond_wait(&g->wake, &g->lock);
    pthread_mutex_unlock(&g->lock);
    turns_remove(g->p.turns, g); /* between rounds: no turn of it runs after */
  }
  free(g->waiting);
  free(g->running);
  free(g->logits);
  free(g->scratch);
  free(g->pen_count);
  free(g->step_idx);
  free(g->step_len);
  free(g->step_last);
  free(g->step_pick);
  free(g->step_items);
  free(g->step_sel);
  at_kv_arena_destroy(g->arena);
  at_decoder_destroy(g->dec);
  pthread_cond_destroy(&g->wake);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

const at_decoder_info *at_gen_decoder_info(const at_generator *g) { return g ? g->info : NULL; }

at_status at_gen_submit(at_generator *g, const at_gen_request *r, uint64_t *id) {
  if (!g || !r || !r->prompt || !r->on_done)
    return at_fail(AT_ERR_INVALID_ARG, "generate: NULL generator, request, prompt or on_done");
  if (r->n_prompt < 1) return at_fail(AT_ERR_INVALID_ARG, "generate: the prompt has no tokens");
  if (r->max_tokens < 1) return at_fail(AT_ERR_INVALID_ARG, "generate: max_tokens must be >= 1");
  int V = g->info->vocab;
  for (int i = 0; i < r->n_prompt; i++)
    if (r->prompt[i] < 0 || r->prompt[i] >= V)
      return at_fail(AT_ERR_INVALID_ARG, "generate: prompt token %d is outside the vocabulary",
                     (int)r->prompt[i]);
  if (!(fabsf(r->presence_penalty) <= 2) || !(fabsf(r->frequency_penalty) <= 2))
    return at_fail(AT_ERR_INVALID_ARG, "generate: penalties must be in [-2, 2]");
  if (r->logprobs && (r->top_logprobs < 0 || r->top_logprobs > AT_MAX_TOP_LOGPROBS))
    return at_fail(AT_ERR_INVALID_ARG, "generate: top_logprobs must be in [0, %d]",
                   AT_MAX_TOP_LOGPROBS);
  if (!(r->sample.temperature >= 0) || !isfinite(r->sample.temperature) || r->sample.top_k < 0 ||
      !(r->sample.top_p > 0 && r->sample.top_p <= 1))
    return at_fail(AT_ERR_INVALID_ARG,
                   "generate: temperature must be >= 0, top_k >= 0 and top_p in (0, 1]");
  int64_t total = (int64_t)r->n_prompt + r->max_tokens;
  int maxp = g->info->max_positions;
  if (maxp > 0 && total - 1 > maxp)
    return at_fail(AT_ERR_LIMIT,
                   "generate: prompt (%d tokens) + max_tokens (%d) exceeds the model's %d "
                   "positions",
                   r->n_prompt, r->max_tokens, maxp);
  int need = at_kv_blocks_needed(total - 1, g->p.safety, g->p.block_tokens);
  if (need < 0 || need > g->p.n_blocks)
    return at_fail(AT_ERR_LIMIT,
                   "generate: %lld positions need %d KV blocks, the arena has %d in all",
                   (long long)total - 1, need, g->p.n_blocks);
  gseq *s = calloc(1, sizeof *s);
  if (!s) return at_fail(AT_ERR_NOMEM, "generate");
  s->tok = malloc((size_t)total * sizeof *s->tok);
  if (!s->tok) {
    free(s);
    return at_fail(AT_ERR_NOMEM, "generate: %lld tokens", (long long)total);
  }
  memcpy(s->tok, r->prompt, (size_t)r->n_prompt * sizeof *s->tok);
  s->req = *r;
  s->req.prompt = NULL;
  s->n_tok = s->n_prompt = r->n_prompt;
  s->need_blocks = need;
  at_rng_seed(&s->rng, r->sample.seed);
  s->submitted_ns = at_now_ns();
  double dl = r->deadline_s > 0 ? r->deadline_s
                                : g->p.ttft_slo_s + (double)r->max_tokens * g->p.tpot_slo_s;
  double ttft = g->p.ttft_slo_s < dl ? g->p.ttft_slo_s : dl;
  s->deadline_ns = s->submitted_ns + (uint64_t)(dl * 1e9);
  s->ttft_deadline_ns = s->submitted_ns + (uint64_t)(ttft * 1e9);

  pthread_mutex_lock(&g->lock);
  if (g->stopping) {
    pthread_mutex_unlock(&g->lock);
    free(s->tok);
    free(s);
    return at_fail(AT_ERR_SHUTDOWN, "generate: the lane is shutting down");
  }
  if (g->n_incoming + g->pub.waiting >= g->p.max_waiting) {
    g->pub.rejected++;
    pthread_mutex_unlock(&g->lock);
    free(s->tok);
    free(s);
    return at_fail(AT_ERR_QUEUE_FULL, "generate: %d sequences already waiting",
                   g->p.max_waiting);
  }
  s->id = ++g->next_id;
  if (g->in_tail) g->in_tail->next_in = s;
  else g->in_head = s;
  g->in_tail = s;
  g->n_incoming++;
  g->incoming_tokens += r->n_prompt;
  g->incoming_chunks += (r->n_prompt + g->p.chunk_tokens - 1) / g->p.chunk_tokens;
  int c = cls_of(r);
  g->incoming_cls[c]++;
  g->incoming_tokens_cls[c] += r->n_prompt;
  g->incoming_chunks_cls[c] += (r->n_prompt + g->p.chunk_tokens - 1) / g->p.chunk_tokens;
  g->incoming_budget = min_budget(g->incoming_budget, r->tpot_budget_s);
  s->next_live = g->live;
  if (g->live) g->live->prev_live = s;
  g->live = s;
  g->pub.submitted++;
  if (id) *id = s->id;
  pthread_cond_signal(&g->wake);
  pthread_mutex_unlock(&g->lock);
  turns_poke(g->p.turns);
  return AT_OK;
}

/* Mark live request `id` for the scheduler's next turn: a cancel, or a
 * caller's stop (as_stop), which an earlier or later cancel overrides. */
static void mark_end(at_generator *g, uint64_t id, bool as_stop) {
  if (!g) return;
  pthread_mutex_lock(&g->lock);
  for (gseq *s = g->live; s; s = s->next_live)
    if (s->id == id) {
      if (!as_stop) s->cancel_stop = false;
      else if (!s->cancel) s->cancel_stop = true;
      s->cancel = true;
      pthread_cond_signal(&g->wake);
      break;
    }
  pthread_mutex_unlock(&g->lock);
  turns_poke(g->p.turns);
}

void at_gen_cancel(at_generator *g, uint64_t id) { mark_end(g, id, false); }
void at_gen_stop(at_generator *g, uint64_t id) { mark_end(g, id, true); }

/* the arena is created with the generator and outlives every caller */
int at_gen_prefix_probe(at_generator *g, const int32_t *tok, int n) {
  return g ? at_kv_prefix_probe(g->arena, tok, n) : 0;
}

void at_gen_stats_get(at_generator *g, at_gen_stats *out) {
  if (!g || !out) return;
  pthread_mutex_lock(&g->lock);
  *out = g->pub;
  pthread_mutex_unlock(&g->lock);
}

void at_gen_load_get(at_generator *g, at_gen_load *out) {
  if (!g || !out) return;
  pthread_mutex_lock(&g->lock);
  *out = g->load;
  add_incoming(g, out);
  pthread_mutex_unlock(&g->lock);
}

