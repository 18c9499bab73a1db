/* tests/unit/test_text_unigram.c — the SentencePiece parts of the tokenizer
 * on hand-made inputs: the precompiled_charsmap parser and lookup (a tiny
 * double-array trie built here unit by unit, and malformed maps that must
 * fail with a clear error), the Precompiled and Nmt normalizers through a
 * whole tokenizer, and the Unigram best path on a tiny vocabulary (scores,
 * ties, unk fusing, byte fallback, the token strings HF reports). Parity
 * with Hugging Face on real SentencePiece models is tests/parity/. */
#include "anytime/tokenizer.h"
#include "testutil.h"
#include "text/tk.h"

/* ------------------------------------------------------------- charsmap */
/* A double array of n_units (<= 512) units: root offset 1; key "a" (at
 * 1^'a' = 96) has a leaf whose value unit sits at 96^1 = 97 -> offset 0
 * ("b"); key "ab" continues from 97: 'b' at 97^'b' = 3, its value at
 * 3^1 = 2 -> offset 2 ("XY"); key "c" (at 98) is a path with no leaf. */
#define UNIT(label, leaf, off) ((uint32_t)(label) | ((leaf) ? 1u << 8 : 0u) | ((uint32_t)(off) << 10))
static size_t make_map(uint8_t *buf, size_t n_units, const char *strs, size_t strs_len) {
  uint32_t u[512] = {0};
  u[0] = UNIT(0, 0, 1);
  u[96] = UNIT('a', 1, 1);
  u[97] = 0; /* value 0: "b" */
  u[3] = UNIT('b', 1, 1);
  u[2] = 2; /* value 2: "XY" */
  u[98] = UNIT('c', 0, 1);
  uint32_t bytes = (uint32_t)(n_units * 4);
  memcpy(buf, &bytes, 4);
  memcpy(buf + 4, u, n_units * 4);
  memcpy(buf + 4 + n_units * 4, strs, strs_len);
  return 4 + n_units * 4 + strs_len;
}

static int lookup(const tk_charsmap *m, const char *key, char *out) {
  const char *r;
  size_t rl;
  int f = tk_charsmap_lookup(m, (const uint8_t *)key, strlen(key), &r, &rl);
  if (f == 1) { memcpy(out, r, rl); out[rl] = '\0'; }
  return f;
}

static void test_charsmap_lookup(void **state) {
  (void)state;
  static uint8_t buf[4 + 512 * 4 + 16];
  size_t n = make_map(buf, 512, "b\0XY\0", 5);
  tk_charsmap m;
  assert_int_equal(tk_charsmap_parse(buf, n, &m), AT_OK);
  assert_int_equal(m.n_units, 512);
  char out[16];
  assert_int_equal(lookup(&m, "a", out), 1);
  assert_string_equal(out, "b");
  assert_int_equal(lookup(&m, "ab", out), 1); /* the FIRST leaf on the path wins, as HF */
  assert_string_equal(out, "b");
  assert_int_equal(lookup(&m, "x", out), 0);
  assert_int_equal(lookup(&m, "c", out), 0);  /* a path without a leaf */
  assert_int_equal(lookup(&m, "", out), 0);
  tk_charsmap_free(&m);
  tk_charsmap_free(&m); /* idempotent */
}

static void test_charsmap_malformed(void **state) {
  (void)state;
  static uint8_t buf[4 + 512 * 4 + 16];
  tk_charsmap m;
  assert_int_equal(tk_charsmap_parse(buf, 3, &m), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "header"));
  size_t n = make_map(buf, 512, "b\0XY\0", 5);
  uint32_t big = 4 * 1000;
  memcpy(buf, &big, 4);
  assert_int_equal(tk_charsmap_parse(buf, n, &m), AT_ERR_PARSE); /* trie longer than the data */
  assert_non_null(strstr(at_last_error(), "declares"));
  uint32_t zero = 0;
  memcpy(buf, &zero, 4);
  assert_int_equal(tk_charsmap_parse(buf, n, &m), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "empty trie"));
  n = make_map(buf, 512, "b\0\xff\xfe\0", 5);
  assert_int_equal(tk_charsmap_parse(buf, n, &m), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "UTF-8"));
  /* a trie of 97 units: "a" leads to a leaf value outside the array */
  n = make_map(buf, 97, "b\0", 2);
  assert_int_equal(tk_charsmap_parse(buf, n, &m), AT_OK);
  char out[16];
  assert_int_equal(lookup(&m, "a", out), -1);
  assert_non_null(strstr(at_last_error(), "outside"));
  assert_int_equal(lookup(&m, "z", out), -1); /* 1^'z' = 123 >= 97 */
  tk_charsmap_free(&m);
  /* a leaf value past the strings */
  n = make_map(buf, 512, "b", 1);
  memcpy(buf + 4 + 97 * 4, &(uint32_t){7}, 4);
  assert_int_equal(tk_charsmap_parse(buf, n, &m), AT_OK);
  assert_int_equal(lookup(&m, "a", out), -1);
  tk_charsmap_free(&m);
  /* base64 */
  uint8_t *raw;
  size_t rl;
  assert_int_equal(tk_base64_decode("QUJD", 4, &raw, &rl), AT_OK);
  assert_int_equal(rl, 3);
  assert_memory_equal(raw, "ABC", 3);
  free(raw);
  assert_int_equal(tk_base64_decode("QUI=", 4, &raw, &rl), AT_OK);
  assert_int_equal(rl, 2);
  free(raw);
  assert_int_equal(tk_base64_decode("QQ==", 4, &raw, &rl), AT_OK);
  assert_int_equal(rl, 1);
  free(raw);
  assert_int_equal(tk_base64_decode("QUJ", 3, &raw, &rl), AT_ERR_PARSE);
  assert_int_equal(tk_base64_decode("QU*D", 4, &raw, &rl), AT_ERR_PARSE);
  assert_int_equal(tk_base64_decode("Q=JD", 4, &raw, &rl), AT_ERR_PARSE);
}

/* base64 of a map, for tokenizer.json */
static char *b64(const uint8_t *b, size_t n) {
  static const char *al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *o = malloc((n + 2) / 3 * 4 + 1), *w = o;
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

static at_tokenizer *load(const char *json, at_status want) {
  at_tokenizer *t = NULL;
  at_status st = at_tokenizer_from_json(json, strlen(json), &t);
  if (st != want) fail_msg("load: want %s, got %s: %s", at_status_name(want), at_status_name(st), at_last_error());
  return t;
}

/* "token@s-e ..." with byte offsets */
static const char *enc(const at_tokenizer *t, const char *text, at_status *st_out) {
  static char out[2048];
  at_tok_workspace *ws;
  assert_int_equal(at_tok_workspace_create(&ws), AT_OK);
  at_encoding e;
  at_encode_params p = at_encode_default_params();
  at_status st = at_tokenizer_encode(t, ws, text, strlen(text), NULL, 0, &p, &e);
  if (st_out) *st_out = st;
  size_t w = 0;
  out[0] = '\0';
  for (size_t i = 0; st == AT_OK && i < e.n && w < sizeof out - 64; i++)
    w += (size_t)snprintf(out + w, sizeof out - w, "%s%.*s:%d@%u-%u", i ? " " : "", (int)e.token_lens[i],
                          e.tokens[i], e.ids[i], e.offsets[i][0], e.offsets[i][1]);
  at_tok_workspace_destroy(ws);
  return out;
}

static void test_precompiled_normalizer(void **state) {
  (void)state;
  static uint8_t buf[4 + 512 * 4 + 16];
  size_t n = make_map(buf, 512, "b\0XY\0", 5);
  char *s = b64(buf, n);
  size_t jl = strlen(s) + 512;
  char *json = malloc(jl);
  snprintf(json, jl,
           "{\"normalizer\":{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"%s\"},"
           "\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"b\",-1],[\"c\",-1],"
           "[\"bc\",-1.5]]}}", s);
  at_tokenizer *t = load(json, AT_OK);
  /* "a" -> "b" (offsets map back to "a"); "c" stays; a grapheme "a\u0301"
   * (3 bytes) is replaced whole by "a"'s entry, dropping the accent as HF does */
  assert_string_equal(enc(t, "ac", NULL), "bc:3@0-2");
  assert_string_equal(enc(t, "a\xcc\x81", NULL), "b:1@0-1"); /* the dropped accent aligns nowhere */
  assert_string_equal(enc(t, "x", NULL), "x:0@0-1"); /* unk keeps the text as its token */
  at_tokenizer_destroy(t);
  /* a charsmap whose trie points outside itself: a clear error, never a crash */
  n = make_map(buf, 97, "b\0", 2);
  free(s);
  s = b64(buf, n);
  snprintf(json, jl,
           "{\"normalizer\":{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"%s\"},"
           "\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<unk>\",0]]}}", s);
  t = load(json, AT_OK);
  at_status st;
  enc(t, "a", &st);
  assert_int_equal(st, AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "Precompiled"));
  at_tokenizer_destroy(t);
  load("{\"normalizer\":{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"AAA\"},"
       "\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "base64"));
  free(s);
  free(json);
}

static void test_nmt_normalizer(void **state) {
  (void)state;
  at_tokenizer *t = load("{\"normalizer\":{\"type\":\"Nmt\"},"
                         "\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"a\",-1],[\" \",-1]]}}",
                         AT_OK);
  /* \x01 dropped, \t and U+200B become spaces (aligned to themselves) */
  assert_string_equal(enc(t, "a\x01\ta\xe2\x80\x8b" "a", NULL), "a:1@0-1  :2@2-3 a:1@3-4  :2@4-7 a:1@7-8");
  at_tokenizer_destroy(t);
}

/* --------------------------------------------------------------- Viterbi */
#define TINY "\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"a\",-1],[\"b\",-1]," \
             "[\"ab\",-1.5],[\"abc\",-4],[\"c\",-2],[\"bc\",-2.5]]"

static void test_viterbi(void **state) {
  (void)state;
  at_tokenizer *t = load("{" TINY "}}", AT_OK);
  /* ends at 3, in order of start: abc (-4), then a+bc (-3.5, better), then
   * ab+c (-3.5, equal: the first stays) */
  assert_string_equal(enc(t, "abc", NULL), "a:1@0-1 bc:6@1-3");
  assert_string_equal(enc(t, "ab", NULL), "ab:3@0-2");
  /* unknown chars score min_score - 10 and fuse into one token */
  assert_string_equal(enc(t, "xyab", NULL), "xy:0@0-2 ab:3@2-4");
  assert_string_equal(enc(t, "axéa", NULL), "a:1@0-1 x\xc3\xa9:0@1-4 a:1@4-5");
  assert_string_equal(enc(t, "", NULL), "");
  /* the unk piece written out in the text is the unk id too, and fuses */
  assert_string_equal(enc(t, "<unk>x", NULL), "<unk>x:0@0-6");
  at_tokenizer_destroy(t);
  /* byte fallback: <0x78> exists, so 'x' becomes a byte token; 'y' has none,
   * so the fused "xy" falls back to unk as a whole (HF) */
  t = load("{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":true,\"vocab\":[[\"<unk>\",0],"
           "[\"a\",-1],[\"<0x78>\",0],[\"<0xC3>\",0],[\"<0xA9>\",0]]}}", AT_OK);
  assert_string_equal(enc(t, "xa", NULL), "<0x78>:2@0-1 a:1@1-2");
  assert_string_equal(enc(t, "x\xc3\xa9" "a", NULL), "<0x78>:2@0-3 <0xC3>:3@0-3 <0xA9>:4@0-3 a:1@3-4");
  assert_string_equal(enc(t, "xy", NULL), "xy:0@0-2");
  at_tokenizer_destroy(t);
  /* no unk_id: text that needs it fails with a clear error */
  t = load("{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",-1]]}}", AT_OK);
  at_status st;
  enc(t, "ab", &st);
  assert_int_equal(st, AT_ERR_MODEL);
  assert_non_null(strstr(at_last_error(), "unk_id"));
  at_tokenizer_destroy(t);
  /* load errors name the component */
  load("{\"model\":{\"type\":\"Unigram\",\"unk_id\":3,\"vocab\":[[\"a\",-1]]}}", AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "Unigram: unk_id 3"));
  load("{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[]}}", AT_ERR_PARSE);
  load("{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\"]]}}", AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "[piece, score]"));
  load("{\"model\":{\"type\":\"Unigram\",\"vocab\":{\"a\":1}}}", AT_ERR_PARSE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_charsmap_lookup),      cmocka_unit_test(test_charsmap_malformed),
      cmocka_unit_test(test_precompiled_normalizer), cmocka_unit_test(test_nmt_normalizer),
      cmocka_unit_test(test_viterbi),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
