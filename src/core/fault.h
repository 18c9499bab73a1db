/* src/core/fault.h — fault injection for tests (issue #17 item 4), driven
 * only by the environment variable ANYTIME_FAULTS, read once at the first
 * engine Run. Empty or unset (always, outside tests): one relaxed atomic
 * load per Run and nothing else. A comma-separated list of:
 *   run_fail_every=N    every Nth engine Run fails (AT_ERR_ORT, "injected
 *                       fault") without running
 *   run_stall_every=N   every Nth engine Run first sleeps run_stall_ms
 *   run_stall_ms=M      (default 50)
 *   run_stall_first=K   stalls only among the first K Runs (0 = always),
 *                       so a test can watch the planner recover
 *   alloc_fail_every=N  every Nth request's job allocation (the memory a
 *                       request's tokens and outputs take on their way to
 *                       the batcher, src/serve/textjob.c) fails as if
 *                       malloc had returned NULL. The batcher and engine
 *                       allocate nothing per batch (their buffers are sized
 *                       at start); ONNX Runtime's own allocations during a
 *                       Run fail the Run, which run_fail_every stands for.
 * An entry it does not know is logged as an error and ignored. The engine
 * asks before each Run; the decoder is not affected, and neither are the
 * start-up timing Runs (they go through the engine, so the server holds
 * the injection around them: at_fault_hold). Read at the first question from either hook. Thread-safe.
 * docs/testing.md, "Fault injection". */
#ifndef ANYTIME_CORE_FAULT_H
#define ANYTIME_CORE_FAULT_H

#include <stdbool.h>

/* Before one engine Run: sleeps if this Run is to stall; returns true if it
 * is to fail (the thread's error detail then says so). */
bool at_fault_engine_run(void);

/* While held, engine Runs are neither counted nor failed nor stalled (the
 * server's start-up timing, src/serve/models.c). Any thread. */
void at_fault_hold(bool held);

/* Before a request's job allocation: true if it is to fail. */
bool at_fault_alloc(void);

#endif
