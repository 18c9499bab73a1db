/* tests/fuzz/fuzz_text_encode.c — libFuzzer driver for tokenizer input: any
 * byte string (valid UTF-8 or not) through small tokenizers that exercise
 * every normalizer, pre-tokenizer, model, post-processor and decoder, in
 * bytes and chars offsets, with truncation (either direction) and padding,
 * plus decode of the
 * ids. Must never crash, read out of bounds or leak; offsets must lie within
 * the input. The first input byte picks the tokenizer and options.
 * Seeds: tests/fuzz/corpus/text_encode/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/tokenizer.h"

static const char *k_json[] = {
    /* BERT-like WordPiece */
    "{\"added_tokens\":[{\"id\":0,\"content\":\"[PAD]\",\"special\":true},{\"id\":1,\"content\":\"[UNK]\",\"special\":true},"
    "{\"id\":2,\"content\":\"[CLS]\",\"special\":true},{\"id\":3,\"content\":\"[SEP]\",\"special\":true},"
    "{\"id\":12,\"content\":\"ab\",\"special\":false,\"normalized\":true,\"single_word\":true,\"lstrip\":true,\"rstrip\":true}],"
    "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":true},"
    "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
    "\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",3],\"cls\":[\"[CLS]\",2]},"
    "\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},"
    "\"truncation\":{\"max_length\":24,\"strategy\":\"LongestFirst\",\"direction\":\"Right\",\"stride\":0},"
    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":12,"
    "\"vocab\":{\"[PAD]\":0,\"[UNK]\":1,\"[CLS]\":2,\"[SEP]\":3,\"a\":4,\"b\":5,\"##a\":6,\"##b\":7,\"ab\":8,\"##ab\":9,\".\":10,\"\\u00e9\":11,\"ab\":12}}}",
    /* byte-level BPE */
    "{\"added_tokens\":[{\"id\":9,\"content\":\"<|e|>\",\"special\":true}],"
    "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true},"
    "\"post_processor\":{\"type\":\"ByteLevel\",\"trim_offsets\":true,\"add_prefix_space\":true},"
    "\"decoder\":{\"type\":\"ByteLevel\"},"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"\\u0120\":2,\"ab\":3,\"\\u0120a\":4,\"\\u0120ab\":5,\"\\u00c3\":6,\"\\u00a9\":7,\"<|e|>\":9},"
    "\"merges\":[\"a b\",[\"\\u0120\",\"a\"],[\"\\u0120a\",\"b\"]]}}",
    /* kitchen sink */
    "{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"},{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true},"
    "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"content\":\" \"},{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"},"
    "{\"type\":\"NFD\"},{\"type\":\"StripAccents\"},{\"type\":\"Lowercase\"},{\"type\":\"NFC\"},{\"type\":\"NFKD\"}]},"
    "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"first\",\"split\":true},"
    "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[0-9]+|x*\"},\"behavior\":\"MergedWithNext\",\"invert\":false},"
    "{\"type\":\"Punctuation\",\"behavior\":\"Contiguous\"},{\"type\":\"Digits\",\"individual_digits\":true},"
    "{\"type\":\"Split\",\"pattern\":{\"String\":\"ab\"},\"behavior\":\"MergedWithPrevious\",\"invert\":true},"
    "{\"type\":\"Whitespace\"},{\"type\":\"WhitespaceSplit\"},{\"type\":\"CharDelimiterSplit\",\"delimiter\":\"q\"}]},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
    "\"pair\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"Sequence\":{\"id\":\"B\",\"type_id\":1}},{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":1}}],"
    "\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[0],\"tokens\":[\"<s>\"]}}},"
    "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\\u2581\"},\"content\":\" \"},"
    "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0},{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\"}]},"
    "\"padding\":{\"strategy\":{\"Fixed\":16},\"direction\":\"Left\",\"pad_id\":0,\"pad_type_id\":0,\"pad_token\":\"<s>\",\"pad_to_multiple_of\":8},"
    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<u>\",\"fuse_unk\":true,\"byte_fallback\":true,\"continuing_subword_prefix\":\"##\",\"end_of_word_suffix\":\"</w>\","
    "\"vocab\":{\"<s>\":0,\"<u>\":1,\"\\u2581\":2,\"a\":3,\"##b\":4,\"a##b\":5,\"ab\":6,\"<0x41>\":7,\"<0xC3>\":8,\"b</w>\":9,\"##b</w>\":10},"
    "\"merges\":[[\"a\",\"##b\"]]}}",
    /* WordLevel + Roberta */
    "{\"pre_tokenizer\":{\"type\":\"Whitespace\"},"
    "\"post_processor\":{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],\"cls\":[\"<s>\",0],\"trim_offsets\":true,\"add_prefix_space\":true},"
    "\"model\":{\"type\":\"WordLevel\",\"unk_token\":\"<unk>\",\"vocab\":{\"<s>\":0,\"<unk>\":1,\"</s>\":2,\"hello\":3,\"world\":4}}}",
};
#define N_TOK (sizeof k_json / sizeof k_json[0])

static at_tokenizer *g_tok[N_TOK];
static at_tok_workspace *g_ws;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_ws) {
    if (at_tok_workspace_create(&g_ws) != AT_OK) abort();
    for (size_t i = 0; i < N_TOK; i++)
      if (at_tokenizer_from_json(k_json[i], strlen(k_json[i]), &g_tok[i]) != AT_OK) {
        fprintf(stderr, "fuzz_text_encode: tokenizer %zu: %s\n", i, at_last_error());
        abort();
      }
  }
  if (size < 1) return 0;
  uint8_t sel = data[0];
  const at_tokenizer *t = g_tok[sel % N_TOK];
  char *text = malloc(size); /* exact-size copy for ASan */
  if (!text) return 0;
  memcpy(text, data + 1, size - 1);
  size_t len = size - 1;
  at_encode_params p = at_encode_default_params();
  p.offsets = (sel & 0x10) ? AT_OFFSETS_CHARS : AT_OFFSETS_BYTES;
  p.add_special_tokens = !(sel & 0x20);
  if (sel & 0x40) p.max_length = 1 + (sel >> 7) * 7;
  /* which end truncation cuts: as tokenizer.json says, Right or Left (the
   * last byte picks; the offsets checked below must hold for each) */
  p.truncation_direction = (at_trunc_direction)(data[size - 1] % 3);
  size_t split = (sel & 0x80) && len ? len / 2 : len;
  at_encoding e;
  at_status st = at_tokenizer_encode(t, g_ws, text, split, (sel & 0x80) ? text + split : NULL,
                                     len - split, &p, &e);
  if (st == AT_OK) {
    for (size_t i = 0; i < e.n; i++) {
      if (e.offsets[i][0] > e.offsets[i][1] || e.offsets[i][1] > len) abort();
      if (!e.tokens[i]) abort();
    }
    int32_t *ids = malloc((e.n ? e.n : 1) * sizeof *ids);
    if (ids) {
      memcpy(ids, e.ids, e.n * sizeof *ids);
      const char *out;
      size_t ol;
      (void)at_tokenizer_decode(t, g_ws, ids, e.n, sel & 1, &out, &ol);
      free(ids);
    }
  }
  const char *texts[2] = {text, text};
  size_t lens[2] = {split, len};
  at_encoding eb[2];
  (void)at_tokenizer_encode_batch(t, g_ws, texts, lens, 2, NULL, eb);
  free(text);
  return 0;
}
