/* tests/fuzz/fuzz_chat_template.c — libFuzzer driver for the chat-template
 * engine (anytime/chat.h, src/chat): compile any bytes as a template and
 * render it. Input: TEMPLATE [\0 CONTEXT_JSON]; without a NUL byte the
 * template is rendered with a fixed conversation (system, user, assistant,
 * tools, bos/eos). Invariants: compile fails only with AT_ERR_PARSE or
 * AT_ERR_LIMIT and a message; render returns AT_OK with at most max_output
 * NUL-terminated bytes, or AT_ERR_INVALID_ARG / AT_ERR_LIMIT with a message
 * and no output; nothing crashes, leaks or recurses without bound (ASan and
 * UBSan watch). Seeds: tests/fuzz/corpus/chat_template/ (the family
 * templates of tests/data/chat_templates with a conversation). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/chat.h"

#define MAX_OUTPUT 4096

static const char DEFAULT_CTX[] =
    "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
    "{\"role\":\"user\",\"content\":\"Hi \xc3\xa9 \xf0\x9f\x98\x80\"},"
    "{\"role\":\"assistant\",\"content\":\"  Hello  \",\"tool_calls\":[{\"type\":\"function\","
    "\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]},{\"role\":\"user\",\"content\":\"\"}]"
    ","
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":"
    "\"object\"}}}],"
    "\"add_generation_prompt\":true,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *src = (const char *)data;
  const char *nul = memchr(data, '\0', size);
  size_t tlen = nul ? (size_t)(nul - src) : size;
  const char *ctx = nul ? nul + 1 : DEFAULT_CTX;
  size_t clen = nul ? size - tlen - 1 : sizeof DEFAULT_CTX - 1;

  at_chat_template *t = NULL;
  at_status st = at_chat_template_compile(src, tlen, &t);
  if (st != AT_OK) {
    if ((st != AT_ERR_PARSE && st != AT_ERR_LIMIT) || t || !at_last_error()[0]) abort();
    return 0;
  }
  char *out = NULL;
  size_t n = 0;
  st = at_chat_template_render(t, ctx, clen, MAX_OUTPUT, &out, &n);
  if (st == AT_OK) {
    if (!out || n > MAX_OUTPUT || out[n] != '\0') abort();
  } else {
    if ((st != AT_ERR_INVALID_ARG && st != AT_ERR_LIMIT) || out || !at_last_error()[0]) abort();
  }
  free(out);
  at_chat_template_destroy(t);
  return 0;
}
