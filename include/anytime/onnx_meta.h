/* anytime/onnx_meta.h — read an ONNX file's header fields without ORT.
 *
 * ONNX Runtime's model metadata does not expose the opset or IR version, so
 * anytime reads them from the ModelProto itself with a small, bounds-checked
 * protobuf walker (src/model/onnx_meta.c). Only top-level scalar fields and
 * opset_import entries are read; the graph is skipped, never parsed.
 *
 * Thread-safety: pure function of its input.
 */
#ifndef ANYTIME_ONNX_META_H
#define ANYTIME_ONNX_META_H

#include "anytime/api.h"

#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AT_ONNX_MAX_OPSETS 16

typedef struct at_onnx_meta {
  int64_t ir_version;
  char producer_name[64];
  char producer_version[64];
  char domain[64];
  int64_t model_version;
  size_t n_opsets;
  struct {
    char domain[64];  /* "" is the default ONNX domain */
    int64_t version;
  } opsets[AT_ONNX_MAX_OPSETS];
  int has_graph;      /* 1 if a graph field was present */
} at_onnx_meta;

/* Parse the ModelProto in buf[0..len). Strings longer than their field are
 * truncated; opset entries beyond AT_ONNX_MAX_OPSETS are ignored.
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL pointers) or AT_ERR_PARSE
 * (malformed protobuf, or no graph; at_last_error() says where). */
AT_API at_status at_onnx_meta_parse(const uint8_t *buf, size_t len, at_onnx_meta *out);

/* The default-domain ("" or "ai.onnx") opset, or 0 if none was declared. */
AT_API int64_t at_onnx_meta_default_opset(const at_onnx_meta *m);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_ONNX_META_H */
