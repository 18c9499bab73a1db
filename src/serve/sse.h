/* src/serve/sse.h — the wire format of streamed completions (POST
 * /v1/completions and /v1/chat/completions with "stream": true): OpenAI's
 * text_completion and chat.completion.chunk objects as
 * server-sent events, one `data: <compact JSON>` line and a blank line per
 * event, `data: [DONE]` last. Pure; any thread. routes_completions.c
 * appends what these return to a stream; tests/fuzz/fuzz_sse.c reads the
 * stream back with an independent SSE parser. Internal to src/serve. */
#ifndef ANYTIME_SERVE_SSE_H
#define ANYTIME_SERVE_SSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SSE_DONE "data: [DONE]\n\n"

/* One text_completion chunk: choices[0] holds text[0..len) (valid UTF-8),
 * index 0, logprobs null and finish_reason (null when finish is NULL).
 * NULL when the text is not valid UTF-8 or memory runs out. */
json_t *sse_chunk_json(const char *id, long long created, const char *model, const char *text,
                       size_t len, const char *finish);

/* One chunk of either streamed route for choice `index`: a text_completion
 * chunk (chat false: choices[0].text), or a chat.completion.chunk (chat
 * true: choices[0].delta holds "role": "assistant" when role is set, and
 * "content" unless text is NULL). logprobs (consumed; NULL gives null) is
 * the choice's logprobs object. finish NULL gives finish_reason null. NULL
 * when the text is not valid UTF-8 or memory runs out. */
json_t *sse_choice_chunk(const char *id, long long created, const char *model, bool chat,
                         int index, const char *text, size_t len, bool role, json_t *logprobs,
                         const char *finish);

/* The event carrying j (consumed; NULL gives NULL): "data: " + j as compact
 * JSON (which escapes every control character, so it is one line) +
 * "\n\n", NUL-terminated, its length in *len. Free with free(). NULL when
 * j is NULL or memory runs out. */
char *sse_event(json_t *j, size_t *len);

#endif
