/* src/serve/models.c — turning the configuration's models into served
 * models: tokenizer, labels, limits and pooling from the export files, variants ordered by
 * accuracy and loaded into the shared engine, the task head's output, a
 * service-time table (from the profile in the config, or, when the config
 * has none, measured at start-up through a private batcher on the engine by
 * at_profile_measure, the measuring core `anytime profile` uses), and a
 * planner. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/profile.h"
#include "core/fault.h"
#include "core/internal.h"
#include "serve/serve_internal.h"

/* The prompts of config_sentence_transformers.json, and for each the tokens
 * pooling leaves out when 1_Pooling says include_prompt: false
 * (at_tokenizer_prompt_tokens). */
static at_status read_prompts(served_model *m, const at_model_desc *d) {
  m->default_prompt = d->default_prompt;
  if (d->n_prompts == 0) return AT_OK;
  at_tok_workspace *ws = NULL;
  at_status st = at_tok_workspace_create(&ws);
  for (size_t i = 0; st == AT_OK && i < d->n_prompts; i++) {
    m->prompt_name[i] = strdup(d->prompt_names[i]);
    m->prompt_text[i] = strdup(d->prompt_texts[i]);
    m->n_prompts = (int)i + 1;
    if (!m->prompt_name[i] || !m->prompt_text[i]) st = at_fail(AT_ERR_NOMEM, "out of memory");
    if (st != AT_OK || !d->pool_excludes_prompt) continue;
    st = at_tokenizer_prompt_tokens(m->tok, ws, m->prompt_text[i], &m->prompt_skip[i]);
    if (st != AT_OK)
      st = at_fail(st, "model '%s': cannot tokenise prompt '%s': %s", m->name, m->prompt_name[i],
                   at_last_error());
  }
  at_tok_workspace_destroy(ws);
  if (st == AT_OK)
    at_log(AT_LOG_INFO, "serve", "model '%s': %d prompt(s) from config_sentence_transformers.json, "
           "default %s%s", m->name, m->n_prompts,
           m->default_prompt >= 0 ? m->prompt_name[m->default_prompt] : "none",
           d->pool_excludes_prompt ? "; pooling leaves the prompt out" : "");
  return st;
}

/* What the model's export files say (anytime/model.h: labels, token limit,
 * pooling, problem type, vocabulary sizes), read by the one reader `run`,
 * `eval` and `profile` use too. */
static at_status read_export(served_model *m, const char *config_json) {
  if (!config_json[0]) return AT_OK;
  at_model_desc *d = NULL;
  at_status st = at_model_describe_files(config_json, &d);
  if (st != AT_OK) {
    char detail[1200];
    snprintf(detail, sizeof detail, "%s", at_last_error());
    return at_fail(st, "model '%s': %s", m->name, detail);
  }
  /* the model's own tables, for checking V2 tensor rows before they share
   * a batch with other requests' rows */
  if (d->vocab_size > 0) m->id_limit = d->vocab_size;
  if (d->type_vocab_size > 0) m->type_limit = d->type_vocab_size;
  m->vocab_size = m->id_limit;
  m->type_vocab_size = d->type_vocab_size > 0 ? d->type_vocab_size : 0;
  if (d->max_tokens > 0 && (size_t)d->max_tokens < m->max_tokens) {
    m->max_tokens = (size_t)d->max_tokens;
    at_log(AT_LOG_INFO, "serve", "model '%s': %zu tokens per input, from %s", m->name,
           m->max_tokens, d->max_tokens_source);
  }
  m->pooling = d->pooling;
  m->multi_label = d->multi_label;
  if ((st = read_prompts(m, d)) != AT_OK) {
    at_model_desc_free(d);
    return st;
  }
  m->dense_module = d->dense_module != NULL;
  if (d->n_labels) {
    m->labels = calloc(d->n_labels, sizeof *m->labels);
    if (!m->labels) {
      at_model_desc_free(d);
      return at_fail(AT_ERR_NOMEM, "out of memory");
    }
    m->n_labels = (int)d->n_labels;
    for (size_t i = 0; i < d->n_labels; i++) m->labels[i] = strdup(d->labels[i]);
  }
  at_model_desc_free(d);
  return AT_OK;
}

static int by_accuracy(const void *a, const void *b) {
  const at_server_variant_config *x = a, *y = b;
  return (x->accuracy < y->accuracy) - (x->accuracy > y->accuracy);
}

/* A fixed text's ids, at most `max` tokens, into ids[] (and 1s into mask[])
 * for the start-up runs below; *n = how many. An id the model's table lacks
 * (a tokenizer that disagrees with config.json; requests that give one are
 * refused) becomes 0. */
static at_status fixed_ids(const at_tokenizer *tok, at_tok_workspace *ws, const char *text,
                           size_t max, int64_t id_limit, int64_t *ids, int64_t *mask, size_t *n) {
  at_encoding enc;
  at_encode_params ep = at_encode_default_params();
  ep.max_length = (int)max;
  ep.pad_to = 0;
  at_status st = at_tokenizer_encode(tok, ws, text, strlen(text), NULL, 0, &ep, &enc);
  if (st != AT_OK) return st;
  *n = enc.n < max ? enc.n : max;
  for (size_t k = 0; k < *n; k++) {
    int64_t id = enc.ids[k];
    ids[k] = id >= 0 && id < id_limit ? id : 0, mask[k] = 1;
  }
  return AT_OK;
}

/* Service time at batch 1 and 8 of a variant that has no profile in the
 * configuration, measured now through the serving path by the measuring
 * core `anytime profile` uses (at_profile_measure, anytime/profile.h): a
 * private batcher on the engine runs batches of b copies of one sequence
 * of 26 tokens, or the model's token limit if smaller (a fixed English
 * sentence through the model's tokenizer, repeated), 3 warm-ups and then
 * the median of 15 batches. *s1, *s8 in seconds; on failure at_last_error()
 * says why. */
static at_status measure_startup(at_engine *e, int ev, const served_model *m, double *s1,
                                 double *s8) {
  enum { L_MAX = 26 };
  const size_t L = m->max_tokens < L_MAX ? m->max_tokens : L_MAX;
  static const char k_text[] =
      "the movie was a good film , and the acting was great but the plot was dull and the "
      "ending was not very funny at all";
  int64_t ids[L_MAX], mask[L_MAX];
  at_tok_workspace *ws = NULL;
  size_t got = 0;
  at_status st = at_tok_workspace_create(&ws);
  if (st == AT_OK) st = fixed_ids(m->tok, ws, k_text, L, m->id_limit, ids, mask, &got);
  at_tok_workspace_destroy(ws);
  if (st == AT_OK && got == 0) st = at_fail(AT_ERR_MODEL, "the tokenizer gave no tokens");
  if (st != AT_OK) return st;
  for (size_t i = got; i < L; i++) ids[i] = ids[i % got]; /* the text repeated to L tokens */
  const int64_t *seq[1] = {ids};
  const size_t len[1] = {L};
  at_profile_params pp = at_profile_default_params();
  pp.iters = 15, pp.passes = 1, pp.warmup = 3, pp.busy = false;
  at_profile_result r;
  for (int k = 0; k < 2; k++) {
    pp.batch_size = k ? 8 : 1;
    if ((st = at_profile_measure(e, ev, seq, len, 1, &pp, &r)) != AT_OK) return st;
    *(k ? s8 : s1) = r.median_s;
  }
  return AT_OK;
}

/* One text through variant `ev`'s session, pooled as the model's head pools:
 * out[m->out_dim]. Returns AT_OK or the failure. */
static at_status probe_vector(at_engine *e, int ev, const served_model *m, at_tok_workspace *ws,
                              const char *text, float *out) {
  enum { CAP = 64 };
  int64_t ids[CAP], mask[CAP], zeros[CAP] = {0};
  size_t n = 0;
  at_status st = fixed_ids(m->tok, ws, text, m->max_tokens < CAP ? m->max_tokens : CAP,
                           m->id_limit, ids, mask, &n);
  if (st != AT_OK) return st;
  at_session *s = at_engine_variant_session(e, ev);
  at_tensor in[3];
  size_t nin = at_text_inputs(at_session_info(s), 1, (int64_t)n, ids, mask, zeros, in);
  at_outputs *o = NULL;
  if ((st = at_session_run(s, in, nin, NULL, 0, &o)) != AT_OK) return st;
  at_tensor t;
  at_outputs_get(o, (size_t)m->head_output, &t);
  size_t rows = t.ndim == 3 ? (size_t)t.shape[1] : 1;
  at_pool(m->head_pooling, t.data, rows, m->out_dim, out);
  at_outputs_free(o);
  return AT_OK;
}

/* Variants of one embedder must answer in one vector space: a client that
 * stores vectors from one and queries with another compares nothing
 * otherwise. Each variant embeds a few fixed sentences; the median cosine to
 * the most accurate variant's vectors must be at least 0.9 (int8 and fp32
 * of one model agree to 0.99 and more; two random stand-ins of one
 * architecture measured 0.52). A
 * model whose configuration says `shared_space: true` (models trained into
 * one space) is not checked. */
static at_status check_one_space(at_engine *e, const served_model *m) {
  static const char *const k_probe[] = {
      "the movie was a good film", "the plot was dull and the ending was the worst",
      "i love the music of this story", "a funny and clever comedy , not very sad"};
  enum { NP = sizeof k_probe / sizeof *k_probe };
  size_t dim = m->out_dim;
  float *ref = calloc(NP * dim * 2, sizeof *ref), *got = ref ? ref + NP * dim : NULL;
  at_tok_workspace *ws = NULL;
  at_status st = ref ? at_tok_workspace_create(&ws) : at_fail(AT_ERR_NOMEM, "out of memory");
  for (int p = 0; st == AT_OK && p < NP; p++)
    st = probe_vector(e, m->variants[0].engine_index, m, ws, k_probe[p], ref + p * dim);
  for (int v = 1; st == AT_OK && v < m->n_variants; v++) {
    double cs[NP];
    for (int p = 0; st == AT_OK && p < NP; p++) {
      st = probe_vector(e, m->variants[v].engine_index, m, ws, k_probe[p], got + p * dim);
      cs[p] = at_cosine(ref + p * dim, got + p * dim, dim);
    }
    if (st != AT_OK) break;
    for (int i = 1; i < NP; i++) /* median of NP = 4: the mean of the middle two */
      for (int j = i; j > 0 && cs[j - 1] > cs[j]; j--) {
        double x = cs[j];
        cs[j] = cs[j - 1];
        cs[j - 1] = x;
      }
    double med = (cs[NP / 2 - 1] + cs[NP / 2]) / 2;
    if (med < 0.9)
      st = at_fail(AT_ERR_MODEL,
                   "model '%s': variant '%s' does not embed into variant '%s''s space (median "
                   "cosine %.3f over %d probe sentences; one model's fp32 and int8 agree to 0.99): "
                   "they look like two different models. Serve them as two models, or set "
                   "`shared_space: true` on the model if they were trained into one space",
                   m->name, m->variants[v].name, m->variants[0].name, med, NP);
    else
      at_log(AT_LOG_INFO, "serve", "model '%s': variant '%s' agrees with '%s' (median cosine "
             "%.4f)", m->name, m->variants[v].name, m->variants[0].name, med);
  }
  at_tok_workspace_destroy(ws);
  free(ref);
  return st;
}

/* The output the task head reads (at_model_info_task_head): every variant
 * must agree on it and on its size. */
static at_status setup_head(served_model *m, const at_model_info *mi, const char *vname) {
  bool embed = m->task == TASK_EMBED;
  at_pooling pool = m->pooling;
  size_t dim = 0;
  int idx = at_model_info_task_head(mi, embed, &pool, &dim);
  if (idx < 0)
    return at_fail(AT_ERR_UNSUPPORTED,
                   "model '%s' variant '%s': task '%s' needs a float output %s with a fixed last "
                   "dimension", m->name, vname, embed ? "embed" : "classify",
                   embed ? "'sentence_embedding' [batch, dim] or 'last_hidden_state' [batch, seq, "
                           "dim]" : "'logits' [batch, labels]");
  if (embed && pool != AT_POOL_NONE && m->dense_module)
    return at_fail(AT_ERR_UNSUPPORTED,
                   "model '%s' variant '%s': its sentence-transformers pipeline has a Dense "
                   "module after pooling, which the graph does not include (no "
                   "\"sentence_embedding\" output); export the model with it", m->name, vname);
  if (m->out_dim && (m->out_dim != dim || m->head_output != idx || m->head_pooling != pool))
    return at_fail(AT_ERR_UNSUPPORTED,
                   "model '%s': variant '%s' has output '%s' of size %zu, the others output %zu "
                   "values from output %d", m->name, vname, mi->outputs[idx].name, dim, m->out_dim,
                   m->head_output);
  m->out_dim = dim;
  m->head_output = idx;
  m->head_pooling = pool;
  return AT_OK;
}

/* The first half of loading model i: its name, tokenizer and export files,
 * and its variants sorted most accurate first into vcfg. */
static at_status prepare_model(at_server *s, int i, at_server_variant_config *vcfg) {
  const at_server_config *cfg = &s->cfg;
  const at_server_model_config *mc = &cfg->models[i];
  served_model *m = &s->models[i];
  at_status st;
  snprintf(m->name, sizeof m->name, "%s", mc->name);
  for (int k = 0; k < i; k++)
    if (!strcmp(s->models[k].name, m->name))
      return at_fail(AT_ERR_INVALID_ARG, "two models are named '%s'", m->name);
  m->task = strcmp(mc->task, "embed") == 0 ? TASK_EMBED : TASK_CLASSIFY;
  m->max_tokens = cfg->max_tokens;
  snprintf(m->tokenizer_path, sizeof m->tokenizer_path, "%s", mc->tokenizer);
  if ((st = at_tokenizer_load(mc->tokenizer, &m->tok)) != AT_OK) {
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", at_last_error());
    return at_fail(st, "model '%s': tokenizer: %s", m->name, detail);
  }
  m->pad_id = at_tokenizer_pad_id(m->tok);
  m->type_limit = 1;
  if ((st = read_export(m, mc->config_json)) != AT_OK) return st;
  size_t tv = at_tokenizer_vocab_size(m->tok);
  if (m->id_limit > 0 && (int64_t)tv > m->id_limit)
    at_log(AT_LOG_WARN, "serve", "model '%s': the tokenizer (%s) has %zu ids but config.json's "
           "vocab_size is %lld: a text that gives an id past it is answered 500 (the files "
           "disagree)", m->name, mc->tokenizer, tv, (long long)m->id_limit);
  if (m->id_limit <= 0 || (tv > 0 && (int64_t)tv < m->id_limit)) m->id_limit = (int64_t)tv;
  if (m->vocab_size <= 0) m->vocab_size = (int64_t)tv; /* no config.json vocab_size */
  memcpy(vcfg, mc->variants, sizeof(at_server_variant_config) * (size_t)mc->n_variants);
  qsort(vcfg, (size_t)mc->n_variants, sizeof vcfg[0], by_accuracy);
  m->n_variants = mc->n_variants;
  for (int v = 0; v < mc->n_variants; v++)
    snprintf(m->variants[v].name, sizeof m->variants[v].name, "%.63s", vcfg[v].name);
  return AT_OK;
}

/* Every model's variants into the engine as one step, their sessions made at
 * the same time on up to `workers` threads (session creation is most of a
 * start; the family loads in about the time of its largest variant). */
static at_status load_variants(at_server *s, const at_session_params *base,
                               at_server_variant_config (*vcfg)[AT_SERVER_MAX_VARIANTS]) {
  const at_server_config *cfg = &s->cfg;
  enum { MAXV = AT_SERVER_MAX_MODELS * AT_SERVER_MAX_VARIANTS };
  _Static_assert(MAXV <= 256, "variant_model[] and variant_slot[] hold 256 engine variants");
  char ename[MAXV][160];
  at_variant_spec spec[MAXV];
  at_session_params sp[MAXV];
  int owner[MAXV], slot[MAXV], n = 0;
  for (int i = 0; i < cfg->n_models; i++)
    for (int v = 0; v < s->models[i].n_variants; v++, n++) {
      snprintf(ename[n], sizeof ename[n], "%.63s/%.63s", s->models[i].name, vcfg[i][v].name);
      sp[n] = *base;
      if (cfg->artifact_cache_dir[0]) {
        sp[n].artifact_cache_dir = cfg->artifact_cache_dir;
        sp[n].artifact_model = s->models[i].name;
        sp[n].artifact_variant = vcfg[i][v].name;
      }
      spec[n] = (at_variant_spec){.name = ename[n], .model_path = vcfg[i][v].path, .sp = &sp[n]};
      owner[n] = i, slot[n] = v;
    }
  if (n == 0) return AT_OK;
  int first = 0, bad = -1;
  at_status st = at_engine_add_variants(s->engine, spec, n, cfg->workers, &first, &bad);
  if (st != AT_OK) {
    if (bad < 0) return st;
    char detail[1200];
    snprintf(detail, sizeof detail, "%s", at_last_error());
    return at_fail(st, "model '%s' variant '%s': %s", s->models[owner[bad]].name,
                   vcfg[owner[bad]][slot[bad]].name, detail);
  }
  for (int k = 0; k < n; k++) {
    served_model *m = &s->models[owner[k]];
    s->variant_model[first + k] = owner[k];
    s->variant_slot[first + k] = slot[k];
    m->variants[slot[k]].engine_index = first + k;
    m->variants[slot[k]].accuracy = vcfg[owner[k]][slot[k]].accuracy;
  }
  return AT_OK;
}

at_status serve_load_models(at_server *s) {
  const at_server_config *cfg = &s->cfg;
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = cfg->workers;
  ep.queue_capacity = (size_t)cfg->workers * 4 + 64;
  ep.idle_intra_op_threads = cfg->idle_intra_op_threads;
  at_status st = at_engine_create(&ep, &s->engine);
  if (st) return st;
  at_session_params sp = at_session_default_params();
  sp.intra_op_threads = cfg->intra_op_threads;
  sp.cpu_mem_arena = cfg->cpu_arena;
  at_server_variant_config vcfg[AT_SERVER_MAX_MODELS][AT_SERVER_MAX_VARIANTS];
  for (int i = 0; i < cfg->n_models; i++) {
    if ((st = prepare_model(s, i, vcfg[i])) != AT_OK) return st;
    s->n_models = i + 1; /* from here its tokenizer is the server's to free */
  }
  if ((st = load_variants(s, &sp, vcfg)) != AT_OK) return st;
  for (int i = 0; i < cfg->n_models; i++) {
    const at_server_model_config *mc = &cfg->models[i];
    served_model *m = &s->models[i];
    for (int v = 0; v < m->n_variants; v++) {
      int ev = m->variants[v].engine_index;
      if ((st = setup_head(m, at_engine_variant_info(s->engine, ev), vcfg[i][v].name)) != AT_OK)
        return st;
    }
    if (m->task == TASK_EMBED && m->n_variants > 1 && !mc->shared_space &&
        (st = check_one_space(s->engine, m)) != AT_OK)
      return st;
    if (m->task == TASK_CLASSIFY && m->n_labels && (size_t)m->n_labels != m->out_dim)
      return at_fail(AT_ERR_INVALID_ARG, "model '%s': config.json has %d labels, the model %zu",
                     m->name, m->n_labels, m->out_dim);
    if (m->task == TASK_CLASSIFY && !m->n_labels) {
      m->labels = calloc(m->out_dim, sizeof *m->labels);
      if (!m->labels) return at_fail(AT_ERR_NOMEM, "out of memory");
      m->n_labels = (int)m->out_dim;
      for (size_t k = 0; k < m->out_dim; k++) {
        char l[32];
        snprintf(l, sizeof l, "LABEL_%zu", k);
        m->labels[k] = strdup(l);
      }
    }
  }
  if (cfg->n_models == 0) return AT_OK; /* a generation-only server: no encoder lane */
  if ((st = at_engine_start(s->engine)) != AT_OK) return st;
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = cfg->max_batch_size;
  bp.max_queue_delay_us = cfg->max_queue_delay_us;
  bp.max_queued_items = cfg->max_queued;
  bp.max_seq_len = cfg->max_tokens;
  at_bucketing bk[256]; /* per engine variant: its model's setting */
  for (int ev = 0; ev < at_engine_variant_count(s->engine) && ev < 256; ev++) {
    const at_server_model_config *mc = &cfg->models[s->variant_model[ev]];
    bk[ev] = (at_bucketing){mc->max_pad_factor, mc->bucket_max_wait_us};
    if (mc->max_pad_factor > 0 && s->variant_slot[ev] == 0)
      at_log(AT_LOG_INFO, "serve", "model '%s': length-bucketed batches, padded tokens within "
             "%.2fx the real ones, passed-over texts go after %d us", mc->name,
             mc->max_pad_factor, mc->bucket_max_wait_us);
  }
  bp.per_variant = bk;
  if ((st = at_batcher_create(s->engine, &bp, &s->batcher)) != AT_OK) return st;

  /* Planners: one per model over its variants. */
  for (int i = 0; i < s->n_models; i++) {
    served_model *m = &s->models[i];
    at_plan_variant pv[AT_SERVER_MAX_VARIANTS];
    memset(pv, 0, sizeof pv);
    for (int v = 0; v < m->n_variants; v++) {
      const at_server_variant_config *vc = &vcfg[i][v];
      bool profiled = at_server_variant_plan(vc, &pv[v]);
      pv[v].name = m->variants[v].name;
      if (!profiled) {
        /* No profile in the config: measure batch 1 and 8 now. */
        double s1 = 0, s8 = 0;
        at_fault_hold(true); /* tests' injected faults are for serving Runs only */
        st = measure_startup(s->engine, m->variants[v].engine_index, m, &s1, &s8);
        at_fault_hold(false);
        if (st != AT_OK ||
            !(s1 > 0) || !(s8 > 0)) {
          char detail[512];
          snprintf(detail, sizeof detail, "%s", st != AT_OK ? at_last_error() : "no time measured");
          return at_fail(AT_ERR_MODEL, "model '%s' variant '%s' failed its start-up timing run: %s",
                         m->name, m->variants[v].name, detail);
        }
        pv[v].n_points = 2;
        pv[v].batch[0] = 1, pv[v].service_s[0] = s1;
        pv[v].batch[1] = 8, pv[v].service_s[1] = s8 > s1 ? s8 : s1;
        at_log(AT_LOG_INFO, "serve", "model '%s' variant '%s': no profile, measured s(1)=%.3f ms "
               "s(8)=%.3f ms", m->name, m->variants[v].name, s1 * 1e3, s8 * 1e3);
      }
    }
    at_planner_params pp;
    if ((st = at_server_config_planner_params(cfg, &pp)) != AT_OK) return st;
    if ((st = at_planner_create(&pp, pv, (size_t)m->n_variants, &m->planner)) != AT_OK) {
      char detail[512];
      snprintf(detail, sizeof detail, "%s", at_last_error());
      return at_fail(st, "model '%s': planner: %s", m->name, detail);
    }
    /* every refusal reason shows from the start (0), so rate() works at once */
    static const char *const k_reasons[] = {"deadline", "infeasible", "limit", "queue_full", "early"};
    for (size_t k = 0; k < sizeof k_reasons / sizeof *k_reasons; k++)
      at_metrics_rejection_add(s->metrics, m->name, k_reasons[k], 0);
  }
  return AT_OK;
}

/* One generation lane: open variant `variant` ("" = the family's first) of
 * the generator's model with its own thread budget (generator.threads
 * intra-op threads, separate from the engine's workers) and start its
 * scheduler, taking turns on the cores with the other lanes. */
static at_status load_lane(at_server *s, const char *variant, serve_gen_lane *L) {
  const at_server_generator_config *gc = &s->cfg.generator;
  at_session_params sp = at_session_default_params();
  sp.intra_op_threads = gc->threads;
  if (s->cfg.artifact_cache_dir[0]) {
    sp.artifact_cache_dir = s->cfg.artifact_cache_dir;
    sp.artifact_model = gc->name;
    sp.artifact_variant = variant[0] ? variant : "default";
  }
  at_status st = at_lm_open(gc->model, variant[0] ? variant : NULL, &sp, NULL, &L->lm);
  if (st != AT_OK) {
    char detail[1200];
    snprintf(detail, sizeof detail, "%s", at_last_error());
    return at_fail(st, "generator '%s' (%s%s%s): %s", gc->name, gc->model,
                   variant[0] ? ", variant " : "", variant, detail);
  }
  snprintf(L->variant, sizeof L->variant, "%s", L->lm->variant);
  at_gen_params gp = at_gen_default_params();
  gp.block_tokens = gc->block_tokens;
  gp.n_blocks = gc->blocks;
  gp.safety = gc->safety;
  gp.chunk_tokens = gc->chunk_tokens;
  gp.max_batch = gc->max_batch;
  gp.bucketing = gc->bucketing;
  gp.preempt = gc->preempt;
  gp.prefix_cache = gc->prefix_cache;
  gp.max_waiting = gc->max_waiting;
  gp.ttft_slo_s = gc->ttft_slo_ms / 1e3;
  gp.tpot_slo_s = gc->tpot_slo_ms / 1e3;
  gp.admit_fill = gc->admit_fill;
  gp.turns = s->gen_turns;
  L->params = gp;
  if ((st = at_gen_create(at_lm_take_decoder(L->lm), &gp, &L->gen)) != AT_OK) return st;
  const at_decoder_info *di = at_gen_decoder_info(L->gen);
  at_log(AT_LOG_INFO, "serve",
         "generator '%s': %s (%s), %d layers, %d positions, %d KV blocks of %d tokens, %d "
         "thread(s)",
         gc->name, L->lm->model_path, L->lm->variant, di->layers, di->max_positions, gc->blocks,
         gc->block_tokens, gc->threads);
  return AT_OK;
}

/* The generation lanes: generator.variant, then generator.fallback_variant
 * when set (a different variant of the same model, same tokenizer and
 * positions), sharing one turn-taking lock. */
at_status serve_load_generator(at_server *s) {
  const at_server_generator_config *gc = &s->cfg.generator;
  for (int i = 0; i < s->n_models; i++)
    if (!strcmp(s->models[i].name, gc->name))
      return at_fail(AT_ERR_INVALID_ARG, "generator.name '%s' is also an encoder model's name",
                     gc->name);
  at_status st = at_gen_turns_create(&s->gen_turns);
  if (st != AT_OK) return st;
  if ((st = load_lane(s, gc->variant, &s->lanes[0])) != AT_OK) return st;
  s->n_lanes = 1;
  s->lm = s->lanes[0].lm;
  if (gc->fallback_variant[0]) {
    if (!strcmp(gc->fallback_variant, s->lanes[0].variant))
      return at_fail(AT_ERR_INVALID_ARG,
                     "generator.fallback_variant '%s' is the lane's own variant: name a "
                     "cheaper one of the same model (e.g. int8 beside fp32)",
                     gc->fallback_variant);
    if ((st = load_lane(s, gc->fallback_variant, &s->lanes[1])) != AT_OK) return st;
    if ((st = at_rate_init(&s->gen_offered, 1000000000ull, 10)) != AT_OK) return st;
    pthread_mutex_init(&s->gen_demand_lock, NULL);
    s->n_lanes = 2;
    if (strcmp(gc->admission, "slo"))
      at_log(AT_LOG_WARN, "serve",
             "generator.fallback_variant '%s' is chosen only by admission 'slo'; with '%s' "
             "every request goes to '%s'",
             gc->fallback_variant, gc->admission, s->lanes[0].variant);
    const at_decoder_info *a = at_gen_decoder_info(s->lanes[0].gen);
    const at_decoder_info *b = at_gen_decoder_info(s->lanes[1].gen);
    if (a->vocab != b->vocab || a->max_positions != b->max_positions)
      return at_fail(AT_ERR_INVALID_ARG,
                     "generator variants '%s' and '%s' differ in vocabulary or positions "
                     "(%d/%d vs %d/%d): a fallback must be the same model",
                     s->lanes[0].variant, s->lanes[1].variant, a->vocab, a->max_positions,
                     b->vocab, b->max_positions);
  }
  serve_chat_template_load(s, s->lm->desc->dir);
  return AT_OK;
}
