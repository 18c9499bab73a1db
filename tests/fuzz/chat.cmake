# libFuzzer driver for the chat-template engine (src/chat: lexer, parser,
# evaluator); scripts/fuzz.sh runs it over tests/fuzz/corpus/chat_template/.
at_fuzz_driver(fuzz_chat_template tests/fuzz/fuzz_chat_template.c)
