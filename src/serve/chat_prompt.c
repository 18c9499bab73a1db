/* src/serve/chat_prompt.c — the chat route's prompt: the request's messages
 * rendered by the generation model's own chat template (anytime/chat.h),
 * loaded once when the lane starts (serve_chat_template_load), with the
 * generation prompt and the model's BOS / EOS token text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/chat.h"
#include "core/internal.h"
#include "serve/serve_internal.h"

/* A rendered prompt longer than this is refused before tokenising (the
 * longest context anytime's decoders take is a few thousand tokens). */
#define CHAT_MAX_RENDER ((size_t)4 << 20)

void serve_chat_template_load(at_server *s, const char *model_dir) {
  at_chat_template *t = NULL;
  at_status st = at_chat_template_load(model_dir, &t);
  if (st == AT_OK) {
    s->chat_tpl = t;
    at_log(AT_LOG_INFO, "serve", "generator: chat template from %s", model_dir);
    return;
  }
  /* no template, or one that does not compile: the chat route says why */
  snprintf(s->chat_tpl_error, sizeof s->chat_tpl_error, "%s", at_last_error());
  at_log(st == AT_ERR_NOT_FOUND ? AT_LOG_INFO : AT_LOG_WARN, "serve",
         "generator: /v1/chat/completions unavailable: %s", s->chat_tpl_error);
}

int serve_chat_prompt(at_server *s, json_t *messages, char **text, size_t *len, char *err,
                      size_t cap) {
  *text = NULL;
  *len = 0;
  if (!s->chat_tpl) {
    snprintf(err, cap, "model '%s' has no usable chat template, so it has no chat route: %s",
             s->cfg.generator.name, s->chat_tpl_error);
    return 400;
  }
  json_t *ctx = json_pack("{s:O, s:b, s:s, s:s}", "messages", messages, "add_generation_prompt", 1,
                          "bos_token", at_chat_template_bos(s->chat_tpl), "eos_token",
                          at_chat_template_eos(s->chat_tpl));
  char *ctx_text = ctx ? json_dumps(ctx, JSON_COMPACT) : NULL;
  json_decref(ctx);
  if (!ctx_text) {
    snprintf(err, cap, "out of memory");
    return 500;
  }
  at_status st = at_chat_template_render(s->chat_tpl, ctx_text, strlen(ctx_text), CHAT_MAX_RENDER,
                                         text, len);
  free(ctx_text);
  if (st == AT_OK) return 0;
  snprintf(err, cap, "%s", at_last_error());
  return st == AT_ERR_LIMIT ? 413 : st == AT_ERR_NOMEM ? 500 : 400;
}
