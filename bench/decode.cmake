# The generation lane's benchmarks (bench/decode/bench_decode.c; docs/benchmarks.md).
add_executable(bench_decode "${PROJECT_SOURCE_DIR}/bench/decode/bench_decode.c")
target_link_libraries(bench_decode PRIVATE anytime_tools m)
target_include_directories(bench_decode PRIVATE "${PROJECT_SOURCE_DIR}/src")

# The one-point modes bench/decode_compare.sh reads run and print their csv
# line on the committed default decoder (not a timing): the decode step
# alone, and the same point through the whole generator (which exits 1 when
# a sequence ends early or the B sequences never decode together).
if(AT_BUILD_TESTS)
  foreach(mode steady generator)
    add_test(NAME bench_decode_${mode}_smoke
             COMMAND bench_decode "${PROJECT_SOURCE_DIR}/models/decoder" --variant int8 --passes 2
                     --only ${mode} --batch 3 --cached 20 --steps 4)
    set_tests_properties(bench_decode_${mode}_smoke PROPERTIES LABELS integration
                         PASS_REGULAR_EXPRESSION "\ncsv,3,20,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+\n")
  endforeach()
endif()
