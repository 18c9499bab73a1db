# The planner in the deterministic simulator (src/plan/sim*.c): goodput
# against the oracle for every load and client model, recovery after a
# burst, determinism, and checks that the simulator tells policies apart.
at_unit_test(test_plan_sim tests/unit/test_plan_sim.c)
set_tests_properties(test_plan_sim PROPERTIES TIMEOUT 300)
