# bench/cold_start.cmake — session creation alone, by way of loading
# (bench/cold_start/session_create.c; docs/benchmarks.md, cold start).
add_executable(bench_session_create "${PROJECT_SOURCE_DIR}/bench/cold_start/session_create.c")
target_link_libraries(bench_session_create PRIVATE anytime)
