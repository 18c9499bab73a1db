/* src/core/pb.c — the one bounds-checked protobuf walker (see pb.h). */
#include "core/pb.h"

int at_pb_varint(at_pb *c, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (c->p >= c->end) return -1;
    uint8_t b = *c->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1; /* more than 10 bytes */
}

int at_pb_next(at_pb *c, at_pb_field *f) {
  uint64_t key, n;
  f->sub = (at_pb){NULL, NULL};
  f->varint = 0;
  if (at_pb_varint(c, &key)) return -1;
  f->number = key >> 3;
  f->wire = (unsigned)(key & 7);
  if (f->number == 0) return -1;
  switch (f->wire) {
    case 0: return at_pb_varint(c, &f->varint);
    case 1: n = 8; break;
    case 5: n = 4; break;
    case 2:
      if (at_pb_varint(c, &n) || n > (uint64_t)(c->end - c->p)) return -1;
      f->sub = (at_pb){c->p, c->p + n};
      break;
    default: return -1; /* groups (3, 4) and 6, 7 */
  }
  if (n > (uint64_t)(c->end - c->p)) return -1;
  c->p += n;
  return 0;
}
