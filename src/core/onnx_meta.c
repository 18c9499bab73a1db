/* src/core/onnx_meta.c — a tiny, bounds-checked protobuf walker that reads
 * the top-level fields of an ONNX ModelProto (ir_version, producer, domain,
 * model_version, opset_import) and skips everything else, including the
 * graph. It never allocates and never reads past `len`; a fuzz driver
 * (tests/fuzz/fuzz_onnx_meta.c) holds it to that.
 *
 * Field numbers (onnx.proto): ModelProto 1 ir_version, 2 producer_name,
 * 3 producer_version, 4 domain, 5 model_version, 6 doc_string, 7 graph,
 * 8 opset_import; OperatorSetIdProto 1 domain, 2 version. */
#include <string.h>

#include "anytime/onnx_meta.h"
#include "core/internal.h"

typedef struct {
  const uint8_t *p, *end;
} reader;

static int read_varint(reader *r, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return -1;
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1; /* more than 10 bytes */
}

/* Skip a field of wire type `wt`; for length-delimited, return its bounds. */
static int read_field(reader *r, unsigned wt, uint64_t *num, const uint8_t **s,
                      size_t *slen) {
  switch (wt) {
    case 0: return read_varint(r, num);
    case 1:
      if ((size_t)(r->end - r->p) < 8) return -1;
      r->p += 8;
      return 0;
    case 5:
      if ((size_t)(r->end - r->p) < 4) return -1;
      r->p += 4;
      return 0;
    case 2: {
      uint64_t n;
      if (read_varint(r, &n) != 0) return -1;
      if (n > (uint64_t)(r->end - r->p)) return -1;
      *s = r->p;
      *slen = (size_t)n;
      r->p += n;
      return 0;
    }
    default: return -1; /* groups (3, 4) and invalid types are not used by ONNX */
  }
}

static void copy_str(char *dst, size_t cap, const uint8_t *s, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static int parse_opset(const uint8_t *s, size_t n, char *domain, size_t cap,
                       int64_t *version) {
  reader r = {s, s + n};
  domain[0] = '\0';
  *version = 0;
  while (r.p < r.end) {
    uint64_t key, num = 0;
    const uint8_t *str = NULL;
    size_t slen = 0;
    if (read_varint(&r, &key) != 0) return -1;
    unsigned wt = (unsigned)(key & 7);
    uint64_t field = key >> 3;
    if (read_field(&r, wt, &num, &str, &slen) != 0) return -1;
    if (field == 1 && wt == 2) copy_str(domain, cap, str, slen);
    if (field == 2 && wt == 0) *version = (int64_t)num;
  }
  return 0;
}

at_status at_onnx_meta_parse(const uint8_t *buf, size_t len, at_onnx_meta *out) {
  if (!buf || !out) return at_fail(AT_ERR_INVALID_ARG, "NULL argument");
  memset(out, 0, sizeof *out);
  reader r = {buf, buf + len};
  while (r.p < r.end) {
    size_t at = (size_t)(r.p - buf);
    uint64_t key, num = 0;
    const uint8_t *s = NULL;
    size_t slen = 0;
    if (read_varint(&r, &key) != 0)
      return at_fail(AT_ERR_PARSE, "not an ONNX model: bad field key at byte %zu", at);
    unsigned wt = (unsigned)(key & 7);
    uint64_t field = key >> 3;
    if (field == 0 || read_field(&r, wt, &num, &s, &slen) != 0)
      return at_fail(AT_ERR_PARSE,
                     "not an ONNX model: malformed or truncated field %llu at byte %zu",
                     (unsigned long long)field, at);
    switch (field) {
      case 1: if (wt == 0) out->ir_version = (int64_t)num; break;
      case 2: if (wt == 2) copy_str(out->producer_name, sizeof out->producer_name, s, slen); break;
      case 3: if (wt == 2) copy_str(out->producer_version, sizeof out->producer_version, s, slen); break;
      case 4: if (wt == 2) copy_str(out->domain, sizeof out->domain, s, slen); break;
      case 5: if (wt == 0) out->model_version = (int64_t)num; break;
      case 7: if (wt == 2) out->has_graph = 1; break;
      case 8:
        if (wt == 2 && out->n_opsets < AT_ONNX_MAX_OPSETS) {
          size_t i = out->n_opsets;
          if (parse_opset(s, slen, out->opsets[i].domain, sizeof out->opsets[i].domain,
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
