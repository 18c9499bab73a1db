/* tests/fuzz/fuzz_text_charsmap.c — libFuzzer driver for SentencePiece's
 * precompiled_charsmap (the Precompiled normalizer): any bytes must parse
 * or be rejected with AT_ERR_PARSE; a map that parses must answer every
 * lookup with a replacement inside its strings, "none", or an error — never
 * a crash or an out-of-bounds read — and must normalise text through a whole
 * tokenizer the same way (encode succeeds or fails with a status).
 *
 * Input: two bytes (little-endian) give the length L of the charsmap, the
 * next L bytes are the charsmap as decoded bytes, the rest is the text.
 * The base64 decoder is exercised on the same input read as a string.
 * Seeds: tests/fuzz/corpus/text_charsmap/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/tokenizer.h"
#include "text/tk.h"

static char *base64(const uint8_t *b, size_t n) {
  static const char *al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *o = malloc((n + 2) / 3 * 4 + 1), *w = o;
  if (!o) return NULL;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
    *w++ = al[v >> 18 & 63];
    *w++ = al[v >> 12 & 63];
    *w++ = i + 1 < n ? al[v >> 6 & 63] : '=';
    *w++ = i + 2 < n ? al[v & 63] : '=';
  }
  *w = '\0';
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* the base64 decoder on the raw input */
  uint8_t *raw;
  size_t rl;
  if (tk_base64_decode((const char *)data, size, &raw, &rl) == AT_OK) free(raw);

  if (size < 2) return 0;
  size_t L = (size_t)data[0] | (size_t)data[1] << 8;
  if (L > size - 2) L = size - 2;
  uint8_t *map = malloc(L ? L : 1); /* exact-size copies for ASan */
  size_t tl = size - 2 - L;
  char *text = malloc(tl ? tl : 1);
  if (!map || !text) abort();
  memcpy(map, data + 2, L);
  memcpy(text, data + 2 + L, tl);

  tk_charsmap m;
  if (tk_charsmap_parse(map, L, &m) == AT_OK) {
    /* every prefix of the text as a key */
    for (size_t i = 0; i < tl && i < 64; i++) {
      const char *r;
      size_t n;
      int f = tk_charsmap_lookup(&m, (const uint8_t *)text + i, tl - i, &r, &n);
      if (f == 1 && (r < m.strs || r + n > m.strs + m.strs_len)) abort();
    }
    tk_charsmap_free(&m);
    /* and through a tokenizer: Precompiled then Unigram */
    char *b64 = base64(map, L);
    if (!b64) abort();
    size_t jl = strlen(b64) + 512;
    char *json = malloc(jl);
    if (!json) abort();
    snprintf(json, jl,
             "{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Precompiled\","
             "\"precompiled_charsmap\":\"%s\"},{\"type\":\"Nmt\"}]},"
             "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\",\"split\":true},"
             "\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":true,"
             "\"vocab\":[[\"<unk>\",0],[\"a\",-1],[\"\\u2581\",-2],[\"<0x41>\",-3],[\"ab\",-1.5]]}}",
             b64);
    at_tokenizer *t = NULL;
    if (at_tokenizer_from_json(json, strlen(json), &t) != AT_OK) abort(); /* parsed above */
    at_tok_workspace *ws = NULL;
    if (at_tok_workspace_create(&ws) != AT_OK) abort();
    at_encoding e;
    at_encode_params p = at_encode_default_params();
    p.offsets = AT_OFFSETS_CHARS;
    if (at_tokenizer_encode(t, ws, text, tl, NULL, 0, &p, &e) == AT_OK) {
      for (size_t i = 0; i < e.n; i++)
        if (e.offsets[i][0] > e.offsets[i][1] || e.offsets[i][1] > tl) abort();
    }
    at_tok_workspace_destroy(ws);
    at_tokenizer_destroy(t);
    free(json);
    free(b64);
  }
  free(map);
  free(text);
  return 0;
}
