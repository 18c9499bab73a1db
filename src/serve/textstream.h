/* src/serve/textstream.h — what part of a growing generated text may be
 * released to the client: stop sequences end it (the first occurrence, and
 * the stop itself is never released), and while streaming, bytes that could
 * still turn into a stop sequence or that are the replacement character of
 * a UTF-8 sequence split across tokens are held back. Pure functions;
 * internal to src/serve (fuzzed by tests/fuzz/fuzz_textstream.c). And the
 * incremental decoding that produces that text from generated ids. */
#ifndef ANYTIME_SERVE_TEXTSTREAM_H
#define ANYTIME_SERVE_TEXTSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/tokenizer.h"

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

/* Incremental detokenisation of a growing list of generated ids. Each step
 * decodes the window ids[prefix_off, n) and its context part
 * [prefix_off, read_off) alone and appends the difference: the text the new
 * ids add in the context of the ones before them (a decoder may join or
 * space tokens differently at the start of a text). While the window ends
 * in U+FFFD (a UTF-8 character split across ids) nothing is added and the
 * window grows; a `final` step adds whatever is left. A step costs the
 * window, not the whole text (decoding from the first id for every new one
 * is O(n^2) per sequence). After a final step `text` equals the decode of
 * all n ids whenever the decoder is a concatenation of per-token pieces
 * past the first (byte-level BPE, Metaspace, WordPiece); tests/unit/
 * test_serve_detok.c holds that on the shipped decoder's tokenizer. */
typedef struct ts_detok {
  char *text;        /* NUL-terminated; NULL until the first text */
  size_t len, cap;
  int prefix_off, read_off;
} ts_detok;

/* One step over ids[0..n) (n only grows between steps). Returns false when
 * memory runs out (text unchanged). An id the decoder refuses adds nothing. */
bool ts_detok_step(ts_detok *d, const at_tokenizer *tok, at_tok_workspace *ws, const int32_t *ids,
                   int n, bool final);
void ts_detok_free(ts_detok *d);

#endif
