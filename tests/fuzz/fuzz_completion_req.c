/* tests/fuzz/fuzz_completion_req.c — libFuzzer driver for the
 * /v1/completions and /v1/chat/completions body validation
 * (src/serve/completion_req.c): any JSON the server can receive is either
 * refused with 400/404 (500 only for memory) and a message, or accepted with
 * every field inside its documented range (chat's max_tokens 0 when absent)
 * — for chat, every message
 * normalised to a known role and string content. Both parsers see every
 * input. Seeds: tests/fuzz/corpus/completion_req/. */
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
  for (int chat = 0; chat < 2; chat++) {
    err[0] = '\0';
    int st = chat ? chat_req_parse(body, &lim, &q, err, sizeof err)
                  : cmpl_req_parse(body, &lim, &q, err, sizeof err);
    if (st != 0) {
      if ((st != 400 && st != 404 && st != 500) || !err[0]) abort();
      if (q.messages) abort(); /* nothing to free on a refusal */
      continue;
    }
    if (chat) {
      if (q.prompt || !json_is_array(q.messages) || json_array_size(q.messages) == 0) abort();
      size_t i;
      json_t *m;
      json_array_foreach(q.messages, i, m) {
        const char *r = json_string_value(json_object_get(m, "role"));
        json_t *c = json_object_get(m, "content");
        if (!r || (strcmp(r, "system") && strcmp(r, "developer") && strcmp(r, "user") &&
                   strcmp(r, "assistant")))
          abort();
        if (!json_is_string(c) || memchr(json_string_value(c), '\0', json_string_length(c)))
          abort();
      }
      if (q.echo) abort();
    } else {
      if (!q.prompt || memchr(q.prompt, '\0', q.prompt_len) || q.messages) abort();
    }
    /* chat without max_tokens: 0, which the route makes the rest of the
     * context (completion_req.h) */
    if (q.max_tokens < (chat ? 0 : 1) || q.max_tokens > 200) abort();
    if (q.n < 1 || q.n > CMPL_MAX_N) abort();
    if (!(q.temperature >= 0 && q.temperature <= 2)) abort();
    if (!(q.top_p > 0 && q.top_p <= 1)) abort();
    if (!(fabs(q.presence_penalty) <= 2) || !(fabs(q.frequency_penalty) <= 2)) abort();
    if (q.top_logprobs < 0 || q.top_logprobs > 20 || (!q.logprobs && q.top_logprobs)) abort();
    if (q.top_k < 0 || q.n_stops < 0 || q.n_stops > TS_MAX_STOPS) abort();
    for (int i = 0; i < q.n_stops; i++)
      if (!q.stops[i] || q.stop_len[i] < 1 || q.stop_len[i] > TS_MAX_STOP_LEN) abort();
    cmpl_req_free(&q);
  }
  json_decref(body);
  return 0;
}
