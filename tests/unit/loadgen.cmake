# Unit tests for the load generator (src/tools/loadgen_*.c): schedule, CSV
# (the shared dataset reader, src/tools/dataset.c), HTTP parsing, summary,
# and runs against an in-test loopback responder.
at_unit_test(test_loadgen tests/unit/test_loadgen.c)
target_link_libraries(test_loadgen PRIVATE anytime_tools)
