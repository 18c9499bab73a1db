/* src/core/pb.h — the one protobuf walker: bounds-checked reading of field
 * keys, varints and length-delimited payloads over a byte range, for the
 * readers that look into ONNX files without ONNX Runtime (onnx_meta.c: the
 * ModelProto's header fields; src/model/graph_io.c: the graph's output
 * names). It never allocates and never reads outside [p, end): every length
 * is checked against the bytes that remain. Groups (wire types 3 and 4)
 * and field number 0 are malformed (ONNX uses neither). Fuzzed through
 * both readers (tests/fuzz/fuzz_onnx_meta.c, fuzz_graph_io.c).
 * Thread-safety: pure functions of their input. Internal to anytime. */
#ifndef ANYTIME_CORE_PB_H
#define ANYTIME_CORE_PB_H

#include <stddef.h>
#include <stdint.h>

typedef struct at_pb {
  const uint8_t *p, *end; /* the bytes not read yet */
} at_pb;

/* One field as read by at_pb_next(). */
typedef struct at_pb_field {
  uint64_t number;
  unsigned wire;   /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
  uint64_t varint; /* wire 0: the value */
  at_pb sub;       /* wire 2: the payload ({NULL, NULL} otherwise) */
} at_pb_field;

static inline at_pb at_pb_of(const void *buf, size_t len) {
  return (at_pb){(const uint8_t *)buf, (const uint8_t *)buf + len};
}

/* A varint (at most 10 bytes). Returns 0, or -1 if truncated or too long. */
int at_pb_varint(at_pb *c, uint64_t *out);

/* Read the next field and step over its payload. Returns 0, or -1 on
 * malformed or truncated input (c is then somewhere inside the field). */
int at_pb_next(at_pb *c, at_pb_field *f);

#endif
