# libFuzzer drivers for the tokenizer (input texts, tokenizer.json loading)
# and the CSV reader; scripts/fuzz.sh runs them over tests/fuzz/corpus/text_*/.
at_fuzz_driver(fuzz_text_encode tests/fuzz/fuzz_text_encode.c)
at_fuzz_driver(fuzz_text_json tests/fuzz/fuzz_text_json.c)
at_fuzz_driver(fuzz_text_csv tests/fuzz/fuzz_text_csv.c)
at_fuzz_driver(fuzz_vocab_txt tests/fuzz/fuzz_vocab_txt.c)
