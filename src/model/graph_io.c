/* src/model/graph_io.c — read the names of an ONNX model's graph outputs
 * straight from the protobuf, without ONNX Runtime, so that model resolution
 * can tell a classifier ("logits") from an embedder ("last_hidden_state")
 * without the cost of creating a session. The walk is bounds-checked: every
 * length is checked against the bytes that remain, and length-delimited
 * fields we do not need (the weights) are skipped without being read. */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model_internal.h"

typedef struct {
  const unsigned char *p, *end;
} cursor;

static int varint(cursor *c, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (c->p >= c->end) return -1;
    unsigned char b = *c->p++;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

/* Read one field header; for wire type 2 also the length and bounds check.
 * Sets *field, *wt and, for wire type 2, *sub to the payload. Skips other
 * wire types' payloads. Returns 0, or -1 on malformed input. */
static int next_field(cursor *c, uint64_t *field, cursor *sub) {
  uint64_t key;
  if (varint(c, &key)) return -1;
  *field = key >> 3;
  unsigned wt = (unsigned)(key & 7);
  sub->p = sub->end = NULL;
  uint64_t v;
  switch (wt) {
    case 0: return varint(c, &v);
    case 1:
      if ((size_t)(c->end - c->p) < 8) return -1;
      c->p += 8;
      return 0;
    case 5:
      if ((size_t)(c->end - c->p) < 4) return -1;
      c->p += 4;
      return 0;
    case 2:
      if (varint(c, &v) || v > (uint64_t)(c->end - c->p)) return -1;
      sub->p = c->p;
      sub->end = c->p + v;
      c->p += v;
      return 0;
    default: return -1; /* groups (3, 4) are not used by ONNX */
  }
}

int at_graph_output_names_buf(const unsigned char *buf, size_t len,
                              char names[][AT_GRAPH_NAME_MAX], int max) {
  cursor m = {buf, buf + len};
  int n = 0, saw_graph = 0;
  while (m.p < m.end) {
    uint64_t f;
    cursor g;
    if (next_field(&m, &f, &g)) return -1;
    if (f != 7 || !g.p) continue; /* ModelProto.graph = 7 */
    saw_graph = 1;
    while (g.p < g.end) {
      cursor vi;
      if (next_field(&g, &f, &vi)) return -1;
      if (f != 12 || !vi.p) continue; /* GraphProto.output = 12 */
      while (vi.p < vi.end) {
        cursor s;
        if (next_field(&vi, &f, &s)) return -1;
        if (f != 1 || !s.p) continue; /* ValueInfoProto.name = 1 */
        if (n < max) {
          size_t k = (size_t)(s.end - s.p);
          if (k >= AT_GRAPH_NAME_MAX) k = AT_GRAPH_NAME_MAX - 1;
          memcpy(names[n], s.p, k);
          names[n][k] = 0;
        }
        n++;
      }
    }
  }
  if (!saw_graph) return -1;
  return n < max ? n : max;
}

int at_graph_output_names(const char *path, char names[][AT_GRAPH_NAME_MAX], int max) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  int r = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      r = at_graph_output_names_buf(p, (size_t)st.st_size, names, max);
      munmap(p, (size_t)st.st_size);
    }
  }
  close(fd);
  return r;
}
