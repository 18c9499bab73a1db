# libFuzzer drivers for the tokenizer (input texts, tokenizer.json and vocab.txt loading),
# the CSV reader, SentencePiece's precompiled_charsmap and the Unigram model;
# scripts/fuzz.sh runs them over tests/fuzz/corpus/text_*/.
at_fuzz_driver(fuzz_text_encode tests/fuzz/fuzz_text_encode.c)
at_fuzz_driver(fuzz_text_json tests/fuzz/fuzz_text_json.c)
at_fuzz_driver(fuzz_text_csv tests/fuzz/fuzz_text_csv.c)
at_fuzz_driver(fuzz_vocab_txt tests/fuzz/fuzz_vocab_txt.c)
at_fuzz_driver(fuzz_text_charsmap tests/fuzz/fuzz_text_charsmap.c)
at_fuzz_driver(fuzz_text_unigram tests/fuzz/fuzz_text_unigram.c)
