# The generation lane's benchmarks (bench/decode/bench_decode.c; docs/benchmarks.md).
add_executable(bench_decode "${PROJECT_SOURCE_DIR}/bench/decode/bench_decode.c"
               "${PROJECT_SOURCE_DIR}/src/cli/dataset.c")
target_link_libraries(bench_decode PRIVATE anytime m)
target_include_directories(bench_decode PRIVATE "${PROJECT_SOURCE_DIR}/src")
