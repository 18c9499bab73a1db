/* tests/fuzz/fuzz_textstream.c — libFuzzer driver for the completions
 * route's text release (src/serve/textstream.c). The input is split into up
 * to four stop sequences and a text; the text is then "generated" a byte
 * or a few at a time, and after each step the invariants must hold:
 *   - released bytes only grow and never exceed the text;
 *   - released text never contains a stop sequence;
 *   - when a stop is reported, it is really there, nothing before it in
 *     the text contains a stop, and everything up to it is released;
 *   - at the end (final) without a stop, the whole text is released.
 * Seeds: tests/fuzz/corpus/textstream/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/textstream.h"

static int contains(const char *t, size_t n, const char *s, size_t L) {
  for (size_t i = 0; i + L <= n; i++)
    if (memcmp(t + i, s, L) == 0) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* layout: [n_stops][len_1]..[len_k] stop bytes... text bytes */
  if (size < 1) return 0;
  ts_stops st = {.n = data[0] % (TS_MAX_STOPS + 1)};
  size_t off = 1;
  for (int i = 0; i < st.n; i++) {
    if (off >= size) return 0;
    st.len[i] = 1 + data[off++] % 8;
  }
  for (int i = 0; i < st.n; i++) {
    if (off + st.len[i] > size) return 0;
    st.s[i] = (const char *)data + off;
    off += st.len[i];
  }
  const char *text = (const char *)data + off;
  size_t n = size - off, emitted = 0, stop_at = TS_NO_STOP;
  size_t step = 1 + (size % 3);
  for (size_t have = 0; have <= n; have += step) {
    int final = have + step > n;
    if (final) have = n;
    size_t r = ts_release(text, have, emitted, &st, final, &stop_at);
    if (r < emitted || r > have) abort();
    for (int i = 0; i < st.n; i++)
      if (contains(text, r, st.s[i], st.len[i])) abort();
    emitted = r;
    if (stop_at != TS_NO_STOP) {
      int real = 0;
      for (int i = 0; i < st.n; i++)
        if (stop_at + st.len[i] <= have && memcmp(text + stop_at, st.s[i], st.len[i]) == 0)
          real = 1;
      if (!real || r != stop_at) abort();
      for (int i = 0; i < st.n; i++) {
        size_t lim = stop_at + st.len[i] - 1; /* an earlier occurrence would start before stop_at */
        if (lim > have) lim = have;
        if (contains(text, lim, st.s[i], st.len[i])) abort();
      }
      return 0;
    }
    if (final) {
      if (r != n) abort();
      return 0;
    }
  }
  return 0;
}
