# Unit tests for src/plan: the queueing mathematics, the rate window and the
# admission planner (selector, backlog, batching, threads).
at_unit_test(test_plan_math tests/unit/test_plan_math.c)
at_unit_test(test_plan_rate tests/unit/test_plan_rate.c)
at_unit_test(test_plan_planner tests/unit/test_plan_planner.c)
