/* src/ort/ort_internal.h — what the rest of src/ort/ shares: the loaded
 * OrtApi table and the process-wide OrtEnv. Only files in src/ort/ include
 * this (and therefore onnxruntime_c_api.h); no ORT type leaves src/ort/. */
#ifndef ANYTIME_ORT_INTERNAL_H
#define ANYTIME_ORT_INTERNAL_H

#include <onnxruntime_c_api.h>

#include "anytime/runtime.h"

/* The compile-time half of the version lock: the header we compile against
 * must be the one CMake verified against the library at configure time. */
_Static_assert(ORT_API_VERSION == AT_ORT_EXPECTED_API_VERSION,
               "onnxruntime_c_api.h is not the ORT API version CMake configured "
               "(cmake/ort-version.txt); reconfigure against the right SDK");

/* Valid after a successful at_runtime_init(). */
const OrtApi *at_ort_api(void);
OrtEnv *at_ort_env(void);

/* The live-object count behind at_runtime_live_objects(): call with +1
 * after each successful create and -1 after each release. */
typedef enum { AT_ORT_LIVE_SESSION = 0, AT_ORT_LIVE_VALUE = 1 } at_ort_live_kind;
void at_ort_live_add(at_ort_live_kind kind, long delta);

/* Convert an OrtStatus into an anytime failure: records ORT's message (with
 * `what` as context) in at_last_error(), releases the status and returns
 * `code`. `st` must be non-NULL. */
at_status at_ort_fail(OrtStatus *st, at_status code, const char *what);

#endif /* ANYTIME_ORT_INTERNAL_H */
