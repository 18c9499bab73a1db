# Tokenizer throughput benchmark (not a timed test): bench/tokenizer/run.sh
# runs this against Hugging Face tokenizers on the same corpus.
add_executable(bench_tokenizer "${PROJECT_SOURCE_DIR}/bench/tokenizer/bench_tokenizer.c")
target_link_libraries(bench_tokenizer PRIVATE anytime)
