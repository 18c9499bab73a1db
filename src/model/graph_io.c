/* src/model/graph_io.c — read the names of an ONNX model's graph outputs
 * straight from the protobuf, without ONNX Runtime, so that model resolution
 * can tell a classifier ("logits") from an embedder ("last_hidden_state")
 * without the cost of creating a session. The walk uses the one bounds-checked
 * protobuf walker (core/pb.h): every length is checked against the bytes
 * that remain, and length-delimited fields we do not need (the weights) are
 * skipped without being read. Fuzzed by tests/fuzz/fuzz_graph_io.c. */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pb.h"
#include "model/model_internal.h"

int at_graph_output_names_buf(const unsigned char *buf, size_t len,
                              char names[][AT_GRAPH_NAME_MAX], int max) {
  at_pb m = at_pb_of(buf, len);
  int n = 0, saw_graph = 0;
  at_pb_field f;
  while (m.p < m.end) {
    if (at_pb_next(&m, &f)) return -1;
    if (f.number != 7 || f.wire != 2) continue; /* ModelProto.graph = 7 */
    saw_graph = 1;
    at_pb g = f.sub;
    while (g.p < g.end) {
      if (at_pb_next(&g, &f)) return -1;
      if (f.number != 12 || f.wire != 2) continue; /* GraphProto.output = 12 */
      at_pb vi = f.sub;
      while (vi.p < vi.end) {
        if (at_pb_next(&vi, &f)) return -1;
        if (f.number != 1 || f.wire != 2) continue; /* ValueInfoProto.name = 1 */
        if (n < max) {
          size_t k = (size_t)(f.sub.end - f.sub.p);
          if (k >= AT_GRAPH_NAME_MAX) k = AT_GRAPH_NAME_MAX - 1;
          memcpy(names[n], f.sub.p, k);
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
