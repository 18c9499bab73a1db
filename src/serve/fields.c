/* src/serve/fields.c — the body members of each JSON route (fields.h). To
 * add a field: read it in the route's parser, add it to the route's list
 * here, and give it a row in the route's conformance table in docs/api.md
 * (test_serve_routes fails until both agree). Members a route accepts but
 * has no use for (OpenAI's "user", "store", "metadata") are listed too: the
 * table says so. */
#include "serve/fields.h"

#include <stdio.h>
#include <string.h>

const char *const serve_fields_completions[] = {
    "model",  "prompt", "max_tokens",     "n",       "best_of",    "seed",
    "top_k",  "temperature", "top_p",     "presence_penalty",      "frequency_penalty",
    "stream", "stream_options", "echo",   "logprobs", "suffix",    "stop",
    "logit_bias", "user", "store", "metadata", "service_tier", NULL};

const char *const serve_fields_chat[] = {
    "model",   "messages",    "max_tokens", "max_completion_tokens", "n",
    "seed",    "top_k",       "temperature", "top_p",  "presence_penalty",
    "frequency_penalty", "stream", "stream_options", "logprobs", "top_logprobs",
    "stop",    "logit_bias",  "response_format", "user", "store", "metadata",
    "service_tier", NULL};

const char *const serve_fields_embeddings[] = {
    "input", "model", "encoding_format", "dimensions", "user", "truncate", "priority", NULL};

const char *const serve_fields_v1_rerank[] = {
    "model", "query", "documents", "top_n", "return_documents", NULL};

const char *const serve_fields_embed[] = {"inputs",      "truncate",  "truncation_direction",
                                          "prompt_name", "normalize", "dimensions",
                                          "model",       NULL};
const char *const serve_fields_predict[] = {"inputs",     "truncate", "truncation_direction",
                                            "raw_scores", "model",    NULL};
const char *const serve_fields_rerank[] = {"query",      "texts",       "truncate",
                                           "truncation_direction", "raw_scores", "return_text",
                                           "model",      NULL};
const char *const serve_fields_tokenize[] = {"inputs", "add_special_tokens", "prompt_name",
                                             "model", NULL};

const char *serve_fields_unknown(json_t *body, const char *const *fields) {
  const char *k;
  json_t *v;
  json_object_foreach(body, k, v) {
    (void)v;
    const char *const *f = fields;
    while (*f && strcmp(*f, k)) f++;
    if (!*f) return k;
  }
  return NULL;
}

int serve_fields_check(json_t *body, const char *const *fields, const char *route, char *err,
                       size_t cap) {
  const char *k = serve_fields_unknown(body, fields);
  if (!k) return 0;
  if (!strcmp(k, "tools") || !strcmp(k, "tool_choice") || !strcmp(k, "functions") ||
      !strcmp(k, "function_call") || !strcmp(k, "parallel_tool_calls")) {
    snprintf(err, cap, "\"%s\" is not supported: this server has no tool calling", k);
    return 400;
  }
  snprintf(err, cap, "unknown field \"%.64s\": %s takes only ", k, route);
  size_t used = strlen(err);
  for (const char *const *w = fields; *w && used < cap; w++) {
    snprintf(err + used, cap - used, "%s\"%s\"", w == fields ? "" : ", ", *w);
    used += strlen(err + used);
  }
  return 400;
}
