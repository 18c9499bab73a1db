/* tests/fuzz/fuzz_vocab_txt.c — libFuzzer driver for BERT WordPiece
 * vocab.txt loading (at_tokenizer_from_vocab_txt, src/text/tk_load.c), the
 * path a model directory without tokenizer.json takes. Input: one flags
 * byte (bit 0: lowercase) then the file. The file is re-read here by the
 * rules Hugging Face's load_vocab() follows (one token per '\n'-ended line,
 * id = line number, a later duplicate wins; we also drop trailing '\r',
 * ' ' and '\t', and a last line without '\n' that is then empty), and:
 *   - it loads only if every line is valid UTF-8 (checked here with an
 *     independent decoder) and [UNK], [CLS] and [SEP] are tokens;
 *   - when it loads, every token (without a NUL) maps to the id of its last
 *     line and back; the vocabulary size is the number of lines;
 *   - encoding the vocabulary's own lines and a few fixed texts gives ids
 *     that all name tokens, framed by [CLS] ... [SEP], and they decode.
 * Seeds: tests/fuzz/corpus/vocab_txt/ (cut-down vocab.txt files of
 * models/). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/tokenizer.h"

/* Strict UTF-8 (RFC 3629): no overlongs, no surrogates, <= U+10FFFF. */
static int utf8_ok(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n;) {
    uint32_t c = s[i], cp, min;
    size_t len;
    if (c < 0x80) {
      i++;
      continue;
    }
    if ((c & 0xE0) == 0xC0)
      len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
      len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
      len = 4, cp = c & 0x07, min = 0x10000;
    else
      return 0;
    if (i + len > n) return 0;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    i += len;
  }
  return 1;
}

typedef struct line {
  const char *s;
  size_t len;
} line;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 1 << 16) return 0;
  bool lower = data[0] & 1;
  const char *txt = (const char *)data + 1;
  size_t len = size - 1;
  /* the reference reading */
  line *lines = malloc((len + 1) * sizeof *lines);
  if (!lines) return 0;
  size_t n = 0;
  int valid = 1;
  for (size_t i = 0; i < len;) {
    const char *nl = memchr(txt + i, '\n', len - i);
    size_t e = nl ? (size_t)(nl - txt) : len, l = e - i;
    while (l && (txt[i + l - 1] == '\r' || txt[i + l - 1] == ' ' || txt[i + l - 1] == '\t')) l--;
    if (!utf8_ok((const uint8_t *)txt + i, l)) valid = 0;
    if (nl || l) lines[n++] = (line){txt + i, l}; /* a blank unended last line is no token */
    i = e + 1;
  }
  int has[3] = {0, 0, 0};
  static const char *sp[3] = {"[UNK]", "[CLS]", "[SEP]"};
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++)
      if (lines[i].len == 5 && !memcmp(lines[i].s, sp[k], 5)) has[k] = 1;
  char *copy = malloc(len ? len : 1);
  if (!copy) abort();
  memcpy(copy, txt, len);
  at_tokenizer *t = NULL;
  at_status st = at_tokenizer_from_vocab_txt(copy, len, lower, &t);
  if (st == AT_OK) {
    if (!valid || !has[0] || !has[1] || !has[2]) abort();
    long max_id = -1;
    char buf[1024];
    for (size_t i = 0; i < n; i++) {
      if (lines[i].len >= sizeof buf || memchr(lines[i].s, '\0', lines[i].len)) continue;
      memcpy(buf, lines[i].s, lines[i].len);
      buf[lines[i].len] = '\0';
      size_t last = i;
      for (size_t j = i + 1; j < n; j++)
        if (lines[j].len == lines[i].len && !memcmp(lines[j].s, lines[i].s, lines[i].len)) last = j;
      if (at_tokenizer_token_to_id(t, buf) != (int32_t)last) abort();
      const char *back = at_tokenizer_id_to_token(t, (int32_t)last);
      if (!back || strcmp(back, buf)) abort();
      if ((long)last > max_id) max_id = (long)last;
    }
    /* the last line is the last occurrence of its text: ids end at n - 1 */
    if (at_tokenizer_vocab_size(t) != n || (size_t)(max_id + 1) > n) abort();
    at_tok_workspace *ws = NULL;
    if (at_tok_workspace_create(&ws) != AT_OK) abort();
    static const char *fixed[] = {"Hello, world! unaffable", "", "caf\xc3\xa9 \xe4\xb8\xad [MASK]"};
    int32_t cls = at_tokenizer_token_to_id(t, "[CLS]"), sep = at_tokenizer_token_to_id(t, "[SEP]");
    for (size_t i = 0; i < n + 3 && i < 64; i++) {
      const char *s = i < 3 ? fixed[i] : lines[i - 3].s;
      size_t sl = i < 3 ? strlen(fixed[i]) : lines[i - 3].len;
      at_encoding e;
      if (at_tokenizer_encode(t, ws, s, sl, NULL, 0, NULL, &e) != AT_OK) continue; /* e.g. a NUL */
      if (e.n < 2 || e.ids[0] != cls || e.ids[e.n - 1] != sep) abort();
      int32_t *ids = malloc(e.n * sizeof *ids);
      if (!ids) abort();
      memcpy(ids, e.ids, e.n * sizeof *ids);
      for (size_t k = 0; k < e.n; k++)
        if (ids[k] < 0 || (size_t)ids[k] >= at_tokenizer_vocab_size(t) ||
            !at_tokenizer_id_to_token(t, ids[k]))
          abort();
      const char *out;
      if (at_tokenizer_decode(t, ws, ids, e.n, true, &out, NULL) != AT_OK) abort();
      free(ids);
    }
    at_tok_workspace_destroy(ws);
    at_tokenizer_destroy(t);
  } else if (valid && has[0] && has[1] && has[2] && n > 0) {
    abort(); /* a well-formed vocabulary refused */
  }
  free(copy);
  free(lines);
  return 0;
}
