/* tests/unit/test_serve_detok.c — the completions route's incremental
 * detokenisation (ts_detok_step, src/serve/textstream.c) against decoding
 * every id at once, on the shipped decoder's byte-level BPE tokenizer
 * (models/decoder/tokenizer.json) and a WordPiece vocabulary: seeded random
 * id sequences, many of them byte tokens that split UTF-8 characters, fed
 * one id per step as the generator does. After the final step the text must
 * equal the whole decode; before it, the text must always be a prefix of
 * Seen to fail (2026-12-01): with the context window dropped (every step
 * decoding only the new ids) the WordPiece text loses the spaces between
 * words ("emusicgscript..."); with the U+FFFD hold removed the byte-level
 * text keeps a replacement character where the whole decode has the
 * character (sequence 69: same length, different bytes).
 */
#include "anytime/anytime.h"
#include "anytime/rng.h"
#include "serve/textstream.h"
#include "testutil.h"

static void check_tokenizer(const char *path) {
  at_tokenizer *tok = NULL;
  at_tok_workspace *ws = NULL;
  if (at_tokenizer_load(path, &tok) != AT_OK) fail_msg("%s: %s", path, at_last_error());
  assert_int_equal(at_tok_workspace_create(&ws), AT_OK);
  size_t vocab = at_tokenizer_vocab_size(tok);
  assert_true(vocab > 10);
  at_rng rng;
  at_rng_seed(&rng, 20261201);
  enum { SEQS = 300, MAXLEN = 120 };
  int32_t ids[MAXLEN];
  size_t splits_seen = 0;
  for (int s = 0; s < SEQS; s++) {
    int len = 1 + (int)(at_rng_next(&rng) % MAXLEN);
    for (int i = 0; i < len; i++) ids[i] = (int32_t)(at_rng_next(&rng) % vocab);
    ts_detok d = {0};
    for (int n = 1; n <= len; n++) {
      assert_true(ts_detok_step(&d, tok, ws, ids, n, n == len));
      if (n < len && d.len >= 3 && !memcmp(d.text + d.len - 3, "\xEF\xBF\xBD", 3)) splits_seen++;
    }
    const char *whole;
    size_t wlen;
    assert_int_equal(at_tokenizer_decode(tok, ws, ids, (size_t)len, true, &whole, &wlen), AT_OK);
    if (d.len != wlen || (wlen && memcmp(d.text, whole, wlen)))
      fail_msg("%s, sequence %d (%d ids): incremental text (%zu bytes) \"%.80s\" differs from the "
               "whole decode (%zu bytes) \"%.80s\"", path, s, len, d.len, d.text ? d.text : "",
               wlen, whole);
    ts_detok_free(&d);
  }
  /* a replacement character can be real text (an id that is U+FFFD); a
   * split one is never released before the final step: count, no bound */
  print_message("%s: %d sequences equal; %zu intermediate texts ended in U+FFFD\n", path, SEQS,
                splits_seen);
  at_tok_workspace_destroy(ws);
  at_tokenizer_destroy(tok);
}

static void test_byte_level_bpe(void **state) {
  (void)state;
  check_tokenizer(test_source("models/decoder/tokenizer.json"));
}

static void test_wordpiece(void **state) {
  (void)state;
  check_tokenizer(test_data("models/tiny/vocab.txt"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_byte_level_bpe),
                                     cmocka_unit_test(test_wordpiece)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
