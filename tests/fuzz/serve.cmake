# libFuzzer drivers for the server's configuration reader and the load
# generator's HTTP response parser.
at_fuzz_driver(fuzz_server_config tests/fuzz/fuzz_server_config.c)
at_fuzz_driver(fuzz_loadgen_http tests/fuzz/fuzz_loadgen_http.c)
target_link_libraries(fuzz_loadgen_http PRIVATE anytime_tools)
at_fuzz_driver(fuzz_textstream tests/fuzz/fuzz_textstream.c)
at_fuzz_driver(fuzz_completion_req tests/fuzz/fuzz_completion_req.c)
at_fuzz_driver(fuzz_prescan tests/fuzz/fuzz_prescan.c)
at_fuzz_driver(fuzz_auth tests/fuzz/fuzz_auth.c)
at_fuzz_driver(fuzz_loadgen_csv tests/fuzz/fuzz_loadgen_csv.c)
target_link_libraries(fuzz_loadgen_csv PRIVATE anytime_tools)
# Request bodies of the text routes (TEI, OpenAI embeddings), the V2 infer
# body, and the base64 encoder of embeddings.
at_fuzz_driver(fuzz_text_req tests/fuzz/fuzz_text_req.c)
at_fuzz_driver(fuzz_v2_req tests/fuzz/fuzz_v2_req.c)
at_fuzz_driver(fuzz_base64 tests/fuzz/fuzz_base64.c)
# Token-array input to /v1/embeddings, and the error bodies of each protocol.
at_fuzz_driver(fuzz_token_input tests/fuzz/fuzz_token_input.c)
# Streamed completions as server-sent events, read back by a reference
# SSE parser.
at_fuzz_driver(fuzz_sse tests/fuzz/fuzz_sse.c)
# The V2 binary tensor data extension: header split and binary inputs.
at_fuzz_driver(fuzz_v2_binary tests/fuzz/fuzz_v2_binary.c)
