/* src/serve/textstream.h — what part of a growing generated text may be
 * released to the client: stop sequences end it (the first occurrence, and
 * the stop itself is never released), and while streaming, bytes that could
 * still turn into a stop sequence or that are the replacement character of
 * a UTF-8 sequence split across tokens are held back. Pure functions;
 * internal to src/serve (fuzzed by tests/fuzz/fuzz_textstream.c). */
#ifndef ANYTIME_SERVE_TEXTSTREAM_H
#define ANYTIME_SERVE_TEXTSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#define TS_MAX_STOPS 4
#define TS_MAX_STOP_LEN 256
#define TS_NO_STOP ((size_t)-1)

typedef struct ts_stops {
  const char *s[TS_MAX_STOPS];
  size_t len[TS_MAX_STOPS]; /* each 1..TS_MAX_STOP_LEN */
  int n;
} ts_stops;

/* text[0..n) is the whole text so far, of which `emitted` bytes were
 * released before (and contain no stop sequence). Returns how many bytes
 * may be released in total now (>= emitted, <= n) and sets *stop_at to the
 * offset of the earliest stop sequence, or TS_NO_STOP. `final`: the text
 * is complete, so nothing needs holding back. */
size_t ts_release(const char *text, size_t n, size_t emitted, const ts_stops *st, bool final,
                  size_t *stop_at);

#endif
