/* src/ort/session_plain.h — the plain half of session creation, for the
 * artifact cache (src/model/artifact_cache.c), which implements the public
 * at_session_create() around it: src/ort opens sessions and knows nothing
 * of the cache, so the dependency runs one way (model -> ort). No ORT type
 * appears here. */
#ifndef ANYTIME_ORT_SESSION_PLAIN_H
#define ANYTIME_ORT_SESSION_PLAIN_H

#include "anytime/session.h"

/* at_session_create() without the artifact cache: params->artifact_cache_dir
 * is ignored; everything else as documented in anytime/session.h. */
at_status at_ort_session_open(const char *model_path, const at_session_params *params,
                              at_session **out);

/* Record what the artifact cache did for `s` (at_session_artifact_outcome). */
void at_ort_session_set_artifact(at_session *s, at_artifact_outcome outcome);

#endif /* ANYTIME_ORT_SESSION_PLAIN_H */
