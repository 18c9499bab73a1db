# The independent bare loop (bench/bare_ort/bare_ort.c): ONNX Runtime's C
# header and libc only. It must not link libanytime or see src/: it is the
# reference the serving path's Run is measured against (bench/run_cost.sh),
# and a reference that shares code with what it checks is no reference.
add_executable(bare_ort "${PROJECT_SOURCE_DIR}/bench/bare_ort/bare_ort.c")
target_include_directories(bare_ort PRIVATE "${ORT_INCLUDE_DIR}")
target_compile_definitions(bare_ort PRIVATE "BARE_DEFAULT_LIB=\"${ORT_LIBRARY}\"")
target_link_libraries(bare_ort PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)

# The bare greedy decode loop with IO binding (bench/bare_ort/bare_decode.c),
# the same rule: the limit the generation lane's decode step is held to.
add_executable(bare_decode "${PROJECT_SOURCE_DIR}/bench/bare_ort/bare_decode.c")
target_include_directories(bare_decode PRIVATE "${ORT_INCLUDE_DIR}")
target_compile_definitions(bare_decode PRIVATE "BARE_DEFAULT_LIB=\"${ORT_LIBRARY}\"")
target_link_libraries(bare_decode PRIVATE ${CMAKE_DL_LIBS})

# It runs and prints the line bench/run_cost.sh reads (not a timing: a
# fraction of a second of Runs on the shipped int8 classifier).
if(AT_BUILD_TESTS)
  add_test(NAME bare_ort_smoke
           COMMAND bare_ort --model "${PROJECT_SOURCE_DIR}/models/sentiment-large/onnx/model_quantized.onnx"
                   --ids 2,164,2500,1960,111,846,216,1156,76,262,3 --threads 2 --seconds 0.2
                   --passes 2 --warmup 2 --csv)
  set_tests_properties(bare_ort_smoke PROPERTIES LABELS integration
                       PASS_REGULAR_EXPRESSION "\ncsv,11,2,1,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,")
  # the decode loop runs on the committed Llama export (not a timing)
  add_test(NAME bare_decode_smoke
           COMMAND bare_decode --model "${PROJECT_SOURCE_DIR}/tests/data/models/decoder-exports/llama/onnx/model.onnx"
                   --batch 3 --cached 5 --steps 4 --passes 2)
  set_tests_properties(bare_decode_smoke PROPERTIES LABELS integration
                       PASS_REGULAR_EXPRESSION "\ncsv,3,5,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+\n")
  # the GroupQueryAttention form decode_compare.sh measures is a decoder
  # (float64 reference through onnxruntime-node) and --gqa drives it
  add_test(NAME bare_decode_gqa
           COMMAND bash "${PROJECT_SOURCE_DIR}/tests/integration/gqa_decoder.sh" $<TARGET_FILE:bare_decode>)
  set_tests_properties(bare_decode_gqa PROPERTIES LABELS "integration;reference" TIMEOUT 300)
endif()
