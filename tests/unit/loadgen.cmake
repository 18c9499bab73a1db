# Unit tests for `anytime loadgen` (src/cli/loadgen_*.c): schedule, CSV (the
# shared dataset reader, src/cli/dataset.c), HTTP
# parsing, summary, and runs against an in-test loopback responder.
at_unit_test(test_loadgen tests/unit/test_loadgen.c src/cli/loadgen_proto.c
             src/cli/loadgen_run.c src/cli/dataset.c)
