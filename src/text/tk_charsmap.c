/* src/text/tk_charsmap.c — SentencePiece's precompiled_charsmap, the data
 * behind the Precompiled normalizer of XLM-R, T5, ALBERT and other
 * SentencePiece tokenizers converted to tokenizer.json.
 *
 * Format (as the spm_precompiled crate reads it): base64 of a little-endian
 * u32 giving the trie's size in bytes, then size/4 little-endian u32 units
 * of a Darts-style double-array trie over UTF-8 bytes, then a blob of
 * NUL-terminated replacement strings that the trie's leaf values index.
 * A lookup walks the trie along the key and takes the FIRST leaf it meets
 * (the shortest key that prefixes the input), exactly as HF does.
 *
 * Every array access is bounds-checked: a malformed map fails to load with
 * AT_ERR_PARSE, or, when a walk reaches a unit or string offset outside
 * the map, the lookup reports an error instead of reading out of bounds.
 * The parsed map is read-only and may be shared by any number of threads. */
#include <stdlib.h>
#include <string.h>

#include "text/tk.h"

#define FAILC(...) at_fail(AT_ERR_PARSE, "tokenizer.json: normalizer Precompiled: " __VA_ARGS__)

static int b64_val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

at_status tk_base64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  if (n % 4) return FAILC("precompiled_charsmap is not base64 (length %zu is not a multiple of 4)", n);
  size_t pad = 0;
  if (n && s[n - 1] == '=') pad++;
  if (n > 1 && s[n - 2] == '=') pad++;
  uint8_t *o = malloc(n / 4 * 3 + 1);
  if (!o) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  size_t k = 0;
  for (size_t i = 0; i < n; i += 4) {
    int v[4];
    bool last = i + 4 == n;
    for (int j = 0; j < 4; j++) {
      unsigned char c = (unsigned char)s[i + (size_t)j];
      if (last && c == '=' && j >= 4 - (int)pad) { v[j] = 0; continue; }
      v[j] = b64_val(c);
      if (v[j] < 0) {
        free(o);
        return FAILC("precompiled_charsmap is not base64 (bad character at %zu)", i + (size_t)j);
      }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    o[k++] = (uint8_t)(w >> 16);
    if (!last || pad < 2) o[k++] = (uint8_t)(w >> 8);
    if (!last || pad < 1) o[k++] = (uint8_t)w;
  }
  *out = o;
  *out_len = k;
  return AT_OK;
}

static inline uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

at_status tk_charsmap_parse(const uint8_t *b, size_t n, tk_charsmap *m) {
  memset(m, 0, sizeof *m);
  if (n < 4) return FAILC("precompiled_charsmap has %zu bytes, fewer than its 4-byte header", n);
  uint32_t trie_bytes = rd32(b);
  size_t units = trie_bytes / 4; /* as spm_precompiled: a remainder belongs to the strings */
  if (units > (n - 4) / 4)
    return FAILC("precompiled_charsmap declares a %u-byte trie but holds only %zu bytes after its header",
                 trie_bytes, n - 4);
  if (!units) return FAILC("precompiled_charsmap has an empty trie");
  size_t so = 4 + units * 4, sl = n - so;
  if (tk_utf8_valid_prefix(b + so, sl) != sl)
    return FAILC("precompiled_charsmap: the replacement strings are not valid UTF-8");
  m->units = malloc(units * sizeof *m->units);
  m->strs = malloc(sl + 1);
  if (!m->units || !m->strs) {
    tk_charsmap_free(m);
    return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  }
  for (size_t i = 0; i < units; i++) m->units[i] = rd32(b + 4 + i * 4);
  memcpy(m->strs, b + so, sl);
  m->strs[sl] = '\0';
  m->n_units = units;
  m->strs_len = sl;
  return AT_OK;
}

void tk_charsmap_free(tk_charsmap *m) {
  if (!m) return;
  free(m->units);
  free(m->strs);
  memset(m, 0, sizeof *m);
}

/* Darts unit fields (the trie stores them in one u32). */
static inline bool u_has_leaf(uint64_t u) { return (u >> 8) & 1; }
static inline uint64_t u_value(uint64_t u) { return u & 0x7FFFFFFFu; }
static inline uint64_t u_label(uint64_t u) { return u & (0x80000000u | 0xFFu); }
static inline uint64_t u_offset(uint64_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

int tk_charsmap_lookup(const tk_charsmap *m, const uint8_t *key, size_t n, const char **r,
                       size_t *rlen) {
  uint64_t pos = 0;
  uint64_t u = m->units[0];
  pos ^= u_offset(u);
  for (size_t i = 0; i < n; i++) {
    uint8_t c = key[i];
    if (!c) break;
    pos ^= c;
    if (pos >= m->n_units) goto oob;
    u = m->units[pos];
    if (u_label(u) != c) return 0;
    pos ^= u_offset(u);
    if (u_has_leaf(u)) {
      if (pos >= m->n_units) goto oob;
      uint64_t v = u_value(m->units[pos]);
      if (v > m->strs_len || (v < m->strs_len && (m->strs[v] & 0xC0) == 0x80)) {
        at_fail(AT_ERR_PARSE, "normalizer Precompiled: a replacement offset (%llu) lies outside the "
                              "charsmap's strings", (unsigned long long)v);
        return -1;
      }
      *r = m->strs + v;
      *rlen = strlen(m->strs + v);
      return 1;
    }
  }
  return 0;
oob:
  at_fail(AT_ERR_PARSE, "normalizer Precompiled: the charsmap's trie points outside itself (unit %llu of %zu)",
          (unsigned long long)pos, m->n_units);
  return -1;
}
