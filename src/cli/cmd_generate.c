/* src/cli/cmd_generate.c — `anytime generate`: generate text from prompts
 * with a decoder model through the generation lane (KV arena, continuous
 * batching; every prompt is submitted at once), or with --reference through
 * the plain present-feedback path, one prompt at a time. Also
 * `anytime perplexity`: held-out perplexity of a decoder, measured here
 * from C. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tools/dataset.h"
#include "anytime/clock.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime generate [options] PROMPT [PROMPT ...]\n\n"
          "Generates a continuation of each prompt with a decoder model. All prompts go to the\n"
          "generation lane at once (continuous batching over the KV block arena), as the\n"
          "server does.\n\n"
          "options:\n"
          "  --model SPEC        model directory, name under ./models, or ORG/NAME[@rev] from\n"
          "                      the Hugging Face cache (default: decoder)\n"
          "  --variant NAME      fp32, int8, ... (default: the family's first, fp32)\n"
          "  --max-tokens N      tokens to generate per prompt (default 32)\n"
          "  --temperature T     0 = greedy (default 0)\n"
          "  --top-k K           sample from the K likeliest (default 0 = off)\n"
          "  --top-p P           nucleus sampling (default 1 = off)\n"
          "  --seed S            sampling seed (default 0; prompt i uses S + i)\n"
          "  --threads N         ORT intra-op threads (default 1)\n"
          "  --block-tokens N    KV block size in positions (default 16)\n"
          "  --blocks N          KV arena size in blocks (default 512)\n"
          "  --chunk N           prefill chunk width (default 64)\n"
          "  --max-batch N       sequences per decode step (default 8)\n"
          "  --reference         skip the arena: feed the graph's own present tensors back\n"
          "  --ids               also print the generated token ids\n"
          "  --json              one JSON object per prompt\n");
}

typedef struct job {
  int index;
  int32_t *prompt;
  int n_prompt;
  int32_t *out;
  int n_out;
  at_gen_finish finish;
  at_status status;
  char error[256];
  int preemptions;
  double ttft_ms, total_ms;
  bool done;
} job;

typedef struct shared {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  int remaining;
} shared;

typedef struct cb_ctx {
  job *j;
  shared *sh;
} cb_ctx;

static void on_done(void *user, const at_gen_result *r) {
  cb_ctx *c = user;
  job *j = c->j;
  j->out = malloc((size_t)(r->n_generated ? r->n_generated : 1) * sizeof *j->out);
  if (j->out) {
    memcpy(j->out, r->tokens, (size_t)r->n_generated * sizeof *j->out);
    j->n_out = r->n_generated;
  }
  j->finish = r->finish;
  j->status = r->status;
  if (r->error) snprintf(j->error, sizeof j->error, "%s", r->error);
  j->preemptions = r->preemptions;
  j->ttft_ms = r->first_token_ns ? (double)(r->first_token_ns - r->submitted_ns) / 1e6 : NAN;
  j->total_ms = (double)(r->finished_ns - r->submitted_ns) / 1e6;
  pthread_mutex_lock(&c->sh->lock);
  j->done = true;
  c->sh->remaining--;
  pthread_cond_signal(&c->sh->cv);
  pthread_mutex_unlock(&c->sh->lock);
}

/* Greedy/sampled generation without the arena (the reference path). */
static at_status run_reference(at_decoder *dec, job *j, int max_tokens, const at_lm *lm,
                               const at_sample_params *sp) {
  const at_decoder_info *in = at_decoder_get_info(dec);
  float *logits = malloc((size_t)in->vocab * sizeof *logits);
  float *scratch = malloc((size_t)AT_SAMPLE_SCRATCH_PER_VOCAB * in->vocab * sizeof *scratch);
  j->out = malloc((size_t)max_tokens * sizeof *j->out);
  if (!logits || !scratch || !j->out) {
    free(logits);
    free(scratch);
    return at_fail(AT_ERR_NOMEM, "reference buffers");
  }
  at_rng rng;
  at_rng_seed(&rng, sp->seed);
  at_decoder_past past = {0}, present = {0};
  uint64_t t0 = at_now_ns();
  at_status st = at_decoder_step_reference(dec, NULL, j->prompt, j->n_prompt, logits, &past);
  j->finish = AT_GEN_LENGTH;
  while (st == AT_OK && j->n_out < max_tokens) {
    int32_t t = at_sample(logits, in->vocab, sp, &rng, scratch);
    if (j->n_out == 0) j->ttft_ms = (double)(at_now_ns() - t0) / 1e6;
    bool eos = false;
    for (int k = 0; k < lm->n_eos; k++) eos = eos || t == lm->eos_ids[k];
    if (eos) {
      j->finish = AT_GEN_STOP;
      break;
    }
    j->out[j->n_out++] = t;
    if (j->n_out == max_tokens) break;
    st = at_decoder_step_reference(dec, &past, &t, 1, logits, &present);
    at_decoder_past_free(&past);
    past = present;
    present = (at_decoder_past){0};
  }
  j->total_ms = (double)(at_now_ns() - t0) / 1e6;
  at_decoder_past_free(&past);
  free(logits);
  free(scratch);
  return st;
}

/* Print one prompt's result (text, or one JSON object). Returns the job's
 * status. */
static at_status print_job(const at_lm *lm, at_tok_workspace *ws, const job *j, int i,
                           const char *prompt, bool json, bool show_ids) {
  const char *text = "";
  size_t tl = 0;
  if (j->n_out > 0) at_tokenizer_decode(lm->tok, ws, j->out, (size_t)j->n_out, true, &text, &tl);
  if (json) {
    json_t *o = json_pack("{s:i,s:s,s:s%,s:s,s:i,s:i,s:i,s:f,s:f}", "index", i, "prompt", prompt,
                          "text", text, tl, "finish_reason", at_gen_finish_name(j->finish),
                          "prompt_tokens", j->n_prompt, "completion_tokens", j->n_out,
                          "preemptions", j->preemptions, "ttft_ms",
                          isfinite(j->ttft_ms) ? j->ttft_ms : -1.0, "total_ms", j->total_ms);
    if (o && show_ids) {
      json_t *ids = json_array();
      for (int k = 0; k < j->n_out; k++) json_array_append_new(ids, json_integer(j->out[k]));
      json_object_set_new(o, "ids", ids);
    }
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    printf("%s\n", s ? s : "{}");
    free(s);
    json_decref(o);
  } else {
    printf("--- prompt %d (%d tokens) -> %d tokens, %s, first token %.1f ms, total %.1f ms\n", i,
           j->n_prompt, j->n_out, at_gen_finish_name(j->finish), j->ttft_ms, j->total_ms);
    printf("%s%.*s\n", prompt, (int)tl, text);
    if (show_ids) {
      printf("ids:");
      for (int k = 0; k < j->n_out; k++) printf(" %d", j->out[k]);
      printf("\n");
    }
    if (j->status != AT_OK) fprintf(stderr, "anytime generate: prompt %d: %s\n", i, j->error);
  }
  return j->status;
}

int at_cli_generate(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *model = "decoder", *variant = NULL;
  int max_tokens = 32, threads = 1, first = argc;
  bool reference = false, json = false, show_ids = false;
  at_sample_params sp = at_sample_default_params();
  at_gen_params gp = at_gen_default_params();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (!strcmp(a, "--model") && more) model = argv[++i];
    else if (!strcmp(a, "--variant") && more) variant = argv[++i];
    else if (!strcmp(a, "--max-tokens") && more) max_tokens = atoi(argv[++i]);
    else if (!strcmp(a, "--temperature") && more) sp.temperature = (float)atof(argv[++i]);
    else if (!strcmp(a, "--top-k") && more) sp.top_k = atoi(argv[++i]);
    else if (!strcmp(a, "--top-p") && more) sp.top_p = (float)atof(argv[++i]);
    else if (!strcmp(a, "--seed") && more) sp.seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--threads") && more) threads = atoi(argv[++i]);
    else if (!strcmp(a, "--block-tokens") && more) gp.block_tokens = atoi(argv[++i]);
    else if (!strcmp(a, "--blocks") && more) gp.n_blocks = atoi(argv[++i]);
    else if (!strcmp(a, "--chunk") && more) gp.chunk_tokens = atoi(argv[++i]);
    else if (!strcmp(a, "--max-batch") && more) gp.max_batch = atoi(argv[++i]);
    else if (!strcmp(a, "--reference")) reference = true;
    else if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--ids")) show_ids = true;
    else if (!strcmp(a, "--")) {
      first = i + 1;
      break;
    } else if (a[0] == '-' && a[1] == '-') {
      fprintf(stderr, "anytime generate: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    } else {
      first = i;
      break;
    }
  }
  if (first >= argc || max_tokens < 1 || threads < 1) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }
  at_session_params ses = at_session_default_params();
  ses.intra_op_threads = threads;
  at_lm *lm = NULL;
  at_status st = at_lm_open(model, variant, &ses, NULL, &lm);
  if (st != AT_OK) return tools_report("generate", st);
  at_tok_workspace *ws = NULL;
  if ((st = at_tok_workspace_create(&ws)) != AT_OK) {
    at_lm_close(lm);
    return tools_report("generate", st);
  }
  int n = argc - first;
  job *jobs = calloc((size_t)n, sizeof *jobs);
  cb_ctx *ctx = calloc((size_t)n, sizeof *ctx);
  shared sh = {.remaining = 0};
  pthread_mutex_init(&sh.lock, NULL);
  pthread_cond_init(&sh.cv, NULL);
  int rc = AT_EXIT_OK;
  at_generator *gen = NULL;
  if (!jobs || !ctx) {
    st = at_fail(AT_ERR_NOMEM, "jobs");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    jobs[i].index = i;
    if ((st = at_lm_encode(lm, ws, argv[first + i], strlen(argv[first + i]), &jobs[i].prompt,
                           &jobs[i].n_prompt)) != AT_OK)
      goto done;
  }
  if (reference) {
    for (int i = 0; i < n && st == AT_OK; i++) {
      at_sample_params s = sp;
      s.seed = sp.seed + (uint64_t)i;
      st = run_reference(lm->dec, &jobs[i], max_tokens, lm, &s);
    }
  } else {
    if ((st = at_gen_create(at_lm_take_decoder(lm), &gp, &gen)) != AT_OK) goto done;
    for (int i = 0; i < n; i++) {
      ctx[i] = (cb_ctx){&jobs[i], &sh};
      at_gen_request r = {.prompt = jobs[i].prompt,
                          .n_prompt = jobs[i].n_prompt,
                          .max_tokens = max_tokens,
                          .sample = sp,
                          .eos_id = lm->eos_id,
                          .n_eos = lm->n_eos,
                          .on_done = on_done,
                          .user = &ctx[i]};
      memcpy(r.eos_ids, lm->eos_ids, sizeof r.eos_ids);
      r.sample.seed = sp.seed + (uint64_t)i;
      pthread_mutex_lock(&sh.lock);
      sh.remaining++;
      pthread_mutex_unlock(&sh.lock);
      if ((st = at_gen_submit(gen, &r, NULL)) != AT_OK) {
        pthread_mutex_lock(&sh.lock);
        sh.remaining--;
        pthread_mutex_unlock(&sh.lock);
        goto done;
      }
    }
    pthread_mutex_lock(&sh.lock);
    while (sh.remaining > 0) pthread_cond_wait(&sh.cv, &sh.lock);
    pthread_mutex_unlock(&sh.lock);
  }
  for (int i = 0; i < n; i++)
    if (print_job(lm, ws, &jobs[i], i, argv[first + i], json, show_ids) != AT_OK) rc = AT_EXIT_FAIL;
done:
  at_gen_destroy(gen);
  if (st != AT_OK) rc = tools_report("generate", st);
  for (int i = 0; jobs && i < n; i++) {
    free(jobs[i].prompt);
    free(jobs[i].out);
  }
  free(jobs);
  free(ctx);
  pthread_cond_destroy(&sh.cv);
  pthread_mutex_destroy(&sh.lock);
  at_tok_workspace_destroy(ws);
  at_lm_close(lm);
  return rc;
}
