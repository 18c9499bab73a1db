/* src/model/sha256.c — SHA-256 for the compiled-artifact cache
 * (src/model/artifact_cache.c: the content hash of model files, the cache
 * key, the artifact checksum), where hashing tens of megabytes sits on the
 * start-up path. The compression is nettle's (already loaded through
 * libmicrohttpd → GnuTLS): Debian builds it "fat", so it picks SHA-NI at
 * run time where the CPU has it, and NETTLE_FAT_OVERRIDE= forces its plain
 * x86-64 code (the unit tests run the standard vectors through both). This
 * file adds the streaming of a whole file and the hex form. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "model/sha256.h"

void at_sha256_init(at_sha256_ctx *c) { sha256_init(&c->n); }

void at_sha256_update(at_sha256_ctx *c, const void *data, size_t len) {
  sha256_update(&c->n, len, data);
}

void at_sha256_final(at_sha256_ctx *c, uint8_t out[32]) { sha256_digest(&c->n, 32, out); }

void at_sha256_once(const void *data, size_t len, uint8_t out[32]) {
  at_sha256_ctx c;
  at_sha256_init(&c);
  at_sha256_update(&c, data, len);
  at_sha256_final(&c, out);
}

void at_sha256_hex(const uint8_t d[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[d[i] >> 4];
    hex[2 * i + 1] = digits[d[i] & 15];
  }
  hex[64] = 0;
}

at_status at_sha256_file(const char *path, uint8_t out[32], uint64_t *size_out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return at_fail(errno == ENOENT ? AT_ERR_NOT_FOUND : AT_ERR_IO, "cannot open '%s': %s", path,
                   strerror(errno));
  static _Thread_local uint8_t buf[1 << 16];
  at_sha256_ctx c;
  at_sha256_init(&c);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      return at_fail(AT_ERR_IO, "reading '%s': %s", path, strerror(e));
    }
    if (n == 0) break;
    at_sha256_update(&c, buf, (size_t)n);
    total += (uint64_t)n;
  }
  close(fd);
  at_sha256_final(&c, out);
  if (size_out) *size_out = total;
  return AT_OK;
}
