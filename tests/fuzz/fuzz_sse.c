/* tests/fuzz/fuzz_sse.c — libFuzzer driver for the framing of streamed
 * completions (src/serve/sse.c) together with the text release it carries
 * (src/serve/textstream.c): fuzz_textstream checks what text may be
 * released; this checks that what is released reaches the client intact.
 * The input is split as in fuzz_textstream (stop count, stop lengths, stop
 * bytes, text); stops and text are made valid UTF-8 the way the
 * tokenizer's decoder does (each invalid byte -> U+FFFD), since the server
 * only ever streams decoded text and JSON stops. The text then "arrives" a
 * few characters at a time; each release becomes one chunk event as
 * routes_completions.c sends it, then a finish chunk and [DONE]. The whole
 * stream is read back with an SSE parser written here from the WHATWG
 * rules (lines end at CRLF, LF or CR; "data:" values joined; a blank line
 * dispatches), and:
 *   - every event sent is one event received, in order, [DONE] last;
 *   - every chunk is a text_completion whose texts, joined, are exactly
 *     the released text, and that ends with the stop sequence cut off or
 *     the whole text;
 *   - no release is lost: a chunk is built for every non-empty release.
 * Seeds: tests/fuzz/corpus/sse/. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/sse.h"
#include "serve/textstream.h"

typedef struct buf {
  char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

/* Lossy UTF-8: valid sequences kept, each other byte -> U+FFFD. */
static void lossy(const uint8_t *s, size_t n, buf *out) {
  for (size_t i = 0; i < n;) {
    uint32_t c = s[i], cp, min;
    size_t len = 0;
    if (c < 0x80)
      len = 1, cp = c, min = 0;
    else if ((c & 0xE0) == 0xC0)
      len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
      len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
      len = 4, cp = c & 0x07, min = 0x10000;
    int ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) ok = 0;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = 0;
    if (ok) {
      put(out, (const char *)s + i, len);
      i += len;
    } else {
      put(out, "\xEF\xBF\xBD", 3);
      i++;
    }
  }
}

/* Read an SSE stream back: the data of each dispatched event. */
static size_t parse_sse(const char *s, size_t n, char **events, size_t max) {
  size_t count = 0;
  buf data = {0};
  int have = 0;
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && s[e] != '\n' && s[e] != '\r') e++;
    if (e == n) break; /* an unterminated last line is not dispatched */
    size_t next = e + 1 + (s[e] == '\r' && e + 1 < n && s[e + 1] == '\n');
    if (e == i) { /* blank line: dispatch */
      if (have) {
        if (count >= max) abort();
        if (data.n && data.p[data.n - 1] == '\n') data.p[--data.n] = '\0';
        events[count++] = data.p ? data.p : calloc(1, 1);
        data = (buf){0};
        have = 0;
      }
    } else if (s[i] != ':') {
      const char *colon = memchr(s + i, ':', e - i);
      size_t fl = colon ? (size_t)(colon - (s + i)) : e - i;
      const char *v = colon ? colon + 1 : s + e;
      if (v < s + e && *v == ' ') v++;
      if (fl == 4 && !memcmp(s + i, "data", 4)) {
        put(&data, v, (size_t)(s + e - v));
        put(&data, "\n", 1);
        have = 1;
      }
    }
    i = next;
  }
  free(data.p);
  return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t off = 1;
  int n_stops = data[0] % (TS_MAX_STOPS + 1);
  size_t raw_len[TS_MAX_STOPS];
  for (int i = 0; i < n_stops; i++) {
    if (off >= size) return 0;
    raw_len[i] = 1 + data[off++] % 8;
  }
  buf stopbuf[TS_MAX_STOPS] = {{0}};
  ts_stops st = {.n = n_stops};
  for (int i = 0; i < n_stops; i++) {
    if (off + raw_len[i] > size) {
      for (int k = 0; k < i; k++) free(stopbuf[k].p);
      return 0;
    }
    lossy(data + off, raw_len[i], &stopbuf[i]);
    off += raw_len[i];
    st.s[i] = stopbuf[i].p;
    st.len[i] = stopbuf[i].n;
  }
  buf text = {0};
  lossy(data + off, size - off, &text);
  if (!text.p) put(&text, "", 0);
  const char *t = text.p;
  size_t n = text.n;

  buf stream = {0};
  size_t sent = 0, emitted = 0, stop_at = TS_NO_STOP;
  size_t step = 1 + size % 3; /* characters per arrival */
  size_t have = 0;
  static const char *id = "cmpl-1\n\r:", *model = "decoder";
  for (;;) {
    for (size_t k = 0; k < step && have < n; k++) /* the next character boundary */
      do have++;
      while (have < n && ((unsigned char)t[have] & 0xC0) == 0x80);
    int final = have == n;
    size_t r = ts_release(t, have, emitted, &st, final, &stop_at);
    if (r > emitted) {
      size_t len;
      char *ev = sse_event(sse_chunk_json(id, 1, model, t + emitted, r - emitted, NULL), &len);
      if (!ev) abort(); /* a release that never reaches the client */
      if (strlen(ev) != len || memchr(ev, '\r', len) || memchr(ev, '\n', len - 2)) abort();
      put(&stream, ev, len);
      free(ev);
      sent++;
      emitted = r;
    }
    if (stop_at != TS_NO_STOP || final) break;
  }
  size_t len;
  char *ev = sse_event(
      sse_chunk_json(id, 1, model, "", 0, stop_at != TS_NO_STOP ? "stop" : "length"), &len);
  if (!ev) abort();
  put(&stream, ev, len);
  free(ev);
  put(&stream, SSE_DONE, strlen(SSE_DONE));
  sent += 2;

  /* read it back */
  char *events[4096];
  if (sent > 4096) abort();
  size_t got = parse_sse(stream.p, stream.n, events, 4096);
  if (got != sent || strcmp(events[got - 1], "[DONE]")) abort();
  buf joined = {0};
  put(&joined, "", 0);
  for (size_t i = 0; i + 1 < got; i++) {
    json_error_t e;
    json_t *j = json_loads(events[i], JSON_ALLOW_NUL, &e);
    json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
    json_t *tx = json_object_get(c0, "text");
    if (!j || !json_is_string(tx) ||
        strcmp(json_string_value(json_object_get(j, "object")), "text_completion") ||
        strcmp(json_string_value(json_object_get(j, "id")), id))
      abort();
    json_t *fr = json_object_get(c0, "finish_reason");
    if ((i + 2 == got) != json_is_string(fr)) abort(); /* only the last chunk finishes */
    put(&joined, json_string_value(tx), json_string_length(tx));
    json_decref(j);
  }
  size_t want = stop_at != TS_NO_STOP ? stop_at : n;
  if (emitted != want || joined.n != want || memcmp(joined.p, t, want)) abort();
  for (size_t i = 0; i < got; i++) free(events[i]);
  free(joined.p);
  free(stream.p);
  free(text.p);
  for (int i = 0; i < n_stops; i++) free(stopbuf[i].p);
  return 0;
}
