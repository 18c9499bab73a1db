/* src/serve/textstream.c — releasing generated text safely (see
 * textstream.h). */
#include <stdlib.h>
#include <string.h>

#include "serve/textstream.h"

/* Longest suffix of text[0..n) that is a proper prefix of a stop. */
static size_t stop_prefix_hold(const ts_stops *st, const char *text, size_t n) {
  size_t hold = 0;
  for (int s = 0; s < st->n; s++) {
    size_t L = st->len[s];
    for (size_t k = (L - 1 < n ? L - 1 : n); k > hold; k--)
      if (memcmp(text + n - k, st->s[s], k) == 0) {
        hold = k;
        break;
      }
  }
  return hold;
}

/* Trailing U+FFFD characters: an incomplete UTF-8 sequence at the current
 * last token that the next token may complete. */
static size_t replacement_hold(const char *text, size_t n) {
  size_t hold = 0;
  while (n - hold >= 3 && memcmp(text + n - hold - 3, "\xEF\xBF\xBD", 3) == 0) hold += 3;
  return hold;
}

size_t ts_release(const char *text, size_t n, size_t emitted, const ts_stops *st, bool final,
                  size_t *stop_at) {
  *stop_at = TS_NO_STOP;
  if (emitted > n) emitted = n;
  /* A stop can only start where it could not have been seen before: at or
   * after emitted - (longest stop - 1). */
  size_t longest = 0;
  for (int s = 0; s < st->n; s++)
    if (st->len[s] > longest) longest = st->len[s];
  size_t from = longest && emitted >= longest ? emitted - (longest - 1) : 0;
  for (int s = 0; s < st->n; s++) {
    size_t L = st->len[s];
    for (size_t i = from; i + L <= n && i < *stop_at; i++)
      if (text[i] == st->s[s][0] && memcmp(text + i, st->s[s], L) == 0) {
        *stop_at = i;
        break;
      }
  }
  size_t safe;
  if (*stop_at != TS_NO_STOP) {
    safe = *stop_at;
  } else if (final) {
    safe = n;
  } else {
    size_t h1 = replacement_hold(text, n), h2 = stop_prefix_hold(st, text, n);
    safe = n - (h1 > h2 ? h1 : h2);
  }
  return safe < emitted ? emitted : safe;
}

bool ts_detok_step(ts_detok *d, const at_tokenizer *tok, at_tok_workspace *ws, const int32_t *ids,
                   int n, bool final) {
  const char *t;
  size_t plen = 0, len = 0;
  if (d->read_off > d->prefix_off &&
      at_tokenizer_decode(tok, ws, ids + d->prefix_off, (size_t)(d->read_off - d->prefix_off), true,
                          &t, &plen) != AT_OK)
    return true;
  if (n <= d->read_off && !final) return true;
  if (n <= d->prefix_off ||
      at_tokenizer_decode(tok, ws, ids + d->prefix_off, (size_t)(n - d->prefix_off), true, &t,
                          &len) != AT_OK)
    return true;
  bool split = len >= 3 && memcmp(t + len - 3, "\xEF\xBF\xBD", 3) == 0;
  if (len <= plen || (split && !final)) return true; /* nothing new yet */
  size_t add = len - plen;
  if (d->len + add + 1 > d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 256;
    while (cap < d->len + add + 1) cap *= 2;
    char *nb = realloc(d->text, cap);
    if (!nb) return false;
    d->text = nb;
    d->cap = cap;
  }
  memcpy(d->text + d->len, t + plen, add);
  d->len += add;
  d->text[d->len] = '\0';
  d->prefix_off = d->read_off;
  d->read_off = n;
  return true;
}

void ts_detok_free(ts_detok *d) {
  free(d->text);
  memset(d, 0, sizeof *d);
}
