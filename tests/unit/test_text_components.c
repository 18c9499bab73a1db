/* tests/unit/test_text_components.c — each tokenizer component at its edge
 * cases: normalizers, pre-tokenizers, models, post-processors (with
 * truncation and padding), decoders, added tokens, offsets, load errors
 * naming the component, invalid UTF-8, concurrency and the no-allocation
 * steady state. Token-for-token agreement with Hugging Face over real
 * corpora is tests/parity/ (text_parity); these tests pin the edges. */
#include <pthread.h>
#include <unistd.h>

#include "anytime/tensor.h"
#include "anytime/tokenizer.h"
#include "testutil.h"
#include "text/tk.h"

#define WL "\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"<unk>\":0},\"unk_token\":\"<unk>\"}"

static at_tokenizer *load(const char *json) {
  at_tokenizer *t = NULL;
  at_status st = at_tokenizer_from_json(json, strlen(json), &t);
  if (st != AT_OK) fail_msg("load failed: %s: %s", at_status_name(st), at_last_error());
  return t;
}

/* Normalize `in` with the normalizer JSON `nj`; returns a static copy. */
static const char *norm(const char *nj, const char *in) {
  static char out[1024];
  char json[4096];
  snprintf(json, sizeof json, "{\"normalizer\":%s," WL "}", nj);
  at_tokenizer *t = load(json);
  at_tok_workspace *ws;
  assert_int_equal(at_tok_workspace_create(&ws), AT_OK);
  size_t n = strlen(in);
  assert_int_equal(TK_RESERVE(ws->nb, ws->nb_cap, n + 1), AT_OK);
  assert_int_equal(TK_RESERVE(ws->al, ws->al_cap, n + 1), AT_OK);
  memcpy(ws->nb, in, n);
  for (uint32_t i = 0; i < n; i++) { ws->al[i].s = i; ws->al[i].e = i + 1; }
  ws->nb_len = n;
  tk_split sp = {0, (uint32_t)n, 0, -1};
  assert_int_equal(tk_normalize(t->norm, ws, &sp), AT_OK);
  memcpy(out, ws->nb + sp.off, sp.len);
  out[sp.len] = '\0';
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
  return out;
}

/* Pre-tokenize `in`; pieces joined by '|'. */
static const char *pretok(const char *pj, const char *in) {
  static char out[2048];
  char json[4096];
  snprintf(json, sizeof json, "{\"pre_tokenizer\":%s," WL "}", pj);
  at_tokenizer *t = load(json);
  at_tok_workspace *ws;
  assert_int_equal(at_tok_workspace_create(&ws), AT_OK);
  size_t n = strlen(in);
  assert_int_equal(TK_RESERVE(ws->nb, ws->nb_cap, n + 1), AT_OK);
  assert_int_equal(TK_RESERVE(ws->al, ws->al_cap, n + 1), AT_OK);
  assert_int_equal(TK_RESERVE(ws->sp, ws->sp_cap, 1), AT_OK);
  memcpy(ws->nb, in, n);
  for (uint32_t i = 0; i < n; i++) { ws->al[i].s = i; ws->al[i].e = i + 1; }
  ws->nb_len = n;
  ws->sp[0] = (tk_split){0, (uint32_t)n, 0, -1};
  ws->sp_n = 1;
  assert_int_equal(tk_pretokenize(t->pretok, ws), AT_OK);
  size_t w = 0;
  for (size_t i = 0; i < ws->sp_n; i++) {
    if (i) out[w++] = '|';
    memcpy(out + w, ws->nb + ws->sp[i].off, ws->sp[i].len);
    w += ws->sp[i].len;
  }
  out[w] = '\0';
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
  return out;
}

/* Encode and render "id@s-e id@s-e ..." */
static const char *enc(const at_tokenizer *t, const char *a, const char *b, const at_encode_params *p) {
  static char out[4096];
  at_tok_workspace *ws;
  assert_int_equal(at_tok_workspace_create(&ws), AT_OK);
  at_encoding e;
  at_status st = at_tokenizer_encode(t, ws, a, strlen(a), b, b ? strlen(b) : 0, p, &e);
  if (st != AT_OK) fail_msg("encode: %s", at_last_error());
  size_t w = 0;
  out[0] = '\0';
  for (size_t i = 0; i < e.n && w < sizeof out - 64; i++)
    w += (size_t)snprintf(out + w, sizeof out - w, "%s%d@%u-%u%s", i ? " " : "", e.ids[i], e.offsets[i][0],
                          e.offsets[i][1], e.type_ids[i] ? "'" : (e.attention_mask[i] ? "" : "_"));
  at_tok_workspace_destroy(ws);
  return out;
}

static const char *dec(const at_tokenizer *t, const int32_t *ids, size_t n, bool skip) {
  static char out[1024];
  at_tok_workspace *ws;
  assert_int_equal(at_tok_workspace_create(&ws), AT_OK);
  const char *s;
  size_t len;
  assert_int_equal(at_tokenizer_decode(t, ws, ids, n, skip, &s, &len), AT_OK);
  memcpy(out, s, len);
  out[len] = '\0';
  at_tok_workspace_destroy(ws);
  return out;
}

/* ------------------------------------------------------------ normalizers */
static void test_bert_normalizer(void **state) {
  (void)state;
  const char *b = "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
                  "\"strip_accents\":null,\"lowercase\":true}";
  assert_string_equal(norm(b, "H\xc3\xa9llo\tW\x01orld\n"), "hello world ");
  assert_string_equal(norm(b, "a\xe4\xb8\xad" "b"), "a \xe4\xb8\xad b");       /* CJK spaced */
  assert_string_equal(norm(b, "a\xe2\x80\x8b" "b\xef\xbf\xbd" "c"), "abc");     /* ZWSP, U+FFFD removed */
  assert_string_equal(norm(b, "a\xc2\xa0" "b"), "a b");                         /* NBSP -> space */
  assert_string_equal(norm(b, "\xc4\xb0"), "i");                                /* İ -> i + U+0307, stripped */
  assert_string_equal(norm(b, "\x0b\x0c"), "");                                 /* \v \f are controls */
  const char *cased = "{\"type\":\"BertNormalizer\",\"lowercase\":false}";
  assert_string_equal(norm(cased, "Caf\xc3\xa9"), "Caf\xc3\xa9");               /* strip follows lowercase */
}

static void test_unicode_normalizers(void **state) {
  (void)state;
  assert_string_equal(norm("{\"type\":\"NFD\"}", "\xc3\xa9"), "e\xcc\x81");
  assert_string_equal(norm("{\"type\":\"NFC\"}", "e\xcc\x81"), "\xc3\xa9");
  assert_string_equal(norm("{\"type\":\"NFKC\"}", "\xef\xac\x81"), "fi");      /* ligature */
  assert_string_equal(norm("{\"type\":\"NFKD\"}", "\xe2\x91\xa0"), "1");       /* circled one */
  /* canonical reordering: dot below (220) before circumflex (230) */
  assert_string_equal(norm("{\"type\":\"NFD\"}", "o\xcc\x82\xcc\xa3"), "o\xcc\xa3\xcc\x82");
  assert_string_equal(norm("{\"type\":\"NFC\"}", "o\xcc\x82\xcc\xa3"), "\xe1\xbb\x99");
  assert_string_equal(norm("{\"type\":\"Lowercase\"}", "\xc4\xb0X\xce\xa3"), "i\xcc\x87x\xcf\x83");
  assert_string_equal(norm("{\"type\":\"StripAccents\"}", "e\xcc\x81\xe0\xa4\xbe"), "e");  /* Mn and Mc */
}

static void test_strip_replace_prepend(void **state) {
  (void)state;
  assert_string_equal(norm("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}", "  ab  "), "ab");
  assert_string_equal(norm("{\"type\":\"Strip\",\"strip_left\":false,\"strip_right\":true}", "  ab "), "  ab");
  assert_string_equal(norm("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}", "   "), "");
  /* HF compares a char index with the byte length: trailing space survives
   * after non-ASCII text. Reproduced on purpose (see docs/tokenizers.md). */
  assert_string_equal(norm("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}", "\xc3\xa9 "), "\xc3\xa9 ");
  assert_string_equal(norm("{\"type\":\"Replace\",\"pattern\":{\"String\":\"ab\"},\"content\":\"X\"}", "abcab"), "XcX");
  assert_string_equal(norm("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"content\":\" \"}", "a \t\n b"), "a b");
  assert_string_equal(norm("{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\"}", " a b "), "ab");
  assert_string_equal(norm("{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"}", "ab"), "\xe2\x96\x81" "ab");
  assert_string_equal(norm("{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"}", ""), "");
  assert_string_equal(norm("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Lowercase\"},{\"type\":\"Replace\","
                           "\"pattern\":{\"String\":\"a\"},\"content\":\"bb\"}]}", "AcA"), "bbcbb");
}

/* --------------------------------------------------------- pre-tokenizers */
static void test_pretokenizers(void **state) {
  (void)state;
  assert_string_equal(pretok("{\"type\":\"BertPreTokenizer\"}", " Hello,  world!! "), "Hello|,|world|!|!");
  assert_string_equal(pretok("{\"type\":\"Whitespace\"}", "Hi there... it's 3.5"), "Hi|there|...|it|'|s|3|.|5");
  assert_string_equal(pretok("{\"type\":\"WhitespaceSplit\"}", " a\tb  c "), "a|b|c");
  assert_string_equal(pretok("{\"type\":\"Punctuation\",\"behavior\":\"Isolated\"}", "a,,b"), "a|,|,|b");
  assert_string_equal(pretok("{\"type\":\"Punctuation\",\"behavior\":\"Contiguous\"}", "a,,b"), "a|,,|b");
  assert_string_equal(pretok("{\"type\":\"Punctuation\",\"behavior\":\"Removed\"}", "a,,b"), "a|b");
  assert_string_equal(pretok("{\"type\":\"Punctuation\",\"behavior\":\"MergedWithPrevious\"}", "a,,b"), "a,|,|b");
  assert_string_equal(pretok("{\"type\":\"Punctuation\",\"behavior\":\"MergedWithNext\"}", "a,,b"), "a|,|,b");
  assert_string_equal(pretok("{\"type\":\"Digits\",\"individual_digits\":true}", "a123b"), "a|1|2|3|b");
  assert_string_equal(pretok("{\"type\":\"Digits\",\"individual_digits\":false}", "a123b"), "a|123|b");
  assert_string_equal(pretok("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Removed\",\"invert\":false}",
                             "the-final--countdown"), "the|final|countdown");
  assert_string_equal(pretok("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\d+\"},\"behavior\":\"Isolated\",\"invert\":true}",
                             "ab12cd"), "ab|12|cd");
  assert_string_equal(pretok("{\"type\":\"CharDelimiterSplit\",\"delimiter\":\"x\"}", "axbxxc"), "a|b|c");
  assert_string_equal(pretok("{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\",\"split\":true}",
                             "Hey  you"), "\xe2\x96\x81Hey|\xe2\x96\x81|\xe2\x96\x81you");
  assert_string_equal(pretok("{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"never\",\"split\":false}",
                             "a b"), "a\xe2\x96\x81" "b");
  /* GPT-2 regex and the byte-level alphabet (space -> U+0120) */
  assert_string_equal(pretok("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}",
                             "Hello world's  x!?"), "Hello|\xc4\xa0world|'s|\xc4\xa0|\xc4\xa0x|!?");
  assert_string_equal(pretok("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":false}", "a b"),
                      "\xc4\xa0" "a\xc4\xa0" "b");
  assert_string_equal(pretok("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},"
                             "{\"type\":\"Digits\",\"individual_digits\":true}]}", "a1 2b"), "a|1|2|b");
}

/* The hand-written GPT-2 matcher against PCRE2 running HF's regex. */
static void test_gpt2_regex_vs_pcre2(void **state) {
  (void)state;
  const char *re_src = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
  int err;
  PCRE2_SIZE eoff;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)re_src, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &eoff, NULL);
  assert_non_null(re);
  pcre2_match_data *md = pcre2_match_data_create(4, NULL);
  static const char *texts[] = {"Hello world", "  two  spaces ", "it's we're I'LL 'd", "a\t\tb\n\nc ",
                                "123abc 45 6.7!!", "caf\xc3\xa9 na\xc3\xafve", "\xe4\xb8\xad\xe6\x96\x87 x",
                                "  ", " ", "x  ", "e\xcc\x81", "--==", "'", "' s", "\xf0\x9f\x98\x80 ok"};
  /* a small deterministic generator over a tricky alphabet */
  static const char *alpha[] = {" ", "  ", "\t", "\n", "a", "Z", "7", "'", "s", "ll", "!", "\xc3\xa9", "\xe2\x80\x83",
                                "\xe4\xb8\xad", "\xcc\x81", "\xd9\xa3"};
  char buf[256];
  uint32_t x = 12345;
  for (int iter = 0; iter < 3000; iter++) {
    const char *s;
    if (iter < (int)(sizeof texts / sizeof texts[0])) {
      s = texts[iter];
    } else {
      size_t w = 0;
      int n = 1 + (int)(x % 12);
      for (int k = 0; k < n; k++) {
        x = x * 1103515245u + 12345u;
        const char *p = alpha[(x >> 16) % (sizeof alpha / sizeof alpha[0])];
        size_t l = strlen(p);
        memcpy(buf + w, p, l);
        w += l;
      }
      buf[w] = '\0';
      s = buf;
    }
    size_t n = strlen(s), i = 0;
    while (i < n) {
      int rc = pcre2_match(re, (PCRE2_SPTR)s, n, i, 0, md, NULL);
      assert_true(rc > 0);
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
      assert_int_equal(ov[0], i);
      size_t e = tk_gpt2_next((const uint8_t *)s, n, i);
      if (e != ov[1]) fail_msg("gpt2 split of \"%s\" at %zu: anytime %zu, PCRE2 %zu", s, i, e, (size_t)ov[1]);
      i = e;
    }
  }
  pcre2_match_data_free(md);
  pcre2_code_free(re);
}

/* ------------------------------------------------------------------ models */
#define WP_VOCAB "\"vocab\":{\"[UNK]\":0,\"[CLS]\":1,\"[SEP]\":2,\"un\":3,\"##aff\":4,\"##able\":5,\"a\":6,\"##b\":7,\"[PAD]\":8}"

static void test_wordpiece(void **state) {
  (void)state;
  at_tokenizer *t = load("{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"model\":{\"type\":\"WordPiece\","
                         "\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":9," WP_VOCAB "}}");
  assert_string_equal(enc(t, "unaffable", NULL, NULL), "3@0-2 4@2-5 5@5-9");
  assert_string_equal(enc(t, "unaffx ab", NULL, NULL), "0@0-6 6@7-8 7@8-9");   /* bad word -> one [UNK] */
  assert_string_equal(enc(t, "abbbbbbbbb", NULL, NULL), "0@0-10");             /* > max chars */
  assert_string_equal(enc(t, "", NULL, NULL), "");
  at_tokenizer_destroy(t);
}

static void test_bpe(void **state) {
  (void)state;
  /* merge ranks: "b c" (rank 0) beats "a b" (rank 1); pair and string forms */
  at_tokenizer *t = load("{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"model\":{\"type\":\"BPE\","
                         "\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"bc\":3,\"ab\":4,\"abc\":5,\"<unk>\":6},"
                         "\"merges\":[[\"b\",\"c\"],\"a b\",[\"a\",\"bc\"]],\"unk_token\":\"<unk>\",\"fuse_unk\":true}}");
  assert_string_equal(enc(t, "abc", NULL, NULL), "5@0-3");
  assert_string_equal(enc(t, "abab", NULL, NULL), "4@0-2 4@2-4");
  assert_string_equal(enc(t, "axyb", NULL, NULL), "0@0-1 6@1-3 1@3-4");        /* fused unk */
  at_tokenizer_destroy(t);
  /* no unk token: unknown chars vanish; byte fallback */
  t = load("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"<0x78>\":1},\"merges\":[],\"byte_fallback\":true}}");
  assert_string_equal(enc(t, "axq", NULL, NULL), "0@0-1 1@1-2");
  at_tokenizer_destroy(t);
  /* ignore_merges: whole word in the vocabulary wins */
  t = load("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"abb\":3},\"merges\":[\"a b\"],"
           "\"ignore_merges\":true}}");
  assert_string_equal(enc(t, "abb", NULL, NULL), "3@0-3");
  at_tokenizer_destroy(t);
  /* continuing prefix and end-of-word suffix */
  t = load("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"##b\":1,\"##c</w>\":2,\"a##b\":3,\"ab\":4},"
           "\"merges\":[[\"a\",\"##b\"]],\"continuing_subword_prefix\":\"##\",\"end_of_word_suffix\":\"</w>\"}}");
  assert_string_equal(enc(t, "abc", NULL, NULL), "4@0-2 2@2-3");
  at_tokenizer_destroy(t);
}

static void test_wordlevel(void **state) {
  (void)state;
  at_tokenizer *t = load("{\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"model\":{\"type\":\"WordLevel\","
                         "\"vocab\":{\"<unk>\":0,\"hi\":1},\"unk_token\":\"<unk>\"}}");
  assert_string_equal(enc(t, "hi there", NULL, NULL), "1@0-2 0@3-8");
  at_tokenizer_destroy(t);
  t = load("{\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"hi\":1}}}");
  at_tok_workspace *ws;
  at_tok_workspace_create(&ws);
  at_encoding e;
  assert_int_equal(at_tokenizer_encode(t, ws, "x", 1, NULL, 0, NULL, &e), AT_ERR_MODEL);
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
}

/* --------------------------------------------------------- post-processing */
#define BERT_TOK(extra)                                                                              \
  "{\"added_tokens\":[{\"id\":1,\"content\":\"[CLS]\",\"special\":true},{\"id\":2,\"content\":\"[SEP]\",\"special\":true},"  \
  "{\"id\":8,\"content\":\"[PAD]\",\"special\":true}],"                                                \
  "\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"}," extra                                            \
  "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"," WP_VOCAB "}}"

static void test_bert_template_roberta(void **state) {
  (void)state;
  at_tokenizer *t = load(BERT_TOK("\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",2],\"cls\":[\"[CLS]\",1]},"));
  assert_string_equal(enc(t, "a", "un", NULL), "1@0-0 6@0-1 2@0-0 3@0-2' 2@0-0'");
  at_encode_params p = at_encode_default_params();
  p.add_special_tokens = false;
  assert_string_equal(enc(t, "a", "un", &p), "6@0-1 3@0-2'");
  /* special tokens written in the text are matched as tokens */
  assert_string_equal(enc(t, "a [SEP]a", NULL, NULL), "1@0-0 6@0-1 2@2-7 6@7-8 2@0-0");
  at_tokenizer_destroy(t);
  t = load(BERT_TOK("\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},"
                    "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"pair\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},"
                    "{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}},{\"Sequence\":{\"id\":\"B\",\"type_id\":1}}],"
                    "\"special_tokens\":{\"[CLS]\":{\"id\":\"[CLS]\",\"ids\":[1],\"tokens\":[\"[CLS]\"]},"
                    "\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":[2],\"tokens\":[\"[SEP]\"]}}},"));
  assert_string_equal(enc(t, "a", NULL, NULL), "1@0-0 6@0-1");
  assert_string_equal(enc(t, "a", "a", NULL), "6@0-1 2@0-0 6@0-1'");
  at_tokenizer_destroy(t);
  t = load(BERT_TOK("\"post_processor\":{\"type\":\"RobertaProcessing\",\"sep\":[\"[SEP]\",2],\"cls\":[\"[CLS]\",1],"
                    "\"trim_offsets\":true,\"add_prefix_space\":false},"));
  assert_string_equal(enc(t, "a", "a", NULL), "1@0-0 6@0-1 2@0-0 2@0-0 6@0-1 2@0-0"); /* all type 0 */
  at_tokenizer_destroy(t);
}

static void test_truncation_padding(void **state) {
  (void)state;
  at_tokenizer *t = load(BERT_TOK("\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",2],\"cls\":[\"[CLS]\",1]},"
                                  "\"truncation\":{\"max_length\":4,\"strategy\":\"LongestFirst\",\"direction\":\"Right\",\"stride\":0},"
                                  "\"padding\":{\"strategy\":{\"Fixed\":6},\"direction\":\"Right\",\"pad_id\":8,\"pad_type_id\":0,"
                                  "\"pad_token\":\"[PAD]\",\"pad_to_multiple_of\":null},"));
  assert_string_equal(enc(t, "a a a", NULL, NULL), "1@0-0 6@0-1 6@2-3 2@0-0 8@0-0_ 8@0-0_");
  at_encode_params p = at_encode_default_params();
  p.max_length = 5;  /* pair: 2 + 2 tokens left after [CLS] [SEP] [SEP]; longest first */
  p.pad_to = 0;
  assert_string_equal(enc(t, "a a a", "un", &p), "1@0-0 6@0-1 2@0-0 3@0-2' 2@0-0'");
  p.max_length = 2;
  assert_string_equal(enc(t, "a a", NULL, &p), "1@0-0 2@0-0");
  /* a per-call direction over tokenizer.json's Right: Left keeps each
   * sequence's last tokens; the special tokens are still added */
  p.truncation_direction = AT_TRUNC_LEFT;
  p.max_length = 4;
  assert_string_equal(enc(t, "a a un", NULL, &p), "1@0-0 6@2-3 3@4-6 2@0-0");
  p.max_length = 5;
  assert_string_equal(enc(t, "a a a", "un", &p), "1@0-0 6@4-5 2@0-0 3@0-2' 2@0-0'");
  p.truncation_direction = AT_TRUNC_RIGHT;
  assert_string_equal(enc(t, "a a a", "un", &p), "1@0-0 6@0-1 2@0-0 3@0-2' 2@0-0'");
  p.truncation_direction = AT_TRUNC_AS_TOKENIZER;
  p.max_length = 2;
  p.max_length = 1;
  at_tok_workspace *ws;
  at_tok_workspace_create(&ws);
  at_encoding e;
  assert_int_equal(at_tokenizer_encode(t, ws, "a", 1, NULL, 0, &p, &e), AT_ERR_LIMIT);
  /* batch-longest through the batch API */
  at_encode_params bp = at_encode_default_params();
  bp.max_length = 0;
  bp.pad_to = 0;
  const char *texts[2] = {"a", "a a a"};
  size_t lens[2] = {1, 5};
  at_encoding eb[2];
  assert_int_equal(at_tokenizer_encode_batch(t, ws, texts, lens, 2, &bp, eb), AT_OK);
  assert_int_equal(eb[0].n, 3);
  assert_int_equal(eb[1].n, 5);
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
}

static void test_bytelevel_offsets(void **state) {
  (void)state;
  at_tokenizer *t = load("{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true},"
                         "\"post_processor\":{\"type\":\"ByteLevel\",\"trim_offsets\":true,\"add_prefix_space\":false},"
                         "\"decoder\":{\"type\":\"ByteLevel\"},"
                         "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"\\u0120\":1,\"\\u0120a\":2,\"\\u00c3\":3,\"\\u00a9\":4},"
                         "\"merges\":[[\"\\u0120\",\"a\"]]}}");
  /* " a" trims its leading space; each byte of é maps to the whole char */
  assert_string_equal(enc(t, "a a\xc3\xa9", NULL, NULL), "0@0-1 2@2-3 3@3-5 4@3-5");
  at_encode_params p = at_encode_default_params();
  p.offsets = AT_OFFSETS_CHARS;
  assert_string_equal(enc(t, "\xc3\xa9 a", NULL, &p), "3@0-1 4@0-1 2@2-3");
  int32_t ids[] = {3, 4, 2, 3};
  /* a lone 0xC3 at the end decodes to U+FFFD */
  assert_string_equal(dec(t, ids, 4, false), "\xc3\xa9 a\xef\xbf\xbd");
  at_tokenizer_destroy(t);
}

/* ---------------------------------------------------------------- decoders */
static void test_decoders(void **state) {
  (void)state;
  at_tokenizer *t = load(BERT_TOK("\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},"));
  int32_t ids[] = {1, 3, 4, 5, 6, 7, 2};
  assert_string_equal(dec(t, ids, 7, true), "unaffable ab");
  assert_string_equal(dec(t, ids, 7, false), "[CLS] unaffable ab [SEP]");
  at_tokenizer_destroy(t);
  t = load("{\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\"},"
           "\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"\\u2581hi\":0,\"\\u2581there\":1,\"!\":2}}}");
  int32_t m[] = {0, 1, 2};
  assert_string_equal(dec(t, m, 3, false), "hi there!");
  at_tokenizer_destroy(t);
  t = load("{\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\\u2581\"},"
           "\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]},"
           "\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"\\u2581a\":0,\"<0xC3>\":1,\"<0xA9>\":2,\"<0xFF>\":3}}}");
  int32_t f[] = {0, 1, 2, 3};
  /* an invalid byte run gives one U+FFFD per token (as HF does) */
  assert_string_equal(dec(t, f, 4, false), "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  int32_t g[] = {0, 1, 2};
  assert_string_equal(dec(t, g, 3, false), "a\xc3\xa9");
  at_tokenizer_destroy(t);
}

/* ------------------------------------------------------------ added tokens */
static void test_added_tokens(void **state) {
  (void)state;
  at_tokenizer *t = load("{\"added_tokens\":["
                         "{\"id\":5,\"content\":\"<m>\",\"special\":true,\"lstrip\":true,\"rstrip\":true},"
                         "{\"id\":6,\"content\":\"ab\",\"special\":false,\"single_word\":true,\"normalized\":true}],"
                         "\"normalizer\":{\"type\":\"Lowercase\"},\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
                         "\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"<u>\":0,\"x\":1,\"xab\":2},\"unk_token\":\"<u>\"}}");
  assert_string_equal(enc(t, "x  <m>  x", NULL, NULL), "1@0-1 5@1-8 1@8-9");   /* lstrip/rstrip eat spaces */
  assert_string_equal(enc(t, "AB xab", NULL, NULL), "6@0-2 2@3-6");           /* normalized, single word */
  at_tokenizer_destroy(t);
}

/* ---------------------------------------------------- errors and the API */
static void expect_load_error(const char *json, at_status want, const char *needle) {
  at_tokenizer *t = NULL;
  at_status st = at_tokenizer_from_json(json, strlen(json), &t);
  assert_int_equal(st, want);
  assert_null(t);
  if (!strstr(at_last_error(), needle)) fail_msg("error \"%s\" does not mention \"%s\"", at_last_error(), needle);
}

static void test_load_errors(void **state) {
  (void)state;
  expect_load_error("{\"normalizer\":{\"type\":\"Precompiled\"}," WL "}", AT_ERR_PARSE, "Precompiled: \"precompiled_charsmap\"");
  expect_load_error("{\"normalizer\":{\"type\":\"ByteLevel\"}," WL "}", AT_ERR_UNSUPPORTED, "normalizer \"ByteLevel\"");
  expect_load_error("{\"pre_tokenizer\":{\"type\":\"UnicodeScripts\"}," WL "}", AT_ERR_UNSUPPORTED, "pre_tokenizer \"UnicodeScripts\"");
  expect_load_error("{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",0]],\"alpha\":0.1}}", AT_ERR_UNSUPPORTED, "Unigram: sampling");
  expect_load_error("{\"model\":{\"type\":\"Charwise\",\"vocab\":[]}}", AT_ERR_UNSUPPORTED, "model \"Charwise\"");
  expect_load_error("{\"post_processor\":{\"type\":\"Fancy\"}," WL "}", AT_ERR_UNSUPPORTED, "post_processor \"Fancy\"");
  expect_load_error("{\"decoder\":{\"type\":\"CTC\"}," WL "}", AT_ERR_UNSUPPORTED, "decoder \"CTC\"");
  expect_load_error("{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"ByteLevel\"}]}," WL "}",
                    AT_ERR_UNSUPPORTED, "ByteLevel");
  expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]}}", AT_ERR_PARSE, "merge 1");
  expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"dropout\":0.1}}", AT_ERR_UNSUPPORTED, "dropout");
  expect_load_error("{\"model\":", AT_ERR_PARSE, "tokenizer.json");
  expect_load_error("[]", AT_ERR_PARSE, "object");
  expect_load_error("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"}," WL "}",
                    AT_ERR_UNSUPPORTED, "regex");
  at_tokenizer *t = NULL;
  assert_int_equal(at_tokenizer_load("/nonexistent/tokenizer.json", &t), AT_ERR_NOT_FOUND);
}

static void test_invalid_utf8_and_vocab_txt(void **state) {
  (void)state;
  const char *v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##s\n";
  at_tokenizer *t = NULL;
  assert_int_equal(at_tokenizer_from_vocab_txt(v, strlen(v), true, &t), AT_OK);
  assert_string_equal(enc(t, "Hellos [MASK]", NULL, NULL), "2@0-0 5@0-5 6@5-6 4@7-13 3@0-0");
  assert_int_equal(at_tokenizer_pad_id(t), 0);
  assert_string_equal(at_tokenizer_id_to_token(t, 6), "##s");
  assert_int_equal(at_tokenizer_token_to_id(t, "hello"), 5);
  at_tok_workspace *ws;
  at_tok_workspace_create(&ws);
  at_encoding e;
  assert_int_equal(at_tokenizer_encode(t, ws, "ok\xc3(", 4, NULL, 0, NULL, &e), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "byte 2"));
  assert_int_equal(at_tokenizer_encode(t, ws, "\xed\xa0\x80", 3, NULL, 0, NULL, &e), AT_ERR_INVALID_ARG); /* surrogate */
  int32_t bad[] = {99};
  const char *out;
  assert_int_equal(at_tokenizer_decode(t, ws, bad, 1, false, &out, NULL), AT_ERR_INVALID_ARG);
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
  at_tokenizer_destroy(NULL);
  at_tok_workspace_destroy(NULL);
  const char *nocls = "[PAD]\nhello\n";
  assert_int_equal(at_tokenizer_from_vocab_txt(nocls, strlen(nocls), true, &t), AT_ERR_PARSE);
}

/* Steady state: a second encode of the same text must not grow any buffer. */
static void test_no_growth_after_warmup(void **state) {
  (void)state;
  at_tokenizer *t = load("{\"normalizer\":{\"type\":\"BertNormalizer\"},\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
                         "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"," WP_VOCAB "}}");
  at_tok_workspace *ws;
  at_tok_workspace_create(&ws);
  const char *text = "Unaffable caf\xc3\xa9 \xe4\xb8\xad words, more words and more words";
  at_encoding e;
  assert_int_equal(at_tokenizer_encode(t, ws, text, strlen(text), NULL, 0, NULL, &e), AT_OK);
  size_t caps[] = {ws->nb_cap, ws->al_cap, ws->sp_cap, ws->sp2_cap, ws->tk_cap, ws->o_i32_cap, ws->o_off_cap, ws->o_str_cap};
  void *ptrs[] = {ws->nb, ws->al, ws->sp, ws->sp2, ws->tk, ws->o_i32, ws->o_off, ws->o_str};
  for (int i = 0; i < 50; i++) assert_int_equal(at_tokenizer_encode(t, ws, text, strlen(text), NULL, 0, NULL, &e), AT_OK);
  size_t caps2[] = {ws->nb_cap, ws->al_cap, ws->sp_cap, ws->sp2_cap, ws->tk_cap, ws->o_i32_cap, ws->o_off_cap, ws->o_str_cap};
  void *ptrs2[] = {ws->nb, ws->al, ws->sp, ws->sp2, ws->tk, ws->o_i32, ws->o_off, ws->o_str};
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    assert_int_equal(caps[i], caps2[i]);
    assert_ptr_equal(ptrs[i], ptrs2[i]);
  }
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
}

/* Many threads share one tokenizer, each with its own workspace. */
typedef struct { const at_tokenizer *t; int ok; } thr_arg;
static const char *k_thr_texts[] = {"unaffable a a", "caf\xc3\xa9 \xe4\xb8\xad!", "", "ab ab ab ab ab ab"};
static char g_ref[4][512];

static void render(const at_encoding *e, char *out, size_t cap) {
  size_t w = 0;
  out[0] = '\0';
  for (size_t i = 0; i < e->n && w + 32 < cap; i++)
    w += (size_t)snprintf(out + w, cap - w, "%d@%u-%u ", e->ids[i], e->offsets[i][0], e->offsets[i][1]);
}

static void *thr(void *p) {
  thr_arg *a = p;
  at_tok_workspace *ws;
  if (at_tok_workspace_create(&ws) != AT_OK) return NULL;
  a->ok = 1;
  char buf[512];
  for (int it = 0; it < 2000; it++) {
    int k = it % 4;
    at_encoding e;
    if (at_tokenizer_encode(a->t, ws, k_thr_texts[k], strlen(k_thr_texts[k]), NULL, 0, NULL, &e) != AT_OK) { a->ok = 0; break; }
    render(&e, buf, sizeof buf);
    if (strcmp(buf, g_ref[k]) != 0) { a->ok = 0; break; }
  }
  at_tok_workspace_destroy(ws);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  at_tokenizer *t = load("{\"normalizer\":{\"type\":\"BertNormalizer\"},\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
                         "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"," WP_VOCAB "}}");
  at_tok_workspace *ws;
  at_tok_workspace_create(&ws);
  for (int k = 0; k < 4; k++) {
    at_encoding e;
    assert_int_equal(at_tokenizer_encode(t, ws, k_thr_texts[k], strlen(k_thr_texts[k]), NULL, 0, NULL, &e), AT_OK);
    render(&e, g_ref[k], sizeof g_ref[k]);
  }
  at_tok_workspace_destroy(ws);
  pthread_t th[6];
  thr_arg args[6];
  for (int i = 0; i < 6; i++) {
    args[i] = (thr_arg){t, 0};
    assert_int_equal(pthread_create(&th[i], NULL, thr, &args[i]), 0);
  }
  for (int i = 0; i < 6; i++) {
    pthread_join(th[i], NULL);
    assert_true(args[i].ok);
  }
  at_tokenizer_destroy(t);
}

/* Encodings to a model's inputs (at_encodings_to_inputs, what `run` and
 * `eval` feed the engine): the graph's order and integer types, padding
 * with pad_id / 0, and a refusal naming the input it cannot fill. */
static void test_encodings_to_inputs(void **state) {
  (void)state;
  at_value_info in[3] = {{.name = "attention_mask", .dtype = AT_DTYPE_INT32},
                         {.name = "input_ids", .dtype = AT_DTYPE_INT64},
                         {.name = "token_type_ids", .dtype = AT_DTYPE_INT32}};
  at_model_info mi = {.n_inputs = 3, .inputs = in};
  int32_t ids0[3] = {101, 7, 102}, mask0[3] = {1, 1, 1}, types0[3] = {0, 1, 1};
  int32_t ids1[2] = {101, 102}, mask1[2] = {1, 1};
  at_encoding enc[2] = {{.n = 3, .ids = ids0, .attention_mask = mask0, .type_ids = types0},
                        {.n = 2, .ids = ids1, .attention_mask = mask1, .type_ids = NULL}};
  int64_t buf[3 * 2 * 4];
  memset(buf, 0xAB, sizeof buf);
  at_tensor t[3];
  size_t n = 0;
  assert_int_equal(at_encodings_to_inputs(&mi, enc, 2, 4, 9, buf, t, &n), AT_OK);
  assert_int_equal(n, 3);
  assert_string_equal(t[0].name, "attention_mask"); /* the graph's order */
  assert_string_equal(t[1].name, "input_ids");
  assert_int_equal(t[0].dtype, AT_DTYPE_INT32);
  assert_int_equal(t[1].dtype, AT_DTYPE_INT64);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(t[k].ndim, 2);
    assert_int_equal(t[k].shape[0], 2);
    assert_int_equal(t[k].shape[1], 4);
  }
  const int64_t *ids = t[1].data;
  const int32_t *mask = t[0].data, *types = t[2].data;
  int64_t want_ids[8] = {101, 7, 102, 9, 101, 102, 9, 9};
  int32_t want_mask[8] = {1, 1, 1, 0, 1, 1, 0, 0}, want_types[8] = {0, 1, 1, 0, 0, 0, 0, 0};
  for (int j = 0; j < 8; j++) {
    assert_int_equal(ids[j], want_ids[j]);
    assert_int_equal(mask[j], want_mask[j]);
    assert_int_equal(types[j], want_types[j]); /* none given: 0 */
  }
  /* what text cannot give, a float input, no input_ids: refused by name */
  in[2].name = "pixel_values";
  assert_int_equal(at_encodings_to_inputs(&mi, enc, 2, 4, 9, buf, t, &n), AT_ERR_UNSUPPORTED);
  assert_non_null(strstr(at_last_error(), "pixel_values"));
  in[2].name = "token_type_ids";
  in[2].dtype = AT_DTYPE_FLOAT32;
  assert_int_equal(at_encodings_to_inputs(&mi, enc, 2, 4, 9, buf, t, &n), AT_ERR_UNSUPPORTED);
  assert_non_null(strstr(at_last_error(), "token_type_ids"));
  mi.n_inputs = 1; /* attention_mask alone */
  assert_int_equal(at_encodings_to_inputs(&mi, enc, 2, 4, 9, buf, t, &n), AT_ERR_UNSUPPORTED);
  assert_non_null(strstr(at_last_error(), "input_ids"));
  assert_int_equal(at_encodings_to_inputs(&mi, enc, 0, 4, 9, buf, t, &n), AT_ERR_INVALID_ARG);
}

/* The growth limits refuse a text whose normalizers blow it up, with the
 * limit named, and refuse it in linear time. The second case failed before
 * eceb4f4 by taking quadratic time: after the Metaspace pass went over the
 * limit its loop stepped one byte at a time, scanning to the next space from
 * each (linked against that code, this test was killed by the alarm at
 * 60 s; the whole file now runs in 0.14 s, 0.97 s under the sanitizers).
 * alarm() turns such a regression into a failure; the bound is 60x the
 * sanitizer build's time for the whole file, not a timing assertion. */
static void expect_growth_refused(const char *json, const char *text, size_t n, const char *needle) {
  at_tokenizer *t = load(json);
  at_tok_workspace *ws;
  assert_int_equal(at_tok_workspace_create(&ws), AT_OK);
  at_encode_params p = at_encode_default_params();
  at_encoding e;
  alarm(60);
  assert_int_equal(at_tokenizer_encode(t, ws, text, n, NULL, 0, &p, &e), AT_ERR_LIMIT);
  alarm(0);
  if (!strstr(at_last_error(), needle)) fail_msg("error '%s' lacks '%s'", at_last_error(), needle);
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(t);
}

static void test_growth_limits(void **state) {
  (void)state;
  size_t n = 128 * 1024;
  char *text = malloc(n + 2);
  assert_non_null(text);
  memset(text, 'a', n);
  text[n] = ' ';
  text[n + 1] = 'a';
  /* one pass: a Replace that matches the empty string inserts 40 bytes at
   * every position, past 32x the text plus 4 KiB */
  expect_growth_refused("{\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"x*\"},"
                        "\"content\":\"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"}," WL "}",
                        text, 1000, "more than 32x");
  /* all passes: 31x, then a copy, then Metaspace goes past 64x; one space
   * at the end of 128 KiB, so the Metaspace split has no space before it */
  expect_growth_refused("{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
                        "{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"},\"content\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"},"
                        "{\"type\":\"Replace\",\"pattern\":{\"String\":\"b\"},\"content\":\"c\"}]},"
                        "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\","
                        "\"prepend_scheme\":\"always\",\"split\":true}," WL "}",
                        text, n + 2, "grew the text past");
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bert_normalizer),    cmocka_unit_test(test_unicode_normalizers),
      cmocka_unit_test(test_strip_replace_prepend), cmocka_unit_test(test_pretokenizers),
      cmocka_unit_test(test_gpt2_regex_vs_pcre2), cmocka_unit_test(test_wordpiece),
      cmocka_unit_test(test_bpe),                cmocka_unit_test(test_wordlevel),
      cmocka_unit_test(test_bert_template_roberta), cmocka_unit_test(test_truncation_padding),
      cmocka_unit_test(test_bytelevel_offsets),  cmocka_unit_test(test_decoders),
      cmocka_unit_test(test_added_tokens),       cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_invalid_utf8_and_vocab_txt), cmocka_unit_test(test_no_growth_after_warmup),
      cmocka_unit_test(test_threads),            cmocka_unit_test(test_encodings_to_inputs),
      cmocka_unit_test(test_growth_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
