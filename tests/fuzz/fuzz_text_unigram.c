/* tests/fuzz/fuzz_text_unigram.c — libFuzzer driver for the Unigram model:
 * the loader on vocabularies made from the input, and the lattice/Viterbi
 * encoder on text made from the input, with unk fusing and byte fallback.
 * Loading must succeed or fail with a status; encoding must succeed or fail
 * with a status; offsets must lie within the text; token strings must have
 * the length token_lens says; decode of the ids must not fail on memory.
 *
 * Input: byte 0 = flags (bit 0 byte_fallback, bit 1 unk_id present, bit 2
 * Precompiled-free Nmt+NFKC normalizer, bits 3-4 Metaspace prepend scheme,
 * bit 5 Metaspace split, bit 6 a score-tie vocabulary); then vocabulary
 * lines separated by '\n' up to the first NUL (each line: one score byte,
 * then the piece); then the text. Pieces are written into tokenizer.json
 * with JSON escapes, so invalid UTF-8 reaches the loader's own checks.
 * Seeds: tests/fuzz/corpus/text_unigram/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/tokenizer.h"

static void put(char **w, const char *s) {
  size_t n = strlen(s);
  memcpy(*w, s, n);
  *w += n;
}

static void put_escaped(char **w, const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint8_t c = s[i];
    if (c == '"' || c == '\\') { *(*w)++ = '\\'; *(*w)++ = (char)c; }
    else if (c < 0x20) *w += sprintf(*w, "\\u%04x", c);
    else *(*w)++ = (char)c;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t fl = data[0];
  const uint8_t *rest = data + 1;
  size_t rn = size - 1;
  const uint8_t *nul = memchr(rest, 0, rn);
  size_t vn = nul ? (size_t)(nul - rest) : rn;
  const uint8_t *text_src = nul ? nul + 1 : rest + rn;
  size_t tl = nul ? rn - vn - 1 : 0;

  char *json = malloc(vn * 6 + (vn + 1) * 32 + 2048); /* escapes, per-line overhead */
  if (!json) abort();
  char *w = json;
  static const char *schemes[] = {"always", "first", "never", "always"};
  w += sprintf(w, "{%s\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\","
                  "\"prepend_scheme\":\"%s\",\"split\":%s},\"decoder\":{\"type\":\"Metaspace\"},"
                  "\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true}],"
                  "\"model\":{\"type\":\"Unigram\",\"byte_fallback\":%s,\"unk_id\":%s,\"vocab\":[[\"<unk>\",0]",
               (fl & 4) ? "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Nmt\"},{\"type\":\"NFKC\"}]}," : "",
               schemes[(fl >> 3) & 3], (fl & 32) ? "true" : "false", (fl & 1) ? "true" : "false",
               (fl & 2) ? "0" : "null");
  size_t i = 0;
  while (i < vn) {
    const uint8_t *nl = memchr(rest + i, '\n', vn - i);
    size_t e = nl ? (size_t)(nl - rest) : vn;
    if (e > i) {
      double score = (fl & 64) ? -1.0 : (double)(int8_t)rest[i] / 4.0;
      w += sprintf(w, ",[\"");
      put_escaped(&w, rest + i + 1, e - i - 1);
      w += sprintf(w, "\",%.17g]", score);
    }
    i = e + 1;
  }
  for (int b = 0x41; b < 0x45; b++) w += sprintf(w, ",[\"<0x%02X>\",-5]", b);
  put(&w, "]}}");
  *w = '\0';

  at_tokenizer *t = NULL;
  if (at_tokenizer_from_json(json, (size_t)(w - json), &t) == AT_OK) {
    char *text = malloc(tl ? tl : 1); /* exact-size copy for ASan */
    at_tok_workspace *ws = NULL;
    if (!text || at_tok_workspace_create(&ws) != AT_OK) abort();
    memcpy(text, text_src, tl);
    at_encoding e;
    at_encode_params p = at_encode_default_params();
    p.offsets = (fl & 128) ? AT_OFFSETS_CHARS : AT_OFFSETS_BYTES;
    if (at_tokenizer_encode(t, ws, text, tl, NULL, 0, &p, &e) == AT_OK) {
      for (size_t k = 0; k < e.n; k++) {
        if (e.offsets[k][0] > e.offsets[k][1] || e.offsets[k][1] > tl) abort();
        if (e.token_lens[k] < strlen(e.tokens[k])) abort();
        if (e.token_lens[k] && e.tokens[k][e.token_lens[k]]) abort(); /* NUL after the string */
      }
      int32_t *ids = malloc((e.n ? e.n : 1) * sizeof *ids);
      if (!ids) abort();
      memcpy(ids, e.ids, e.n * sizeof *ids);
      const char *out;
      (void)at_tokenizer_decode(t, ws, ids, e.n, false, &out, NULL);
      free(ids);
    }
    at_tok_workspace_destroy(ws);
    at_tokenizer_destroy(t);
    free(text);
  }
  free(json);
  return 0;
}
