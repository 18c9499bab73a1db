/* tests/fuzz/fuzz_completion_req.c — libFuzzer driver for the
 * /v1/completions body validation (src/serve/completion_req.c): any JSON the
 * server can receive is either refused with 400/404 and a message, or
 * accepted with every field inside its documented range. Seeds:
 * tests/fuzz/corpus/completion_req/. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/completion_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t jerr;
  json_t *body = json_loadb((const char *)data, size, 0, &jerr);
  if (!body) return 0;
  cmpl_limits lim = {.model = "decoder", .default_max_tokens = 16, .max_tokens = 200};
  cmpl_req q;
  char err[400];
  err[0] = '\0';
  int st = cmpl_req_parse(body, &lim, &q, err, sizeof err);
  if (st != 0) {
    if ((st != 400 && st != 404) || !err[0]) abort();
  } else {
    if (!q.prompt || memchr(q.prompt, '\0', q.prompt_len)) abort();
    if (q.max_tokens < 1 || q.max_tokens > 200) abort();
    if (!(q.temperature >= 0 && q.temperature <= 2)) abort();
    if (!(q.top_p > 0 && q.top_p <= 1)) abort();
    if (q.top_k < 0 || q.n_stops < 0 || q.n_stops > TS_MAX_STOPS) abort();
    for (int i = 0; i < q.n_stops; i++)
      if (!q.stops[i] || q.stop_len[i] < 1 || q.stop_len[i] > TS_MAX_STOP_LEN) abort();
  }
  json_decref(body);
  return 0;
}
