/* tests/fuzz/fuzz_base64.c — libFuzzer driver for the base64 encoder of
 * `encoding_format: base64` embeddings (serve_b64_encode, src/serve/b64.c).
 * anytime has no decoder, so both references are written here, bit by bit
 * from RFC 4648 rather than by table lookup on 3-byte groups:
 *   - the output equals an independent encoder (6 bits at a time from a
 *     bit cursor, '=' to a multiple of 4), and is (n + 2) / 3 * 4 chars of
 *     the standard alphabet, NUL-terminated;
 *   - decoding it with an independent decoder gives the input back
 *     (decode(encode(x)) == x), and its padding is canonical (unused bits
 *     of the last character are zero);
 *   - as the route uses it: the input read as little-endian f32 values
 *     survives the trip bit for bit (NaN payloads and -0 included).
 * Seeds: tests/fuzz/corpus/base64/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/b64.h"

static const char k_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *ref_encode(const uint8_t *p, size_t n, size_t *len) {
  size_t bits = n * 8, out = 0;
  char *o = malloc((bits + 5) / 6 + 4);
  if (!o) abort();
  for (size_t b = 0; b < bits; b += 6) {
    unsigned v = 0;
    for (size_t k = 0; k < 6; k++) {
      size_t i = b + k;
      unsigned bit = i < bits ? (p[i / 8] >> (7 - i % 8)) & 1u : 0u;
      v = v << 1 | bit;
    }
    o[out++] = k_alpha[v];
  }
  while (out % 4) o[out++] = '=';
  o[out] = '\0';
  *len = out;
  return o;
}

static int val(char c) {
  const char *q = c ? strchr(k_alpha, c) : NULL;
  return q ? (int)(q - k_alpha) : -1;
}

/* Strict decoder: 4-character groups, '=' only at the end, zero pad bits. */
static uint8_t *ref_decode(const char *s, size_t len, size_t *n) {
  if (len % 4) return NULL;
  size_t pad = 0;
  while (pad < 2 && pad < len && s[len - 1 - pad] == '=') pad++;
  size_t chars = len - pad, bits = chars * 6;
  uint8_t *o = calloc(bits / 8 + 1, 1);
  if (!o) abort();
  for (size_t c = 0; c < chars; c++) {
    int v = val(s[c]);
    if (v < 0) {
      free(o);
      return NULL;
    }
    for (size_t k = 0; k < 6; k++) {
      size_t i = c * 6 + k;
      unsigned bit = (unsigned)v >> (5 - k) & 1u;
      if (i / 8 < bits / 8)
        o[i / 8] |= (uint8_t)(bit << (7 - i % 8));
      else if (bit) { /* a set bit in the padding: not canonical */
        free(o);
        return NULL;
      }
    }
  }
  *n = bits / 8;
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *got = serve_b64_encode(data, size);
  if (!got) return 0;
  size_t rlen;
  char *want = ref_encode(data, size, &rlen);
  if (strlen(got) != (size + 2) / 3 * 4 || strlen(got) != rlen || memcmp(got, want, rlen + 1))
    abort();
  size_t n = 0;
  uint8_t *back = ref_decode(got, strlen(got), &n);
  if (!back || n != size || (size && memcmp(back, data, size))) abort();
  /* f32 view, as finish_embeddings() sends it */
  for (size_t i = 0; i + 4 <= size; i += 4) {
    float a, b;
    memcpy(&a, data + i, 4);
    memcpy(&b, back + i, 4);
    if (memcmp(&a, &b, 4)) abort();
  }
  free(back);
  free(want);
  free(got);
  return 0;
}
