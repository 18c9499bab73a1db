# The planner in the deterministic simulator (src/plan/sim*.c): goodput
# against the oracle for every load and client model, recovery after a
# burst, determinism, and checks that the simulator tells policies apart.
at_unit_test(test_plan_sim tests/unit/test_plan_sim.c)
# 900 s: the AddressSanitizer build takes ~8x the release build's time, and
# on a host running 2x slow (2026-12-03) that passed 300 s (7 min 44 s).
set_tests_properties(test_plan_sim PROPERTIES TIMEOUT 900)
