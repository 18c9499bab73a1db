/* src/core/onnx_meta.c — read the top-level fields of an ONNX ModelProto
 * (ir_version, producer, domain, model_version, opset_import) with the one
 * bounds-checked protobuf walker (core/pb.h), skipping everything else,
 * including the graph. It never allocates and never reads past `len`; a
 * fuzz driver (tests/fuzz/fuzz_onnx_meta.c) holds it to that.
 *
 * Field numbers (onnx.proto): ModelProto 1 ir_version, 2 producer_name,
 * 3 producer_version, 4 domain, 5 model_version, 6 doc_string, 7 graph,
 * 8 opset_import; OperatorSetIdProto 1 domain, 2 version. */
#include <string.h>

#include "anytime/onnx_meta.h"
#include "core/internal.h"
#include "core/pb.h"

static void copy_str(char *dst, size_t cap, const uint8_t *s, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static int parse_opset(at_pb r, char *domain, size_t cap, int64_t *version) {
  domain[0] = '\0';
  *version = 0;
  while (r.p < r.end) {
    at_pb_field f;
    if (at_pb_next(&r, &f) != 0) return -1;
    if (f.number == 1 && f.wire == 2) copy_str(domain, cap, f.sub.p, (size_t)(f.sub.end - f.sub.p));
    if (f.number == 2 && f.wire == 0) *version = (int64_t)f.varint;
  }
  return 0;
}

at_status at_onnx_meta_parse(const uint8_t *buf, size_t len, at_onnx_meta *out) {
  if (!buf || !out) return at_fail(AT_ERR_INVALID_ARG, "NULL argument");
  memset(out, 0, sizeof *out);
  at_pb r = at_pb_of(buf, len);
  while (r.p < r.end) {
    size_t at = (size_t)(r.p - buf);
    at_pb_field f;
    if (at_pb_next(&r, &f) != 0)
      return at_fail(AT_ERR_PARSE, "not an ONNX model: malformed or truncated field at byte %zu",
                     at);
    const uint8_t *s = f.sub.p;
    size_t slen = (size_t)(f.sub.end - f.sub.p);
    uint64_t num = f.varint;
    unsigned wt = f.wire;
    switch (f.number) {
      case 1: if (wt == 0) out->ir_version = (int64_t)num; break;
      case 2: if (wt == 2) copy_str(out->producer_name, sizeof out->producer_name, s, slen); break;
      case 3: if (wt == 2) copy_str(out->producer_version, sizeof out->producer_version, s, slen); break;
      case 4: if (wt == 2) copy_str(out->domain, sizeof out->domain, s, slen); break;
      case 5: if (wt == 0) out->model_version = (int64_t)num; break;
      case 7: if (wt == 2) out->has_graph = 1; break;
      case 8:
        if (wt == 2 && out->n_opsets < AT_ONNX_MAX_OPSETS) {
          size_t i = out->n_opsets;
          if (parse_opset(f.sub, out->opsets[i].domain, sizeof out->opsets[i].domain,
                          &out->opsets[i].version) != 0)
            return at_fail(AT_ERR_PARSE, "not an ONNX model: malformed opset_import at byte %zu", at);
          out->n_opsets++;
        }
        break;
      default: break;
    }
  }
  if (!out->has_graph) return at_fail(AT_ERR_PARSE, "not an ONNX model: no graph");
  return AT_OK;
}

int64_t at_onnx_meta_default_opset(const at_onnx_meta *m) {
  for (size_t i = 0; i < m->n_opsets; i++)
    if (m->opsets[i].domain[0] == '\0' || strcmp(m->opsets[i].domain, "ai.onnx") == 0)
      return m->opsets[i].version;
  return 0;
}
