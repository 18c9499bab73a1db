/* src/model/sha256.h — SHA-256 (FIPS 180-4, nettle's) for the
 * compiled-artifact cache: the content hash of model files, the cache key and
 * the artifact checksum. Not part of the public API. Pure functions; a
 * context is owned by one thread at a time. */
#ifndef ANYTIME_MODEL_SHA256_H
#define ANYTIME_MODEL_SHA256_H

#include <nettle/sha2.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

typedef struct at_sha256_ctx {
  struct sha256_ctx n;
} at_sha256_ctx;

void at_sha256_init(at_sha256_ctx *c);
void at_sha256_update(at_sha256_ctx *c, const void *data, size_t len);
void at_sha256_final(at_sha256_ctx *c, uint8_t out[32]);

/* One-shot digest of buf[0..len). */
void at_sha256_once(const void *data, size_t len, uint8_t out[32]);
/* Lower-case hex of a digest into hex[65] (NUL-terminated). */
void at_sha256_hex(const uint8_t digest[32], char hex[65]);
/* Digest of a whole file; *size_out (may be NULL) gets its length.
 * Returns AT_OK, AT_ERR_NOT_FOUND or AT_ERR_IO (detail in at_last_error()). */
at_status at_sha256_file(const char *path, uint8_t out[32], uint64_t *size_out);

#endif /* ANYTIME_MODEL_SHA256_H */
