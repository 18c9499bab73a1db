/* src/serve/sse.c — streamed completion chunks as server-sent events (see
 * sse.h). */
#include "serve/sse.h"

#include <stdlib.h>
#include <string.h>

json_t *sse_chunk_json(const char *id, long long created, const char *model, const char *text,
                       size_t len, const char *finish) {
  return sse_choice_chunk(id, created, model, false, 0, text, len, false, NULL, finish);
}

json_t *sse_choice_chunk(const char *id, long long created, const char *model, bool chat,
                         int index, const char *text, size_t len, bool role, json_t *logprobs,
                         const char *finish) {
  json_t *choice = json_pack("{s:i}", "index", index);
  if (!choice) {
    json_decref(logprobs);
    return NULL;
  }
  json_t *t = text ? json_stringn(text, len) : NULL;
  if (text && !t) {
    json_decref(logprobs);
    json_decref(choice);
    return NULL;
  }
  if (chat) {
    json_t *delta = json_object();
    if (role) json_object_set_new(delta, "role", json_string("assistant"));
    if (t) json_object_set_new(delta, "content", t);
    json_object_set_new(choice, "delta", delta);
  } else {
    json_object_set_new(choice, "text", t ? t : json_string(""));
  }
  json_object_set_new(choice, "logprobs", logprobs ? logprobs : json_null());
  json_object_set_new(choice, "finish_reason", finish ? json_string(finish) : json_null());
  return json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", id, "object",
                   chat ? "chat.completion.chunk" : "text_completion", "created",
                   (json_int_t)created, "model", model, "choices", choice);
}

char *sse_event(json_t *j, size_t *len) {
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!s) return NULL;
  size_t n = strlen(s);
  char *e = malloc(n + 9);
  if (e) {
    memcpy(e, "data: ", 6);
    memcpy(e + 6, s, n);
    memcpy(e + 6 + n, "\n\n", 3);
    *len = n + 8;
  }
  free(s);
  return e;
}
