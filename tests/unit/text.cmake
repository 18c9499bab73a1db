# Unit tests for src/text (tokenizer components at their edge cases) and the
# CSV reader. Parity with Hugging Face over real corpora: tests/integration/text.cmake.
at_unit_test(test_text_components tests/unit/test_text_components.c)
at_unit_test(test_text_csv tests/unit/test_text_csv.c)
at_unit_test(test_text_unigram tests/unit/test_text_unigram.c)
