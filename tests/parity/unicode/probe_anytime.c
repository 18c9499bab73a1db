/* tests/parity/unicode/probe_anytime.c — anytime's side of probe_hf.js: the
 * same properties for every Unicode scalar value, computed by src/text/.
 * Build: see gen_compat.sh. Dev tool, not part of the test suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tk.h"

static at_tok_workspace *ws;

static size_t run(const char *json, const uint8_t *in, size_t len, char *out) {
  static at_tokenizer *cache[16];
  static const char *keys[16];
  int k = 0;
  while (keys[k] && keys[k] != json) k++;
  if (!keys[k]) {
    keys[k] = json;
    if (at_tokenizer_from_json(json, strlen(json), &cache[k]) != AT_OK) {
      fprintf(stderr, "%s\n", at_last_error());
      exit(1);
    }
  }
  const at_tokenizer *t = cache[k];
  ws->nb_len = 0;
  TK_RESERVE(ws->nb, ws->nb_cap, 256);
  TK_RESERVE(ws->al, ws->al_cap, 256);
  memcpy(ws->nb, in, len);
  for (size_t i = 0; i < len; i++) { ws->al[i].s = (uint32_t)i; ws->al[i].e = (uint32_t)i + 1; }
  ws->nb_len = len;
  tk_split sp = {0, (uint32_t)len, 0, -1};
  if (t->norm) {
    tk_normalize(t->norm, ws, &sp);
    memcpy(out, ws->nb + sp.off, sp.len);
    return sp.len;
  }
  ws->sp[0] = sp;
  ws->sp_n = 1;
  tk_pretokenize(t->pretok, ws);
  return ws->sp_n;
}

#define MODEL "\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"a\":0},\"unk_token\":\"a\"}"
static const char *J_CLEAN = "{\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":false,\"strip_accents\":false,\"lowercase\":false}," MODEL "}";
static const char *J_STRIP = "{\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":false,\"handle_chinese_chars\":false,\"strip_accents\":true,\"lowercase\":false}," MODEL "}";
static const char *J_LOWER = "{\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":false,\"handle_chinese_chars\":false,\"strip_accents\":false,\"lowercase\":true}," MODEL "}";
static const char *J_NFKC = "{\"normalizer\":{\"type\":\"NFKC\"}," MODEL "}";
static const char *J_NFD = "{\"normalizer\":{\"type\":\"NFD\"}," MODEL "}";
static const char *J_BERT = "{\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"}," MODEL "}";
static const char *J_GPT2 = "{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}," MODEL "}";
static const char *J_WS = "{\"pre_tokenizer\":{\"type\":\"Whitespace\"}," MODEL "}";

static void hex(const char *s, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n; i++) printf("%02x", (uint8_t)s[i]);
  putchar('"');
}

int main(void) {
  at_tok_workspace_create(&ws);
  TK_RESERVE(ws->sp, ws->sp_cap, 4);
  char o[256];
  uint8_t b[16];
  for (uint32_t cp = 0; cp < 0x110000; cp++) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    uint32_t n = tk_utf8_enc(cp, b + 1);
    b[0] = 'a'; b[n + 1] = 'a';
    size_t l = run(J_CLEAN, b, n + 2, o);
    const char *cls = (l == 2) ? "X" : (l == 3 && o[1] == ' ') ? "W" : "K";
    printf("[%u,\"%s\",", cp, cls);
    l = run(J_STRIP, b + 1, n, o); hex(o, l); putchar(',');
    l = run(J_LOWER, b + 1, n, o); hex(o, l); putchar(',');
    printf("%zu,", run(J_BERT, b, n + 2, o));
    l = run(J_NFKC, b + 1, n, o); hex(o, l); putchar(',');
    l = run(J_NFD, b + 1, n, o); hex(o, l); putchar(',');
    printf("%zu,", run(J_GPT2, b, n + 1, o));
    b[0] = '1';
    printf("%zu,", run(J_GPT2, b, n + 1, o));
    b[0] = 'a';
    printf("%zu,", run(J_WS, b, n + 1, o));
    b[0] = '.';
    printf("%zu]\n", run(J_WS, b, n + 1, o));
  }
  return 0;
}
