/* src/cli/cmd_perplexity.c — `anytime perplexity`: a decoder's per-token
 * perplexity on held-out text, measured here from C through the decoder
 * session (the number the model card quotes). Protocol (the training
 * pipeline's, tools/train): each text becomes [BOS] + its tokens + [EOS]
 * (the document boundaries the model was trained with, when its config names
 * them), cut into consecutive non-overlapping windows of --window tokens;
 * every token after the first of a window is scored given the window's
 * earlier tokens; perplexity = exp(total NLL / tokens scored). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tools/dataset.h"
#include "anytime/clock.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime perplexity [--model SPEC] [--variant NAME] [--data FILE.csv]\n"
          "                          [--window N] [--limit N] [--threads N] [--json]\n\n"
          "Per-token perplexity of a decoder on held-out text (CSV with a `text` column,\n"
          "header `label,text`). Each text is [BOS] + tokens + [EOS], cut into non-overlapping\n"
          "windows; each token after a window's first is scored given what precedes it in\n"
          "the window.\n\n"
          "options:\n"
          "  --model SPEC    default: decoder (./models/decoder)\n"
          "  --variant NAME  default: the family's first (fp32)\n"
          "  --data FILE     default: $ANYTIME_DATA_DIR/pang-lee-reviews/heldout.csv\n"
          "                  (tools/train/train_decoder.sh writes it)\n"
          "  --window N      tokens per window (default: the model's positions)\n"
          "  --limit N       only the first N texts\n"
          "  --threads N     ORT intra-op threads (default 1)\n"
          "  --json          one JSON line instead of text\n");
}

int at_cli_perplexity(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *model = "decoder", *variant = NULL;
  char data[4096];
  cli_default_reviews_csv(data, sizeof data);
  int window = 0, threads = 1;
  long limit = -1;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (!strcmp(a, "--model") && more) model = argv[++i];
    else if (!strcmp(a, "--variant") && more) variant = argv[++i];
    else if (!strcmp(a, "--data") && more) snprintf(data, sizeof data, "%s", argv[++i]);
    else if (!strcmp(a, "--window") && more) window = atoi(argv[++i]);
    else if (!strcmp(a, "--limit") && more) limit = atol(argv[++i]);
    else if (!strcmp(a, "--threads") && more) threads = atoi(argv[++i]);
    else if (!strcmp(a, "--json")) json = true;
    else {
      fprintf(stderr, "anytime perplexity: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
  }
  if (threads < 1 || window < 0 || window == 1) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }
  cli_dataset ds;
  char err[512];
  if (cli_dataset_load(data, &cli_labels_int, &ds, err, sizeof err) != 0) {
    fprintf(stderr, "anytime perplexity: %s\n", err);
    return AT_EXIT_FAIL;
  }
  at_session_params sp = at_session_default_params();
  sp.intra_op_threads = threads;
  at_lm *lm = NULL;
  at_status st = at_lm_open(model, variant, &sp, NULL, &lm);
  if (st != AT_OK) {
    cli_dataset_free(&ds);
    return tools_report("perplexity", st);
  }
  if (window == 0) window = lm->n_positions > 0 ? lm->n_positions : 256;
  if (lm->n_positions > 0 && window > lm->n_positions) {
    fprintf(stderr, "anytime perplexity: --window %d exceeds the model's %d positions\n", window,
            lm->n_positions);
    at_lm_close(lm);
    cli_dataset_free(&ds);
    return AT_EXIT_USAGE;
  }
  at_tok_workspace *ws = NULL;
  at_tok_workspace_create(&ws);
  double nll = 0;
  long scored = 0, texts = 0, windows = 0;
  uint64_t t0 = at_now_ns();
  size_t n = limit >= 0 && (size_t)limit < ds.n ? (size_t)limit : ds.n;
  for (size_t i = 0; i < n && st == AT_OK; i++) {
    at_encode_params ep = at_encode_default_params();
    ep.add_special_tokens = false;
    ep.max_length = 0;
    ep.pad_to = 0;
    at_encoding e;
    if ((st = at_tokenizer_encode(lm->tok, ws, ds.texts[i], ds.lens[i], NULL, 0, &ep, &e)) !=
        AT_OK)
      break;
    int32_t *ids = malloc((e.n + 2) * sizeof *ids);
    if (!ids) {
      st = AT_ERR_NOMEM;
      break;
    }
    int k = 0;
    if (lm->bos_id >= 0) ids[k++] = lm->bos_id;
    memcpy(ids + k, e.ids, e.n * sizeof *ids);
    k += (int)e.n;
    if (lm->eos_id >= 0) ids[k++] = lm->eos_id;
    for (int off = 0; off + 1 < k && st == AT_OK; off += window) {
      int len = k - off < window ? k - off : window;
      if (len < 2) break;
      double w_nll = 0;
      int w_scored = 0;
      st = at_decoder_nll(lm->dec, ids + off, len, &w_nll, &w_scored);
      nll += w_nll;
      scored += w_scored;
      windows++;
    }
    free(ids);
    texts++;
    if (!json && isatty(2) && (texts % 10 == 0 || (size_t)texts == n))
      fprintf(stderr, "\rperplexity: %ld/%zu texts, %ld tokens, running ppl %.3f", texts, n,
              scored, exp(nll / (scored ? scored : 1)));
  }
  if (!json && isatty(2)) fprintf(stderr, "\n");
  double secs = (double)(at_now_ns() - t0) / 1e9;
  int rc = AT_EXIT_OK;
  if (st != AT_OK) {
    rc = tools_report("perplexity", st);
  } else if (scored == 0) {
    fprintf(stderr, "anytime perplexity: no tokens to score in %s\n", data);
    rc = AT_EXIT_FAIL;
  } else if (json) {
    printf("{\"model\":\"%s\",\"variant\":\"%s\",\"data\":\"%s\",\"texts\":%ld,\"windows\":%ld,"
           "\"window\":%d,\"tokens_scored\":%ld,\"nll_per_token\":%.6f,\"perplexity\":%.4f,"
           "\"seconds\":%.2f}\n",
           model, lm->variant, data, texts, windows, window, scored, nll / scored,
           exp(nll / scored), secs);
  } else {
    printf("%s (%s) on %s: %ld texts, %ld windows of <= %d tokens, %ld tokens scored\n"
           "NLL/token %.4f nats, perplexity %.3f (%.1f s)\n",
           model, lm->variant, data, texts, windows, window, scored, nll / scored,
           exp(nll / scored), secs);
  }
  at_tok_workspace_destroy(ws);
  at_lm_close(lm);
  cli_dataset_free(&ds);
  return rc;
}
