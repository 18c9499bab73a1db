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

/* at_ort_session_open() for an ORT-format file (the artifact cache's
 * model.ort) without copying it: the file is mapped read-only and handed to
 * CreateSessionFromArray with session.use_ort_model_bytes_directly and
 * session.use_ort_model_bytes_for_initializers, so ORT parses the mapping in
 * place and its initializers point into it (kernels that pre-pack weights
 * still make their own packed copies). The session owns the mapping and
 * unmaps it in at_session_destroy(), after releasing the OrtSession. The
 * file must not be modified while the session lives (published artifacts
 * never are). params->optimized_model_path must be NULL
 * (AT_ERR_INVALID_ARG); other statuses as at_ort_session_open(), plus
 * AT_ERR_IO when the file cannot be mapped. */
at_status at_ort_session_open_mapped(const char *ort_path, const at_session_params *params,
                                     at_session **out);

/* Bytes of the file `s` was mapped from (0 for a session not opened by
 * at_ort_session_open_mapped, or NULL). For tests and logs. */
size_t at_ort_session_mapped_bytes(const at_session *s);

/* Record what the artifact cache did for `s` (at_session_artifact_outcome). */
void at_ort_session_set_artifact(at_session *s, at_artifact_outcome outcome);

#endif /* ANYTIME_ORT_SESSION_PLAIN_H */
